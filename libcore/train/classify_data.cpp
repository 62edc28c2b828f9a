// Classification task files and their encoding (see classify_data.hpp).
#include "train/classify_data.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>

#include "common/errors.hpp"

namespace core::train {

std::vector<LabelledText> read_tsv(const std::filesystem::path& path, int num_labels) {
  std::ifstream in(path);
  if (!in) throw InputMissingError("task file " + path.string() + ": cannot open");
  std::vector<LabelledText> out;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto first = line.find('\t'), last = line.rfind('\t');
    const std::string where = path.string() + ":" + std::to_string(line_no);
    if (first == std::string::npos) throw DataError(where + ": expected sentence<TAB>label");
    const std::string label = line.substr(last + 1);
    int v = 0;
    const auto [p, ec] = std::from_chars(label.data(), label.data() + label.size(), v);
    if (ec != std::errc() || p != label.data() + label.size()) {
      if (line_no == 1 && out.empty()) continue;  // the header (GLUE: "sentence<TAB>label")
      throw DataError(where + ": label '" + label + "' is not an integer");
    }
    if (v < 0 || v >= num_labels)
      throw DataError(where + ": label " + label + " is outside [0, " + std::to_string(num_labels) + ")");
    std::string text = line.substr(0, first);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out.push_back({std::move(text), v});
  }
  if (out.empty()) throw DataError("task file " + path.string() + ": no examples");
  return out;
}

EncodedSet encode_examples(const std::vector<LabelledText>& examples, const text::Tokenizer& tok, std::int32_t cls_id,
                           int max_seq_len) {
  EncodedSet e;
  std::vector<std::vector<std::int32_t>> ids;
  for (const auto& ex : examples) {
    auto t = tok.encode(ex.text);
    if (static_cast<int>(t.size()) > max_seq_len - 1) t.resize(max_seq_len - 1);
    t.insert(t.begin(), cls_id);
    e.T = std::max<int>(e.T, static_cast<int>(t.size()));
    ids.push_back(std::move(t));
  }
  e.tokens.assign(std::size_t(ids.size()) * e.T, 0);
  e.mask.assign(e.tokens.size(), 0);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    for (std::size_t j = 0; j < ids[i].size(); ++j) {
      e.tokens[i * e.T + j] = ids[i][j];
      e.mask[i * e.T + j] = 1;
    }
    e.lengths.push_back(static_cast<std::int32_t>(ids[i].size()));
    e.labels.push_back(examples[i].label);
  }
  return e;
}

}  // namespace core::train
