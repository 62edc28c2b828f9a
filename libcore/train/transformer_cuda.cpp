// Transformer (GPT / BERT) forward/backward and AdamW on a CUDA device (see transformer_cuda.hpp).
// Every call is on the default stream in issue order; the host waits only where it reads results
// (losses, norms, downloads). A random-LTD block (set_token_routing) runs the same block code on the
// gathered rows: its activations take the first B x kept rows of the block's slices.
#include "train/transformer_cuda.hpp"

#include <cmath>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common/errors.hpp"
#include "kernels/embedding_index.hpp"
#include "kernels/gemm.hpp"
#include "kernels/ops.hpp"
#include "kernels/runtime.hpp"
#include "kernels/token_routing.hpp"

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
  // Allocates the parameter-sized buffers of every group but `held_parts` (a data-parallel engine holds those).
  Impl(const ModelConfig& cfg, unsigned held_parts) : layout(cfg) {
    for (int g = 0; g < layout.num_groups(); ++g) {
      const std::size_t n = layout.groups()[g].size;
      const auto own = [&](auto& buffers, unsigned part) {  // zeroed, or none
        buffers.emplace_back();
        if (!(held_parts & part)) buffers.back() = std::remove_reference_t<decltype(buffers.back())>(n);
      };
      own(w32, kWeights32);
      own(w16, kWeights16);
      own(g32, kGrads);
      own(m32, kMoments);
      own(v32, kMoments);
      for (Dev<float>* b : {&w32.back(), &m32.back(), &v32.back(), &g32.back()})
        if (b->size()) b->zero();
      bound.push_back({w32.back().data(), g32.back().data(), m32.back().data(), v32.back().data(), w16.back().data()});
    }
    if (held_parts) held.assign(layout.num_groups(), held_parts);
  }

  ParamLayout layout;
  k::Blas blas;
  std::vector<Dev<float>> w32, g32, m32, v32;
  std::vector<Dev<bf16>> w16;
  std::vector<TransformerCuda::GroupBuffers> bound;  // what the passes read and write: owned, or an engine's
  std::vector<unsigned> held;                         // per group, the GroupParts an engine holds (none: empty)
  std::int64_t t = 0;  // AdamW steps taken
  // Error unless every group owns `parts` (the whole-model operations).
  void require_owned(unsigned parts, const char* what) const {
    for (const unsigned r : held)
      if (r & parts)
        throw Error(ExitCode::internal, std::string("TransformerCuda::") + what +
                                            ": a data-parallel engine holds part of the state (held_parts)");
  }

  // Activations for one (B, T); reallocated when the shape changes.
  int B = -1, Tn = -1;
  Dev<bf16> resid, ln1, qkv, atty, xmid, ln2, fch, fchg, lnf, logits;
  Dev<bf16> dres, dln, dqkv, datty, dfch, dfchg, dlnf;
  Dev<float> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd, lnf_mean, lnf_rstd, att_lse, losses;
  Dev<bf16> mlm_pre, mlm_act, mlm_ln, dmlm;  // bert: the MLM head's dense (pre-GELU, GELU) and LN outputs
  Dev<float> mlm_mean, mlm_rstd;
  // bert: the classification head's pooler (pre-tanh, tanh, and its gradient) and logits [B, labels_ld]
  Dev<bf16> pool_pre, pooled, dpooled, cls_logits;
  Dev<float> cls_losses;
  Dev<std::int32_t> tokens, targets, segments, labels;
  Dev<std::uint8_t> key_mask;
  DeviceIndex token_index, segment_index;
  Dev<char> workspace;
  Model<float>::GroupHook group_hook;  // a data-parallel engine's (null: none)
  void hook(int g, Model<float>::Pass pass, bool before) {
    if (group_hook) group_hook(g, pass, before);
  }
  // Attention of the current batch: causal for gpt; mask = key_mask.data() when the batch has one.
  bool causal = true;
  const std::uint8_t* mask = nullptr;
  std::uint64_t flops = 0;  // gemm_flops()

  // Random-LTD: the routing set, the last layers uploaded (kept when the routing is cleared: a trainer sets
  // and clears it every micro step), the slot of each block in them (-1: every position), the positions of
  // the current step [slot][B][kept], and the routed block's gathered rows (its input, then its output or
  // the output's gradient) and key padding mask.
  TokenRouting routing;
  std::vector<int> uploaded_layers;
  Dev<std::int32_t> route_layers, route_pos;
  std::vector<int> route_slot;
  Dev<bf16> routed_in, routed_out;
  Dev<std::uint8_t> routed_mask;

  const bf16* W(int l, BlockTensor t) const {
    return bound[ParamLayout::block_group(l)].w16 + layout.block(l, t).offset;
  }
  float* G(int l, BlockTensor t) { return bound[ParamLayout::block_group(l)].g32 + layout.block(l, t).offset; }
  const bf16* WE(EmbedTensor t) const { return bound[0].w16 + layout.embed(t).offset; }
  float* GE(EmbedTensor t) { return bound[0].g32 + layout.embed(t).offset; }
  std::size_t NC() const { return std::size_t(B) * Tn * layout.config().n_embd; }
  std::size_t lse_size() const { return std::size_t(B) * layout.config().n_head * Tn; }
  bf16* resid_at(int l) { return resid.data() + std::size_t(l) * NC(); }

  // Row stride of the classification logits: num_labels rounded up to 8 (16-byte rows for cuBLASLt).
  int labels_ld() const { return (layout.config().num_labels + 7) / 8 * 8; }

  void ensure_acts(int b, int tn);
  // k::gemm with this object's handles, its 2 M N K FLOPs counted.
  void gemm(bool ta, bool tb, int M, int N, int K, const bf16* A, int lda, const bf16* Bm, int ldb, bf16* Cm, int ldc,
            const k::GemmEpilogue& ep = {}) {
    flops += 2 * std::uint64_t(M) * std::uint64_t(N) * std::uint64_t(K);
    k::gemm(blas, ta, tb, M, N, K, 1.0f, A, lda, Bm, ldb, 0.0f, Cm, ldc, ep);
  }
  // The same with an fp32 output accumulated into (parameter gradients).
  void gemm_accumulate(bool ta, bool tb, int M, int N, int K, const bf16* A, int lda, const bf16* Bm, int ldb,
                       float* Cm, int ldc) {
    flops += 2 * std::uint64_t(M) * std::uint64_t(N) * std::uint64_t(K);
    k::gemm(blas, ta, tb, M, N, K, 1.0f, A, lda, Bm, ldb, 1.0f, Cm, ldc);
  }
  // The fused attention's products over B sequences of T rows, as the host's GEMMs count them: QK^T
  // and PV forward (2 x 2 B T^2 C), twice as many backward.
  void count_attention(int T, bool backward) {
    flops += (backward ? 8 : 4) * std::uint64_t(B) * std::uint64_t(T) * std::uint64_t(T) * layout.config().n_embd;
  }
  void linear_backward(bf16* din, float* dw, float* db, const bf16* dout, const bf16* in, const bf16* w, int N, int C,
                       int OC, int ld_in = 0);
  // Draws the routed blocks' positions of a B x Tn batch (kernels::sample_token_subsets).
  void route_batch();
  const std::int32_t* positions(int slot) const {
    return route_pos.data() + std::size_t(slot) * B * routing.kept;
  }
  // Gathers block l's input rows (and the batch's padding mask) at the positions of `slot` into routed_in
  // (routed_mask); returns the gathered mask, null when the batch has none.
  const std::uint8_t* gather_block_input(int l, int slot);
  // Block l: on every row, or (routed) gather -> the block on the kept rows -> scatter.
  void block_forward(int l);
  void block_backward(int l);
  // Block l over B sequences of T rows (T <= Tn): x -> xout; backward turns dx (dL/dxout) into dL/dx in
  // place. key_mask: [B*T] or null.
  void block_rows_forward(int l, const bf16* x, bf16* xout, int T, const std::uint8_t* key_mask);
  void block_rows_backward(int l, const bf16* x, bf16* dx, int T, const std::uint8_t* key_mask);
  void token_head_forward(bool mlm, bool backward, float scale);
  void token_head_backward(bool mlm);
  void class_head_forward(bool backward, float scale);
  void class_head_backward();
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
    pool_pre = Dev<bf16>(B * C);
    pooled = Dev<bf16>(B * C);
    dpooled = Dev<bf16>(B * C);
    cls_logits = Dev<bf16>(std::size_t(B) * labels_ld());
    cls_losses = Dev<float>(B);
    labels = Dev<std::int32_t>(B);
  }
  workspace = Dev<char>(k::attention_workspace_bytes(B, Tn, c.n_head));
}

