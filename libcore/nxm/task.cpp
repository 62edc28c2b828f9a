// Task files and encoding (see task.hpp).
#include "nxm/task.hpp"

#include <charconv>
#include <fstream>

#include "common/errors.hpp"
#include "common/rng.hpp"

namespace core::nxm {

std::vector<Example> read_tsv(const std::filesystem::path& path, int num_labels) {
  std::ifstream in(path);
  if (!in) throw InputMissingError("task file " + path.string() + ": cannot open");
  std::vector<Example> out;
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

std::vector<Example> synthetic_sentiment(int n, std::uint64_t seed) {
  static const char* neutral[] = {"the", "movie", "film", "story", "actors", "plot", "was", "is", "a", "an", "this",
                                  "with", "and", "of", "director", "scene", "music", "ending", "cast", "script"};
  static const char* positive[] = {"good", "great", "charming", "brilliant", "moving", "funny", "wonderful", "fresh"};
  static const char* negative[] = {"bad", "dull", "boring", "awful", "flat", "tedious", "weak", "bleak"};
  Rng rng(seed);
  std::vector<Example> out;
  for (int i = 0; i < n; ++i) {
    const int label = static_cast<int>(rng.below(2));
    const bool negated = rng.uniform() < 0.1;
    const int words = 3 + static_cast<int>(rng.below(4));
    const int at = static_cast<int>(rng.below(words));
    std::string s;
    for (int w = 0; w < words; ++w) {
      if (!s.empty()) s += ' ';
      if (w == at) {
        const bool pos = (label == 1) != negated;
        if (negated) s += "not ";
        s += pos ? positive[rng.below(8)] : negative[rng.below(8)];
      } else {
        s += neutral[rng.below(20)];
      }
    }
    out.push_back({s, label});
  }
  return out;
}

std::vector<Example> load_examples(const std::string& spec, int num_labels, std::uint64_t seed) {
  if (spec.starts_with("synthetic:")) {
    int n = 0;
    const std::string count = spec.substr(10);
    const auto [p, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    if (ec != std::errc() || p != count.data() + count.size() || n < 1)
      throw UsageError("task '" + spec + "': expected synthetic:N with N >= 1");
    if (num_labels < 2) throw UsageError("the synthetic task has 2 labels: model.num_labels must be >= 2");
    return synthetic_sentiment(n, seed);
  }
  return read_tsv(spec, num_labels);
}

EncodedSet encode_examples(const std::vector<Example>& examples, const text::Tokenizer& tok, std::int32_t cls_id,
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

}  // namespace core::nxm
