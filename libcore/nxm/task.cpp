// Task files and encoding (see task.hpp).
#include "nxm/task.hpp"

#include <charconv>

#include "common/errors.hpp"
#include "common/rng.hpp"

namespace core::nxm {

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
  return train::read_tsv(spec, num_labels);
}

}  // namespace core::nxm