// din = dout W; dW += dout^T in (fp32); db += colsum(dout) (fp32). W is [OC, C]; rows of in and din
// are ld_in apart (0: C).
void TransformerCuda::Impl::linear_backward(bf16* din, float* dw, float* db, const bf16* dout, const bf16* in,
                                            const bf16* w, int N, int C, int OC, int ld_in) {
  if (ld_in == 0) ld_in = C;
  gemm(false, false, N, C, OC, dout, OC, w, C, din, ld_in);
  gemm_accumulate(true, false, OC, C, N, dout, OC, in, ld_in, dw, C);
  k::bias_backward(db, dout, N, OC, OC);
}

void TransformerCuda::Impl::route_batch() {
  const ModelConfig& c = layout.config();
  route_slot.assign(c.n_layer, -1);
  if (routing.layers.empty()) return;
  if (routing.kept > Tn)
    throw UsageError("token routing keeps " + std::to_string(routing.kept) + " positions of sequences of " +
                     std::to_string(Tn));
  const int slots = static_cast<int>(routing.layers.size());
  for (int s = 0; s < slots; ++s) route_slot[routing.layers[s]] = s;
  const std::size_t rows = std::size_t(B) * routing.kept, full = std::size_t(B) * Tn;
  if (route_pos.size() < slots * rows) route_pos = Dev<std::int32_t>(slots * full);
  if (routed_in.size() < full * c.n_embd) {
    routed_in = Dev<bf16>(full * c.n_embd);
    routed_out = Dev<bf16>(full * c.n_embd);
    routed_mask = Dev<std::uint8_t>(full);
  }
  k::sample_token_subsets(route_pos.data(), route_layers.data(), slots, routing.seed, routing.step, routing.rank,
                          routing.sequence0, B, Tn, routing.kept);
}

