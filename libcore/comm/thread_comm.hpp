// In-process backend: n communicators sharing one state, each used from its own thread. Used by
// the tests and by tools that run several "ranks" on one machine. Collectives are a rendezvous
// of all ranks followed by direct copies/reductions between their buffers (reductions combine
// ranks in rank order, so results are bit-reproducible).
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"

namespace core::comm {

// n >= 1 communicators of one group; element r is rank r.
std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int n);

// Runs fn(comm) for n ranks on n threads and joins them. When a rank throws, the group is aborted
// (the other ranks' pending and later collectives throw CommError at once instead of waiting for
// the timeout) and the first exception is rethrown here.
void run_thread_ranks(int n, const std::function<void(Communicator&)>& fn,
                      Seconds timeout = kDefaultCommTimeout);

}  // namespace core::comm
