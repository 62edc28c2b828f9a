// nvcuda::wmma (CUDA C++ warp matrix functions) on the host emulator (simt.hpp). The API leaves the
// map of fragment elements to lanes unspecified, so any map is valid for code that uses only the
// API: here a lane holds the whole operand of matrix_a / matrix_b fragments, and of an accumulator
// the elements i = lane, lane + 32, ... of the row-major M x N tile. Loads and stores therefore touch
// memory from each lane separately, when that lane's fiber runs: data other lanes wrote must be
// behind a barrier, as on the device. Products accumulate in fp32 in k order.
#pragma once
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

template <class Use, int M, int N, int K, class T, class Layout, class V>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, V value) {
  for (auto& e : f.x) e = static_cast<T>(value);
}

template <class Use, int M, int N, int K, class T, class Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  using F = fragment<Use, M, N, K, T, Layout>;
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c)
      f.x[r * F::cols + c] = std::is_same_v<Layout, col_major> ? p[c * ldm + r] : p[r * ldm + c];
}

template <int M, int N, int K, class T>
void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const T* p, unsigned ldm, layout_t layout) {
  using F = fragment<accumulator, M, N, K, T>;
  for (int e = 0; e < F::num_elements; ++e)
    f.x[e] = layout == mem_row_major ? p[F::row(e) * ldm + F::col(e)] : p[F::col(e) * ldm + F::row(e)];
}

template <int M, int N, int K, class T>
void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t layout) {
  using F = fragment<accumulator, M, N, K, T>;
  for (int e = 0; e < F::num_elements; ++e)
    (layout == mem_row_major ? p[F::row(e) * ldm + F::col(e)] : p[F::col(e) * ldm + F::row(e)]) = f.x[e];
}

template <int M, int N, int K, class T, class LA, class LB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LA>& a,
              const fragment<matrix_b, M, N, K, T, LB>& b, const fragment<accumulator, M, N, K, float>& c) {
  using F = fragment<accumulator, M, N, K, float>;
  float out[F::num_elements];
  for (int e = 0; e < F::num_elements; ++e) {
    float s = c.x[e];
    for (int k = 0; k < K; ++k) s += static_cast<float>(a.at(F::row(e), k)) * static_cast<float>(b.at(k, F::col(e)));
    out[e] = s;
  }
  std::copy(out, out + F::num_elements, d.x);
}

}  // namespace nvcuda::wmma