const std::uint8_t* TransformerCuda::Impl::gather_block_input(int l, int slot) {
  k::gather_rows(routed_in.data(), resid_at(l), positions(slot), B, Tn, routing.kept,
                 layout.config().n_embd * sizeof(bf16));
  if (!mask) return nullptr;
  k::gather_rows(routed_mask.data(), mask, positions(slot), B, Tn, routing.kept, 1);
  return routed_mask.data();
}

void TransformerCuda::Impl::block_forward(int l) {
  const int slot = route_slot[l];
  if (slot < 0) {
    block_rows_forward(l, resid_at(l), resid_at(l + 1), Tn, mask);
    return;
  }
  const std::uint8_t* kept_mask = gather_block_input(l, slot);
  block_rows_forward(l, routed_in.data(), routed_out.data(), routing.kept, kept_mask);
  k::detail::copy_on_device(resid_at(l + 1), resid_at(l), NC() * sizeof(bf16), nullptr);  // the dropped rows
  k::scatter_rows(resid_at(l + 1), routed_out.data(), positions(slot), B, Tn, routing.kept,
                  layout.config().n_embd * sizeof(bf16));
}

void TransformerCuda::Impl::block_backward(int l) {
  const int slot = route_slot[l];
  if (slot < 0) {
    block_rows_backward(l, resid_at(l), dres.data(), Tn, mask);
    return;
  }
  // The kept rows' gradients through the block; the dropped rows' stay in dres (the identity).
  const int r = routing.kept;
  const std::size_t row_bytes = layout.config().n_embd * sizeof(bf16);
  const std::uint8_t* kept_mask = gather_block_input(l, slot);
  k::gather_rows(routed_out.data(), dres.data(), positions(slot), B, Tn, r, row_bytes);
  block_rows_backward(l, routed_in.data(), routed_out.data(), r, kept_mask);
  k::scatter_rows(dres.data(), routed_out.data(), positions(slot), B, Tn, r, row_bytes);
}

