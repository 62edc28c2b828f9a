// RGB-D sequences on disk, in three layouts, opened into one index of frames:
//  - tum:     TUM RGB-D benchmark (rgb.txt, depth.txt, optional groundtruth.txt; depth and ground truth
//             associated to each colour image by nearest timestamp within max_dt; depth scale 5000);
//  - replica: NICE-SLAM's Replica layout (results/frameNNNNNN.jpg|png, results/depthNNNNNN.png, traj.txt
//             with one row-major 4x4 camera-to-world matrix per line; depth scale 6553.5);
//  - folder:  colour_N.png / depth_N.png (N = 1, 2, ...) and pose.txt with `tx ty tz qx qy qz qw` per
//             frame (camera to world), e.g. slambook's ICL-NUIM frames; depth scale 5000.
// Intrinsics come from the config, else from camera.json beside the data (written by `synth`). Poses
// are camera-to-world in the OpenCV camera convention (x right, y down, z forward); a negative fy
// (ICL-NUIM) flips the image's y axis and is kept as given.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "nerf/image.hpp"
#include "nerf/trajectory.hpp"

namespace core::nerf {

struct Intrinsics {
  int width = 0, height = 0;
  double fx = 0, fy = 0, cx = 0, cy = 0;
  // Unit-depth ray direction (camera frame) through pixel centre (u, v): z = 1.
  Vec3 ray(double u, double v) const { return Vec3((u - cx) / fx, (v - cy) / fy, 1.0); }
};

struct DatasetOptions {
  std::string layout = "auto";  // auto | tum | replica | folder
  double fx = 0, fy = 0, cx = 0, cy = 0;  // 0: from camera.json
  double depth_scale = 0;                  // units per metre; 0: the layout's default
  double max_dt = 0.02;                    // TUM association tolerance (s)
  int downscale = 1;                       // integer image reduction (colour averaged, depth subsampled)
  int max_frames = 0;                      // 0: all
  int stride = 1;                          // use every stride-th frame
  template <class V>
  void visit(V& v);
};

struct FrameRecord {
  double timestamp = 0;
  std::filesystem::path color, depth;
  std::optional<Pose> groundtruth;
};

struct Dataset {
  std::string layout;
  std::filesystem::path root;
  Intrinsics camera;  // after downscaling
  double depth_scale = 5000;
  int downscale = 1;
  std::vector<FrameRecord> frames;
  Trajectory groundtruth;  // every ground-truth pose the dataset has (for evaluation); may be empty
  bool has_groundtruth() const { return !groundtruth.empty(); }
  nlohmann::json describe() const;
};

struct RgbdFrame {
  double timestamp = 0;
  ColorImage color;
  DepthImage depth;
  std::optional<Pose> groundtruth;
};

// Opens the index (no images read except the first, for the image size). InputMissingError (66) when
// the folder or an index file is missing; DataError (65) for malformed index lines, frame counts that do
// not match, or missing intrinsics; UsageError for a layout that does not fit the folder.
Dataset open_dataset(const std::filesystem::path& dir, const DatasetOptions& options);

// Reads frame i (colour and depth, downscaled); DataError when its size differs from the first frame's
// or the depth PNG is not 16-bit; InputMissingError when a file is missing.
RgbdFrame load_frame(const Dataset& dataset, std::size_t i);

// camera.json: {"fx", "fy", "cx", "cy", "width", "height", "depth_scale"}.
void write_camera_json(const std::filesystem::path& path, const Intrinsics& camera, double depth_scale);

template <class V>
void DatasetOptions::visit(V& v) {
  v("layout", layout, "dataset layout: auto | tum | replica | folder",
    core::one_of({"auto", "tum", "replica", "folder"}));
  v("fx", fx, "focal length x in pixels at full resolution (0: from camera.json)");
  v("fy", fy, "focal length y in pixels (may be negative, as ICL-NUIM's; 0: from camera.json)");
  v("cx", cx, "principal point x in pixels (0 with fx = 0: from camera.json)");
  v("cy", cy, "principal point y in pixels");
  v("depth_scale", depth_scale, "depth PNG units per metre (0: 5000 for tum/folder, 6553.5 for replica)",
    core::at_least(0.0));
  v("max_dt", max_dt, "TUM: association tolerance in seconds", core::in_range(0.0, 10.0));
  v("downscale", downscale, "integer image reduction factor (4: 640x480 -> 160x120)", core::in_range(1, 64));
  v("max_frames", max_frames, "use at most this many frames (0: all)", core::at_least(0));
  v("stride", stride, "use every stride-th frame", core::in_range(1, 10000));
}

}  // namespace core::nerf
