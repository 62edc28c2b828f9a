// Thread backend: every collective is a rendezvous of the group's ranks (a generation-counted
// barrier under one mutex) where each rank posts its buffer pointers, then each rank reads its
// peers' buffers directly, then a second rendezvous keeps every buffer alive until all peers are
// done reading. all_reduce is a reduce-scatter of rank shards plus an all-gather (three
// rendezvous), matching the byte accounting of communicator.hpp. A timeout or a failed rank
// aborts the group so no one waits on a peer that will never come.
#include "comm/thread_comm.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

namespace core::comm {

namespace {

using Clock = std::chrono::steady_clock;

class Group;

// What a rank brings to a collective; the call fields must agree across ranks.
struct Post {
  const char* what = "";
  std::size_t count = 0;
  DType dtype = DType::u8;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  const void* send = nullptr;
  void* recv = nullptr;
  int color = 0, key = 0;                          // split only
  std::shared_ptr<Group>* split_out = nullptr;     // split only: where the new group is handed over

  bool same_call(const Post& o) const {
    return std::strcmp(what, o.what) == 0 && count == o.count && dtype == o.dtype && op == o.op && root == o.root;
  }
  std::string describe() const {
    return std::string(what) + "(count=" + std::to_string(count) + ", " + dtype_name(dtype) + ", " +
           reduce_op_name(op) + ", root=" + std::to_string(root) + ")";
  }
};

class Group {
 public:
  explicit Group(int n) : n_(n), posts_(n) {}
  int size() const { return n_; }

  // Waits until all ranks arrived; with `post`, publishes it first and returns everyone's posts.
  std::vector<Post> arrive(int rank, const Post* post, Clock::time_point deadline,
                           const std::function<std::string()>& timeout_message) {
    std::unique_lock lock(mutex_);
    if (!abort_reason_.empty()) throw CommError(abort_reason_);
    if (post) posts_[rank] = *post;
    const std::uint64_t generation = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else if (!cv_.wait_until(lock, deadline,
                               [&] { return generation_ != generation || !abort_reason_.empty(); })) {
      std::string message = timeout_message();
      abort_reason_ = "comm: communicator aborted after a timeout on another rank: " + message;
      cv_.notify_all();
      throw CommTimeoutError(message);
    }
    if (generation_ == generation) throw CommError(abort_reason_);
    return post ? posts_ : std::vector<Post>{};
  }

  void abort(const std::string& reason) {
    std::lock_guard lock(mutex_);
    if (abort_reason_.empty()) abort_reason_ = reason;
    cv_.notify_all();
  }

 private:
  const int n_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Post> posts_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  std::string abort_reason_;
};

unsigned char* at(void* p, std::size_t byte_offset) { return static_cast<unsigned char*>(p) + byte_offset; }
const unsigned char* at(const void* p, std::size_t byte_offset) {
  return static_cast<const unsigned char*>(p) + byte_offset;
}

class HostBufferOps final : public BufferOps {
 public:
  const char* backend() const override { return "thread"; }
  void ready(Stream) const override {}
  void copy(void* dst, const void* src, std::size_t bytes, Stream) const override { std::memcpy(dst, src, bytes); }
  void reduce(std::span<const void* const> inputs, void* out, std::size_t count, DType dtype, ReduceOp op, int divisor,
              Stream) const override {
    reduce_buffers(inputs, out, count, dtype, op, divisor);
  }
};

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<Group> group, int rank, std::shared_ptr<const BufferOps> ops)
      : group_(std::move(group)), rank_(rank), ops_(std::move(ops)) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  const char* backend() const override { return ops_->backend(); }
  void abort(const std::string& reason) { group_->abort(reason); }

 protected:
  void do_broadcast(void* buf, std::size_t count, DType dtype, int root, Stream stream) override {
    Call call(*this, Post{.what = "broadcast", .count = count, .dtype = dtype, .root = root, .recv = buf}, stream);
    if (rank_ != root) ops_->copy(buf, call.posts[root].recv, count * dtype_size(dtype), stream);
    call.sync();
  }

  void do_barrier(Stream stream) override { Call call(*this, Post{.what = "barrier"}, stream); }

