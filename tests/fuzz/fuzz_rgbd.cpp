// nice-slam-run's RGB-D dataset folders: the index files and folder listings open_dataset reads. The
// first byte picks the layout (0 TUM, 1 Replica, 2 folder) and whether camera.json supplies the
// intrinsics (bit 2; else the options do); the rest, cut at NUL bytes, is
//   TUM:     rgb.txt, depth.txt, groundtruth.txt, camera.json
//   Replica: traj.txt, names of (empty) files to create in results/, camera.json
//   folder:  pose.txt, names of (empty) files to create beside it, camera.json
// Images are empty files: a folder that indexes cleanly then fails on its first image, which is the
// image reader's own target (fuzz_image).
#include <algorithm>
#include <cctype>
#include <string>

#include "fuzz_support.hpp"
#include "nerf/dataset.hpp"

namespace {

// Creates an empty file per line of `names` (letters, digits, '.', '_', '-' only; at most 16 files).
void create_files(const std::filesystem::path& dir, std::string_view names) {
  std::filesystem::create_directories(dir);
  int count = 0;
  std::size_t start = 0;
  while (start <= names.size() && count < 16) {
    const auto end = std::min(names.find('\n', start), names.size());
    const std::string name(names.substr(start, end - start));
    start = end + 1;
    const bool safe = !name.empty() && name.size() <= 64 && name != "." && name != ".." &&
                      std::all_of(name.begin(), name.end(), [](unsigned char c) {
                        return std::isalnum(c) || c == '.' || c == '_' || c == '-';
                      });
    if (safe && !std::filesystem::exists(dir / name)) {
      fuzz::file((dir / name).lexically_relative(fuzz::scratch()).string(), "");
      ++count;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto parts = fuzz::split(fuzz::text(data + 1, size - 1), 4);
  const auto part = [&](std::size_t i) { return i < parts.size() ? parts[i] : std::string_view(); };
  return fuzz::expect_clean([&] {
    const auto dir = fuzz::scratch() / "rgbd";
    std::filesystem::remove_all(dir);
    fuzz::folder("rgbd");
    core::nerf::DatasetOptions options;
    const int layout = data[0] % 3;
    options.layout = layout == 0 ? "tum" : layout == 1 ? "replica" : "folder";
    if (layout == 0) {
      fuzz::file("rgbd/rgb.txt", part(0));
      fuzz::file("rgbd/depth.txt", part(1));
      if (!part(2).empty()) fuzz::file("rgbd/groundtruth.txt", part(2));
    } else {
      fuzz::file(layout == 1 ? "rgbd/traj.txt" : "rgbd/pose.txt", part(0));
      create_files(layout == 1 ? dir / "results" : dir, part(1));
    }
    if (data[0] & 4) {
      fuzz::file("rgbd/camera.json", part(3));
    } else {
      options.fx = options.fy = 500;
      options.cx = options.cy = 1;
    }
    core::nerf::open_dataset(dir, options);
  });
}