void TransformerCuda::Impl::block_rows_forward(int l, const bf16* x, bf16* xout, int T, const std::uint8_t* key_mask) {
  const ModelConfig& c = layout.config();
  const int N = B * T, C = c.n_embd;
  const std::size_t nc = NC();  // block l's slices are laid out for B x Tn rows
  const std::size_t nf = std::size_t(B) * Tn;
  const float eps = static_cast<float>(c.layer_norm_eps);
  bf16* l1 = ln1.data() + l * nc;
  bf16* q = qkv.data() + l * 3 * nc;
  bf16* ay = atty.data() + l * nc;
  bf16* xm = xmid.data() + l * nc;
  bf16* l2 = ln2.data() + l * nc;
  bf16* pre = fch.data() + l * 4 * nc;
  bf16* act = fchg.data() + l * 4 * nc;
  k::layernorm_forward(l1, ln1_mean.data() + l * nf, ln1_rstd.data() + l * nf, x, W(l, kLn1W), W(l, kLn1B), N, C, eps);
  gemm(false, true, N, 3 * C, C, l1, C, W(l, kQkvW), C, q, 3 * C, {W(l, kQkvB)});
  k::attention_forward(ay, att_lse.data() + l * lse_size(), q, key_mask, causal, B, T, C, c.n_head);
  count_attention(T, false);
  gemm(false, true, N, C, C, ay, C, W(l, kAttnProjW), C, xm, C, {.bias = W(l, kAttnProjB), .residual = x});
  k::layernorm_forward(l2, ln2_mean.data() + l * nf, ln2_rstd.data() + l * nf, xm, W(l, kLn2W), W(l, kLn2B), N, C, eps);
  gemm(false, true, N, 4 * C, C, l2, C, W(l, kFcW), C, act, 4 * C, {.bias = W(l, kFcB), .gelu = true, .pre_gelu = pre});
  gemm(false, true, N, C, 4 * C, act, 4 * C, W(l, kFcProjW), 4 * C, xout, C, {.bias = W(l, kFcProjB), .residual = xm});
}

void TransformerCuda::Impl::block_rows_backward(int l, const bf16* x, bf16* dx, int T, const std::uint8_t* key_mask) {
  const ModelConfig& c = layout.config();
  const int N = B * T, C = c.n_embd;
  const std::size_t nc = NC();
  const std::size_t nf = std::size_t(B) * Tn;
  const bf16* xm = xmid.data() + l * nc;
  // x_out = xmid + c_proj(gelu(c_fc(ln_2(xmid))))
  linear_backward(dfchg.data(), G(l, kFcProjW), G(l, kFcProjB), dx, fchg.data() + l * 4 * nc, W(l, kFcProjW), N,
                  4 * C, C);
  k::gelu_backward(dfch.data(), fch.data() + l * 4 * nc, dfchg.data(), static_cast<std::int64_t>(4) * N * C);
  linear_backward(dln.data(), G(l, kFcW), G(l, kFcB), dfch.data(), ln2.data() + l * nc, W(l, kFcW), N, C, 4 * C);
  k::layernorm_backward(dx, G(l, kLn2W), G(l, kLn2B), dln.data(), xm, W(l, kLn2W), ln2_mean.data() + l * nf,
                        ln2_rstd.data() + l * nf, N, C);
  // xmid = x + c_proj(attn(c_attn(ln_1(x))))
  linear_backward(datty.data(), G(l, kAttnProjW), G(l, kAttnProjB), dx, atty.data() + l * nc, W(l, kAttnProjW), N, C,
                  C);
  k::attention_backward(dqkv.data(), datty.data(), qkv.data() + l * 3 * nc, atty.data() + l * nc,
                        att_lse.data() + l * lse_size(), key_mask, causal, B, T, C, c.n_head, workspace.data());
  count_attention(T, true);
  linear_backward(dln.data(), G(l, kQkvW), G(l, kQkvB), dqkv.data(), ln1.data() + l * nc, W(l, kQkvW), N, C, 3 * C);
  k::layernorm_backward(dx, G(l, kLn1W), G(l, kLn1B), dln.data(), x, W(l, kLn1W), ln1_mean.data() + l * nf,
                        ln1_rstd.data() + l * nf, N, C);
}

