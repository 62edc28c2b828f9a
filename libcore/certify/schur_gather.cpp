// The gather of the dense-route Schur complement columns (schur_complement.hpp, gather_upper). Compiled
// without floating-point contraction (libcore/certify/CMakeLists.txt): every product is rounded before it is
// summed, in every lane, so a run of kGatherWidth columns gives bitwise the sums of one column at a time (a
// compiler fuses the vector loop's multiply-adds but not the scalar one's, and SDPLIB-like degenerate problems
// end differently on a last-bit change of M).
#include "certify/schur_complement.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>

namespace core::certify {

namespace {

template <int Width>
void gather_width(const BlockTerms& t, int a, int n, const double* S, double* s) {
  double acc[Width] = {};
  for (const BlockEntry* e = t.upper_begin(a); e != t.upper_end(a); ++e) {
    const double* w = S + static_cast<std::size_t>(e->p + e->q * n) * Width;
    for (int b = 0; b < Width; ++b) acc[b] += e->v * w[b];
  }
  for (int b = 0; b < Width; ++b) s[b] = acc[b];
}

}  // namespace

void gather_upper(const BlockTerms& t, int a, int n, const double* S, int width, double* s) {
  if (width == kGatherWidth) return gather_width<kGatherWidth>(t, a, n, S, s);
  if (width == 1) return gather_width<1>(t, a, n, S, s);
  throw std::logic_error("gather_upper: width " + std::to_string(width) + " is neither 1 nor kGatherWidth");
}

}  // namespace core::certify
