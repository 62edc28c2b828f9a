// Sequence-classification data (BERT finetuning: nxm-compress's tasks, ltd-pretrain finetune): GLUE TSV files
// (SST-2: a `sentence<TAB>label` header, then one example per line; the last column is the integer label, the
// first the sentence) and any `sentence<TAB>label` file with or without that header, encoded as [CLS] + tokens
// (truncated to max_seq_len, padded with a key mask). The caller chooses the [CLS] id (an id after the
// tokenizer's vocabulary, which the pretrained model has an embedding for).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "text/tokenizer.hpp"

namespace core::train {

struct LabelledText {
  std::string text;
  int label = 0;
};

// DataError naming FILE:LINE for a line without a tab, a label that is not an integer in
// [0, num_labels), or an empty file; InputMissingError when absent. Trailing spaces of a sentence are dropped.
std::vector<LabelledText> read_tsv(const std::filesystem::path& path, int num_labels);

struct EncodedSet {
  int T = 0;                          // padded length: the longest example
  std::vector<std::int32_t> tokens;   // [size * T]
  std::vector<std::uint8_t> mask;     // [size * T]: 1 real token
  std::vector<std::int32_t> lengths;  // [size]: real tokens of each example ([CLS] included)
  std::vector<std::int32_t> labels;   // [size]
  int size() const { return static_cast<int>(labels.size()); }
};
EncodedSet encode_examples(const std::vector<LabelledText>& examples, const text::Tokenizer& tok, std::int32_t cls_id,
                           int max_seq_len);

}  // namespace core::train