TransformerCuda::TransformerCuda(const ModelConfig& cfg, unsigned held_parts) {
  if (cfg.n_embd % 8 != 0)
    throw UsageError("device=cuda needs model.n_embd a multiple of 8 (cuBLASLt alignment), got " +
                     std::to_string(cfg.n_embd));
  if (!k::attention_head_dim_supported(cfg.n_embd / cfg.n_head))
    throw UsageError("device=cuda needs a head size model.n_embd / model.n_head of 16, 32, 64 or 128 (the fused "
                     "attention kernels), got " + std::to_string(cfg.n_embd / cfg.n_head));
  if (cfg.padded_vocab() % 8 != 0)
    throw UsageError("device=cuda needs model.vocab_pad_to such that the padded vocabulary is a multiple of 8, got " +
                     std::to_string(cfg.padded_vocab()));
  impl_ = std::make_unique<Impl>(cfg, held_parts);
}

TransformerCuda::~TransformerCuda() = default;

const ParamLayout& TransformerCuda::layout() const { return impl_->layout; }
std::int64_t TransformerCuda::steps_taken() const { return impl_->t; }
void TransformerCuda::set_steps_taken(std::int64_t t) { impl_->t = t; }
void TransformerCuda::set_group_hook(Model<float>::GroupHook hook) { impl_->group_hook = std::move(hook); }

TransformerCuda::GroupBuffers TransformerCuda::group_buffers(int g) { return impl_->bound.at(g); }

void TransformerCuda::bind_group(int g, const GroupBuffers& external) {
  Impl& d = *impl_;
  const unsigned r = d.held.empty() ? 0u : d.held.at(g);
  GroupBuffers& b = d.bound.at(g);
  if (r & kWeights32) b.w32 = external.w32;
  if (r & kWeights16) b.w16 = external.w16;
  if (r & kGrads) b.g32 = external.g32;
  if (r & kMoments) b.m32 = external.m32, b.v32 = external.v32;
}

std::size_t TransformerCuda::owned_bytes(unsigned parts) const {
  const Impl& d = *impl_;
  std::size_t n = 0;
  for (int g = 0; g < d.layout.num_groups(); ++g) {
    if (parts & kWeights32) n += d.w32[g].bytes();
    if (parts & kWeights16) n += d.w16[g].bytes();
    if (parts & kGrads) n += d.g32[g].bytes();
    if (parts & kMoments) n += d.m32[g].bytes() + d.v32[g].bytes();
  }
  return n;
}

void TransformerCuda::upload(const FlatBuffers<float>& params, const AdamW<float>* opt) {
  for (int g = 0; g < impl_->layout.num_groups(); ++g)
    upload_group(g, params.group(g), opt ? opt->m().group(g) : nullptr, opt ? opt->v().group(g) : nullptr);
  if (opt) impl_->t = opt->steps_taken();
  k::synchronize();
}

void TransformerCuda::upload_group(int g, const float* w, const float* m, const float* v) {
  Impl& d = *impl_;
  d.require_owned(kWeights32 | kWeights16 | (m || v ? kMoments : 0u), "upload");
  const std::size_t n = d.layout.groups()[g].size;
  d.w32[g].upload({w, n});
  k::to_bf16(d.w16[g].data(), d.w32[g].data(), static_cast<std::int64_t>(n));
  if (m) d.m32[g].upload({m, n});
  if (v) d.v32[g].upload({v, n});
}

void TransformerCuda::download_range(char kind, int g, std::size_t offset, std::size_t n, float* dst) const {
  const Impl& d = *impl_;
  d.require_owned(kind == 'w' ? kWeights32 : kMoments, "download_range");
  const Dev<float>& src = kind == 'w' ? d.w32.at(g) : kind == 'm' ? d.m32.at(g) : d.v32.at(g);
  if (offset + n > src.size()) throw Error(ExitCode::internal, "TransformerCuda::download_range: out of the group");
  if (n) k::detail::copy_to_host(dst, src.data() + offset, n * sizeof(float));
}

