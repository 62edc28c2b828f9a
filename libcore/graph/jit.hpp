// The compiled back-end: the plan is written out as specialised C++ (one nested loop per level,
// set operations and bounds inlined, the set_ops.hpp kernels embedded), compiled with the system
// compiler into a shared object (c++ -O3 -march=native -shared -fPIC, or $TOOLKIT_JIT_CXX),
// loaded with dlopen and cached under a hash of the emitted source, the compiler, its flags and the
// CPU (model and feature flags), so a second run of the same plan on the same kind of node skips
// compilation. Counts equal the interpreter's.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "graph/csr.hpp"
#include "graph/parallel.hpp"
#include "graph/plan.hpp"

namespace core::graph {

// The generated source for a plan (also written into run directories for inspection).
std::string emit_cpp(const Plan& plan);

// Default cache folder: $XDG_CACHE_HOME or ~/.cache, then toolkit/graphzero-jit.
std::filesystem::path default_jit_cache();

// Whether `plan`'s kernel is compiled in `cache_dir` already (a JitKernel would only load it).
bool jit_kernel_cached(const Plan& plan, const std::filesystem::path& cache_dir);

class JitKernel {
 public:
  // Compiles (or finds in `cache_dir`) and loads the kernel of `plan`. Throws core::Error
  // (internal) with the compiler's message when compilation fails.
  JitKernel(const Plan& plan, const std::filesystem::path& cache_dir);
  ~JitKernel();
  JitKernel(const JitKernel&) = delete;
  JitKernel& operator=(const JitKernel&) = delete;

  std::uint64_t count(const Graph& g, const ExecOptions& opt) const;

  double compile_seconds() const { return compile_s_; }  // 0 when loaded from the cache
  bool from_cache() const { return from_cache_; }
  const std::filesystem::path& library() const { return so_; }
  const std::filesystem::path& source() const { return src_; }

 private:
  using Fn = std::uint64_t (*)(const std::uint64_t*, const std::uint32_t*, const std::uint32_t*, const std::int32_t*,
                               std::uint32_t, std::uint32_t, std::uint32_t*, std::uint64_t, std::uint32_t, int*);
  const Plan& plan_;
  void* handle_ = nullptr;
  Fn fn_ = nullptr;
  double compile_s_ = 0;
  bool from_cache_ = false;
  std::filesystem::path so_, src_;
};

}  // namespace core::graph
