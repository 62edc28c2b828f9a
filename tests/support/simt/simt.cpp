// The emulator's scheduler (simt.hpp): threads as fibers (Boost.Context) on the calling OS thread,
// run in index order (reverse order in odd-numbered blocks), each until it waits at a barrier or
// ends; a pass that runs nobody while threads are still waiting is a deadlock.
#include "simt.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/fiber.hpp>

// SIMT_WITH_ASAN (tests/support/CMakeLists.txt): the programs linking the emulator run under
// AddressSanitizer; this file itself is not instrumented, but announces the fiber switches to it.
#if SIMT_WITH_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <vector>

namespace simt {
namespace {

namespace bctx = boost::context;

constexpr std::size_t kStackBytes = 128 * 1024;
constexpr unsigned char kPoison = 0xFF;  // NaN in fp32 and bf16

enum class Wait { none, block, warp, done };

struct Fiber {
  bctx::fiber context;  // the fiber while it is suspended
  bctx::fiber sink;     // while it runs: the scheduler, to switch back to
  unsigned char* stack = nullptr;  // its lowest address (kStackBytes)
  void* fake_stack = nullptr;      // AddressSanitizer's bookkeeping across switches
  uint3 index{};
  int linear = 0;
  Wait wait = Wait::none;
  std::uint64_t generation = 0;  // of the barrier it waits at
};

struct Barrier {
  int arrived = 0;
  std::uint64_t generation = 0;
};

// A warp barrier (__syncwarp, and each half of a collective) waits for the lanes of its mask that
// have not exited (CUDA programming guide, __syncwarp and the warp shuffle functions: "all
// non-exited threads named in mask must execute" it): a lane that exits meanwhile no longer holds
// it up.
struct WarpBarrier {
  unsigned mask = 0;     // the lanes named, while some have arrived
  unsigned arrived = 0;  // the lanes that have arrived
  std::uint64_t generation = 0;
};

struct Warp {
  WarpBarrier barrier;
  unsigned took_part = 0;  // the lanes that arrived at the last warp barrier completed
  unsigned live = 0;       // lanes that exist and have not ended
  alignas(16) unsigned char slots[32 * kSlotBytes];
};

// Fiber stacks with a guard page below each, kept for the next launch.
class StackPool {
 public:
  ~StackPool() {
    for (void* s : stacks_) munmap(s, kStackBytes + page());
  }
  unsigned char* get(std::size_t i) {
    while (stacks_.size() <= i) {
      void* p = mmap(nullptr, kStackBytes + page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      mprotect(p, page(), PROT_NONE);
      stacks_.push_back(p);
    }
    return static_cast<unsigned char*>(stacks_[i]) + page();
  }

 private:
  static std::size_t page() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }
  std::vector<void*> stacks_;
};

struct Block {
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  Barrier barrier;
  int live = 0;
  unsigned char* shared = nullptr;
  std::size_t shared_bytes = 0;
  const std::function<void()>* body = nullptr;
  Fiber* current = nullptr;
  std::string error;
  bool aborting = false;  // after an error: suspended fibers unwind when resumed
};

// Thrown inside a fiber resumed after its block failed, to unwind its stack (see abort_fibers).
struct Abort {};

Block* g_block = nullptr;

std::string hex(unsigned mask) {
  std::ostringstream s;
  s << "0x" << std::hex << mask;
  return s.str();
}

std::string where(const Fiber& f) {
  std::ostringstream s;
  s << "block (" << blockIdx.x << "," << blockIdx.y << "," << blockIdx.z << ") thread (" << f.index.x << ","
    << f.index.y << "," << f.index.z << ")";
  return s.str();
}

Block& block() {
  if (!g_block) throw EmulationError("a device function ran outside an emulated kernel launch");
  return *g_block;
}

Warp& warp_of(Block& b, const Fiber& f) { return b.warps[static_cast<std::size_t>(f.linear / 32)]; }

// Under AddressSanitizer every switch is announced (start) and completed (finish), so that it checks
// each fiber's stack against the right bounds.
const void* g_scheduler_stack = nullptr;  // learned when a fiber first starts
std::size_t g_scheduler_stack_bytes = 0;
#if SIMT_WITH_ASAN
void switch_starts(void** fake_stack, const void* bottom, std::size_t bytes) {
  __sanitizer_start_switch_fiber(fake_stack, bottom, bytes);
}
void switch_ends(void* fake_stack, const void** from_bottom = nullptr, std::size_t* from_bytes = nullptr) {
  __sanitizer_finish_switch_fiber(fake_stack, from_bottom, from_bytes);
}
#else
void switch_starts(void**, const void*, std::size_t) {}
void switch_ends(void*, const void** = nullptr, std::size_t* = nullptr) {}
#endif

// Back to the scheduler until it resumes this fiber; throws Abort when that is to unwind it.
void suspend(Fiber& f) {
  switch_starts(&f.fake_stack, g_scheduler_stack, g_scheduler_stack_bytes);
  f.sink = std::move(f.sink).resume();
  switch_ends(f.fake_stack, &g_scheduler_stack, &g_scheduler_stack_bytes);
  if (g_block->aborting) throw Abort{};
}

void wait_here(Fiber& f, Wait kind, std::uint64_t generation) {
  f.wait = kind;
  f.generation = generation;
  suspend(f);
}

// Arrival at a barrier of `expected` threads; the last one releases the others and goes on.
bool arrive(Barrier& bar, int expected) {
  if (++bar.arrived < expected) return false;
  ++bar.generation;
  bar.arrived = 0;
  return true;
}

// Completes the warp's barrier once every lane of its mask that has not ended has arrived.
bool complete_if_all_arrived(Warp& w) {
  WarpBarrier& bar = w.barrier;
  if (bar.arrived == 0 || (bar.mask & w.live & ~bar.arrived) != 0) return false;
  w.took_part = bar.arrived;
  ++bar.generation;
  bar.arrived = 0;
  return true;
}

void thread_ended(Block& b, Fiber& f) {
  f.wait = Wait::done;
  --b.live;
  if (b.barrier.arrived > 0 && b.barrier.arrived == b.live) {  // ended threads do not hold __syncthreads up
    ++b.barrier.generation;
    b.barrier.arrived = 0;
  }
  Warp& w = warp_of(b, f);
  w.live &= ~(1u << f.linear % 32);
  complete_if_all_arrived(w);  // lanes waiting for this one at a warp barrier wait no more
}

// A thread of the block: the kernel body, then the bookkeeping of its end. A std::exception from the
// body becomes an EmulationError; Abort (the block failed) ends the thread where it is.
bctx::fiber thread_main(Block& b, Fiber& f, bctx::fiber&& scheduler) {
  switch_ends(nullptr, &g_scheduler_stack, &g_scheduler_stack_bytes);
  f.sink = std::move(scheduler);
  try {
    if (b.aborting) throw Abort{};
    try {
      (*b.body)();
    } catch (const std::exception& e) {
      fail(std::string("exception: ") + e.what());
    }
    thread_ended(b, f);
  } catch (const Abort&) {
  }
  switch_starts(nullptr, g_scheduler_stack, g_scheduler_stack_bytes);  // this stack is done
  return std::move(f.sink);
}

// Switches to fiber f until it suspends or ends.
void resume(Fiber& f) {
  void* fake_stack = nullptr;
  switch_starts(&fake_stack, f.stack, kStackBytes);
  f.context = std::move(f.context).resume();
  switch_ends(fake_stack);
}

// After an error: runs every unfinished fiber to its end by unwinding its stack (Abort), so that no
// fiber is left suspended (Boost.Context would unwind it from its destructor, unannounced to ASan).
[[noreturn]] void abort_fibers(Block& b, const std::string& error) {
  b.aborting = true;
  for (Fiber& f : b.fibers) {
    b.current = &f;
    threadIdx = f.index;
    if (f.context) resume(f);
  }
  throw EmulationError(error);
}

bool runnable(Block& b, const Fiber& f) {
  switch (f.wait) {
    case Wait::none: return true;
    case Wait::block: return b.barrier.generation != f.generation;
    case Wait::warp: return warp_of(b, f).barrier.generation != f.generation;
    case Wait::done: return false;
  }
  return false;
}

std::string deadlock_report(const Block& b) {
  std::ostringstream s;
  s << "deadlock in block (" << blockIdx.x << "," << blockIdx.y << "," << blockIdx.z << "): " << b.live
    << " threads wait, none can go on;";
  int shown = 0;
  for (const Fiber& f : b.fibers) {
    if (f.wait == Wait::done || shown == 4) continue;
    ++shown;
    s << " thread (" << f.index.x << "," << f.index.y << "," << f.index.z << ") at "
      << (f.wait == Wait::block ? "__syncthreads" : "a warp barrier");
  }
  return s.str();
}

// Hands out stack i of the pool; the pool keeps it for the next block.
struct PoolStack {
  unsigned char* base;
  bctx::stack_context allocate() {
    bctx::stack_context sc;
    sc.size = kStackBytes;
    sc.sp = base + kStackBytes;
    return sc;
  }
  void deallocate(bctx::stack_context&) noexcept {}
};

// Runs the block's threads to their ends, in index order, or in reverse order when `reverse`: a read
// of data another thread writes before the next barrier then sees it unwritten in one of the two
// orders, whichever thread comes first in index order.
void run_block(Block& b, bool reverse) {
  const std::size_t n = b.fibers.size();
  for (;;) {
    bool ran = false;
    for (std::size_t i = 0; i < n; ++i) {
      Fiber& f = b.fibers[reverse ? n - 1 - i : i];
      if (!runnable(b, f)) continue;
      f.wait = Wait::none;
      b.current = &f;
      threadIdx = f.index;
      resume(f);
      if (!b.error.empty()) abort_fibers(b, b.error);
      ran = true;
    }
    if (b.live == 0) return;
    if (!ran) abort_fibers(b, deadlock_report(b));
  }
}

}  // namespace

void run_grid(dim3 grid, dim3 block_dim, std::size_t smem_bytes, const std::function<void()>& thread_body) {
  const std::size_t threads = std::size_t{block_dim.x} * block_dim.y * block_dim.z;
  if (threads == 0 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
      grid.z > 65535)
    throw EmulationError("invalid launch configuration: grid (" + std::to_string(grid.x) + "," +
                         std::to_string(grid.y) + "," + std::to_string(grid.z) + ") block " + std::to_string(threads));
  // Host threads that share the emulated device (thread ranks of the shared-GPU communicator) run their
  // grids one at a time, as the scheduler's state is global; recursive, so that a launch from inside a
  // kernel reaches the error below.
  static std::recursive_mutex one_grid_at_a_time;
  const std::lock_guard lock(one_grid_at_a_time);
  if (g_block) throw EmulationError("a kernel launched from inside a kernel");
  static StackPool stacks;
  struct AlignedFree {
    void operator()(unsigned char* p) const { ::operator delete(p, std::align_val_t(128)); }
  };
  const std::unique_ptr<unsigned char, AlignedFree> shared(
      static_cast<unsigned char*>(::operator new(smem_bytes + 1, std::align_val_t(128))));
  gridDim = grid;
  blockDim = block_dim;
  Block b;
  b.body = &thread_body;
  b.shared = shared.get();
  b.shared_bytes = smem_bytes;
  b.fibers.resize(threads);
  b.warps.resize((threads + 31) / 32);
  g_block = &b;
  struct Reset {
    ~Reset() { g_block = nullptr; }
  } reset;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = uint3{bx, by, bz};
        std::memset(b.shared, kPoison, smem_bytes);
        b.barrier = Barrier{};
        b.live = static_cast<int>(threads);
        for (std::size_t w = 0; w < b.warps.size(); ++w) {
          b.warps[w].barrier = WarpBarrier{};
          b.warps[w].took_part = 0;
          const std::size_t lanes = std::min<std::size_t>(32, threads - 32 * w);
          b.warps[w].live = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
        }
        for (std::size_t i = 0; i < threads; ++i) {
          Fiber& f = b.fibers[i];
          const auto li = static_cast<unsigned>(i);
          f.index = uint3{li % block_dim.x, li / block_dim.x % block_dim.y, li / (block_dim.x * block_dim.y)};
          f.linear = static_cast<int>(i);
          f.wait = Wait::none;
          f.stack = stacks.get(i);
          f.context = bctx::fiber(std::allocator_arg, PoolStack{f.stack},
                                  [&b, &f](bctx::fiber&& scheduler) { return thread_main(b, f, std::move(scheduler)); });
        }
        run_block(b, (bx + grid.x * (by + grid.y * std::size_t{bz})) % 2 == 1);  // odd blocks: reverse
      }
}

