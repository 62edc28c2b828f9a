// nvcuda::wmma (CUDA C++ warp matrix functions) on the host emulator (simt.hpp). The API leaves the
// map of fragment elements to lanes unspecified, so any map is valid for code that uses only the
// API: here a lane holds the whole operand of matrix_a / matrix_b fragments, and of an accumulator
// the elements i = lane, lane + 32, ... of the row-major M x N tile. Loads and stores therefore touch
// memory from each lane separately, when that lane's fiber runs: data other lanes wrote must be
// behind a barrier, as on the device. Products accumulate in fp32 in k order.
// load_matrix_sync, store_matrix_sync and mma_sync are warp collectives with the programming guide's
// preconditions ("Warp Matrix Functions"), checked: called by every thread of the warp with the same
// pointer, ldm and layout; the pointer 256-bit aligned, ldm a multiple of 16 bytes.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : N;
  static constexpr int num_elements = rows * cols;
  T x[num_elements];  // row-major
  T at(int r, int c) const { return x[r * cols + c]; }
};

template <int M, int N, int K, class T>
struct fragment<accumulator, M, N, K, T, void> {
  static_assert(M * N % 32 == 0);
  static constexpr int num_elements = M * N / 32;
  T x[num_elements];  // element e is tile entry e * 32 + lane
  static int row(int e) { return (e * 32 + simt::lane_id()) / N; }
  static int col(int e) { return (e * 32 + simt::lane_id()) % N; }
};

namespace detail {
struct Call {
  const void* p;
  std::uint64_t ldm;
  std::uint64_t layout;
};
// Waits for the whole warp at `what` and checks that every lane passed the same arguments.
inline void warp_uniform(const char* what, const void* p, unsigned ldm, int layout) {
  const Call mine{p, ldm, static_cast<std::uint64_t>(layout)};
  const unsigned char* slots = simt::share(0xffffffffu, &mine, sizeof mine);
  for (int lane = 0; lane < 32; ++lane) {
    if (!simt::took_part(lane)) simt::fail(std::string(what) + " without lane " + std::to_string(lane) + " of the warp");
    if (std::memcmp(slots + lane * simt::kSlotBytes, &mine, sizeof mine) != 0)
      simt::fail(std::string(what) + ": lanes of the warp pass different pointers, ldm or layouts");
  }
  simt::release(0xffffffffu);
}
template <class T>
void check_memory(const char* what, const T* p, unsigned ldm, int layout = 0) {
  warp_uniform(what, p, ldm, layout);
  if (reinterpret_cast<std::uintptr_t>(p) % 32 != 0) simt::fail(std::string(what) + ": pointer not 256-bit aligned");
  if (ldm * sizeof(T) % 16 != 0)
    simt::fail(std::string(what) + ": ldm " + std::to_string(ldm) + " is not a multiple of 16 bytes");
}
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout, class V>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, V value) {
  for (auto& e : f.x) e = static_cast<T>(value);
}

template <class Use, int M, int N, int K, class T, class Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  using F = fragment<Use, M, N, K, T, Layout>;
  detail::check_memory("load_matrix_sync", p, ldm);
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c)
      f.x[r * F::cols + c] = std::is_same_v<Layout, col_major> ? p[c * ldm + r] : p[r * ldm + c];
}

template <int M, int N, int K, class T>
void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const T* p, unsigned ldm, layout_t layout) {
  using F = fragment<accumulator, M, N, K, T>;
  detail::check_memory("load_matrix_sync", p, ldm, layout);
  for (int e = 0; e < F::num_elements; ++e)
    f.x[e] = layout == mem_row_major ? p[F::row(e) * ldm + F::col(e)] : p[F::col(e) * ldm + F::row(e)];
}

template <int M, int N, int K, class T>
void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t layout) {
  using F = fragment<accumulator, M, N, K, T>;
  detail::check_memory("store_matrix_sync", p, ldm, layout);
  for (int e = 0; e < F::num_elements; ++e)
    (layout == mem_row_major ? p[F::row(e) * ldm + F::col(e)] : p[F::col(e) * ldm + F::row(e)]) = f.x[e];
}

template <int M, int N, int K, class T, class LA, class LB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LA>& a,
              const fragment<matrix_b, M, N, K, T, LB>& b, const fragment<accumulator, M, N, K, float>& c) {
  using F = fragment<accumulator, M, N, K, float>;
  detail::warp_uniform("mma_sync", nullptr, 0, 0);
  float out[F::num_elements];
  for (int e = 0; e < F::num_elements; ++e) {
    float s = c.x[e];
    for (int k = 0; k < K; ++k) s += static_cast<float>(a.at(F::row(e), k)) * static_cast<float>(b.at(k, F::col(e)));
    out[e] = s;
  }
  std::copy(out, out + F::num_elements, d.x);
}

}  // namespace nvcuda::wmma
