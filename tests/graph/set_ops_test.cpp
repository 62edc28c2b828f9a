// The sorted-set kernels (set_ops.hpp): every SIMD variant the CPU runs (AVX2, AVX-512F, VP2INTERSECT)
// against the scalar merge and std::set_intersection, on sets of every length around the block
// sizes, with few, many and all elements in common, and with the kSlack output slots untouched
// beyond them; inclusion-exclusion over sets with removed values against brute force; merging a set below a
// bound with a whole list where merge_whole_list allows gives what merging the list below the bound gives;
// intersections shared by structure (iep_shares) give what merging every one gives; the partition sum is the same
// in 64 and 128 bits.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "graph/plan.hpp"
#include "graph/set_ops.hpp"

using gzk::u32;

namespace {

std::vector<u32> random_set(std::mt19937& rng, std::size_t n, u32 range) {
  std::vector<u32> s;
  while (s.size() < n) {
    for (std::size_t i = s.size(); i < n; ++i) s.push_back(static_cast<u32>(rng() % range));
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  return s;
}

// Runs check(a, b, expected intersection) over many pairs.
template <class Check>
void for_random_pairs(Check&& check) {
  std::mt19937 rng(12);
  for (std::size_t na : {0, 1, 7, 8, 15, 16, 17, 31, 33, 64, 100, 257})
    for (std::size_t nb : {0, 5, 16, 24, 40, 129})
      for (u32 range : {u32(2 * std::max<std::size_t>(na, nb) + 1), u32(40 * (na + nb) + 1), u32(1) << 31}) {
        if (std::max(na, nb) > range) continue;
        const auto a = random_set(rng, na, range), b = random_set(rng, nb, range);
        std::vector<u32> expect;
        std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(expect));
        check(a, b, expect);
        check(a, a, a);
      }
}

// gzk::iep_count over the sets (values below range).
gzk::i128 iep_of(const std::vector<std::vector<u32>>& sets, u32 range, const std::uint8_t* share,
                 const std::uint32_t* member = nullptr, const std::uint32_t* removed = nullptr, int nr = 0) {
  const int t = static_cast<int>(sets.size());
  const std::size_t cap = range + gzk::kSlack;
  std::vector<u32> scratch((std::size_t{1} << t) * cap);
  const u32* p[gzk::kMaxIep];
  std::size_t n[gzk::kMaxIep];
  for (int i = 0; i < t; ++i) {
    p[i] = sets[i].data();
    n[i] = sets[i].size();
  }
  return gzk::iep_count(t, p, n, scratch.data(), cap, share, member, removed, nr);
}

}  // namespace

TEST_CASE("every intersection kernel the CPU runs agrees with std::set_intersection") {
  using Count = std::size_t (*)(const u32*, std::size_t, const u32*, std::size_t);
  using Write = std::size_t (*)(const u32*, std::size_t, const u32*, std::size_t, u32*);
  std::vector<std::pair<Count, Write>> kernels = {{gzk::merge_count_scalar, gzk::merge_intersect_scalar},
                                                  {gzk::intersect_count, gzk::intersect}};
#if GZ_X86
  if (gzk::have_avx2()) kernels.emplace_back(gzk::merge_count_avx2, gzk::merge_intersect_avx2);
  if (gzk::simd_level() >= gzk::SimdLevel::avx512)
    kernels.emplace_back(gzk::merge_count_avx512<gzk::block_match_mask16>,
                         gzk::merge_intersect_avx512<gzk::block_match_mask16>);
  if (gzk::simd_level() == gzk::SimdLevel::vp2intersect)
    kernels.emplace_back(gzk::merge_count_avx512<gzk::block_match_mask16_vp2i>,
                         gzk::merge_intersect_avx512<gzk::block_match_mask16_vp2i>);
  MESSAGE("SIMD level " << static_cast<int>(gzk::simd_level()) << ": " << kernels.size() << " kernel pairs checked");
#endif
  int pairs = 0;
  for_random_pairs([&](const std::vector<u32>& a, const std::vector<u32>& b, const std::vector<u32>& expect) {
    ++pairs;
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      CAPTURE(k);
      CAPTURE(a.size());
      CAPTURE(b.size());
      CHECK(kernels[k].first(a.data(), a.size(), b.data(), b.size()) == expect.size());
      std::vector<u32> out(std::min(a.size(), b.size()) + gzk::kSlack + 4, 0xdeadbeef);
      const std::size_t n = kernels[k].second(a.data(), a.size(), b.data(), b.size(), out.data());
      REQUIRE(n == expect.size());
      CHECK(std::equal(expect.begin(), expect.end(), out.begin()));
      // A vector store may write up to kSlack slots past the result, never further.
      for (std::size_t i = n + gzk::kSlack; i < out.size(); ++i) CHECK(out[i] == 0xdeadbeef);
    }
  });
  CHECK(pairs > 100);
}

