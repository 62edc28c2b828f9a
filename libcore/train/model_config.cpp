// Cross-field validation of ModelConfig (the per-key ranges are checked by the config reader).
#include "train/model_config.hpp"

#include <cmath>

#include "common/errors.hpp"

namespace core::train {

void ModelConfig::validate() const {
  if (arch != "gpt" && arch != "bert")
    throw UsageError("model.arch: must be 'gpt' or 'bert' (got '" + arch + "')");
  if (n_layer <= 0 || n_head <= 0 || n_embd <= 0 || n_positions <= 0 || vocab_size <= 0 ||
      vocab_pad_to <= 0 || type_vocab_size <= 0 || num_labels <= 0)
    throw UsageError("model: n_layer, n_head, n_embd, n_positions, vocab_size, vocab_pad_to, "
                     "type_vocab_size and num_labels must all be > 0");
  if (n_embd % n_head != 0)
    throw UsageError("model.n_head: " + std::to_string(n_head) + " heads do not divide model.n_embd = " +
                     std::to_string(n_embd));
  if (!(layer_norm_eps > 0 && std::isfinite(layer_norm_eps)) || !(init_std > 0 && std::isfinite(init_std)))
    throw UsageError("model.layer_norm_eps and model.init_std must be finite and > 0");
}

}  // namespace core::train
