// Groups the positions of a token batch by token id on the host (counting sort), so the device can
// sum the token-embedding gradient per row in a fixed order, without atomics (embedding_backward in
// ops.hpp uploads these arrays). Requires 0 <= tokens[i] < vocab.
#pragma once
#include <cstdint>
#include <vector>

namespace core::kernels {

struct HostEmbeddingIndex {
  std::vector<std::int32_t> rows;       // distinct token ids, increasing
  std::vector<std::int32_t> starts;     // rows.size() + 1 offsets into positions
  std::vector<std::int32_t> positions;  // every position, grouped by token, increasing within a group
};

// Throws Error(data) for a token outside [0, vocab).
HostEmbeddingIndex make_embedding_index(const std::int32_t* tokens, std::int64_t n, int vocab);

}  // namespace core::kernels
