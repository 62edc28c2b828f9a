// Bandwidth of the device quantizers against a device-to-device copy (quantize_cuda.hpp): in each round,
// each kernel and the copy run kLaunches times back to back between two synchronisations (so the
// synchronisation's latency is spread over them); the best round of each counts. Only core::kernels'
// runtime is used, so the emulated build (tests/support/simt) links it too.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "common/errors.hpp"
#include "zero/quantize.hpp"
#include "zero/quantize_cuda.hpp"

namespace core::zero::device {

namespace {

constexpr int kLaunches = 8;

// Mean seconds of one fn() over kLaunches back-to-back launches on `stream`.
template <class Fn>
double timed(kernels::Stream stream, Fn&& fn) {
  kernels::detail::synchronize_stream(stream);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kLaunches; ++i) fn();
  kernels::detail::synchronize_stream(stream);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kLaunches;
}

}  // namespace

DeviceQuantizeThroughput measure_device_quantize_throughput(std::size_t n, std::size_t block, int reps,
                                                            int sum_inputs) {
  if (block % 2 != 0 || n == 0 || reps < 1 || sum_inputs < 1)
    throw UsageError("quantize-speed (device): need n > 0, an even block, reps >= 1 and sum inputs >= 1");
  const std::size_t nb = block_count(n, block), cb = int4_bytes(n);
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = float(std::sin(double(i) * 0.001)) * float(1 + i % 7);
  kernels::DeviceBuffer<float> x{std::span<const float>(host)}, y(n), scales(nb * sum_inputs);
  kernels::DeviceBuffer<std::int8_t> q8(n);
  kernels::DeviceBuffer<std::uint8_t> q4(cb * sum_inputs);
  const kernels::Stream stream = nullptr;
  // sum_inputs int4 spans to reduce: copies of the first one.
  quantize_int4(x.data(), n, block, q4.data(), scales.data(), stream);
  for (int j = 1; j < sum_inputs; ++j) {
    kernels::detail::copy_on_device(q4.data() + j * cb, q4.data(), cb, stream);
    kernels::detail::copy_on_device(scales.data() + j * nb, scales.data(), nb * sizeof(float), stream);
  }
  double t_copy = 1e30, t_q8 = 1e30, t_d8 = 1e30, t_q4 = 1e30, t_d4 = 1e30, t_sum = 1e30;
  for (int r = 0; r <= reps; ++r) {  // round 0 warms up and is not counted
    const auto keep = [&](double& best, double t) { best = r == 0 ? best : std::min(best, t); };
    keep(t_copy, timed(stream, [&] { kernels::detail::copy_on_device(y.data(), x.data(), n * sizeof(float), stream); }));
    keep(t_q8, timed(stream, [&] { quantize_int8(x.data(), n, block, q8.data(), scales.data(), stream); }));
    keep(t_d8, timed(stream, [&] { dequantize_int8(q8.data(), scales.data(), n, block, y.data(), stream); }));
    keep(t_q4, timed(stream, [&] { quantize_int4(x.data(), n, block, q4.data(), scales.data(), stream); }));
    keep(t_d4, timed(stream, [&] { dequantize_int4(q4.data(), scales.data(), n, block, y.data(), stream); }));
    keep(t_sum, timed(stream, [&] {
           dequantize_sum_int4(q4.data(), cb, scales.data(), nb, sum_inputs, n, block, 0.25f, y.data(), stream);
         }));
  }
  const double f = 4.0 * n, s = 4.0 * nb;  // fp32 bytes of the data and of its scales
  const auto gbs = [](double bytes, double t) { return bytes / t / 1e9; };
  DeviceQuantizeThroughput out;
  out.copy_gbs = gbs(2 * f, t_copy);
  out.quantize_int8_gbs = gbs(f + n + s, t_q8);
  out.dequantize_int8_gbs = gbs(n + s + f, t_d8);
  out.quantize_int4_gbs = gbs(f + cb + s, t_q4);
  out.dequantize_int4_gbs = gbs(cb + s + f, t_d4);
  out.dequantize_sum_int4_gbs = gbs(sum_inputs * (cb + s) + f, t_sum);
  out.sum_inputs = sum_inputs;
  return out;
}

}  // namespace core::zero::device
