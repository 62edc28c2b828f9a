// Loss of a model over a whole split (see evaluate.hpp): windows planned over the split, batched by
// length, run through Model<float>::forward (or the device step's forward), summed per scored token.
#include "train/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <utility>
#include <span>
#include <vector>

#include <spdlog/fmt/fmt.h>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/memory.hpp"
#include "common/progress.hpp"
#include "common/timer.hpp"
#include "train/gemm.hpp"
#include "train/model.hpp"
#include "train/model_source.hpp"
#include "train/transformer_cuda.hpp"

namespace core::train {

namespace {

// Inputs [begin, begin + length) of a split; the targets of positions before `scored_from` (window
// offsets) were scored by an earlier window and are left out.
struct Window {
  std::int64_t begin = 0;
  int length = 0;
  int scored_from = 0;
};

// Windows over n input positions (each has a next token): window k starts at k * stride and ends
// seq_len later or at n; it scores the positions from the previous window's end to its own. The
// last window is the first that reaches n.
struct WindowPlan {
  std::int64_t n;
  int seq_len, stride;

  std::int64_t count() const { return n <= seq_len ? 1 : 1 + (n - seq_len + stride - 1) / stride; }
  Window at(std::int64_t k) const {
    const std::int64_t begin = k * stride, end = std::min<std::int64_t>(begin + seq_len, n);
    const std::int64_t scored_to = k == 0 ? 0 : std::min<std::int64_t>(begin - stride + seq_len, n);
    return {begin, static_cast<int>(end - begin), static_cast<int>(scored_to - begin)};
  }
};

// Bytes each token id decodes to (the end-of-text token: none).
std::vector<int> token_byte_lengths(const text::Tokenizer& tok) {
  std::vector<int> len(static_cast<std::size_t>(tok.vocab_size()));
  for (std::int32_t id = 0; id < tok.vocab_size(); ++id)
    len[static_cast<std::size_t>(id)] = static_cast<int>(tok.decode(std::span(&id, 1)).size());
  if (const auto eot = tok.eot_token()) len[static_cast<std::size_t>(*eot)] = 0;
  return len;
}

void check_host_memory(const ModelConfig& c, int batch, int seq_len, bool cuda) {
  const std::uint64_t avail = available_memory_bytes();
  if (avail == 0) return;  // unknown
  const double params = 2.0 * double(c.parameter_count()) * sizeof(float);  // weights + gradients
  const double acts = cuda ? 0.0 : double(Model<float>::activation_bytes(c, batch, seq_len));
  if (params + acts <= double(avail)) return;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  throw UsageError(fmt::format("eval needs about {:.1f} GiB of host memory (weights {:.1f} GiB, activations of {} x {} "
                               "tokens {:.1f} GiB) but {:.1f} GiB are available: lower batch",
                               (params + acts) / gib, params / gib, batch, seq_len, acts / gib, double(avail) / gib));
}

struct Totals {
  double loss_sum = 0;  // nats over scored tokens
  double flops = 0;     // of the forward passes
  std::int64_t tokens = 0, bytes = 0, windows = 0;
};

// One evaluation: the model (on the host, or the device step without backward) and the running
// totals over the windows of every split it scores.
class Evaluation {
 public:
  Evaluation(const ModelSource& source, const EvalOptions& o, std::int32_t mask_id, std::vector<int> byte_len,
             std::int64_t total_windows)
      : o_(o), task_(source.config.architecture() == Arch::bert ? Task::mlm : Task::lm), mask_id_(mask_id),
        byte_len_(std::move(byte_len)), model_(source.config),
        progress_("eval", static_cast<std::uint64_t>(total_windows)) {
    source.load_weights_into(model_.params());
    if (o.device == "cuda") {
      if constexpr (kCudaBuild) {
        gpu_ = std::make_shared<TransformerCuda>(source.config);
        gpu_->upload(model_.params());
      }
    }
  }

