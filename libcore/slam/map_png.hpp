// A top-down map of a solution as PNG (the run directory's map.png): pose-pose edges in grey,
// the trajectory (consecutive poses) in blue, landmarks as red squares, on the x-y plane scaled to
// fit. Written through libpng's simplified API to memory, then atomically to the file.
#pragma once
#include <filesystem>

#include "slam/problem.hpp"

namespace core::slam {

void write_map_png(const std::filesystem::path& path, const Problem& problem, const Estimate& x, int size = 800);

}  // namespace core::slam
