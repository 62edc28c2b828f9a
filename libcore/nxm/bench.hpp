// `nxm-compress bench`: batch-1 latency of the packed kernels on a BERT of given shape with random
// weights (latency does not depend on training): every component linear of one block and the whole
// forward of one sequence of SEQ tokens, for each packed setting against the same weights as dense
// fp32 (Eigen) and dense int8 (the packed kernels without sparsity), all timed interleaved call by call
// in one process so that load changes on the machine affect them alike; plus the packed files' sizes.
// Each time is a median of wall-clock time (`*_ms`) and of the process's CPU time (`*_cpu_ms`, all
// threads): with threads=1 on a loaded machine the CPU time leaves out waiting for a core.
// Threads: the command's `threads` rule (all three forms split their rows over the same team).
// device=cuda: the packed settings' linears and the dense int8 baseline's run on the CUDA device
// (packed_model.hpp; times include the per-call copies of activations and outputs), dense fp32 stays on
// the CPU; refused (exit 2) without CUDA or a device.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/rundir.hpp"

namespace core::nxm {

struct BenchOptions {
  int layers = 12;
  int hidden = 768;
  int heads = 12;
  int vocab = 257;  // byte ids: the token table stays small next to the component matrices
  std::string settings = "2:4:8,2:4:4";  // each applied to all four components
  std::string seq = "1,16,128";          // tokens per sequence
  int repeats = 10;
  std::uint64_t seed = 1;
  std::string device = "cpu";
  template <class V>
  void visit(V& v) {
    v("layers", layers, "transformer blocks", core::positive<int>());
    v("hidden", hidden, "model width C (FFN 4 C; a multiple of 64)", core::positive<int>());
    v("heads", heads, "attention heads (must divide hidden)", core::positive<int>());
    v("vocab", vocab, "vocabulary size", core::positive<int>());
    v("settings", settings, "packed settings timed, comma-separated keep:group:bits or dense:bits");
    v("seq", seq, "sequence lengths (tokens), comma-separated");
    v("repeats", repeats, "timed calls per model and shape (after one warm-up call); medians reported", core::positive<int>());
    v("seed", seed, "seed of the random weights and tokens");
    v("device", device, "cpu, or cuda: the packed settings and dense int8 on the CUDA device (dense fp32 on the CPU)",
      core::one_of({"cpu", "cuda"}));
  }
};

nlohmann::json run_bench(const BenchOptions& o, const RunDir& rundir);

}  // namespace core::nxm
