// `ltd-pretrain finetune`: continues a checkpoint with random-LTD (Yao et al. 2022 apply it to
// finetuning too) and the LayerToken lr schedule. The model is the checkpoint's (model.* keys are not
// read). A GPT goes on with the causal LM objective on data.input (train's loop with init_from); a
// BERT learns sequence classification from GLUE-style TSV files (`sentence<TAB>label`, a header line;
// SST-2 in ../shared/datasets/glue/SST-2; train/classify_data.hpp): each example is [CLS] + its tokens, cut
// to data.seq_len, [CLS] = the id after [MASK] (model.vocab_size must hold the tokenizer's ids, [MASK] and
// [CLS]). Micro batch k (= step x accumulation + micro) is batch k of length-bucketed epochs
// (train::LengthBatches seeded with `seed`: every example once per epoch, the last batch of an epoch shorter),
// padded to its own longest example under the padding mask (train/classify_batches.hpp); the summary's
// train_padding counts its example and batch tokens. The random-LTD layers keep at most r_t tokens per
// sequence (a batch no longer than r_t runs whole, as DeepSpeed's layer does) and gather the padding mask with
// the tokens; layer_tokens and the LayerToken lr stay the schedule's (full-length batches of data.seq_len,
// as DeepSpeed counts consumed LayerTokens); gemm_flops is measured and baseline_gemm_flops is the same
// batches without dropping. Accuracy and loss on glue.eval_file every eval_interval steps and at the end, on
// every token (length-sorted batches, each padded to its longest).
// BERT classification runs on every rank of the job (distributed.thread_ranks or the launcher's processes, ZeRO
// stages 0-2 through zero::run_data_parallel): rank r of W takes micro batch (step x accum + micro) x W + r, so a
// step's batches, token subsets, LayerTokens and padding are those of one rank accumulating accum x W micro
// batches; rank 0 writes the run directory and scores the eval set.
// Both continue bit for bit with --resume (checkpoints every save_interval steps, at the end and on a
// stop signal, which ends the run with `interrupted`).
#pragma once
#include <nlohmann/json.hpp>

#include "comm/rank.hpp"
#include "common/rundir.hpp"
#include "ltd/config.hpp"
#include "train/trainer.hpp"

namespace core::ltd {

struct GlueData {
  std::string train_file = "../shared/datasets/glue/SST-2/train.tsv";
  std::string eval_file = "../shared/datasets/glue/SST-2/test.tsv";  // GLUE's labelled dev set (872)
  std::int64_t max_train_examples = 0;  // 0: all
  template <class V>
  void visit(V& v) {
    v("train_file", train_file, "bert: TSV of sentence<TAB>label with a header line (GLUE's form)");
    v("eval_file", eval_file, "bert: TSV scored for accuracy (SST-2's test.tsv is GLUE's dev set)");
    v("max_train_examples", max_train_examples, "bert: the first N training examples (0: all)",
      core::at_least<std::int64_t>(0));
  }
};

struct FinetuneOptions : LtdTrainOptions {
  std::string checkpoint;  // a run directory or checkpoint folder (model_source.hpp)
  GlueData glue;
  template <class V>
  void visit(V& v) {
    LtdTrainOptions::visit(v);
    v("checkpoint", checkpoint, "the pretrained model: a run directory or a checkpoints/step_N folder");
    v.section("glue", glue);
  }
  // The model is known once the checkpoint is read: run_finetune validates then.
  void validate() const;
};

// Runs the finetuning on every rank of the job (as ltd-pretrain train: the launcher's processes or
// distributed.thread_ranks; BERT classification at ZeRO stages 0-2) into rundir (rank 0's; null on the others); the
// summary has train's fields (for BERT: accuracy too).
train::TrainOutcome run_finetune(const FinetuneOptions& options, RunDir* rundir, const comm::RankInfo& ranks);

}  // namespace core::ltd
