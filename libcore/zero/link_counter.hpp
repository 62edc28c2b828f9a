// A Communicator that forwards every collective to another one and splits the bytes this rank
// sends (communicator.hpp's direct-algorithm volumes) by the node of the receiving peer: intra-node
// and inter-node bytes, the two kinds of link the ZeRO++ paper's volumes are about.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"

namespace core::zero {

struct LinkBytes {
  std::uint64_t intra = 0, inter = 0;
  std::uint64_t total() const { return intra + inter; }
  LinkBytes& operator+=(const LinkBytes& o) {
    intra += o.intra;
    inter += o.inter;
    return *this;
  }
  bool operator==(const LinkBytes&) const = default;
};

// Bytes rank `rank` sends to `peer` (!= rank) in one call of a communicator of `size` ranks; the sum
// over peers is comm::bytes_sent. all_reduce sends peer q its shard q and then its own shard r.
std::uint64_t bytes_to_peer(comm::Collective c, std::size_t count, comm::DType dtype, int rank, int peer, int size,
                            int root = 0);

class LinkCounter final : public comm::Communicator {
 public:
  // Collective over `inner`: learns the node of every peer (an all_gather of `node`).
  LinkCounter(std::unique_ptr<comm::Communicator> inner, int node);
  // The node of every rank of `inner` given (no communication: the buffers of a device backend are device memory).
  LinkCounter(std::unique_ptr<comm::Communicator> inner, std::vector<int> nodes);
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const char* backend() const override { return inner_->backend(); }
  int node_of(int r) const { return nodes_[r]; }
  const LinkBytes& link_bytes() const { return bytes_; }
  void reset_link_bytes() { bytes_ = {}; }
  comm::Communicator& inner() { return *inner_; }

 protected:
  void do_broadcast(void* buf, std::size_t count, comm::DType dtype, int root, comm::Stream stream) override;
  void do_barrier(comm::Stream stream) override;
  void do_all_reduce(const void* send, void* recv, std::size_t count, comm::DType dtype, comm::ReduceOp op,
                     comm::Stream stream) override;
  void do_all_gather(const void* send, void* recv, std::size_t count, comm::DType dtype, comm::Stream stream) override;
  void do_reduce_scatter(const void* send, void* recv, std::size_t count, comm::DType dtype, comm::ReduceOp op,
                         comm::Stream stream) override;
  void do_all_to_all(const void* send, void* recv, std::size_t count, comm::DType dtype, comm::Stream stream) override;
  std::unique_ptr<comm::Communicator> do_split(int color, int key) override;

 private:
  void count(comm::Collective c, std::size_t n, comm::DType dtype, int root = 0);
  std::unique_ptr<comm::Communicator> inner_;
  std::vector<int> nodes_;
  LinkBytes bytes_;
};

}  // namespace core::zero
