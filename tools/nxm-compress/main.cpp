// nxm-compress: N:M semi-structured sparsity (ADMM) and quantization-aware training of the BERT/GPT
// models of core::train, with a packed artifact and CPU kernels that run it.
//   nxm-compress ratio --layers L --hidden H --ffn F --plan qkv=S:B,ao=S:B,ffn1=S:B,ffn2=S:B
#include "common/cli.hpp"
#include "nxm/plan.hpp"

namespace {

struct RatioOptions {
  int layers = 12;
  int hidden = 768;
  int ffn = 3072;
  std::string plan = "qkv=2:4:8,ao=2:4:8,ffn1=2:4:8,ffn2=2:4:8";
  template <class V>
  void visit(V& v) {
    v("layers", layers, "transformer blocks", core::positive<int>());
    v("hidden", hidden, "model width H", core::positive<int>());
    v("ffn", ffn, "FFN width F", core::positive<int>());
    v("plan", plan, "qkv=S:B,ao=S:B,ffn1=S:B,ffn2=S:B with S dense or keep:group, B 32, 16, 8 or 4");
  }
};

int run_ratio(core::RunContext& ctx, const RatioOptions& o) {
  const core::nxm::Plan plan = core::nxm::parse_plan(o.plan);
  nlohmann::json r = core::nxm::compression_ratio(o.layers, o.hidden, o.ffn, plan).to_json();
  r["plan"] = plan.to_string();
  ctx.emit_result(r);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  core::App app("nxm-compress", "N:M sparsity (ADMM) and quantization-aware training with packed output");
  app.command<RatioOptions>("ratio", "Compression ratio of a plan: cr_paper (weights only) and cr_hardware (percent)",
                            run_ratio)
      .flag("--layers", "layers", "transformer blocks")
      .flag("--hidden", "hidden", "model width")
      .flag("--ffn", "ffn", "FFN width")
      .flag("--plan", "plan", "qkv=S:B,ao=S:B,ffn1=S:B,ffn2=S:B")
      .without_rundir();
  return app.main(argc, argv);
}