  void do_all_reduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                     Stream stream) override {
    Call call(*this, Post{.what = "all_reduce", .count = count, .dtype = dtype, .op = op, .send = send, .recv = recv},
              stream);
    const std::size_t e = dtype_size(dtype);
    const int n = size();
    auto shard_begin = [&](int r) { return count / n * r + std::min<std::size_t>(r, count % n); };
    // Reduce-scatter: this rank reduces its shard of every send buffer into its own recv.
    const std::size_t lo = shard_begin(rank_), hi = shard_begin(rank_ + 1);
    std::vector<const void*> inputs(n);
    for (int q = 0; q < n; ++q) inputs[q] = at(call.posts[q].send, lo * e);
    ops_->reduce(inputs, at(recv, lo * e), hi - lo, dtype, op, n, stream);
    call.sync();
    // All-gather: copy the peers' reduced shards.
    for (int q = 0; q < n; ++q) {
      if (q == rank_) continue;
      const std::size_t b = shard_begin(q), len = shard_begin(q + 1) - b;
      ops_->copy(at(recv, b * e), at(call.posts[q].recv, b * e), len * e, stream);
    }
    call.sync();
  }

  void do_all_gather(const void* send, void* recv, std::size_t count, DType dtype, Stream stream) override {
    Call call(*this, Post{.what = "all_gather", .count = count, .dtype = dtype, .send = send, .recv = recv}, stream);
    const std::size_t block = count * dtype_size(dtype);
    for (int q = 0; q < size(); ++q) {
      unsigned char* dst = at(recv, q * block);
      if (dst != call.posts[q].send) ops_->copy(dst, call.posts[q].send, block, stream);
    }
    call.sync();
  }

  void do_reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                         Stream stream) override {
    Call call(*this,
              Post{.what = "reduce_scatter", .count = count, .dtype = dtype, .op = op, .send = send, .recv = recv},
              stream);
    const std::size_t block = count * dtype_size(dtype);
    std::vector<const void*> inputs(size());
    for (int q = 0; q < size(); ++q) inputs[q] = at(call.posts[q].send, rank_ * block);
    ops_->reduce(inputs, recv, count, dtype, op, size(), stream);
    call.sync();
  }

  void do_all_to_all(const void* send, void* recv, std::size_t count, DType dtype, Stream stream) override {
    Call call(*this, Post{.what = "all_to_all", .count = count, .dtype = dtype, .send = send, .recv = recv}, stream);
    const std::size_t block = count * dtype_size(dtype);
    for (int q = 0; q < size(); ++q)
      ops_->copy(at(recv, q * block), at(call.posts[q].send, rank_ * block), block, stream);
    call.sync();
  }

  std::unique_ptr<Communicator> do_split(int color, int key) override {
    std::shared_ptr<Group> mine;
    Call call(*this, Post{.what = "split", .color = color, .key = key, .split_out = &mine}, nullptr);
    std::vector<int> members;  // old ranks of this color, in new-rank order
    for (int q = 0; q < size(); ++q)
      if (color >= 0 && call.posts[q].color == color) members.push_back(q);
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return call.posts[a].key < call.posts[b].key; });
    if (!members.empty() && members.front() == rank_) {  // the leader creates the new group
      auto group = std::make_shared<Group>(static_cast<int>(members.size()));
      for (const int q : members) *call.posts[q].split_out = group;
    }
    call.sync();
    if (color < 0) return nullptr;
    const int new_rank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
    return std::make_unique<ThreadCommunicator>(std::move(mine), new_rank, ops_);
  }

 private:
  // One collective call: the first rendezvous (posting `post` and checking that all ranks agree
  // on the call), then sync() for each further rendezvous; one deadline for the whole call. Before
  // each rendezvous the rank's work on `stream` is finished (BufferOps::ready).
  struct Call {
    Call(ThreadCommunicator& comm, const Post& post, Stream stream)
        : comm(comm), what(post.what), stream(stream),
          deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(comm.timeout())) {
      comm.ops_->ready(stream);
      posts = arrive(&post);
      for (int q = 0; q < comm.size(); ++q)
        if (!posts[q].same_call(posts[0]))
          throw CommError("comm: ranks disagree on the collective: rank 0 called " + posts[0].describe() +
                          " but rank " + std::to_string(q) + " called " + posts[q].describe());
    }
    void sync() {
      comm.ops_->ready(stream);
      arrive(nullptr);
    }
    std::vector<Post> arrive(const Post* post) {
      return comm.group_->arrive(comm.rank_, post, deadline, [this] { return comm.timeout_message(what); });
    }
    ThreadCommunicator& comm;
    const char* what;
    Stream stream;
    Clock::time_point deadline;
    std::vector<Post> posts;
  };

  std::shared_ptr<Group> group_;
  int rank_;
  std::shared_ptr<const BufferOps> ops_;
};

}  // namespace

std::shared_ptr<const BufferOps> host_buffer_ops() {
  static const auto ops = std::make_shared<const HostBufferOps>();
  return ops;
}

std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int n, std::shared_ptr<const BufferOps> ops) {
  if (n < 1) throw UsageError("comm: a thread communicator group needs at least 1 rank, got " + std::to_string(n));
  auto group = std::make_shared<Group>(n);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < n; ++r) comms.push_back(std::make_unique<ThreadCommunicator>(group, r, ops));
  return comms;
}

void run_thread_ranks(int n, const std::function<void(Communicator&)>& fn, Seconds timeout,
                      std::shared_ptr<const BufferOps> ops) {
  auto comms = make_thread_communicators(n, std::move(ops));
  std::mutex mutex;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    comms[r]->set_timeout(timeout);
    threads.emplace_back([&, r] {
      try {
        fn(*comms[r]);
      } catch (...) {
        std::string what = "unknown exception";
        try {
          throw;
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        {
          std::lock_guard lock(mutex);
          if (!first) first = std::current_exception();
        }
        static_cast<ThreadCommunicator&>(*comms[r]).abort("comm: group aborted because rank " + std::to_string(r) +
                                                          " failed: " + what);
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace core::comm