unsigned char* dynamic_shared_memory() { return block().shared; }

int lane_id() { return block().current->linear % 32; }

void sync_block() {
  Block& b = block();
  Fiber& f = *b.current;
  if (!arrive(b.barrier, b.live)) wait_here(f, Wait::block, b.barrier.generation);
}

void sync_warp(unsigned mask) {
  Block& b = block();
  Fiber& f = *b.current;
  Warp& w = warp_of(b, f);
  const int lane = f.linear % 32;
  if (!(mask >> lane & 1u)) fail("a warp barrier whose mask leaves out the calling lane");
  WarpBarrier& bar = w.barrier;
  if (bar.arrived == 0) bar.mask = mask;
  else if (bar.mask != mask)
    fail("lanes of one warp wait with different masks (" + hex(bar.mask) + ", " + hex(mask) + ")");
  bar.arrived |= 1u << lane;
  if (!complete_if_all_arrived(w)) wait_here(f, Wait::warp, bar.generation);
}

const unsigned char* share(unsigned mask, const void* mine, std::size_t bytes) {
  Block& b = block();
  Warp& w = warp_of(b, *b.current);
  std::memcpy(w.slots + lane_id() * kSlotBytes, mine, bytes);
  sync_warp(mask);
  return w.slots;
}

bool took_part(int lane) {
  Block& b = block();
  return warp_of(b, *b.current).took_part >> lane & 1u;
}