  // Scores the windows of `plan` over `split`.
  void score_split(const TokenSplit& split, const WindowPlan& plan) {
    std::vector<Window> batch;
    for (std::int64_t k = 0; k < plan.count(); ++k) {
      // Consecutive windows of one length make a batch (only the last window of a split is shorter).
      const Window w = plan.at(k);
      if (!batch.empty() && (batch.size() == static_cast<std::size_t>(o_.batch) || w.length != batch[0].length)) {
        score_batch(split, batch);
        batch.clear();
      }
      batch.push_back(w);
    }
    score_batch(split, batch);
  }

  // Ends the progress display; the totals of everything scored.
  const Totals& finish() {
    progress_.finish();
    return t_;
  }

 private:
  void score_batch(const TokenSplit& split, std::span<const Window> windows) {
    const int B = static_cast<int>(windows.size()), T = windows[0].length;
    tok_.resize(std::size_t(B) * T);
    tgt_.resize(std::size_t(B) * T);
    for (int b = 0; b < B; ++b) {
      const Window& w = windows[std::size_t(b)];
      std::int32_t* wt = tok_.data() + std::size_t(b) * T;
      std::int32_t* wg = tgt_.data() + std::size_t(b) * T;
      split.copy(w.begin, static_cast<std::size_t>(T), wt);
      split.copy(w.begin + 1, static_cast<std::size_t>(T), wg);
      std::fill(wg, wg + w.scored_from, -1);
      if (task_ == Task::mlm) {  // masks per window: the result does not depend on the batch size
        win_tok_.assign(wt, wt + T);
        win_tgt_.assign(T, 0);
        apply_mlm_mask(win_tok_, win_tgt_, mask_id_, mask_id_, o_.mlm_probability, o_.seed,
                       static_cast<std::uint64_t>(t_.windows + b));
        std::copy(win_tok_.begin(), win_tok_.end(), wt);
        std::copy(win_tgt_.begin(), win_tgt_.end(), wg);
      }
    }
    std::int64_t counted = 0;
    for (std::int32_t id : tgt_)
      if (id >= 0) {
        ++counted;
        if (static_cast<std::size_t>(id) < byte_len_.size()) t_.bytes += byte_len_[static_cast<std::size_t>(id)];
      }
    Batch batch;
    batch.B = B;
    batch.T = T;
    batch.tokens = tok_.data();
    batch.targets = tgt_.data();
    t_.loss_sum += mean_loss(batch) * double(counted);
    // The forward's third; the host runs the head on the scored rows only, the device on all.
    t_.flops += model_.flops_per_step(B, T, task_, gpu_ ? -1.0 : double(counted)) / 3.0;
    t_.tokens += counted;
    t_.windows += B;
    progress_.update(static_cast<std::uint64_t>(t_.windows), fmt::format("loss {:.4f}", t_.loss_sum / double(t_.tokens)));
  }

  // Mean loss over the batch's targets >= 0.
  double mean_loss(const Batch& b) {
    if constexpr (kCudaBuild)
      if (gpu_) return gpu_->step(b, task_, false);
    return model_.forward(b, task_);
  }

