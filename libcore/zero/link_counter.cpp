// Forwarding communicator with per-link byte accounting (see link_counter.hpp).
#include "zero/link_counter.hpp"

#include <string>

#include "common/errors.hpp"

#include <algorithm>
#include <cstring>

namespace core::zero {

using comm::Collective;
using comm::DType;

std::uint64_t bytes_to_peer(Collective c, std::size_t count, DType dtype, int rank, int peer, int size, int root) {
  const std::uint64_t e = comm::dtype_size(dtype), c64 = count, n = static_cast<std::uint64_t>(size);
  switch (c) {
    case Collective::broadcast: return rank == root ? c64 * e : 0;
    case Collective::barrier: return 0;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return c64 * e;
    case Collective::all_reduce: {
      const auto shard = [&](int r) { return c64 / n + (static_cast<std::uint64_t>(r) < c64 % n ? 1 : 0); };
      return (shard(peer) + shard(rank)) * e;
    }
  }
  return 0;
}

LinkCounter::LinkCounter(std::unique_ptr<comm::Communicator> inner, int node) : inner_(std::move(inner)) {
  set_timeout(inner_->timeout());
  std::vector<std::int32_t> all(inner_->size());
  const std::int32_t mine = node;
  inner_->all_gather(&mine, all.data(), sizeof mine, DType::u8);
  nodes_.assign(all.begin(), all.end());
}

LinkCounter::LinkCounter(std::unique_ptr<comm::Communicator> inner, std::vector<int> nodes)
    : inner_(std::move(inner)), nodes_(std::move(nodes)) {
  set_timeout(inner_->timeout());
  if (int(nodes_.size()) != inner_->size())
    throw Error(ExitCode::internal, "LinkCounter: " + std::to_string(nodes_.size()) + " nodes for " +
                                        std::to_string(inner_->size()) + " ranks");
}

void LinkCounter::count(Collective c, std::size_t n, DType dtype, int root) {
  const int me = rank(), my_node = nodes_[me];
  for (int q = 0; q < size(); ++q) {
    if (q == me) continue;
    const std::uint64_t b = bytes_to_peer(c, n, dtype, me, q, size(), root);
    (nodes_[q] == my_node ? bytes_.intra : bytes_.inter) += b;
  }
}

void LinkCounter::do_broadcast(void* buf, std::size_t count, DType dtype, int root, comm::Stream stream) {
  inner_->broadcast(buf, count, dtype, root, stream);
  this->count(Collective::broadcast, count, dtype, root);
}
void LinkCounter::do_barrier(comm::Stream stream) { inner_->barrier(stream); }
void LinkCounter::do_all_reduce(const void* send, void* recv, std::size_t count, DType dtype, comm::ReduceOp op,
                                comm::Stream stream) {
  inner_->all_reduce(send, recv, count, dtype, op, stream);
  this->count(Collective::all_reduce, count, dtype);
}
void LinkCounter::do_all_gather(const void* send, void* recv, std::size_t count, DType dtype, comm::Stream stream) {
  inner_->all_gather(send, recv, count, dtype, stream);
  this->count(Collective::all_gather, count, dtype);
}
void LinkCounter::do_reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype, comm::ReduceOp op,
                                    comm::Stream stream) {
  inner_->reduce_scatter(send, recv, count, dtype, op, stream);
  this->count(Collective::reduce_scatter, count, dtype);
}
void LinkCounter::do_all_to_all(const void* send, void* recv, std::size_t count, DType dtype, comm::Stream stream) {
  inner_->all_to_all(send, recv, count, dtype, stream);
  this->count(Collective::all_to_all, count, dtype);
}

std::unique_ptr<comm::Communicator> LinkCounter::do_split(int color, int key) {
  auto child = inner_->split(color, key);
  if (!child) return nullptr;
  return std::make_unique<LinkCounter>(std::move(child), nodes_[rank()]);
}

}  // namespace core::zero
