// Backend-independent checks of the collectives: every rank generates every rank's input
// deterministically, computes the expected result serially (in double, with its own bf16 rounding
// and integer wrap-around, independent of libcore's kernel) and compares bit for bit. Inputs are
// chosen so float sums are exact in any order (so MPI's reduction order does not matter), while
// bf16 sums still need rounding. Throws std::runtime_error naming the first mismatch.
#pragma once
#include <cstddef>
#include <cstdint>

#include "comm/communicator.hpp"

namespace core::comm::test {

// Runs every collective (in and out of place), every dtype and every valid reduction on `count`
// elements (per rank block), checks results and that comm.stats() grew by the documented bytes.
void check_collectives(Communicator& comm, std::size_t count);

// The bytes one call makes this rank send, written out independently of bytes_sent().
std::uint64_t expected_bytes(Collective c, std::size_t count, std::size_t elem, int rank, int size, int root);

// Reference round-to-nearest-even of a double to bf16 bits (finite inputs).
std::uint16_t reference_bf16(double x);

}  // namespace core::comm::test