  const EvalOptions& o_;
  Task task_;
  std::int32_t mask_id_;
  std::vector<int> byte_len_;
  Model<float> model_;
  std::shared_ptr<TransformerCuda> gpu_;  // (an empty shared_ptr needs no ~TransformerCuda without CUDA)
  Progress progress_;
  Totals t_;
  std::vector<std::int32_t> tok_, tgt_, win_tok_, win_tgt_;
};

}  // namespace

nlohmann::json evaluate(const EvalOptions& o) {
  const bool cuda = o.device == "cuda";
  if (cuda) log::info("device: {}", require_cuda_device());
  if (o.threads > 0) set_num_threads(o.threads);
  const ModelSource source = find_model(o.checkpoint);
  const ModelConfig& cfg = source.config;
  const bool bert = cfg.architecture() == Arch::bert;
  const int seq_len = o.seq_len > 0 ? o.seq_len : source.seq_len > 0 ? source.seq_len : cfg.n_positions;
  const int stride = o.stride > 0 ? o.stride : seq_len;
  if (seq_len > cfg.n_positions)
    throw UsageError("seq_len = " + std::to_string(seq_len) + " exceeds the model's position table (n_positions = " +
                     std::to_string(cfg.n_positions) + ")");
  if (stride > seq_len)
    throw UsageError("stride = " + std::to_string(stride) + " exceeds seq_len = " + std::to_string(seq_len) +
                     ": tokens between windows would go unscored");
  if (bert && stride != seq_len)
    throw UsageError("stride: a bert model is scored on consecutive masked windows (leave stride at 0)");

  // A model that records no tokenizer (llm.c's, Hugging Face's) takes the one prepare.json beside the shards names.
  const std::string data_spec = o.data.tokenizer.empty() && source.tokenizer.empty() ? prepared_tokenizer(o.data.input) : "";
  if (!data_spec.empty()) log::info("eval: tokenizer {} (from the prepare.json of {})", data_spec, o.data.input);
  const std::unique_ptr<text::Tokenizer> model_tok =
      source.make_tokenizer(o.data.tokenizer.empty() ? data_spec : o.data.tokenizer, "eval", "data.tokenizer");
  DataOptions d;
  static_cast<DataSource&>(d) = o.data;
  d.tokenizer = model_tok->spec();
  d.seq_len = 1;  // any split with a target is scored (a short one in one short window)
  const TokenData data = load_token_data(d);
  check_model_vocabulary(data, cfg);
  std::unique_ptr<text::Tokenizer> data_tok;  // a prepared folder's own tokenizer, when it differs
  if (data.tokenizer != model_tok->spec()) data_tok = text::make_tokenizer(data.tokenizer);

  // The splits scored and their windows over as many input positions as max_tokens leaves.
  std::vector<std::pair<const TokenSplit*, WindowPlan>> parts;
  std::int64_t budget = o.max_tokens > 0 ? o.max_tokens : std::numeric_limits<std::int64_t>::max();
  for (const auto& [name, split] : {std::pair{"train", &data.train}, std::pair{"val", &data.val}}) {
    if (o.data.split != "all" && o.data.split != name) continue;
    const std::int64_t n = std::min(split->size() - 1, budget);
    if (n <= 0) continue;
    parts.emplace_back(split, WindowPlan{n, seq_len, stride});
    budget -= n;
  }
  std::int64_t total_windows = 0;
  for (const auto& [split, plan] : parts) total_windows += plan.count();
  const int batch = static_cast<int>(std::min<std::int64_t>(o.batch, total_windows));
  check_host_memory(cfg, batch, seq_len, cuda);
  log::info("eval: {} ({} layers, width {}) on {} split of {}: {} windows of {} tokens, stride {}, {} threads",
            source.path.string(), cfg.n_layer, cfg.n_embd, o.data.split, data.source, total_windows, seq_len, stride,
            num_threads());
  Evaluation eval(source, o, data.vocab_size, token_byte_lengths(data_tok ? *data_tok : *model_tok), total_windows);
  const Timer timer;  // the scoring alone, as tokens_per_s says
  for (const auto& [split, plan] : parts) eval.score_split(*split, plan);
  const Totals& t = eval.finish();
  const double seconds = timer.seconds();
  const double loss = t.loss_sum / double(t.tokens);
  nlohmann::json r = {{"loss", loss},
                      {"perplexity", std::exp(loss)},
                      {"bits_per_byte", t.bytes > 0 ? t.loss_sum / std::numbers::ln2 / double(t.bytes) : 0.0},
                      {"tokens", t.tokens},
                      {"bytes", t.bytes},
                      {"windows", t.windows},
                      {"split", o.data.split},
                      {"seq_len", seq_len},
                      {"stride", stride},
                      {"checkpoint", source.path.string()},
                      {"data", data.source},
                      {"tokenizer", data.tokenizer},
                      {"device", o.device},
                      {"threads", num_threads()},
                      {"tokens_per_s", seconds > 0 ? double(t.tokens) / seconds : 0.0},
                      {"gflops_per_s", seconds > 0 ? t.flops / seconds / 1e9 : 0.0},
                      {"seconds", seconds}};
  if (!std::isfinite(loss)) r["loss"] = r["perplexity"] = r["bits_per_byte"] = nullptr;
  if (o.max_loss > 0) {
    r["max_loss"] = o.max_loss;
    r["passed"] = std::isfinite(loss) && loss <= o.max_loss;
  }
  return r;
}

}  // namespace core::train