namespace {
void copy_down(const Dev<float>& src, float* dst) {
  const auto host = src.download();
  std::copy(host.begin(), host.end(), dst);
}
}  // namespace

void TransformerCuda::download(FlatBuffers<float>& params, AdamW<float>* opt) const {
  const Impl& d = *impl_;
  d.require_owned(kWeights32 | (opt ? kMoments : 0u), "download");
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
  impl_->require_owned(kGrads, "download_grads");
  for (int g = 0; g < impl_->layout.num_groups(); ++g) copy_down(impl_->g32[g], grads.group(g));
}

void TransformerCuda::zero_grads() {
  for (auto& g : impl_->g32)
    if (g.size()) g.zero();  // (a held part's buffer is empty: the engine clears what it lends)
}

namespace {
// The number of targets a batch counts for `task`, after checking every target (lm/mlm: next or masked
// token ids, -1 ignored) or label (classify: one class per sequence) is in range.
int count_targets(const Batch& batch, Task task, const ModelConfig& c) {
  if (task == Task::classify) {
    if (!batch.labels) throw UsageError("TransformerCuda::step with task classify needs labels");
    for (int b = 0; b < batch.B; ++b)
      if (batch.labels[b] < 0 || batch.labels[b] >= c.num_labels)
        throw DataError("label " + std::to_string(batch.labels[b]) + " of sequence " + std::to_string(b) +
                        " is outside [0, " + std::to_string(c.num_labels) + ")");
    return batch.B;
  }
  if (!batch.targets) throw UsageError("TransformerCuda::step needs targets");
  int count = 0;
  for (int i = 0; i < batch.B * batch.T; ++i) {
    if (batch.targets[i] < -1 || batch.targets[i] >= c.vocab_size)
      throw DataError("target id " + std::to_string(batch.targets[i]) + " at position " + std::to_string(i) +
                      " is outside [-1, " + std::to_string(c.vocab_size) + ")");
    count += batch.targets[i] >= 0;
  }
  if (count == 0) throw DataError("batch has no target to predict (every target is -1)");
  return count;
}
}  // namespace

// lm (GPT): logits = lnf wte^T over the padded vocabulary; mlm (BERT): the MLM transform
// LN(gelu(dense(lnf))) first, and the decoder's output bias. Then the fused softmax cross-entropy
// (in place: the logits become their gradient, scaled, when backward follows).
void TransformerCuda::Impl::token_head_forward(bool mlm, bool backward, float scale) {
  const ModelConfig& c = layout.config();
  const int N = B * Tn, C = c.n_embd, Vp = c.padded_vocab();
  const float eps = static_cast<float>(c.layer_norm_eps);
  const bf16* h = lnf.data();
  if (mlm) {
    gemm(false, true, N, C, C, lnf.data(), C, WE(kMlmDenseW), C, mlm_act.data(), C,
         {.bias = WE(kMlmDenseB), .gelu = true, .pre_gelu = mlm_pre.data()});
    k::layernorm_forward(mlm_ln.data(), mlm_mean.data(), mlm_rstd.data(), mlm_act.data(), WE(kMlmLnW), WE(kMlmLnB),
                         N, C, eps);
    h = mlm_ln.data();
  }
  gemm(false, true, N, Vp, C, h, C, WE(kWte), C, logits.data(), Vp, {.bias = mlm ? WE(kMlmBias) : nullptr});
  k::softmax_xent(losses.data(), backward ? logits.data() : nullptr, logits.data(), targets.data(), scale, N,
                  c.vocab_size, Vp);
}

