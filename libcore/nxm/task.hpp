// Sequence-classification tasks for nxm-compress: GLUE TSV files and `sentence<TAB>label` files
// (core::train's classify_data.hpp, shared with ltd-pretrain finetune), and a generated sentiment task the bare
// run uses ("synthetic": sentences of neutral words with one positive or negative word, a tenth negated).
// Examples are encoded as [CLS] + tokens (train::encode_examples), where [CLS] is the id after the
// tokenizer's vocabulary: the [MASK] id of zpp-train's MLM pretraining, so the pretrained model has an
// embedding for it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "train/classify_data.hpp"

namespace core::nxm {

using Example = train::LabelledText;
using train::EncodedSet;
using train::encode_examples;

// The generated task: `n` examples, deterministic in (seed, split).
std::vector<Example> synthetic_sentiment(int n, std::uint64_t seed);
// "synthetic:N" or a TSV path.
std::vector<Example> load_examples(const std::string& spec, int num_labels, std::uint64_t seed);

}  // namespace core::nxm