void release(unsigned mask) { sync_warp(mask); }

void fail(const std::string& what) {
  Block& b = block();
  Fiber& f = *b.current;
  if (b.error.empty()) b.error = where(f) + ": " + what;
  f.wait = Wait::done;
  suspend(f);  // resumed only to unwind (throws Abort)
  std::abort();
}

}  // namespace simt

namespace simt {
namespace {

float bf16_bits_to_float(std::uint32_t bits) {
  const std::uint32_t u = (bits & 0xFFFFu) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Half h (0 = low) of a 32-bit register holding two b16 values.
std::uint32_t half_of(std::uint32_t reg, int h) { return h ? reg >> 16 : reg & 0xFFFFu; }

struct MmaOperands {
  std::uint32_t a[4], b[2];
};

// mma.sync and ldmatrix are .aligned warp instructions: "undefined if ... any thread in the warp has
// exited" (PTX ISA, mma and ldmatrix). Called between share() and release().
void require_whole_warp(const char* instruction) {
  Block& b = block();
  const unsigned lanes = warp_of(b, *b.current).took_part;
  if (lanes != 0xffffffffu)
    fail(std::string(instruction) + " with lanes of the warp exited or missing (lanes taking part " + hex(lanes) + ")");
}

}  // namespace

void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1,
                       const float (&c)[4]) {
  const MmaOperands mine{{a[0], a[1], a[2], a[3]}, {b0, b1}};
  const unsigned char* slots = share(0xffffffffu, &mine, sizeof mine);
  require_whole_warp("mma.sync");
  const auto lane_operands = [&](int lane) {
    MmaOperands o;
    std::memcpy(&o, slots + lane * kSlotBytes, sizeof o);
    return o;
  };
  const int g = lane_id() / 4, q = lane_id() % 4;
  float out[4];
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i / 2), col = 2 * q + i % 2;
    float s = c[i];
    for (int k = 0; k < 16; ++k) {
      // A element (row, k): lane 4 (row % 8) + (k % 8) / 2, element index k % 2 + 2 (row >= 8) + 4 (k >= 8).
      const int ai = k % 2 + 2 * (row / 8) + 4 * (k / 8);
      const MmaOperands ha = lane_operands(4 * (row % 8) + (k % 8) / 2);
      // B element (k, col): lane 4 col + (k % 8) / 2, element index k % 2 + 2 (k >= 8).
      const int bi = k % 2 + 2 * (k / 8);
      const MmaOperands hb = lane_operands(4 * col + (k % 8) / 2);
      s += bf16_bits_to_float(half_of(ha.a[ai / 2], ai % 2)) * bf16_bits_to_float(half_of(hb.b[bi / 2], bi % 2));
    }
    out[i] = s;
  }
  release(0xffffffffu);
  std::copy(out, out + 4, d);
}

