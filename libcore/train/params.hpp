// Parameter layout of the transformer: one flat contiguous buffer ("group") per transformer block
// plus one group "embed" for everything outside the blocks (embeddings, final LayerNorm, BERT
// heads). Each tensor is a named view (offset, shape) into its group; offsets are multiples of
// kAlign elements (64 bytes for float) and the padding between tensors stays zero. Gradients and
// the AdamW moments use FlatBuffers over the same layout, so a ZeRO-3 shard of a group is a plain
// [begin, end) range of every one of them.
//
// Matrix convention (same as llm.c and torch.nn.Linear): a weight is [out, in] row-major and a
// linear layer computes y = x W^T + b. Hugging Face GPT-2 (Conv1D) stores [in, out]; the
// interop code transposes. Tensor names equal the HF GPT-2 names (without the "transformer."
// prefix) wherever the tensor exists there.
//
// Group "embed" tensor order (EmbedTensor):
//   wte.weight [Vp, C]   wpe.weight [n_positions, C]   ln_f.weight [C]   ln_f.bias [C]
//   bert only: wse.weight [type_vocab_size, C]
//              mlm.dense.weight [C, C]  mlm.dense.bias [C]  mlm.ln.weight [C]  mlm.ln.bias [C]
//              mlm.bias [Vp]   pooler.weight [C, C]  pooler.bias [C]
//              classifier.weight [num_labels, C]  classifier.bias [num_labels]
// Group "h.L" tensor order (BlockTensor), names prefixed "h.L.":
//   ln_1.weight [C]  ln_1.bias [C]  attn.c_attn.weight [3C, C]  attn.c_attn.bias [3C]
//   attn.c_proj.weight [C, C]  attn.c_proj.bias [C]  ln_2.weight [C]  ln_2.bias [C]
//   mlp.c_fc.weight [4C, C]  mlp.c_fc.bias [4C]  mlp.c_proj.weight [C, 4C]  mlp.c_proj.bias [C]
// c_attn's 3C outputs are [q; k; v], head h using columns h*hd .. (h+1)*hd of each.
// Group order: 0 = "embed", 1 + l = "h.l".
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "train/model_config.hpp"

namespace core::train {

inline constexpr std::size_t kAlign = 16;  // elements; tensor offsets are multiples of this

// 64-byte aligned allocation for every host buffer the layers read. Eigen's vectorised reductions
// peel leading elements up to an aligned address, so a sum's order (and last bits) depends on the
// buffer's address modulo 64; fixing the alignment keeps results identical across processes,
// which bit-identical --resume needs.
template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new[](n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, std::size_t) { ::operator delete[](p, std::align_val_t{64}); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const { return true; }
};
template <class T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

enum EmbedTensor : int {
  kWte, kWpe, kLnfW, kLnfB,
  kWse, kMlmDenseW, kMlmDenseB, kMlmLnW, kMlmLnB, kMlmBias, kPoolW, kPoolB, kClsW, kClsB,
};
inline constexpr int kGptEmbedTensors = 4;
inline constexpr int kBertEmbedTensors = 14;

enum BlockTensor : int {
  kLn1W, kLn1B, kQkvW, kQkvB, kAttnProjW, kAttnProjB, kLn2W, kLn2B, kFcW, kFcB, kFcProjW, kFcProjB,
  kBlockTensors
};

struct TensorView {
  std::string name;                  // e.g. "h.3.attn.c_attn.weight"
  std::size_t offset = 0;            // in elements, from the start of its group
  std::vector<std::int64_t> shape;   // row-major
  std::size_t numel = 0;
  bool decay = false;                // AdamW weight decay applies (matrices and embeddings only)
};

struct ParamGroup {
  std::string name;                  // "embed" or "h.L"
  std::size_t size = 0;              // elements, a multiple of kAlign
  std::vector<TensorView> tensors;
};

class ParamLayout {
 public:
  explicit ParamLayout(const ModelConfig& cfg);  // calls cfg.validate()

  const ModelConfig& config() const { return cfg_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  int num_groups() const { return static_cast<int>(groups_.size()); }
  static int block_group(int layer) { return 1 + layer; }

  const TensorView& embed(EmbedTensor t) const { return groups_[0].tensors[t]; }
  const TensorView& block(int layer, BlockTensor t) const { return groups_[block_group(layer)].tensors[t]; }
  // (group, tensor index) of a name; throws DataError when there is no such tensor.
  std::pair<int, int> find(const std::string& name) const;

  std::size_t total_elements() const;   // sum of group sizes, padding included
  std::size_t parameter_count() const;  // sum of numel (padding excluded)

 private:
  ModelConfig cfg_;
  std::vector<ParamGroup> groups_;
};

// When a FlatBuffers allocates its groups: at construction, or later group by group (a data-parallel
// engine that keeps only shards builds the state without ever holding all of it, as ZeRO's zero.Init).
enum class Allocation { eager, deferred };

// One 64-byte-aligned, zero-initialised buffer per group of a layout (parameters, gradients,
// AdamW moments). Move-only. A data-parallel engine (ZeRO) may release a group's buffer while
// another rank owns it and allocate it again when it is needed; group(g) of a released group is null.
template <class T>
class FlatBuffers {
 public:
  explicit FlatBuffers(const ParamLayout& layout, Allocation allocation = Allocation::eager);
  const ParamLayout& layout() const { return *layout_; }

  T* group(int g) { return bufs_[g].get(); }
  const T* group(int g) const { return bufs_[g].get(); }
  std::size_t group_size(int g) const { return layout_->groups()[g].size; }
  int num_groups() const { return layout_->num_groups(); }

  T* embed(EmbedTensor t) { return group(0) + layout_->embed(t).offset; }
  const T* embed(EmbedTensor t) const { return group(0) + layout_->embed(t).offset; }
  T* block(int l, BlockTensor t) { return group(ParamLayout::block_group(l)) + layout_->block(l, t).offset; }
  const T* block(int l, BlockTensor t) const {
    return group(ParamLayout::block_group(l)) + layout_->block(l, t).offset;
  }
  T* tensor(int g, int t) { return group(g) + layout_->groups()[g].tensors[t].offset; }
  const T* tensor(int g, int t) const { return group(g) + layout_->groups()[g].tensors[t].offset; }

  // Zeroes every allocated group.
  void zero();
  // Frees group g's buffer (no-op when released); allocate() gives it back, zero-filled.
  void release(int g) { bufs_[g].reset(); }
  void allocate(int g);
  // Elements of the allocated groups.
  std::size_t resident_elements() const;

 private:
  struct Free {
    void operator()(T* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  const ParamLayout* layout_;
  std::vector<std::unique_ptr<T[], Free>> bufs_;
};

// Normal(0, std) weights (residual projections attn.c_proj and mlp.c_proj scaled by
// 1/sqrt(2 n_layer), as GPT-2), zero biases, unit LayerNorm gains; deterministic in `seed`.
template <class T>
void init_parameters(FlatBuffers<T>& params, std::uint64_t seed);
// The same values for group g alone (allocated): each group draws from its own stream of `seed`, so
// initialising the groups one at a time gives init_parameters' weights.
template <class T>
void init_parameter_group(FlatBuffers<T>& params, int g, std::uint64_t seed);

}  // namespace core::train
