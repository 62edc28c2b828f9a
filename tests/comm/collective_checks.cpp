// Serial reference for the collectives (see collective_checks.hpp).
#include "collective_checks.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace core::comm::test {

namespace {

using Buf = std::vector<unsigned char>;

std::uint32_t mix(int rank, std::size_t i, int salt) {
  std::uint32_t h = static_cast<std::uint32_t>(rank) * 0x9E3779B1u ^ static_cast<std::uint32_t>(i) * 0x85EBCA77u ^
                    static_cast<std::uint32_t>(salt) * 0xC2B2AE3Du;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 13;
  return h;
}

double bf16_value(std::uint16_t b) {
  const int sign = b >> 15, exp = (b >> 7) & 0xff, mant = b & 0x7f;
  return (sign ? -1.0 : 1.0) * std::ldexp(1.0 + mant / 128.0, exp - 127);  // normal numbers only
}

// Element i of rank's input for dtype, as the value the reference computes with.
double input_value(DType t, int rank, std::size_t i, int salt) {
  const std::uint32_t h = mix(rank, i, salt);
  switch (t) {
    case DType::f32: return static_cast<double>(static_cast<int>(h % 301) - 150) * 0.25;
    case DType::bf16: {
      const std::uint16_t bits = static_cast<std::uint16_t>(((h & 1u) << 15) | ((127u + (h >> 1) % 6 - 2) << 7) | ((h >> 4) & 0x7f));
      return bf16_value(bits);
    }
    case DType::i8: return static_cast<double>(static_cast<int>(h % 256) - 128);
    case DType::u8: return static_cast<double>(h % 256);
  }
  return 0;
}

// Stores x as element i of buf (x must be representable except for bf16/int rounding rules).
void store(DType t, Buf& buf, std::size_t i, double x) {
  switch (t) {
    case DType::f32: {
      const float f = static_cast<float>(x);
      std::memcpy(buf.data() + 4 * i, &f, 4);
      return;
    }
    case DType::bf16: {
      const std::uint16_t b = reference_bf16(x);
      std::memcpy(buf.data() + 2 * i, &b, 2);
      return;
    }
    case DType::i8:
    case DType::u8: {
      const long long v = ((static_cast<long long>(x) % 256) + 256) % 256;  // two's-complement wrap
      buf[i] = static_cast<unsigned char>(v);
      return;
    }
  }
}

Buf make_input(DType t, int rank, std::size_t count, int salt) {
  Buf b(count * dtype_size(t));
  for (std::size_t i = 0; i < count; ++i) store(t, b, i, input_value(t, rank, i, salt));
  return b;
}

double reduce_ref(DType t, ReduceOp op, int n, std::size_t i, int salt) {
  double acc = input_value(t, 0, i, salt);
  for (int q = 1; q < n; ++q) {
    const double v = input_value(t, q, i, salt);
    acc = op == ReduceOp::max ? std::max(acc, v) : op == ReduceOp::min ? std::min(acc, v) : acc + v;
  }
  return op == ReduceOp::avg ? acc / n : acc;
}

void expect_equal(const Buf& got, const Buf& want, DType t, const std::string& what) {
  const std::size_t e = dtype_size(t);
  for (std::size_t i = 0; i * e < want.size(); ++i) {
    if (std::memcmp(got.data() + i * e, want.data() + i * e, e) != 0) {
      std::uint32_t g = 0, w = 0;
      std::memcpy(&g, got.data() + i * e, e);
      std::memcpy(&w, want.data() + i * e, e);
      throw std::runtime_error(what + ": element " + std::to_string(i) + " has raw bits " + std::to_string(g) +
                               " but the serial reference gives " + std::to_string(w));
    }
  }
}

}  // namespace

std::uint16_t reference_bf16(double x) {
  // Keep 8 significant bits of |x| (bf16's precision) rounding half to even, in double.
  int exponent = 0;
  const double m = std::frexp(std::abs(x), &exponent);  // |x| = m * 2^exponent, m in [0.5, 1)
  const double scaled = m * 256.0, floor = std::floor(scaled), frac = scaled - floor;
  const double kept = frac > 0.5 ? floor + 1 : frac < 0.5 ? floor : (std::fmod(floor, 2.0) == 0 ? floor : floor + 1);
  const float rounded = static_cast<float>((x < 0 ? -1.0 : 1.0) * std::ldexp(kept, exponent - 8));  // exact
  std::uint32_t bits;
  std::memcpy(&bits, &rounded, 4);
  return static_cast<std::uint16_t>(bits >> 16);
}

std::uint64_t expected_bytes(Collective c, std::size_t count, std::size_t elem, int rank, int size, int root) {
  const std::uint64_t peers = static_cast<std::uint64_t>(size - 1);
  switch (c) {
    case Collective::barrier: return 0;
    case Collective::broadcast: return rank == root ? peers * count * elem : 0;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return peers * count * elem;
    case Collective::all_reduce: {
      // Shard r of a count split as evenly as possible, the first count % size shards one larger.
      std::size_t shard = count / size + (static_cast<std::size_t>(rank) < count % size ? 1 : 0);
      return (count - shard) * elem /* reduce-scatter */ + peers * shard * elem /* all-gather */;
    }
  }
  return 0;
}

