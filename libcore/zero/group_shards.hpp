// The bookkeeping both ZeRO engines (engine.hpp on host buffers, device_engine.hpp on device buffers) keep
// alike over the model's parameter groups: each group's size S_g, its shard s_g of N parts and hpZ's t_g of h
// parts; the slices of a fused bucket's chunk (block q of each group of the bucket, back to back, zero beyond
// the group: what a reduce-scatter sends to rank q and an all-gather receives from it); stage 3's prefetch
// order; the gradient bucket filling in backward; the buckets whose reduce runs on the communication thread
// (overlap_comm); the shard manifest of a checkpoint. The engines differ only in the buffers and the copies.
#pragma once
#include <cstddef>
#include <deque>
#include <utility>
#include <vector>

#include "train/model.hpp"
#include "zero/comm_thread.hpp"
#include "zero/rank_sync.hpp"
#include "zero/sharded_checkpoint.hpp"

namespace core::zero {

// Shard size of a group of `size` elements split `parts` ways (a multiple of 16 elements).
std::size_t shard_size(std::size_t size, int parts);

// The group used after `group` in a pass over `groups` groups (-1: none): forward embed, blocks 0 .. L-1;
// backward head and embed (group 0), blocks L-1 .. 0. Both engines prefetch stage 3's gathers in this order.
int next_group_in_pass(int group, int groups, train::Model<float>::Pass pass);

// Stages 1-2: the buckets in which the updated shards are all-gathered after the optimizer step: the groups
// in order, a bucket closing once it holds `bucket_elems` elements (allgather_bucket_size) and at the last.
std::vector<std::vector<int>> allgather_buckets(const std::vector<std::size_t>& group_sizes, std::size_t bucket_elems);

struct GroupShards {
  std::vector<std::size_t> size, shard, sec;  // S_g, s_g (N parts), t_g (h parts)

  void add_group(std::size_t S, int N, int h) {
    size.push_back(S);
    shard.push_back(shard_size(S, N));
    sec.push_back(shard_size(S, h));
  }
  int groups() const { return int(size.size()); }
  std::pair<std::size_t, std::size_t> owned(int g, int rank) const { return owned_range(size[g], shard[g], rank); }
  // Elements of a chunk of the bucket `gs`: the sum of its shards.
  std::size_t chunk(const std::vector<int>& gs) const {
    std::size_t c = 0;
    for (const int g : gs) c += shard[g];
    return c;
  }
  // f(i, g, lo, hi, off) for the i-th group g of the bucket `gs`: rank q's range [lo, hi) of it sits at offset
  // `off` of the chunk (s_g elements from off, zero beyond hi - lo).
  template <class F>
  void for_each_slice(const std::vector<int>& gs, int q, F&& f) const {
    std::size_t off = 0;
    for (std::size_t i = 0; i < gs.size(); ++i) {
      const int g = gs[i];
      const auto [lo, hi] = owned(g, q);
      f(i, g, lo, hi, off);
      off += shard[g];
    }
  }
  // The groups stage 3 gathers ahead of group g in `pass` (overlap_comm): the next ones in the pass's order
  // (next_group_in_pass) while fewer than `budget` elements (stage3_prefetch_bucket_size) are ahead.
  std::vector<int> prefetch_after(int g, train::Model<float>::Pass pass, std::size_t budget) const;
  // A checkpoint's manifest of these groups (named by `layout`) over `ranks` ranks after `adam_steps`.
  ShardManifest manifest(const train::ParamLayout& layout, int ranks, std::int64_t adam_steps) const;
};

// Stages 2-3: the groups whose gradients wait for their bucket's reduce, filled as backward finishes them.
struct PendingBucket {
  std::vector<int> groups;
  std::size_t elems = 0;
  // Adds group g of n elements; true when the bucket is to be reduced now (reduce_bucket_size elements or
  // more, or group 0: the last of backward).
  bool add(int g, std::size_t n, std::size_t bucket_elems) {
    groups.push_back(g);
    elems += n;
    return elems >= bucket_elems || g == 0;
  }
  std::vector<int> take() {
    elems = 0;
    return std::exchange(groups, {});
  }
};

// overlap_comm: the gradient buckets whose reduce was submitted to the communication thread, oldest first,
// and per group the ticket of its bucket's reduce (0: none in flight).
class ReducesInFlight {
 public:
  void reset(int groups) { ticket_.assign(groups, 0); }
  void add(CommThread::Ticket t, const std::vector<int>& groups) {
    for (const int g : groups) ticket_[g] = t;
    buckets_.emplace_back(t, groups);
  }
  CommThread::Ticket of(int g) const { return ticket_[g]; }
  // The buckets whose reduce has run, oldest first: done(ticket, groups) for each, then they are forgotten.
  template <class F>
  void retire(const CommThread& comm, F&& done) {
    while (!buckets_.empty() && comm.done(buckets_.front().first)) {
      done(buckets_.front().first, buckets_.front().second);
      for (const int g : buckets_.front().second) ticket_[g] = 0;
      buckets_.pop_front();
    }
  }

 private:
  std::vector<CommThread::Ticket> ticket_;
  std::deque<std::pair<CommThread::Ticket, std::vector<int>>> buckets_;
};

}  // namespace core::zero
