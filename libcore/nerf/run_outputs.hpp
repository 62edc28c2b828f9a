// What a nice-slam-run run leaves besides its trajectory, and the commands that make it from a finished run
// directory afterwards: the learned map (artifacts/map.safetensors, map_file.hpp), its mesh
// (artifacts/mesh.ply, mesh.hpp + ply.hpp) and rendered views of chosen frames (view.hpp).
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>

#include "nerf/dataset.hpp"
#include "nerf/mesh.hpp"
#include "nerf/model.hpp"
#include "nerf/render.hpp"

namespace core::nerf {

struct OutputFiles {
  bool map = true;    // artifacts/map.safetensors (what `nice-slam-run mesh` and `render` read)
  bool mesh = false;  // artifacts/mesh.ply
  bool binary_ply = true;
  template <class V>
  void visit(V& v) {
    v("map", map, "save the learned map (grids and decoders) to artifacts/map.safetensors");
    v("mesh", mesh, "extract the map's surface to artifacts/mesh.ply (settings under mesh.*)");
    v("binary_ply", binary_ply, "binary (true) or ascii (false) PLY");
  }
};

struct RenderFrameOptions {
  std::vector<int> frames;  // dataset frame indices (from 0) rendered at their estimated poses
  template <class V>
  void visit(V& v) {
    v("frames", frames, "frames (indices from 0) rendered to artifacts/render/ at the end of the run");
  }
};

// The config sections output.*, mesh.* and render.* of `nice-slam-run run`.
struct RunOutputOptions {
  OutputFiles output;
  MeshOptions mesh;
  RenderFrameOptions render;
  template <class V>
  void visit(V& v) {
    v.section("output", output);
    v.section("mesh", mesh);
    v.section("render", render);
  }
};

// The map file of a run directory.
std::filesystem::path map_path(const std::filesystem::path& run_dir);

// After a run: the map and the mesh as `options` ask, into run_dir/artifacts; returns what was written
// ({"map": path, "mesh": {...}}). `views` (may be null) cull the mesh when options.mesh.cull.
nlohmann::json write_run_outputs(const RunOutputOptions& options, const std::filesystem::path& run_dir,
                                 const NiceModel<float>& model, const nlohmann::json& provenance,
                                 const ObservedViews* views);

// Meshes the model to `path`; returns {"mesh", "vertices", "triangles", "seconds"}.
nlohmann::json write_mesh(const NiceModel<float>& model, const MeshOptions& options, bool binary,
                          const std::filesystem::path& path, const ObservedViews* views);

// The estimated pose of a dataset frame (its trajectory entry with the same timestamp), or null.
const Pose* estimated_pose(const Trajectory& trajectory, double timestamp);
// Every stride-th frame of the dataset that has an estimated pose, with its depth: the views for culling.
ObservedViews observed_views(const Dataset& dataset, const Trajectory& trajectory, int stride);

// Frames of `dataset` rendered from the map at their poses in `trajectory` (matched by timestamp) into
// out_dir: frame_NNNNNN_colour.png (8-bit), frame_NNNNNN_depth.png (16-bit, the dataset's depth scale) and
// frame_NNNNNN_compare.png (comparison_image). UsageError for a frame index outside the dataset or a frame
// without an estimated pose. Returns one {"frame", "colour", "depth", "compare", "depth_l1"} per frame.
nlohmann::json write_rendered_frames(const NiceModel<float>& model, const SamplingOptions& sampling,
                                     const Dataset& dataset, const Trajectory& trajectory,
                                     const std::vector<int>& frames, const std::filesystem::path& out_dir);

}  // namespace core::nerf
