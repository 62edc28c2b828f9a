// Device buffers for what a ZeRO stage materialises only while a layer group uses it (DeviceEngine: stage
// 3's gathered bf16 weights, stages 2-3's full gradients from a group's backward to its bucket's
// reduce-scatter). A group takes a buffer of its size when its use begins and gives it back when done; a
// buffer given back serves the next group of the same size, so the device allocates only while the number
// of groups in use at once grows (a steady step allocates nothing and cudaFree never stalls the streams)
// and holds, per size, the most groups ever in use together. bytes() is what the pool holds, in use or not.
// Needs a CUDA build (TOOLKIT_HAVE_CUDA).
#pragma once
#include <map>
#include <vector>

#include "common/errors.hpp"
#include "kernels/runtime.hpp"

namespace core::zero {

template <class T>
class GroupSlots {
 public:
  // The group's buffer of `count` elements (uninitialised); Error if it holds one.
  T* take(int group, std::size_t count) {
    if (used_.count(group)) throw Error(ExitCode::internal, "GroupSlots: group " + std::to_string(group) + " taken twice");
    std::vector<kernels::DeviceBuffer<T>>& spare = free_[count];
    if (spare.empty()) {
      used_.emplace(group, kernels::DeviceBuffer<T>(count));
      bytes_ += count * sizeof(T);
    } else {
      used_.emplace(group, std::move(spare.back()));
      spare.pop_back();
    }
    return used_.at(group).data();
  }
  void give_back(int group) {
    const auto it = used_.find(group);
    if (it == used_.end()) return;
    free_[it->second.size()].push_back(std::move(it->second));
    used_.erase(it);
  }
  T* of(int group) {  // null when the group holds none
    const auto it = used_.find(group);
    return it == used_.end() ? nullptr : it->second.data();
  }
  std::size_t bytes() const { return bytes_; }

 private:
  std::map<std::size_t, std::vector<kernels::DeviceBuffer<T>>> free_;
  std::map<int, kernels::DeviceBuffer<T>> used_;
  std::size_t bytes_ = 0;
};

}  // namespace core::zero
