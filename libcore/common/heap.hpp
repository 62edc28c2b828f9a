// Heap tuning for tools that allocate and free the same large temporaries over and over (interior-point
// and Riemannian solvers, renderers). glibc's malloc serves blocks above its mmap threshold (128 KiB at
// first) with fresh mappings and returns the heap top to the kernel soon after a free, so each reuse
// faulted its pages in again and had them zeroed (measured: 35% of the SDP solver's time on SDPLIB's
// mcp250-1, 40% of nice-slam-run's rendering, 30% fewer page faults for slam-certify on MIT.g2o).
#pragma once

namespace core {

// Keeps freed blocks in the heap for reuse: raises glibc's mmap threshold to its 64-bit maximum (32 MiB;
// larger blocks are still mapped) and its trim threshold to 1 GiB. Process-wide, so a tool's main calls
// it; idempotent; a no-op without glibc.
void retain_freed_memory();

}  // namespace core
