// Cross-field validation of ModelConfig (the per-key ranges are checked by the config reader).
#include "train/model_config.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

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
  // Sizes in 64-bit arithmetic before any layout is built: the padded vocabulary must fit an int, and the
  // parameter count (embeddings + 12 C^2 + 13 C per block, the GPT/BERT layout to within a few rows) stays below
  // 2^46 (256 TiB of float32), which keeps every element and byte count far inside int64; the memory guards
  // refuse much smaller models with a hint.
  const std::int64_t pad = vocab_pad_to, padded = (vocab_size + pad - 1) / pad * pad;
  if (padded > std::numeric_limits<int>::max())
    throw UsageError("model.vocab_pad_to: vocab_size = " + std::to_string(vocab_size) + " padded to a multiple of " +
                     std::to_string(vocab_pad_to) + " is " + std::to_string(padded) + " rows, more than 2^31 - 1");
  const long double C = n_embd;
  const long double params = (static_cast<long double>(padded) + n_positions + type_vocab_size) * C +
                             static_cast<long double>(n_layer) * (12.0L * C * C + 13.0L * C);
  if (params > 0x1p46L)
    throw UsageError("model: " + std::to_string(static_cast<double>(params)) +
                     " parameters (n_layer, n_embd, vocab_size, n_positions) exceed the 2^46 this trainer accepts");
  if (!(layer_norm_eps > 0 && std::isfinite(layer_norm_eps)) || !(init_std > 0 && std::isfinite(init_std)))
    throw UsageError("model.layer_norm_eps and model.init_std must be finite and > 0");
}

std::int64_t ModelConfig::parameter_count() const {
  const std::int64_t C = n_embd, Vp = padded_vocab();
  std::int64_t embed = (Vp + n_positions) * C + 2 * C;  // wte, wpe, ln_f
  if (architecture() == Arch::bert)  // wse, mlm dense + ln + bias, pooler, classifier
    embed += type_vocab_size * C + (C * C + 3 * C + Vp) + (C * C + C) + (num_labels * C + num_labels);
  return embed + static_cast<std::int64_t>(n_layer) * (12 * C * C + 13 * C);
}

}  // namespace core::train