// From the logits' gradient to dlnf; the tied wte gets the decoder's share of its gradient.
void TransformerCuda::Impl::token_head_backward(bool mlm) {
  const ModelConfig& c = layout.config();
  const int N = B * Tn, C = c.n_embd, Vp = c.padded_vocab();
  const bf16* h = mlm ? mlm_ln.data() : lnf.data();
  bf16* dh = mlm ? dmlm.data() : dlnf.data();
  gemm(false, false, N, C, Vp, logits.data(), Vp, WE(kWte), C, dh, C);
  gemm_accumulate(true, false, Vp, C, N, logits.data(), Vp, h, C, GE(kWte), C);
  if (!mlm) return;
  k::bias_backward(GE(kMlmBias), logits.data(), N, Vp, Vp);
  dln.zero();  // layernorm_backward accumulates into dx
  k::layernorm_backward(dln.data(), GE(kMlmLnW), GE(kMlmLnB), dmlm.data(), mlm_act.data(), WE(kMlmLnW),
                        mlm_mean.data(), mlm_rstd.data(), N, C);
  k::gelu_backward(dmlm.data(), mlm_pre.data(), dln.data(), static_cast<std::int64_t>(N) * C);
  linear_backward(dlnf.data(), GE(kMlmDenseW), GE(kMlmDenseB), dmlm.data(), lnf.data(), WE(kMlmDenseW), N, C, C);
}

// classify (BERT): pooled = tanh(dense(lnf at position 0 of each sequence)), logits = classifier(pooled)
// [B, num_labels] (rows labels_ld apart), then the fused softmax cross-entropy over the labels. The
// position-0 rows are read in place: rows Tn * C apart.
void TransformerCuda::Impl::class_head_forward(bool backward, float scale) {
  const ModelConfig& c = layout.config();
  const int C = c.n_embd, ld = labels_ld();
  gemm(false, true, B, C, C, lnf.data(), Tn * C, WE(kPoolW), C, pool_pre.data(), C, {.bias = WE(kPoolB)});
  k::tanh_forward(pooled.data(), pool_pre.data(), static_cast<std::int64_t>(B) * C);
  gemm(false, true, B, c.num_labels, C, pooled.data(), C, WE(kClsW), C, cls_logits.data(), ld, {.bias = WE(kClsB)});
  k::softmax_xent(cls_losses.data(), backward ? cls_logits.data() : nullptr, cls_logits.data(), labels.data(), scale,
                  B, c.num_labels, ld);
}

// From the class logits' gradient to dlnf, which is zero except at position 0 of each sequence.
void TransformerCuda::Impl::class_head_backward() {
  const ModelConfig& c = layout.config();
  const int C = c.n_embd, NL = c.num_labels, ld = labels_ld();
  gemm(false, false, B, C, NL, cls_logits.data(), ld, WE(kClsW), C, dpooled.data(), C);
  gemm_accumulate(true, false, NL, C, B, cls_logits.data(), ld, pooled.data(), C, GE(kClsW), C);
  k::bias_backward(GE(kClsB), cls_logits.data(), B, NL, ld);
  k::tanh_backward(dpooled.data(), pooled.data(), dpooled.data(), static_cast<std::int64_t>(B) * C);
  dlnf.zero();
  linear_backward(dlnf.data(), GE(kPoolW), GE(kPoolB), dpooled.data(), lnf.data(), WE(kPoolW), B, C, C, Tn * C);
}