TEST_CASE("merge_whole_list: a whole list merged with a set below the bound gives what its part below does") {
  std::mt19937 rng(11);
  int whole = 0, searched = 0;
  for (int round = 0; round < 3000; ++round) {
    const u32 range = 50 + rng() % 5000;
    const u32 bound = static_cast<u32>(rng() % range);
    std::vector<u32> a = random_set(rng, rng() % std::min<u32>(200, range / 2), range);
    a.erase(std::lower_bound(a.begin(), a.end(), bound), a.end());
    const std::vector<u32> b = random_set(rng, rng() % (range / 2), range);
    const std::size_t below = gzk::lower_index(b.data(), b.size(), bound);
    if (!gzk::merge_whole_list(b.data(), b.size(), a.size(), bound)) {
      ++searched;
      continue;
    }
    ++whole;
    // Same regime (merge or galloping) on both lengths, and the same result.
    const auto gallops = [&](std::size_t nb) {
      return a.size() * gzk::kGallopRatio < nb || nb * gzk::kGallopRatio < a.size();
    };
    CHECK(gallops(b.size()) == gallops(below));
    std::vector<u32> out1(a.size() + gzk::kSlack), out2(a.size() + gzk::kSlack);
    const std::size_t n1 = gzk::intersect(a.data(), a.size(), b.data(), b.size(), out1.data());
    const std::size_t n2 = gzk::intersect(a.data(), a.size(), b.data(), below, out2.data());
    REQUIRE(n1 == n2);
    CHECK(std::equal(out1.begin(), out1.begin() + n1, out2.begin()));
    CHECK(gzk::intersect_count(a.data(), a.size(), b.data(), b.size()) == n2);
    CHECK(gzk::subtract(a.data(), a.size(), b.data(), b.size(), out1.data()) ==
          gzk::subtract(a.data(), a.size(), b.data(), below, out2.data()));
  }
  CHECK(whole > 100);
  CHECK(searched > 100);
}

TEST_CASE("inclusion-exclusion with removed values equals the injective tuples over the filtered sets") {
  // Removed values stay in the lists and leave the intersection sizes only (iep_count's member/removed
  // masks); brute force over the sets with the values taken out. Equal sets share their intersections.
  std::mt19937 rng(7);
  int checked = 0;
  for (int t = 2; t <= 4; ++t)
    for (int trial = 0; trial < 60; ++trial) {
      const u32 range = 6 + rng() % 10;
      std::vector<std::vector<u32>> sets(t);
      for (int i = 0; i < t; ++i)
        sets[i] = i > 0 && rng() % 3 == 0 ? sets[i - 1] : random_set(rng, rng() % (range / 2 + 1), range);
      // Up to three distinct values removed, each from a random subset of the sets.
      std::vector<u32> values = random_set(rng, 1 + rng() % 3, range);
      std::vector<std::uint32_t> member, removed;
      std::vector<std::vector<u32>> filtered = sets;
      for (u32 x : values) {
        std::uint32_t in = 0, rm = 0;
        for (int i = 0; i < t; ++i) {
          in |= std::binary_search(sets[i].begin(), sets[i].end(), x) ? 1u << i : 0u;
          rm |= rng() % 2 ? 1u << i : 0u;
          if ((rm >> i) & 1u) std::erase(filtered[i], x);
        }
        member.push_back(in);
        removed.push_back(rm);
      }
      std::uint64_t expect = 0;
      std::vector<u32> pick(t);
      std::function<void(int)> tuples = [&](int i) {
        if (i == t) {
          ++expect;
          return;
        }
        for (u32 x : filtered[i])
          if (std::find(pick.begin(), pick.begin() + i, x) == pick.begin() + i) {
            pick[i] = x;
            tuples(i + 1);
          }
      };
      tuples(0);
      CHECK(iep_of(sets, range, nullptr, member.data(), removed.data(), static_cast<int>(values.size())) ==
            static_cast<gzk::i128>(expect));
      ++checked;
    }
  CHECK(checked == 180);
}

