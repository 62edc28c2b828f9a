// Knowledge distillation from a dense teacher, shared by the classifier and the language model:
//  - logits (Hinton et al. 2015), per row with student logits z, teacher logits t, label y:
//      L = (1 - alpha) CE(z, y) + alpha T^2 KL(softmax(t / T) || softmax(z / T)),
//      dL/dz = (1 - alpha) (softmax(z) - onehot(y)) + alpha T (softmax(z / T) - softmax(t / T));
//  - hidden states (as TinyBERT, Jiao et al. 2020, with the identity mapping: student and teacher share
//    their shape, so layer l is matched to layer l and no projection is learned):
//      L_hid = beta sum_l mean_{rows, c} (h_s^l - h_t^l)^2,   dL_hid/dh_s^l = 2 beta (h_s^l - h_t^l) / (rows C),
//    over the block outputs (core::train::Model::block_output), rows without a row mask entry excluded.
#pragma once
#include <cstdint>
#include <vector>

#include "train/model.hpp"

namespace core::nxm {

struct DistillOptions {
  double alpha = 0.0;          // weight of the logit term (0: task loss only)
  double temperature = 2.0;    // T
  double hidden_weight = 0.0;  // beta of the hidden-state term (0: off)
};

// One row of the logit term: `probs` = softmax(z) (what Model::logits() holds after a forward with
// targets), `teacher` = t, `label` = y, over `n` classes. Writes dL/dz / divisor (the rows averaged
// over) into dz and adds the row's KL(softmax(t / T) || softmax(z / T)) to kl_sum; ps, pt are scratch.
void distill_logits_row(const float* probs, const float* teacher, int label, int n, const DistillOptions& kd,
                        double divisor, float* dz, double& kl_sum, std::vector<double>& ps, std::vector<double>& pt);

// The hidden-state term of the last forwards of `student` and `teacher` over the same `rows` (= B T)
// positions; row_mask [rows] (null: every row) selects the rows compared. Returns L_hid and fills
// grads [n_layer][rows * n_embd] with dL_hid/dh_s^l (zero on rows left out). UsageError when the two
// models differ in n_layer or n_embd, or no row is selected.
template <class T>
double hidden_state_mse(const train::Model<T>& student, const train::Model<T>& teacher, int rows,
                        const std::uint8_t* row_mask, double weight, std::vector<std::vector<T>>& grads);

// The pointers Model::backward takes for the gradients filled by hidden_state_mse.
template <class T>
std::vector<const T*> block_grad_pointers(const std::vector<std::vector<T>>& grads);

}  // namespace core::nxm
