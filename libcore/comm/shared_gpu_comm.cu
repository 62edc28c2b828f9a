// The shared-GPU backend's device operations (see shared_gpu_comm.hpp): device-to-device copies and the
// rank-order reduction kernel. The same source runs on the device and on the host SIMT emulator.
#include <cstdint>
#include <string>
#include <type_traits>

#include "comm/shared_gpu_comm.hpp"
#include "kernels/device_utils.cuh"

namespace core::comm {
namespace {

namespace dev = kernels::dev;

constexpr int kThreads = 256;

struct Inputs {
  const void* p[kMaxSharedGpuRanks];
  int count;
};

// How an element type is accumulated: reduce_buffers' codecs (dtype.cpp).
struct F32 {
  using Elem = float;
  using Acc = float;
  __device__ static float load(float v) { return v; }
  __device__ static float store(float v) { return v; }
};
struct Bf16 {
  using Elem = std::uint16_t;
  using Acc = float;
  __device__ static float load(std::uint16_t v) { return bf16_to_float(v); }
  __device__ static std::uint16_t store(float v) { return float_to_bf16(v); }
};
template <class T, class A>
struct Int {
  using Elem = T;
  using Acc = A;
  __device__ static A load(T v) { return A(v); }
  __device__ static T store(A v) { return T(v); }  // wraps modulo 2^8
};

__device__ inline float add(float a, float b) { return __fadd_rn(a, b); }
__device__ inline std::int32_t add(std::int32_t a, std::int32_t b) { return a + b; }
__device__ inline std::uint32_t add(std::uint32_t a, std::uint32_t b) { return a + b; }

// out[i] = op over the inputs in input order; `out` may be one of the inputs.
template <class Codec>
__global__ void reduce_kernel(Inputs in, typename Codec::Elem* out, std::size_t count, ReduceOp op, int divisor) {
  using T = typename Codec::Elem;
  using Acc = typename Codec::Acc;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    Acc acc = Codec::load(static_cast<const T*>(in.p[0])[i]);
    for (int k = 1; k < in.count; ++k) {
      const Acc v = Codec::load(static_cast<const T*>(in.p[k])[i]);
      switch (op) {
        case ReduceOp::sum:
        case ReduceOp::avg: acc = add(acc, v); break;
        case ReduceOp::max: acc = acc < v ? v : acc; break;  // std::max(acc, v)
        case ReduceOp::min: acc = v < acc ? v : acc; break;  // std::min(acc, v)
      }
    }
    if constexpr (std::is_same_v<Acc, float>)
      if (op == ReduceOp::avg) acc = __fdiv_rn(acc, float(divisor));
    out[i] = Codec::store(acc);
  }
}

template <class Codec>
void reduce_as(const Inputs& in, void* out, std::size_t count, ReduceOp op, int divisor, kernels::Stream stream) {
  dev::launch(reduce_kernel<Codec>, dev::blocks_for(std::int64_t(count), kThreads), kThreads, 0, stream, in,
              static_cast<typename Codec::Elem*>(out), count, op, divisor);
}

#ifdef TOOLKIT_SIMT_EMULATION
void use_device(int) {}  // the emulator is the one device
#else
void use_device(int device) { CUDA_CHECK(cudaSetDevice(device)); }
#endif

class DeviceBufferOps final : public BufferOps {
 public:
  explicit DeviceBufferOps(int device) : device_(device) {}
  const char* backend() const override { return "shared_gpu"; }
  void ready(Stream stream) const override {
    use_device(device_);
    kernels::detail::synchronize_stream(static_cast<kernels::Stream>(stream));
  }
  void copy(void* dst, const void* src, std::size_t bytes, Stream stream) const override {
    kernels::detail::copy_on_device(dst, src, bytes, static_cast<kernels::Stream>(stream));
  }
  void reduce(std::span<const void* const> inputs, void* out, std::size_t count, DType dtype, ReduceOp op,
              int divisor, Stream stream) const override {
    if (inputs.empty() || count == 0) return;
    Inputs in{};
    in.count = static_cast<int>(inputs.size());
    for (int k = 0; k < in.count; ++k) in.p[k] = inputs[k];
    const auto s = static_cast<kernels::Stream>(stream);
    switch (dtype) {
      case DType::f32: return reduce_as<F32>(in, out, count, op, divisor, s);
      case DType::bf16: return reduce_as<Bf16>(in, out, count, op, divisor, s);
      case DType::i8: return reduce_as<Int<std::int8_t, std::int32_t>>(in, out, count, op, divisor, s);
      case DType::u8: return reduce_as<Int<std::uint8_t, std::uint32_t>>(in, out, count, op, divisor, s);
    }
  }

 private:
  int device_;
};

void check_rank_count(int n) {
  if (n > kMaxSharedGpuRanks)
    throw UsageError("comm: the shared_gpu backend runs at most " + std::to_string(kMaxSharedGpuRanks) +
                     " ranks on one GPU, got " + std::to_string(n));
}

}  // namespace

std::shared_ptr<const BufferOps> shared_gpu_buffer_ops(int device) {
  return std::make_shared<const DeviceBufferOps>(device);
}

std::vector<std::unique_ptr<Communicator>> make_shared_gpu_communicators(int n, int device) {
  check_rank_count(n);
  return make_thread_communicators(n, shared_gpu_buffer_ops(device));
}

void run_shared_gpu_ranks(int n, const std::function<void(Communicator&)>& fn, Seconds timeout, int device) {
  check_rank_count(n);
  run_thread_ranks(n, fn, timeout, shared_gpu_buffer_ops(device));
}

}  // namespace core::comm
