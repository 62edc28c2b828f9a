// The random token subsets of random-LTD (Yao et al. 2022): for each (step, rank, layer, sequence) a
// uniform r-subset of the n positions, in increasing order. The random numbers come from a counter-based
// generator keyed on those values and the seed (draw i = a hash of the key and i; the hash and the
// sampling are kernels/token_routing.hpp's, shared with the device kernel), so a resumed run, any
// thread count and any order of drawing give the same subsets, and data-parallel ranks differ. Sequence b
// of micro step m is sequence m B + b of its optimizer step, on the host and on the device alike.
// Selection sampling (Knuth, TAOCP vol. 2, Algorithm 3.4.2 S) visits the positions once and keeps
// position i with probability (still needed) / (still left): a uniform subset, sorted, in O(n) and with
// no cap on n (DeepSpeed's sort kernel stops at 2048).
#pragma once
#include <cstdint>
#include <vector>

#include "ltd/config.hpp"
#include "train/model.hpp"
#include "train/transformer_cuda.hpp"

namespace core::ltd {

struct SubsetKey {
  std::uint64_t seed = 0;
  std::int64_t step = 0;
  int rank = 0, layer = 0;
  std::int64_t sequence = 0;  // within the optimizer step (micro step x micro batch + row)
};

// out[0..r) = a uniform r-subset of [0, n), strictly increasing (0 <= r <= n).
void sample_sorted_subset(const SubsetKey& key, int n, int r, std::int32_t* out);

// The token subsets of micro step `micro` (B sequences of n tokens: plan.seq_len in pretraining, a
// length-padded batch's own length in BERT classification finetuning) at optimizer step `step`: one per
// layer, `kept` positions per sequence in the random-LTD layers, empty (every position) in the others
// and everywhere when kept >= n (a batch no longer than the kept count runs whole, as DeepSpeed's
// random-LTD layer does when reserved_length >= the batch's sequence length).
std::vector<train::TokenSubset> draw_token_subsets(const RoutingPlan& plan, int kept, std::int64_t step, int rank,
                                                   int micro, int B, int n);

// The same subsets drawn on the device (train::TransformerCuda::set_token_routing): no layers where
// draw_token_subsets gives every block every position.
train::TokenRouting device_token_routing(const RoutingPlan& plan, int kept, std::int64_t step, int rank, int micro,
                                         int B);

}  // namespace core::ltd