TEST_CASE("inclusion-exclusion reusing the intersections iep_shares names equals merging every one") {
  // Tail sets built as a plan builds them: the lists of random earlier "parents" intersected, cut below the
  // least of random earlier bounds, filtered by a label; equal and nested sets share their intersections.
  std::mt19937 rng(11);
  int shared = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int t = 3 + static_cast<int>(rng() % 3), earlier = 2 + static_cast<int>(rng() % 3);
    const u32 range = 20 + rng() % 30;
    std::vector<std::vector<u32>> lists(earlier);
    std::vector<u32> bound_value(earlier), label_of(range);
    for (auto& l : lists) l = random_set(rng, range / 2 + rng() % (range / 2), range);
    for (auto& b : bound_value) b = static_cast<u32>(rng() % (range + 1));
    for (auto& l : label_of) l = static_cast<u32>(rng() % 2);
    std::vector<std::uint32_t> parents(t), bounds(t);
    std::vector<int> labels(t);
    std::vector<std::vector<u32>> sets(t);
    for (int i = 0; i < t; ++i) {
      // Few distinct shapes, so that sets repeat and nest.
      parents[i] = 1u + rng() % ((1u << earlier) - 1);
      bounds[i] = rng() % 3 == 0 ? 1u << (rng() % earlier) : 0u;
      labels[i] = rng() % 4 == 0 ? static_cast<int>(rng() % 2) : -1;
      u32 cut = range;
      for (int j = 0; j < earlier; ++j)
        if ((bounds[i] >> j) & 1u) cut = std::min(cut, bound_value[j]);
      for (u32 x = 0; x < cut; ++x) {
        bool in = labels[i] < 0 || static_cast<int>(label_of[x]) == labels[i];
        for (int j = 0; j < earlier && in; ++j)
          if ((parents[i] >> j) & 1u) in = std::binary_search(lists[j].begin(), lists[j].end(), x);
        if (in) sets[i].push_back(x);
      }
    }
    const core::graph::IepShares share = core::graph::iep_shares(t, parents.data(), bounds.data(), labels.data());
    for (int m = 1; m < (1 << t); ++m) shared += share[m] != m;
    CHECK(iep_of(sets, range, share.data()) == iep_of(sets, range, nullptr));
  }
  CHECK(shared > 400);
}

TEST_CASE("the partition sum of inclusion-exclusion is the same in 64 and 128 bits, and exact past 64") {
  // iep_count sums in 64 bits where (t-1)! prod |S_i| fits, else in 128: the two agree on small sizes; on sizes
  // near 2^40 the 128-bit sum equals the three-set closed form |1||2||3| - |12||3| - |13||2| - |23||1| + 2|123|.
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int t = 2 + static_cast<int>(trial % 5);
    std::uint64_t size[1 << gzk::kMaxIep] = {};
    for (int m = 1; m < (1 << t); ++m) size[m] = rng() % 1000;
    CHECK(gzk::partition_sum<std::int64_t>((1 << t) - 1, size) == gzk::partition_sum<gzk::i128>((1 << t) - 1, size));
  }
  std::uint64_t size[8] = {};
  for (int m = 1; m < 8; ++m) size[m] = (std::uint64_t{1} << 40) - rng() % 1000;
  using gzk::i128;
  const i128 closed = i128(size[1]) * size[2] * size[4] - i128(size[3]) * size[4] - i128(size[5]) * size[2] -
                      i128(size[6]) * size[1] + 2 * i128(size[7]);
  CHECK(closed > i128(1) << 100);
  CHECK(gzk::partition_sum<i128>(7, size) == closed);
}
