// Forward and backward of the GPT / BERT transformer over flat parameter groups (see model.hpp).
// Backward follows the chain rule block by block in reverse; `dres` carries dL/d(residual stream).
#include "train/model.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/errors.hpp"
#include "train/layers.hpp"
#include "train/token_rows.hpp"

namespace core::train {

namespace {
template <class V>
void fill_zero(V& v) {
  std::fill(v.begin(), v.end(), typename V::value_type(0));
}
}  // namespace

template <class T>
Model<T>::Model(const ModelConfig& cfg, Allocation allocation)
    : layout_(std::make_unique<ParamLayout>(cfg)), params_(*layout_, allocation), grads_(*layout_, allocation) {}

template <class T>
template <class F>
void Model<T>::for_each_act(Acts& a, const ModelConfig& c, int B, int Tn, F&& f) {
  const std::size_t N = std::size_t(B) * Tn, C = c.n_embd, L = c.n_layer, V = c.vocab_size;
  const std::size_t att = std::size_t(B) * c.n_head * Tn * Tn;
  f(a.resid, (L + 1) * N * C);
  f(a.ln1, L * N * C);
  f(a.ln1_mean, L * N);
  f(a.ln1_rstd, L * N);
  f(a.qkv, L * N * 3 * C);
  f(a.att, L * att);
  f(a.atty, L * N * C);
  f(a.xmid, L * N * C);
  f(a.ln2, L * N * C);
  f(a.ln2_mean, L * N);
  f(a.ln2_rstd, L * N);
  f(a.fch, L * N * 4 * C);
  f(a.fch_gelu, L * N * 4 * C);
  f(a.lnf, N * C);
  f(a.lnf_mean, N);
  f(a.lnf_rstd, N);
  f(a.logits, N * V);
  f(a.losses, N);
  f(a.dres, N * C);
  f(a.dln, N * C);
  f(a.dqkv, N * 3 * C);
  f(a.datty, N * C);
  f(a.dfch, N * 4 * C);
  f(a.dfch_gelu, N * 4 * C);
  f(a.datt, att);
  f(a.dlnf, N * C);
  f(a.head_in, N * C);
  f(a.head_d, N * C);
  if (c.architecture() == Arch::bert) {
    f(a.mlm_h, N * C);
    f(a.mlm_g, N * C);
    f(a.mlm_ln, N * C);
    f(a.mlm_mean, N);
    f(a.mlm_rstd, N);
    f(a.dmlm, N * C);
    f(a.cls_in, std::size_t(B) * C);
    f(a.pooled, std::size_t(B) * C);
    f(a.cls_logits, std::size_t(B) * c.num_labels);
    f(a.cls_losses, B);
    f(a.dcls, std::size_t(B) * C * 2);
  }
}

template <class T>
std::size_t Model<T>::activation_bytes(const ModelConfig& cfg, int B, int Tn) {
  Acts sizing;
  std::size_t n = 0;
  for_each_act(sizing, cfg, B, Tn, [&n](typename Acts::Buf&, std::size_t count) { n += count; });
  return n * sizeof(T);
}

template <class T>
void Model<T>::ensure_acts(int B, int Tn, Task task) {
  // A classify forward writes cls_logits, never the vocabulary logits: with GPT-2's 50k tokens those
  // would be most of the activations (412 MB at 32 x 64), zeroed whenever the batch shape changes.
  const bool vocab_logits = task != Task::classify;
  if (acts_.B == B && acts_.Tn == Tn && acts_.vocab_logits == vocab_logits) return;
  acts_ = Acts{};
  acts_.B = B;
  acts_.Tn = Tn;
  acts_.vocab_logits = vocab_logits;
  for_each_act(acts_, config(), B, Tn, [&](typename Acts::Buf& buf, std::size_t count) {
    if (vocab_logits || &buf != &acts_.logits) buf.resize(count);
  });
}

template <class T>
void Model<T>::check_batch(const Batch& b, Task task) const {
  const ModelConfig& c = config();
  if (b.B <= 0 || b.T <= 0) throw UsageError("batch: B and T must be > 0");
  if (b.T > c.n_positions)
    throw UsageError("sequence length " + std::to_string(b.T) + " exceeds model.n_positions = " +
                     std::to_string(c.n_positions));
  const bool bert = c.architecture() == Arch::bert;
  if (task == Task::lm && bert) throw UsageError("task lm needs model.arch = gpt");
  if (task != Task::lm && !bert) throw UsageError("tasks mlm and classify need model.arch = bert");
  const std::int64_t N = std::int64_t(b.B) * b.T;
  for (std::int64_t i = 0; i < N; ++i) {
    if (b.tokens[i] < 0 || b.tokens[i] >= c.vocab_size)
      throw DataError("token id " + std::to_string(b.tokens[i]) + " at position " + std::to_string(i) +
                      " is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
    if (b.targets && (b.targets[i] < -1 || b.targets[i] >= c.vocab_size))
      throw DataError("target id " + std::to_string(b.targets[i]) + " at position " + std::to_string(i) +
                      " is outside [-1, " + std::to_string(c.vocab_size) + ")");
    if (b.segments && (b.segments[i] < 0 || b.segments[i] >= c.type_vocab_size))
      throw DataError("segment id " + std::to_string(b.segments[i]) + " at position " + std::to_string(i) +
                      " is outside [0, " + std::to_string(c.type_vocab_size) + ")");
  }
  if (task == Task::classify && b.labels)
    for (int i = 0; i < b.B; ++i)
      if (b.labels[i] < 0 || b.labels[i] >= c.num_labels)
        throw DataError("label " + std::to_string(b.labels[i]) + " of sequence " + std::to_string(i) +
                        " is outside [0, " + std::to_string(c.num_labels) + ")");
}

template <class T>
T* Model<T>::resid(int l) {
  return acts_.resid.data() + std::size_t(l) * acts_.B * acts_.Tn * config().n_embd;
}

template <class T>
const T* Model<T>::resid(int l) const {
  return acts_.resid.data() + std::size_t(l) * acts_.B * acts_.Tn * config().n_embd;
}

template <class T>
const T* Model<T>::block_output(int l) const {
  if (l < 0 || l >= config().n_layer || acts_.B < 0)
    throw UsageError("block_output(" + std::to_string(l) + "): no such block in the last forward pass");
  return resid(l + 1);
}

template <class T>
void Model<T>::check_block_output_grads(const std::vector<const T*>& g) const {
  if (!g.empty() && static_cast<int>(g.size()) != config().n_layer)
    throw UsageError("block output gradients: " + std::to_string(g.size()) + " given for " +
                     std::to_string(config().n_layer) + " layers");
}

template <class T>
T Model<T>::forward(const Batch& batch, Task task) {
  check_batch(batch, task);
  batch_ = batch;
  if (config().architecture() == Arch::bert && !batch_.segments) {  // BERT's default: every token in segment 0
    default_segments_.assign(std::size_t(batch.B) * batch.T, 0);
    batch_.segments = default_segments_.data();
  }
  task_ = task;
  ensure_acts(batch.B, batch.T, task);
  check_subsets();
  hook(0, Pass::forward, true);
  embed_forward();
  for (int l = 0; l < config().n_layer; ++l) {
    hook(1 + l, Pass::forward, true);
    block_forward(l);
    hook(1 + l, Pass::forward, false);
  }
  const T loss = head_forward();
  hook(0, Pass::forward, false);
  return loss;
}

template <class T>
void Model<T>::backward(T dloss) {
  const bool has_targets = task_ == Task::classify ? batch_.labels != nullptr : batch_.targets != nullptr;
  if (!has_targets) throw UsageError("backward() needs a forward pass with targets");
  hook(0, Pass::backward, true);
  head_backward(dloss);
  const std::size_t NC = std::size_t(batch_.B) * batch_.T * config().n_embd;
  for (int l = config().n_layer - 1; l >= 0; --l) {
    hook(1 + l, Pass::backward, true);
    if (block_output_grads_ && (*block_output_grads_)[l]) add_inplace<T>(acts_.dres.data(), (*block_output_grads_)[l], NC);
    block_backward(l);
    hook(1 + l, Pass::backward, false);
  }
  embed_backward();
  hook(0, Pass::backward, false);
}

template <class T>
void Model<T>::backward(T dloss, const std::vector<const T*>& block_output_grads) {
  check_block_output_grads(block_output_grads);
  block_output_grads_ = block_output_grads.empty() ? nullptr : &block_output_grads;
  try {
    backward(dloss);
  } catch (...) {
    block_output_grads_ = nullptr;
    throw;
  }
  block_output_grads_ = nullptr;
}

template <class T>
void Model<T>::backward_from_logits(const T* dlogits, const std::vector<const T*>& block_output_grads) {
  if (task_ == Task::classify) {
    if (!batch_.labels) throw UsageError("backward_from_logits() needs a classify forward pass with labels");
    std::copy(dlogits, dlogits + std::size_t(batch_.B) * config().num_labels, acts_.cls_logits.begin());
  } else {
    if (!batch_.targets) throw UsageError("backward_from_logits() needs an lm/mlm forward pass with targets");
    std::copy(dlogits, dlogits + std::size_t(head_row_count()) * config().vocab_size, acts_.logits.begin());
  }
  logits_grad_given_ = true;
  try {
    backward(T(1), block_output_grads);
  } catch (...) {
    logits_grad_given_ = false;
    throw;
  }
  logits_grad_given_ = false;
}

template <class T>
void Model<T>::embed_forward() {
  const bool bert = config().architecture() == Arch::bert;
  embedding_forward<T>(resid(0), batch_.tokens, batch_.segments, params_.embed(kWte), params_.embed(kWpe),
                       bert ? params_.embed(kWse) : nullptr, batch_.B, batch_.T, config().n_embd);
}

template <class T>
void Model<T>::embed_backward() {
  const bool bert = config().architecture() == Arch::bert;
  embedding_backward<T>(grads_.embed(kWte), grads_.embed(kWpe), bert ? grads_.embed(kWse) : nullptr,
                        acts_.dres.data(), batch_.tokens, batch_.segments, batch_.B, batch_.T, config().n_embd);
}

template <class T>
void Model<T>::check_subsets() const {
  if (subsets_.empty()) return;
  if (static_cast<int>(subsets_.size()) != config().n_layer)
    throw UsageError("token subsets: " + std::to_string(subsets_.size()) + " given for " +
                     std::to_string(config().n_layer) + " layers");
  const int B = batch_.B, Tn = batch_.T;
  for (int l = 0; l < config().n_layer; ++l) {
    const TokenSubset& s = subsets_[l];
    if (s.positions.empty()) continue;
    const std::string where = "token subset of layer " + std::to_string(l);
    if (s.kept <= 0 || s.kept > Tn || s.positions.size() != std::size_t(B) * s.kept)
      throw UsageError(where + ": " + std::to_string(s.positions.size()) + " positions for " + std::to_string(B) +
                       " sequences of " + std::to_string(s.kept) + " kept (of " + std::to_string(Tn) + ")");
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < s.kept; ++i) {
        const std::int32_t p = s.positions[std::size_t(b) * s.kept + i];
        if (p < 0 || p >= Tn || (i > 0 && p <= s.positions[std::size_t(b) * s.kept + i - 1]))
          throw UsageError(where + ": sequence " + std::to_string(b) + " is not strictly increasing in [0, " +
                           std::to_string(Tn) + ")");
      }
  }
}

template <class T>
void Model<T>::block_forward(int l) {
  if (!routed(l)) {
    block_rows_forward(l, resid(l), resid(l + 1), batch_.T, batch_.attention_mask);
    return;
  }
  // Random-LTD: gather -> the block on the kept rows -> scatter; the other rows pass through.
  const TokenSubset& s = subsets_[l];
  const int B = batch_.B, Tn = batch_.T, C = config().n_embd;
  const std::size_t rows = std::size_t(B) * s.kept;
  routed_in_.resize(rows * C);
  routed_out_.resize(rows * C);
  gather_token_rows(routed_in_.data(), resid(l), s.positions.data(), B, Tn, s.kept, C);
  const std::uint8_t* mask = nullptr;
  if (batch_.attention_mask) {
    routed_mask_.resize(rows);
    gather_token_rows(routed_mask_.data(), batch_.attention_mask, s.positions.data(), B, Tn, s.kept, 1);
    mask = routed_mask_.data();
  }
  block_rows_forward(l, routed_in_.data(), routed_out_.data(), s.kept, mask);
  std::memcpy(resid(l + 1), resid(l), std::size_t(B) * Tn * C * sizeof(T));
  scatter_token_rows(resid(l + 1), routed_out_.data(), s.positions.data(), B, Tn, s.kept, C);
}

template <class T>
void Model<T>::block_backward(int l) {
  if (!routed(l)) {
    block_rows_backward(l, resid(l), acts_.dres.data(), batch_.T);
    return;
  }
  // The kept rows' gradients through the block; the dropped rows' gradients pass through (identity).
  const TokenSubset& s = subsets_[l];
  const int B = batch_.B, Tn = batch_.T, C = config().n_embd;
  gather_token_rows(routed_in_.data(), resid(l), s.positions.data(), B, Tn, s.kept, C);
  gather_token_rows(routed_out_.data(), acts_.dres.data(), s.positions.data(), B, Tn, s.kept, C);
  block_rows_backward(l, routed_in_.data(), routed_out_.data(), s.kept);
  scatter_token_rows(acts_.dres.data(), routed_out_.data(), s.positions.data(), B, Tn, s.kept, C);
}

template <class T>
void Model<T>::block_rows_forward(int l, const T* x, T* xout, int Tn, const std::uint8_t* key_mask) {
  const ModelConfig& c = config();
  const int B = batch_.B, C = c.n_embd, N = B * Tn;
  // Block l's slices are laid out for B x batch_.T rows; B x Tn (<= that) use their first rows.
  const std::size_t NC = std::size_t(N) * C;
  const std::size_t NCf = std::size_t(B) * batch_.T * C, Nf = std::size_t(B) * batch_.T;
  const std::size_t attf = std::size_t(B) * c.n_head * batch_.T * batch_.T;
  Acts& a = acts_;
  T* ln1 = a.ln1.data() + l * NCf;
  T* qkv = a.qkv.data() + l * 3 * NCf;
  T* atty = a.atty.data() + l * NCf;
  T* xmid = a.xmid.data() + l * NCf;
  T* ln2 = a.ln2.data() + l * NCf;
  T* fch = a.fch.data() + l * 4 * NCf;
  T* fchg = a.fch_gelu.data() + l * 4 * NCf;
  auto P = [&](BlockTensor t) { return params_.block(l, t); };

  layernorm_forward<T>(ln1, a.ln1_mean.data() + l * Nf, a.ln1_rstd.data() + l * Nf, x, P(kLn1W), P(kLn1B), N, C,
                       T(c.layer_norm_eps));
  linear_forward<T>(qkv, ln1, P(kQkvW), P(kQkvB), N, C, 3 * C);
  attention_forward<T>(atty, a.att.data() + l * attf, qkv, key_mask, c.architecture() == Arch::gpt, B, Tn, C,
                       c.n_head);
  linear_forward<T>(xmid, atty, P(kAttnProjW), P(kAttnProjB), N, C, C);
  add_inplace<T>(xmid, x, NC);
  layernorm_forward<T>(ln2, a.ln2_mean.data() + l * Nf, a.ln2_rstd.data() + l * Nf, xmid, P(kLn2W), P(kLn2B), N,
                       C, T(c.layer_norm_eps));
  linear_forward<T>(fch, ln2, P(kFcW), P(kFcB), N, C, 4 * C);
  gelu_forward<T>(fchg, fch, std::int64_t(4) * NC);
  linear_forward<T>(xout, fchg, P(kFcProjW), P(kFcProjB), N, 4 * C, C);
  add_inplace<T>(xout, xmid, NC);
}

template <class T>
void Model<T>::block_rows_backward(int l, const T* x, T* dres, int Tn) {
  const ModelConfig& c = config();
  const int B = batch_.B, C = c.n_embd, N = B * Tn;
  const std::size_t NC = std::size_t(N) * C;
  const std::size_t NCf = std::size_t(B) * batch_.T * C, Nf = std::size_t(B) * batch_.T;
  const std::size_t attf = std::size_t(B) * c.n_head * batch_.T * batch_.T;
  Acts& a = acts_;
  auto P = [&](BlockTensor t) { return params_.block(l, t); };
  auto G = [&](BlockTensor t) { return grads_.block(l, t); };
  const T* xmid = a.xmid.data() + l * NCf;

  // x_out = xmid + c_proj(gelu(c_fc(ln_2(xmid))))
  linear_backward<T>(a.dfch_gelu.data(), G(kFcProjW), G(kFcProjB), dres, a.fch_gelu.data() + l * 4 * NCf,
                     P(kFcProjW), N, 4 * C, C, false);
  gelu_backward<T>(a.dfch.data(), a.fch.data() + l * 4 * NCf, a.dfch_gelu.data(), std::int64_t(4) * NC);
  linear_backward<T>(a.dln.data(), G(kFcW), G(kFcB), a.dfch.data(), a.ln2.data() + l * NCf, P(kFcW), N, C, 4 * C,
                     false);
  layernorm_backward<T>(dres, G(kLn2W), G(kLn2B), a.dln.data(), xmid, P(kLn2W), a.ln2_mean.data() + l * Nf,
                        a.ln2_rstd.data() + l * Nf, N, C);
  // xmid = x + c_proj(attn(c_attn(ln_1(x))))
  linear_backward<T>(a.datty.data(), G(kAttnProjW), G(kAttnProjB), dres, a.atty.data() + l * NCf, P(kAttnProjW),
                     N, C, C, false);
  attention_backward<T>(a.dqkv.data(), a.datt.data(), a.datty.data(), a.qkv.data() + l * 3 * NCf,
                        a.att.data() + l * attf, B, Tn, C, c.n_head);
  linear_backward<T>(a.dln.data(), G(kQkvW), G(kQkvB), a.dqkv.data(), a.ln1.data() + l * NCf, P(kQkvW), N, C,
                     3 * C, false);
  layernorm_backward<T>(dres, G(kLn1W), G(kLn1B), a.dln.data(), x, P(kLn1W), a.ln1_mean.data() + l * Nf,
                        a.ln1_rstd.data() + l * Nf, N, C);
}

template <class T>
T Model<T>::head_forward() {
  const ModelConfig& c = config();
  const int B = batch_.B, Tn = batch_.T, C = c.n_embd, N = B * Tn, V = c.vocab_size;
  Acts& a = acts_;
  layernorm_forward<T>(a.lnf.data(), a.lnf_mean.data(), a.lnf_rstd.data(), resid(c.n_layer), params_.embed(kLnfW),
                       params_.embed(kLnfB), N, C, T(c.layer_norm_eps));
  if (task_ == Task::classify) {
    for (int b = 0; b < B; ++b)
      std::memcpy(a.cls_in.data() + std::size_t(b) * C, a.lnf.data() + std::size_t(b) * Tn * C, C * sizeof(T));
    // dcls holds the pooler's pre-activation here (backward needs only tanh's output, and reuses it).
    linear_forward<T>(a.dcls.data(), a.cls_in.data(), params_.embed(kPoolW), params_.embed(kPoolB), B, C, C);
    tanh_forward<T>(a.pooled.data(), a.dcls.data(), std::int64_t(B) * C);
    linear_forward<T>(a.cls_logits.data(), a.pooled.data(), params_.embed(kClsW), params_.embed(kClsB), B, C,
                      c.num_labels);
    if (!batch_.labels) return T(0);
    count_ = softmax_xent_forward<T>(a.cls_logits.data(), a.cls_losses.data(), batch_.labels, B, c.num_labels,
                                     c.num_labels);
    T sum = 0;
    for (int b = 0; b < B; ++b) sum += a.cls_losses[b];
    return sum / T(count_);
  }
  // The LM / MLM head runs on the rows that have a target (BERT's masked ~15%, the new rows of an
  // eval window), gathered: the other rows' logits are never used (BERT's gather of the masked
  // positions). Without targets on every row, so that logits() covers the batch.
  head_rows_.clear();
  if (batch_.targets)
    for (int n = 0; n < N; ++n)
      if (batch_.targets[n] >= 0) head_rows_.push_back(n);
  if (batch_.targets && head_rows_.empty()) throw DataError("batch has no target to predict (every target is -1)");
  gathered_ = batch_.targets && static_cast<int>(head_rows_.size()) < N;
  const int R = head_row_count();
  const T* h = a.lnf.data();
  if (gathered_) {
    head_targets_.resize(head_rows_.size());
    for (int r = 0; r < R; ++r) {
      std::memcpy(a.head_in.data() + std::size_t(r) * C, a.lnf.data() + std::size_t(head_rows_[r]) * C, C * sizeof(T));
      head_targets_[r] = batch_.targets[head_rows_[r]];
    }
    h = a.head_in.data();
  }
  const T* out_bias = nullptr;
  if (task_ == Task::mlm) {
    linear_forward<T>(a.mlm_h.data(), h, params_.embed(kMlmDenseW), params_.embed(kMlmDenseB), R, C, C);
    gelu_forward<T>(a.mlm_g.data(), a.mlm_h.data(), std::int64_t(R) * C);
    layernorm_forward<T>(a.mlm_ln.data(), a.mlm_mean.data(), a.mlm_rstd.data(), a.mlm_g.data(),
                         params_.embed(kMlmLnW), params_.embed(kMlmLnB), R, C, T(c.layer_norm_eps));
    h = a.mlm_ln.data();
    out_bias = params_.embed(kMlmBias);
  }
  linear_forward<T>(a.logits.data(), h, params_.embed(kWte), out_bias, R, C, V);  // tied: rows [0, V) of wte
  if (!batch_.targets) return T(0);
  count_ = softmax_xent_forward<T>(a.logits.data(), a.losses.data(), head_targets(), R, V, V);
  T sum = 0;
  for (int r = 0; r < R; ++r) sum += a.losses[r];
  return sum / T(count_);
}

template <class T>
void Model<T>::head_backward(T dloss) {
  const ModelConfig& c = config();
  const int B = batch_.B, Tn = batch_.T, C = c.n_embd, N = B * Tn, V = c.vocab_size;
  Acts& a = acts_;
  const T scale = dloss / T(count_);
  if (task_ == Task::classify) {
    if (!logits_grad_given_)
      softmax_xent_backward<T>(a.cls_logits.data(), batch_.labels, scale, B, c.num_labels, c.num_labels);
    T* dpooled = a.dcls.data();
    T* dcls_in = a.dcls.data() + std::size_t(B) * C;
    linear_backward<T>(dpooled, grads_.embed(kClsW), grads_.embed(kClsB), a.cls_logits.data(), a.pooled.data(),
                       params_.embed(kClsW), B, C, c.num_labels, false);
    tanh_backward<T>(dpooled, a.pooled.data(), dpooled, std::int64_t(B) * C);
    linear_backward<T>(dcls_in, grads_.embed(kPoolW), grads_.embed(kPoolB), dpooled, a.cls_in.data(),
                       params_.embed(kPoolW), B, C, C, false);
    fill_zero(a.dlnf);
    for (int b = 0; b < B; ++b)
      std::memcpy(a.dlnf.data() + std::size_t(b) * Tn * C, dcls_in + std::size_t(b) * C, C * sizeof(T));
  } else {
    // The head's rows (gathered in head_forward), then their input gradients scattered to dlnf.
    const int R = head_row_count();
    const T* h = gathered_ ? a.head_in.data() : a.lnf.data();
    T* dh = gathered_ ? a.head_d.data() : a.dlnf.data();
    if (!logits_grad_given_) softmax_xent_backward<T>(a.logits.data(), head_targets(), scale, R, V, V);
    if (task_ == Task::mlm) {
      linear_backward<T>(a.dmlm.data(), grads_.embed(kWte), grads_.embed(kMlmBias), a.logits.data(),
                         a.mlm_ln.data(), params_.embed(kWte), R, C, V, false);
      fill_zero(a.dln);
      layernorm_backward<T>(a.dln.data(), grads_.embed(kMlmLnW), grads_.embed(kMlmLnB), a.dmlm.data(),
                            a.mlm_g.data(), params_.embed(kMlmLnW), a.mlm_mean.data(), a.mlm_rstd.data(), R, C);
      gelu_backward<T>(a.dmlm.data(), a.mlm_h.data(), a.dln.data(), std::int64_t(R) * C);
      linear_backward<T>(dh, grads_.embed(kMlmDenseW), grads_.embed(kMlmDenseB), a.dmlm.data(), h,
                         params_.embed(kMlmDenseW), R, C, C, false);
    } else {
      linear_backward<T>(dh, grads_.embed(kWte), nullptr, a.logits.data(), h, params_.embed(kWte), R, C, V, false);
    }
    if (gathered_) {
      fill_zero(a.dlnf);
      for (int r = 0; r < R; ++r)
        std::memcpy(a.dlnf.data() + std::size_t(head_rows_[r]) * C, a.head_d.data() + std::size_t(r) * C,
                    C * sizeof(T));
    }
  }
  fill_zero(a.dres);
  layernorm_backward<T>(a.dres.data(), grads_.embed(kLnfW), grads_.embed(kLnfB), a.dlnf.data(), resid(c.n_layer),
                        params_.embed(kLnfW), a.lnf_mean.data(), a.lnf_rstd.data(), N, C);
}

template <class T>
double Model<T>::flops_per_step(int B, int Tn, Task task, double head_rows) const {
  const ModelConfig& c = config();
  const double N = double(B) * Tn, C = c.n_embd, H = head_rows >= 0 ? head_rows : N;
  double fwd = c.n_layer * (24.0 * N * C * C + 4.0 * B * double(Tn) * Tn * C);
  if (task == Task::lm) fwd += 2.0 * H * C * c.vocab_size;
  if (task == Task::mlm) fwd += 2.0 * H * C * C + 2.0 * H * C * c.vocab_size;
  if (task == Task::classify) fwd += 2.0 * B * C * (C + c.num_labels);
  return 3.0 * fwd;
}

template class Model<float>;
template class Model<double>;

}  // namespace core::train
