// Resolution and cross-checks of the random-LTD configuration (see config.hpp).
#include "ltd/config.hpp"

#include <string>

#include "common/errors.hpp"

namespace core::ltd {

namespace {
const std::string kSchedule = kRandomLtdKeys + "random_ltd_schedule.";
}  // namespace

RoutingPlan resolve_routing(const DataEfficiency& de, const train::ModelConfig& model, int seq_len) {
  const RandomLtdOptions& r = de.random_ltd();
  RoutingPlan p;
  p.dropping = de.dropping();
  p.n_layer = model.n_layer;
  p.seq_len = seq_len;
  p.seed = de.seed;
  const int L = model.n_layer;
  if (r.total_layer_num != 0 && r.total_layer_num != L)
    throw UsageError(kRandomLtdKeys + "total_layer_num = " + std::to_string(r.total_layer_num) + " differs from model.n_layer = " +
                     std::to_string(L));
  const std::string type = model.architecture() == train::Arch::bert ? "encoder" : "decoder";
  if (!r.model_type.empty() && r.model_type != type)
    throw UsageError(kRandomLtdKeys + "model_type = " + r.model_type + " but model.arch = " + model.arch + " is a" +
                     (type == "encoder" ? "n " : " ") + type);
  if (r.random_ltd_layer_id.empty()) {
    for (int l = 1; l + 1 < L; ++l) p.layers.push_back(l);
  } else {
    p.layers = r.random_ltd_layer_id;
    for (std::size_t i = 0; i < p.layers.size(); ++i) {
      if (p.layers[i] < 0 || p.layers[i] >= L)
        throw UsageError(kRandomLtdKeys + "random_ltd_layer_id: " + std::to_string(p.layers[i]) + " is not a layer of the model "
                         "(0 .. model.n_layer - 1 = " + std::to_string(L - 1) + ")");
      if (i > 0 && p.layers[i] <= p.layers[i - 1])
        throw UsageError(kRandomLtdKeys + "random_ltd_layer_id: ids must be strictly increasing (" +
                         std::to_string(p.layers[i - 1]) + ", then " + std::to_string(p.layers[i]) + ")");
    }
  }
  if (r.random_ltd_layer_num != 0 && r.random_ltd_layer_num != static_cast<int>(p.layers.size()))
    throw UsageError(kRandomLtdKeys + "random_ltd_layer_num = " + std::to_string(r.random_ltd_layer_num) + " but " +
                     (r.random_ltd_layer_id.empty() ? "the default random_ltd_layer_id (all but the first and last "
                                                      "layer) has "
                                                    : "random_ltd_layer_id has ") +
                     std::to_string(p.layers.size()) + " layers");
  if (p.dropping && p.layers.empty())
    throw UsageError(kRandomLtdKeys + "random_ltd_layer_id: no layer drops tokens (a model of " + std::to_string(L) +
                     " layers has no middle layer); name the layers or disable " + kRandomLtdKeys + "enabled");
  const RandomLtdSchedule& s = r.random_ltd_schedule;
  p.seq_per_step = s.schedule_config.seq_per_step;
  p.require_steps = s.schedule_config.require_steps;
  if (!p.dropping) {  // every layer on every token: the kept-count bounds are not read
    p.min_value = p.max_value = seq_len;
    return p;
  }
  p.max_value = s.max_value == 0 ? seq_len : s.max_value;
  if (p.max_value > seq_len)
    throw UsageError(kSchedule + "max_value = " + std::to_string(p.max_value) + " exceeds data.seq_len = " +
                     std::to_string(seq_len));
  if (s.min_value > p.max_value)
    throw UsageError(kSchedule + "min_value = " + std::to_string(s.min_value) + " exceeds max_value = " +
                     std::to_string(p.max_value));
  p.min_value = s.min_value;
  return p;
}

void LtdTrainOptions::validate() const {
  train::TrainOptions::validate();
  resolve_routing(data_efficiency, model, data.seq_len);
  const LayerTokenLrSchedule& lt = data_efficiency.random_ltd().layer_token_lr_schedule;
  if (lt.enabled) {
    if (lt.total_layer_tokens != 0 && lt.warmup_layer_tokens > lt.total_layer_tokens)
      throw UsageError(kRandomLtdKeys + "layer_token_lr_schedule.warmup_layer_tokens = " + std::to_string(lt.warmup_layer_tokens) +
                       " exceeds total_layer_tokens = " + std::to_string(lt.total_layer_tokens));
    if (lt.min_lr > optimizer.params.lr)
      throw UsageError(kRandomLtdKeys + "layer_token_lr_schedule.min_lr = " + std::to_string(lt.min_lr) +
                       " exceeds the peak optimizer.params.lr = " + std::to_string(optimizer.params.lr));
  }
}

}  // namespace core::ltd
