// make_embedding_index (host): positions grouped by token against a direct scan, and bad ids.
#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "kernels/embedding_index.hpp"
#include "test_support.hpp"

using namespace core::kernels;

TEST_CASE("embedding index groups positions by token in increasing order") {
  const std::vector<std::int32_t> tok = {4, 1, 4, 0, 9, 1, 4};
  const HostEmbeddingIndex ix = make_embedding_index(tok.data(), static_cast<std::int64_t>(tok.size()), 10);
  CHECK(ix.rows == std::vector<std::int32_t>{0, 1, 4, 9});
  CHECK(ix.starts == std::vector<std::int32_t>{0, 1, 3, 6, 7});
  CHECK(ix.positions == std::vector<std::int32_t>{3, 1, 5, 0, 2, 6, 4});
  for (std::size_t u = 0; u < ix.rows.size(); ++u)
    for (int k = ix.starts[u]; k < ix.starts[u + 1]; ++k) CHECK(tok[ix.positions[k]] == ix.rows[u]);
}

TEST_CASE("embedding index rejects ids outside the vocabulary") {
  const std::vector<std::int32_t> tok = {1, 10};
  CHECK_THROWS_AS(make_embedding_index(tok.data(), 2, 10), core::DataError);
  const std::vector<std::int32_t> neg = {-1};
  CHECK_THROWS_AS(make_embedding_index(neg.data(), 1, 10), core::DataError);
}
