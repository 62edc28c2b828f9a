// Transformer (GPT / BERT) forward/backward and AdamW on a CUDA device (see transformer_cuda.hpp).
// Every call is on the default stream in issue order; the host waits only where it reads results
// (losses, norms, downloads).
#include "train/transformer_cuda.hpp"

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "kernels/embedding_index.hpp"
#include "kernels/gemm.hpp"
#include "kernels/ops.hpp"
#include "kernels/runtime.hpp"

namespace core::train {

namespace k = core::kernels;
using k::bf16;
template <class T>
using Dev = k::DeviceBuffer<T>;

namespace {
// A batch's HostEmbeddingIndex on the device, reallocated per batch (the number of distinct ids varies).
struct DeviceIndex {
  Dev<std::int32_t> rows, starts, positions;
  k::EmbeddingIndex upload(const k::HostEmbeddingIndex& ix) {
    rows = Dev<std::int32_t>(std::span<const std::int32_t>(ix.rows));
    starts = Dev<std::int32_t>(std::span<const std::int32_t>(ix.starts));
    positions = Dev<std::int32_t>(std::span<const std::int32_t>(ix.positions));
    return {rows.data(), starts.data(), positions.data(), static_cast<int>(ix.rows.size())};
  }
};
}  // namespace

struct TransformerCuda::Impl {
  explicit Impl(const ModelConfig& cfg) : layout(cfg) {
    for (int g = 0; g < layout.num_groups(); ++g) {
      const std::size_t n = layout.groups()[g].size;
      w32.emplace_back(n);
      w16.emplace_back(n);
      g32.emplace_back(n);
      m32.emplace_back(n);
      v32.emplace_back(n);
      w32.back().zero();
      m32.back().zero();
      v32.back().zero();
      g32.back().zero();
    }
  }

  ParamLayout layout;
  k::Blas blas;
  std::vector<Dev<float>> w32, g32, m32, v32;
  std::vector<Dev<bf16>> w16;
  std::int64_t t = 0;  // AdamW steps taken

  // Activations for one (B, T); reallocated when the shape changes.
  int B = -1, Tn = -1;
  Dev<bf16> resid, ln1, qkv, atty, xmid, ln2, fch, fchg, lnf, logits;
  Dev<bf16> dres, dln, dqkv, datty, dfch, dfchg, dlnf;
  Dev<float> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd, lnf_mean, lnf_rstd, att_lse, losses;
  Dev<bf16> mlm_pre, mlm_act, mlm_ln, dmlm;  // bert: the MLM head's dense (pre-GELU, GELU) and LN outputs
  Dev<float> mlm_mean, mlm_rstd;
  Dev<std::int32_t> tokens, targets, segments;
  Dev<std::uint8_t> key_mask;
  DeviceIndex token_index, segment_index;
  Dev<char> workspace;
  // Attention of the current batch: causal for gpt; mask = key_mask.data() when the batch has one.
  bool causal = true;
  const std::uint8_t* mask = nullptr;

  const bf16* W(int l, BlockTensor t) const {
    return w16[ParamLayout::block_group(l)].data() + layout.block(l, t).offset;
  }
  float* G(int l, BlockTensor t) { return g32[ParamLayout::block_group(l)].data() + layout.block(l, t).offset; }
  const bf16* WE(EmbedTensor t) const { return w16[0].data() + layout.embed(t).offset; }
  float* GE(EmbedTensor t) { return g32[0].data() + layout.embed(t).offset; }
  std::size_t NC() const { return std::size_t(B) * Tn * layout.config().n_embd; }
  std::size_t lse_size() const { return std::size_t(B) * layout.config().n_head * Tn; }
  bf16* resid_at(int l) { return resid.data() + std::size_t(l) * NC(); }

