// Sequence-classification tasks for nxm-compress: GLUE TSV files (SST-2: a `sentence<TAB>label`
// header, then one example per line; the last column is the integer label, the first the sentence),
// any `sentence<TAB>label` file with or without that header, and a generated sentiment task the bare
// run uses ("synthetic": sentences of neutral words with one positive or negative word, a tenth negated).
// Examples are encoded as [CLS] + tokens (truncated to max_seq_len, padded with a key mask), where
// [CLS] is the id after the tokenizer's vocabulary: the [MASK] id of zpp-train's MLM pretraining,
// so the pretrained model has an embedding for it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "text/tokenizer.hpp"

namespace core::nxm {

struct Example {
  std::string text;
  int label = 0;
};

// DataError naming FILE:LINE for a line without a tab, a label that is not an integer in
// [0, num_labels), or an empty file; InputMissingError when absent.
std::vector<Example> read_tsv(const std::filesystem::path& path, int num_labels);
// The generated task: `n` examples, deterministic in (seed, split).
std::vector<Example> synthetic_sentiment(int n, std::uint64_t seed);
// "synthetic:N" or a TSV path.
std::vector<Example> load_examples(const std::string& spec, int num_labels, std::uint64_t seed);

struct EncodedSet {
  int T = 0;                          // padded length
  std::vector<std::int32_t> tokens;   // [size * T]
  std::vector<std::uint8_t> mask;     // [size * T]: 1 real token
  std::vector<std::int32_t> lengths;  // [size]
  std::vector<std::int32_t> labels;   // [size]
  int size() const { return static_cast<int>(labels.size()); }
};
EncodedSet encode_examples(const std::vector<Example>& examples, const text::Tokenizer& tok, std::int32_t cls_id,
                           int max_seq_len);

}  // namespace core::nxm