double TransformerCuda::step(const Batch& batch, Task task, bool backward, float dloss) {
  Impl& d = *impl_;
  const ModelConfig& c = d.layout.config();
  const bool bert = c.architecture() == Arch::bert, classify = task == Task::classify;
  if (task == Task::lm && bert) throw UsageError("task lm needs model.arch = gpt");
  if (task != Task::lm && !bert) throw UsageError("tasks mlm and classify need model.arch = bert");
  if (batch.B <= 0 || batch.T <= 0 || batch.T > c.n_positions)
    throw UsageError("batch " + std::to_string(batch.B) + " x " + std::to_string(batch.T) +
                     ": need B, T > 0 and T <= model.n_positions = " + std::to_string(c.n_positions));
  const int count = count_targets(batch, task, c);
  d.ensure_acts(batch.B, batch.T);
  d.route_batch();
  const int N = batch.B * batch.T, C = c.n_embd, V = c.vocab_size;
  const std::size_t n = static_cast<std::size_t>(N);
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
  if (classify)
    d.labels.upload({batch.labels, static_cast<std::size_t>(batch.B)});
  else
    d.targets.upload({batch.targets, n});
  if (bert) d.segments.upload({seg, n});
  d.causal = !bert;
  d.mask = nullptr;
  if (batch.attention_mask) {
    d.key_mask.upload({batch.attention_mask, n});
    d.mask = d.key_mask.data();
  }

  using Pass = Model<float>::Pass;
  d.hook(0, Pass::forward, true);
  k::embedding_forward(d.resid_at(0), d.tokens.data(), bert ? d.segments.data() : nullptr, d.WE(kWte), d.WE(kWpe),
                       bert ? d.WE(kWse) : nullptr, d.B, d.Tn, C);
  for (int l = 0; l < c.n_layer; ++l) {
    d.hook(1 + l, Pass::forward, true);
    d.block_forward(l);
    d.hook(1 + l, Pass::forward, false);
  }
  bf16* top = d.resid_at(c.n_layer);
  k::layernorm_forward(d.lnf.data(), d.lnf_mean.data(), d.lnf_rstd.data(), top, d.WE(kLnfW), d.WE(kLnfB), N, C,
                       static_cast<float>(c.layer_norm_eps));
  const float scale = dloss / static_cast<float>(count);
  if (classify)
    d.class_head_forward(backward, scale);
  else
    d.token_head_forward(task == Task::mlm, backward, scale);
  d.hook(0, Pass::forward, false);
  if (backward) {
    d.hook(0, Pass::backward, true);
    if (classify)
      d.class_head_backward();
    else
      d.token_head_backward(task == Task::mlm);
    d.dres.zero();
    k::layernorm_backward(d.dres.data(), d.GE(kLnfW), d.GE(kLnfB), d.dlnf.data(), top, d.WE(kLnfW), d.lnf_mean.data(),
                          d.lnf_rstd.data(), N, C);
    for (int l = c.n_layer - 1; l >= 0; --l) {
      d.hook(1 + l, Pass::backward, true);
      d.block_backward(l);
      d.hook(1 + l, Pass::backward, false);
    }
    const k::EmbeddingIndex tokens = d.token_index.upload(ix);
    k::EmbeddingIndex segments;
    if (bert)
      segments = d.segment_index.upload(k::make_embedding_index(seg, N, c.type_vocab_size));
    k::embedding_backward(d.GE(kWte), d.GE(kWpe), bert ? d.GE(kWse) : nullptr, d.dres.data(), tokens, segments,
                          d.B, d.Tn, C);
    d.hook(0, Pass::backward, false);
  }
  const std::vector<float> losses = (classify ? d.cls_losses : d.losses).download();  // waits for the step
  double sum = 0;
  for (float x : losses) sum += x;
  return sum / count;
}

void TransformerCuda::set_token_routing(TokenRouting routing) {
  Impl& d = *impl_;
  const int L = d.layout.config().n_layer;
  for (std::size_t i = 0; i < routing.layers.size(); ++i)
    if (routing.layers[i] < 0 || routing.layers[i] >= L || (i > 0 && routing.layers[i] <= routing.layers[i - 1]))
      throw UsageError("token routing: layers must be strictly increasing in [0, " + std::to_string(L) + ")");
  if (!routing.layers.empty() && routing.kept < 1)
    throw UsageError("token routing: kept = " + std::to_string(routing.kept) + ", need at least 1");
  if (!routing.layers.empty() && routing.layers != d.uploaded_layers) {
    d.route_layers = Dev<std::int32_t>(std::span<const std::int32_t>(routing.layers));
    d.uploaded_layers = routing.layers;
  }
  d.routing = std::move(routing);
}

std::uint64_t TransformerCuda::gemm_flops() const { return impl_->flops; }

double TransformerCuda::grad_norm() {
  impl_->require_owned(kGrads, "grad_norm");
  double sq = 0;
  for (auto& g : impl_->g32) {
    const double n = k::l2_norm(impl_->blas, g.data(), static_cast<std::int64_t>(g.size()));
    sq += n * n;
  }
  return std::sqrt(sq);
}

void TransformerCuda::adamw(const AdamWHyper& hyper, double lr, double grad_scale) {
  Impl& d = *impl_;
  d.require_owned(kWeights32 | kWeights16 | kGrads | kMoments, "adamw");
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