void ldmatrix_x4(std::uint32_t (&r)[4], const void* row_address, bool transpose) {
  Block& b = block();
  const auto* p = static_cast<const unsigned char*>(row_address);
  if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) fail("ldmatrix row address not 16-byte aligned");
  if (p < b.shared || p + 16 > b.shared + b.shared_bytes) fail("ldmatrix row address outside dynamic shared memory");
  const unsigned char* slots = share(0xffffffffu, &p, sizeof p);
  require_whole_warp("ldmatrix");
  const auto row_of = [&](int lane) {
    const unsigned char* a;
    std::memcpy(&a, slots + lane * kSlotBytes, sizeof a);
    return a;
  };
  const int g = lane_id() / 4, q = lane_id() % 4;
  std::uint32_t out[4];
  for (int j = 0; j < 4; ++j) {
    std::uint16_t lo, hi;
    if (!transpose) {
      std::memcpy(&lo, row_of(8 * j + g) + 2 * (2 * q), 2);
      std::memcpy(&hi, row_of(8 * j + g) + 2 * (2 * q + 1), 2);
    } else {
      std::memcpy(&lo, row_of(8 * j + 2 * q) + 2 * g, 2);
      std::memcpy(&hi, row_of(8 * j + 2 * q + 1) + 2 * g, 2);
    }
    out[j] = lo | static_cast<std::uint32_t>(hi) << 16;
  }
  release(0xffffffffu);
  std::copy(out, out + 4, r);
}

}  // namespace simt
