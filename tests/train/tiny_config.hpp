// The small models of the training tests: two layers of two heads, of the given architecture, width,
// context and vocabulary; tests set what else they need (padding, init scale, labels) on the result.
#pragma once
#include "train/model_config.hpp"

namespace core::test {

inline core::train::ModelConfig tiny_config(const char* arch, int n_embd, int n_positions, int vocab_size) {
  core::train::ModelConfig c;
  c.arch = arch;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = n_embd;
  c.n_positions = n_positions;
  c.vocab_size = vocab_size;
  return c;
}

}  // namespace core::test