void check_collectives(Communicator& comm, std::size_t count) {
  const int r = comm.rank(), n = comm.size();
  CommStats before = comm.stats();
  std::uint64_t want[kCollectiveCount] = {};
  std::uint64_t calls[kCollectiveCount] = {};
  auto account = [&](Collective c, std::size_t cnt, std::size_t e, int root = 0) {
    want[static_cast<int>(c)] += expected_bytes(c, cnt, e, r, n, root);
    calls[static_cast<int>(c)] += 1;
  };
  int salt = 0;
  for (const DType t : {DType::f32, DType::bf16, DType::i8, DType::u8}) {
    const std::size_t e = dtype_size(t);
    const std::string tn = dtype_name(t);
    for (const ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::avg}) {
      if (op == ReduceOp::avg && !is_floating(t)) continue;
      const std::string tag = tn + " " + reduce_op_name(op) + " n=" + std::to_string(n) + " count=" + std::to_string(count);
      ++salt;
      // all_reduce, out of place and in place.
      Buf want_ar(count * e);
      for (std::size_t i = 0; i < count; ++i) store(t, want_ar, i, reduce_ref(t, op, n, i, salt));
      Buf in = make_input(t, r, count, salt), out(count * e, 0xAB);
      comm.all_reduce(in.data(), out.data(), count, t, op);
      expect_equal(out, want_ar, t, "all_reduce " + tag);
      expect_equal(in, make_input(t, r, count, salt), t, "all_reduce left its input intact " + tag);
      comm.all_reduce(in.data(), in.data(), count, t, op);
      expect_equal(in, want_ar, t, "in-place all_reduce " + tag);
      account(Collective::all_reduce, count, e);
      account(Collective::all_reduce, count, e);
      // reduce_scatter: block q of the input is elements [q*count, (q+1)*count).
      Buf full = make_input(t, r, count * n, salt), want_rs(count * e), got(count * e, 0xCD);
      for (std::size_t i = 0; i < count; ++i) store(t, want_rs, i, reduce_ref(t, op, n, r * count + i, salt));
      comm.reduce_scatter(full.data(), got.data(), count, t, op);
      expect_equal(got, want_rs, t, "reduce_scatter " + tag);
      comm.reduce_scatter(full.data(), full.data() + r * count * e, count, t, op);
      expect_equal(Buf(full.begin() + r * count * e, full.begin() + (r + 1) * count * e), want_rs, t,
                   "in-place reduce_scatter " + tag);
      account(Collective::reduce_scatter, count, e);
      account(Collective::reduce_scatter, count, e);
    }
    ++salt;
    // all_gather: rank-major output.
    Buf want_ag(count * n * e);
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < count; ++i) store(t, want_ag, q * count + i, input_value(t, q, i, salt));
    Buf mine = make_input(t, r, count, salt), gathered(count * n * e, 0xEF);
    comm.all_gather(mine.data(), gathered.data(), count, t);
    expect_equal(gathered, want_ag, t, "all_gather " + tn);
    Buf inplace(count * n * e, 0x11);
    std::memcpy(inplace.data() + r * count * e, mine.data(), mine.size());
    comm.all_gather(inplace.data() + r * count * e, inplace.data(), count, t);
    expect_equal(inplace, want_ag, t, "in-place all_gather " + tn);
    account(Collective::all_gather, count, e);
    account(Collective::all_gather, count, e);
    // all_to_all: rank r's send block q holds input_value(r, q*count+i); it lands in rank q's block r.
    Buf send = make_input(t, r, count * n, salt), recv(count * n * e, 0x22), want_a2a(count * n * e);
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < count; ++i) store(t, want_a2a, q * count + i, input_value(t, q, r * count + i, salt));
    comm.all_to_all(send.data(), recv.data(), count, t);
    expect_equal(recv, want_a2a, t, "all_to_all " + tn);
    account(Collective::all_to_all, count, e);
    // broadcast from every root.
    for (int root = 0; root < n; ++root) {
      Buf b = r == root ? make_input(t, root, count, salt + root) : Buf(count * e, 0x33);
      comm.broadcast(b.data(), count, t, root);
      expect_equal(b, make_input(t, root, count, salt + root), t, "broadcast root " + std::to_string(root) + " " + tn);
      account(Collective::broadcast, count, e, root);
    }
  }
  comm.barrier();
  account(Collective::barrier, 0, 1);
  for (int c = 0; c < kCollectiveCount; ++c) {
    const auto got = comm.stats().bytes[c] - before.bytes[c];
    const auto got_calls = comm.stats().calls[c] - before.calls[c];
    if (got != want[c] || got_calls != calls[c])
      throw std::runtime_error(std::string("stats of ") + collective_name(static_cast<Collective>(c)) + " on rank " +
                               std::to_string(r) + ": " + std::to_string(got) + " bytes in " +
                               std::to_string(got_calls) + " calls, expected " + std::to_string(want[c]) +
                               " bytes in " + std::to_string(calls[c]));
  }
}

}  // namespace core::comm::test
