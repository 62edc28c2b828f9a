// Counting sort of batch positions by token id (see embedding_index.hpp): O(n + vocab).
#include "kernels/embedding_index.hpp"

#include <string>

#include "common/errors.hpp"

namespace core::kernels {

HostEmbeddingIndex make_embedding_index(const std::int32_t* tokens, std::int64_t n, int vocab) {
  std::vector<std::int32_t> count(static_cast<std::size_t>(vocab) + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab)
      throw DataError("token id " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                      " is outside [0, " + std::to_string(vocab) + ")");
    ++count[tokens[i] + 1];
  }
  HostEmbeddingIndex ix;
  for (int v = 0; v < vocab; ++v) {
    if (count[v + 1] > 0) ix.rows.push_back(v);
    count[v + 1] += count[v];  // count[v] = first slot of token v
  }
  ix.positions.resize(static_cast<std::size_t>(n));
  std::vector<std::int32_t> next(count.begin(), count.end() - 1);
  for (std::int64_t i = 0; i < n; ++i) ix.positions[next[tokens[i]]++] = static_cast<std::int32_t>(i);
  ix.starts.reserve(ix.rows.size() + 1);
  for (std::int32_t v : ix.rows) ix.starts.push_back(count[v]);
  ix.starts.push_back(static_cast<std::int32_t>(n));
  return ix;
}

}  // namespace core::kernels