  void ensure_acts(int b, int tn);
  void linear_backward(bf16* din, float* dw, float* db, const bf16* dout, const bf16* in, const bf16* w, int N, int C,
                       int OC);
  void block_forward(int l);
  void block_backward(int l);
};

void TransformerCuda::Impl::ensure_acts(int b, int tn) {
  if (b == B && tn == Tn) return;
  const ModelConfig& c = layout.config();
  B = b;
  Tn = tn;
  const std::size_t N = std::size_t(B) * Tn, C = c.n_embd, L = c.n_layer, NCv = N * C;
  resid = Dev<bf16>((L + 1) * NCv);
  ln1 = Dev<bf16>(L * NCv);
  qkv = Dev<bf16>(L * 3 * NCv);
  atty = Dev<bf16>(L * NCv);
  xmid = Dev<bf16>(L * NCv);
  ln2 = Dev<bf16>(L * NCv);
  fch = Dev<bf16>(L * 4 * NCv);
  fchg = Dev<bf16>(L * 4 * NCv);
  lnf = Dev<bf16>(NCv);
  logits = Dev<bf16>(N * std::size_t(c.padded_vocab()));
  dres = Dev<bf16>(NCv);
  dln = Dev<bf16>(NCv);
  dqkv = Dev<bf16>(3 * NCv);
  datty = Dev<bf16>(NCv);
  dfch = Dev<bf16>(4 * NCv);
  dfchg = Dev<bf16>(4 * NCv);
  dlnf = Dev<bf16>(NCv);
  ln1_mean = Dev<float>(L * N);
  ln1_rstd = Dev<float>(L * N);
  ln2_mean = Dev<float>(L * N);
  ln2_rstd = Dev<float>(L * N);
  lnf_mean = Dev<float>(N);
  lnf_rstd = Dev<float>(N);
  att_lse = Dev<float>(L * lse_size());
  losses = Dev<float>(N);
  tokens = Dev<std::int32_t>(N);
  targets = Dev<std::int32_t>(N);
  segments = Dev<std::int32_t>(N);
  key_mask = Dev<std::uint8_t>(N);
  if (c.architecture() == Arch::bert) {
    mlm_pre = Dev<bf16>(NCv);
    mlm_act = Dev<bf16>(NCv);
    mlm_ln = Dev<bf16>(NCv);
    dmlm = Dev<bf16>(NCv);
    mlm_mean = Dev<float>(N);
    mlm_rstd = Dev<float>(N);
  }
  workspace = Dev<char>(k::attention_workspace_bytes(B, Tn, c.n_head));
}

// din = dout W; dW += dout^T in (fp32); db += colsum(dout) (fp32). W is [OC, C].
void TransformerCuda::Impl::linear_backward(bf16* din, float* dw, float* db, const bf16* dout, const bf16* in,
                                            const bf16* w, int N, int C, int OC) {
  k::gemm(blas, false, false, N, C, OC, 1.0f, dout, OC, w, C, 0.0f, din, C);
  k::gemm(blas, true, false, OC, C, N, 1.0f, dout, OC, in, C, 1.0f, dw, C);
  k::bias_backward(db, dout, N, OC);
}

void TransformerCuda::Impl::block_forward(int l) {
  const ModelConfig& c = layout.config();
  const int N = B * Tn, C = c.n_embd;
  const std::size_t nc = NC();
  const float eps = static_cast<float>(c.layer_norm_eps);
  const bf16* x = resid_at(l);
  bf16* xout = resid_at(l + 1);
  bf16* l1 = ln1.data() + l * nc;
  bf16* q = qkv.data() + l * 3 * nc;
  bf16* ay = atty.data() + l * nc;
  bf16* xm = xmid.data() + l * nc;
  bf16* l2 = ln2.data() + l * nc;
  bf16* pre = fch.data() + l * 4 * nc;
  bf16* act = fchg.data() + l * 4 * nc;
  k::layernorm_forward(l1, ln1_mean.data() + l * N, ln1_rstd.data() + l * N, x, W(l, kLn1W), W(l, kLn1B), N, C, eps);
  k::gemm(blas, false, true, N, 3 * C, C, 1.0f, l1, C, W(l, kQkvW), C, 0.0f, q, 3 * C, {W(l, kQkvB)});
  k::attention_forward(ay, att_lse.data() + l * lse_size(), q, mask, causal, B, Tn, C, c.n_head);
  k::gemm(blas, false, true, N, C, C, 1.0f, ay, C, W(l, kAttnProjW), C, 0.0f, xm, C,
          {.bias = W(l, kAttnProjB), .residual = x});
  k::layernorm_forward(l2, ln2_mean.data() + l * N, ln2_rstd.data() + l * N, xm, W(l, kLn2W), W(l, kLn2B), N, C, eps);
  k::gemm(blas, false, true, N, 4 * C, C, 1.0f, l2, C, W(l, kFcW), C, 0.0f, act, 4 * C, {.bias = W(l, kFcB), .gelu = true, .pre_gelu = pre});
  k::gemm(blas, false, true, N, C, 4 * C, 1.0f, act, 4 * C, W(l, kFcProjW), 4 * C, 0.0f, xout, C,
          {.bias = W(l, kFcProjB), .residual = xm});
}

void TransformerCuda::Impl::block_backward(int l) {
  const ModelConfig& c = layout.config();
  const int N = B * Tn, C = c.n_embd;
  const std::size_t nc = NC();
  const bf16* x = resid_at(l);
  const bf16* xm = xmid.data() + l * nc;
  // x_out = xmid + c_proj(gelu(c_fc(ln_2(xmid))))
  linear_backward(dfchg.data(), G(l, kFcProjW), G(l, kFcProjB), dres.data(), fchg.data() + l * 4 * nc,
                  W(l, kFcProjW), N, 4 * C, C);
  k::gelu_backward(dfch.data(), fch.data() + l * 4 * nc, dfchg.data(), static_cast<std::int64_t>(4 * nc));
  linear_backward(dln.data(), G(l, kFcW), G(l, kFcB), dfch.data(), ln2.data() + l * nc, W(l, kFcW), N, C, 4 * C);
  k::layernorm_backward(dres.data(), G(l, kLn2W), G(l, kLn2B), dln.data(), xm, W(l, kLn2W), ln2_mean.data() + l * N,
                        ln2_rstd.data() + l * N, N, C);
  // xmid = x + c_proj(attn(c_attn(ln_1(x))))
  linear_backward(datty.data(), G(l, kAttnProjW), G(l, kAttnProjB), dres.data(), atty.data() + l * nc,
                  W(l, kAttnProjW), N, C, C);
  k::attention_backward(dqkv.data(), datty.data(), qkv.data() + l * 3 * nc, atty.data() + l * nc,
                        att_lse.data() + l * lse_size(), mask, causal, B, Tn, C, c.n_head, workspace.data());
  linear_backward(dln.data(), G(l, kQkvW), G(l, kQkvB), dqkv.data(), ln1.data() + l * nc, W(l, kQkvW), N, C, 3 * C);
  k::layernorm_backward(dres.data(), G(l, kLn1W), G(l, kLn1B), dln.data(), x, W(l, kLn1W), ln1_mean.data() + l * N,
                        ln1_rstd.data() + l * N, N, C);
}

TransformerCuda::TransformerCuda(const ModelConfig& cfg) {
  if (cfg.n_embd % 8 != 0)
    throw UsageError("device=cuda needs model.n_embd a multiple of 8 (cuBLASLt alignment), got " +
                     std::to_string(cfg.n_embd));
  if (!k::attention_head_dim_supported(cfg.n_embd / cfg.n_head))
    throw UsageError("device=cuda needs a head size model.n_embd / model.n_head of 16, 32, 64 or 128 (the fused "
                     "attention kernels), got " + std::to_string(cfg.n_embd / cfg.n_head));
  if (cfg.padded_vocab() % 8 != 0)
    throw UsageError("device=cuda needs model.vocab_pad_to such that the padded vocabulary is a multiple of 8, got " +
                     std::to_string(cfg.padded_vocab()));
  impl_ = std::make_unique<Impl>(cfg);
}

TransformerCuda::~TransformerCuda() = default;

const ParamLayout& TransformerCuda::layout() const { return impl_->layout; }
std::int64_t TransformerCuda::steps_taken() const { return impl_->t; }

void TransformerCuda::upload(const FlatBuffers<float>& params, const AdamW<float>* opt) {
  Impl& d = *impl_;
  for (int g = 0; g < d.layout.num_groups(); ++g) {
    const std::size_t n = d.layout.groups()[g].size;
    d.w32[g].upload({params.group(g), n});
    k::to_bf16(d.w16[g].data(), d.w32[g].data(), static_cast<std::int64_t>(n));
    if (opt) {
      d.m32[g].upload({opt->m().group(g), n});
      d.v32[g].upload({opt->v().group(g), n});
    }
  }
  if (opt) d.t = opt->steps_taken();
  k::synchronize();
}

namespace {
void copy_down(const Dev<float>& src, float* dst) {
  const auto host = src.download();
  std::copy(host.begin(), host.end(), dst);
}
}  // namespace

void TransformerCuda::download(FlatBuffers<float>& params, AdamW<float>* opt) const {
  const Impl& d = *impl_;
  for (int g = 0; g < d.layout.num_groups(); ++g) {
    copy_down(d.w32[g], params.group(g));
    if (opt) {
      copy_down(d.m32[g], opt->m().group(g));
      copy_down(d.v32[g], opt->v().group(g));
    }
  }
  if (opt) opt->set_steps_taken(d.t);
}

void TransformerCuda::download_grads(FlatBuffers<float>& grads) const {
  for (int g = 0; g < impl_->layout.num_groups(); ++g) copy_down(impl_->g32[g], grads.group(g));
}

void TransformerCuda::zero_grads() {
  for (auto& g : impl_->g32) g.zero();
}

double TransformerCuda::step(const Batch& batch, Task task, bool backward, float dloss) {
  Impl& d = *impl_;
  const ModelConfig& c = d.layout.config();
  const bool bert = c.architecture() == Arch::bert, mlm = task == Task::mlm;
  if (task == Task::classify)
    throw UsageError("device=cuda: the sequence-classification head runs on the host only; use device=cpu");
  if (task == Task::lm && bert) throw UsageError("task lm needs model.arch = gpt");
  if (mlm && !bert) throw UsageError("tasks mlm and classify need model.arch = bert");
  if (batch.B <= 0 || batch.T <= 0 || batch.T > c.n_positions)
    throw UsageError("batch " + std::to_string(batch.B) + " x " + std::to_string(batch.T) +
                     ": need B, T > 0 and T <= model.n_positions = " + std::to_string(c.n_positions));
  if (!batch.targets) throw UsageError("TransformerCuda::step needs targets");
  d.ensure_acts(batch.B, batch.T);
  const int N = batch.B * batch.T, C = c.n_embd, V = c.vocab_size, Vp = c.padded_vocab();
  const std::size_t n = static_cast<std::size_t>(N);
  int count = 0;
  for (int i = 0; i < N; ++i) {
    if (batch.targets[i] < -1 || batch.targets[i] >= V)
      throw DataError("target id " + std::to_string(batch.targets[i]) + " at position " + std::to_string(i) +
                      " is outside [-1, " + std::to_string(V) + ")");
    count += batch.targets[i] >= 0;
  }
  if (count == 0) throw DataError("batch has no target to predict (every target is -1)");
  // As on the host: segment embeddings are a bert feature; a batch without ids is all segment 0.
  std::vector<std::int32_t> default_segments;
  const std::int32_t* seg = batch.segments;
  if (bert && !seg) {
    default_segments.assign(n, 0);
    seg = default_segments.data();
  }
  if (bert)
    for (int i = 0; i < N; ++i)
      if (seg[i] < 0 || seg[i] >= c.type_vocab_size)
        throw DataError("segment id " + std::to_string(seg[i]) + " at position " + std::to_string(i) +
                        " is outside [0, " + std::to_string(c.type_vocab_size) + ")");
  const k::HostEmbeddingIndex ix = k::make_embedding_index(batch.tokens, N, V);  // also checks the token ids
  d.tokens.upload({batch.tokens, n});
  d.targets.upload({batch.targets, n});
  if (bert) d.segments.upload({seg, n});
  d.causal = !bert;
  d.mask = nullptr;
  if (batch.attention_mask) {
    d.key_mask.upload({batch.attention_mask, n});
    d.mask = d.key_mask.data();
  }

  k::embedding_forward(d.resid_at(0), d.tokens.data(), bert ? d.segments.data() : nullptr, d.WE(kWte), d.WE(kWpe),
                       bert ? d.WE(kWse) : nullptr, d.B, d.Tn, C);
  for (int l = 0; l < c.n_layer; ++l) d.block_forward(l);
  bf16* top = d.resid_at(c.n_layer);
  const float eps = static_cast<float>(c.layer_norm_eps);
  k::layernorm_forward(d.lnf.data(), d.lnf_mean.data(), d.lnf_rstd.data(), top, d.WE(kLnfW), d.WE(kLnfB), N, C, eps);
  // The tied decoder reads h: ln_f's output (lm), or the MLM transform's LN(gelu(dense(ln_f))) (mlm).
  const bf16* h = d.lnf.data();
  if (mlm) {
    k::gemm(d.blas, false, true, N, C, C, 1.0f, d.lnf.data(), C, d.WE(kMlmDenseW), C, 0.0f, d.mlm_act.data(), C,
            {.bias = d.WE(kMlmDenseB), .gelu = true, .pre_gelu = d.mlm_pre.data()});
    k::layernorm_forward(d.mlm_ln.data(), d.mlm_mean.data(), d.mlm_rstd.data(), d.mlm_act.data(), d.WE(kMlmLnW),
                         d.WE(kMlmLnB), N, C, eps);
    h = d.mlm_ln.data();
  }
  k::gemm(d.blas, false, true, N, Vp, C, 1.0f, h, C, d.WE(kWte), C, 0.0f, d.logits.data(), Vp,
          {.bias = mlm ? d.WE(kMlmBias) : nullptr});
  k::softmax_xent(d.losses.data(), backward ? d.logits.data() : nullptr, d.logits.data(), d.targets.data(),
                  dloss / static_cast<float>(count), N, V, Vp);
  if (backward) {
    bf16* dh = mlm ? d.dmlm.data() : d.dlnf.data();
    k::gemm(d.blas, false, false, N, C, Vp, 1.0f, d.logits.data(), Vp, d.WE(kWte), C, 0.0f, dh, C);
    k::gemm(d.blas, true, false, Vp, C, N, 1.0f, d.logits.data(), Vp, h, C, 1.0f, d.GE(kWte), C);
    if (mlm) {
      k::bias_backward(d.GE(kMlmBias), d.logits.data(), N, Vp);
      d.dln.zero();  // layernorm_backward accumulates into dx
      k::layernorm_backward(d.dln.data(), d.GE(kMlmLnW), d.GE(kMlmLnB), d.dmlm.data(), d.mlm_act.data(),
                            d.WE(kMlmLnW), d.mlm_mean.data(), d.mlm_rstd.data(), N, C);
      k::gelu_backward(d.dmlm.data(), d.mlm_pre.data(), d.dln.data(), static_cast<std::int64_t>(n) * C);
      d.linear_backward(d.dlnf.data(), d.GE(kMlmDenseW), d.GE(kMlmDenseB), d.dmlm.data(), d.lnf.data(),
                        d.WE(kMlmDenseW), N, C, C);
    }
    d.dres.zero();
    k::layernorm_backward(d.dres.data(), d.GE(kLnfW), d.GE(kLnfB), d.dlnf.data(), top, d.WE(kLnfW), d.lnf_mean.data(),
                          d.lnf_rstd.data(), N, C);
    for (int l = c.n_layer - 1; l >= 0; --l) d.block_backward(l);
    const k::EmbeddingIndex tokens = d.token_index.upload(ix);
    k::EmbeddingIndex segments;
    if (bert)
      segments = d.segment_index.upload(k::make_embedding_index(seg, N, c.type_vocab_size));
    k::embedding_backward(d.GE(kWte), d.GE(kWpe), bert ? d.GE(kWse) : nullptr, d.dres.data(), tokens, segments,
                          d.B, d.Tn, C);
  }
  const std::vector<float> losses = d.losses.download();  // waits for the step
  double sum = 0;
  for (float x : losses) sum += x;
  return sum / count;
}

double TransformerCuda::grad_norm() {
  double sq = 0;
  for (auto& g : impl_->g32) {
    const double n = k::l2_norm(impl_->blas, g.data(), static_cast<std::int64_t>(g.size()));
    sq += n * n;
  }
  return std::sqrt(sq);
}

void TransformerCuda::adamw(const AdamWHyper& hyper, double lr, double grad_scale) {
  Impl& d = *impl_;
  ++d.t;
  k::AdamW p;
  p.lr = static_cast<float>(lr);
  p.beta1 = static_cast<float>(hyper.beta1);
  p.beta2 = static_cast<float>(hyper.beta2);
  p.eps = static_cast<float>(hyper.eps);
  p.grad_scale = static_cast<float>(grad_scale);
  p.step = static_cast<int>(d.t);
  for (int g = 0; g < d.layout.num_groups(); ++g)
    for (const TensorView& view : d.layout.groups()[g].tensors) {
      p.weight_decay = view.decay ? static_cast<float>(hyper.weight_decay) : 0.0f;
      k::adamw_update(d.w32[g].data() + view.offset, d.m32[g].data() + view.offset, d.v32[g].data() + view.offset,
                      d.g32[g].data() + view.offset, d.w16[g].data() + view.offset,
                      static_cast<std::int64_t>(view.numel), p);
    }
}

}  // namespace core::train
