#include "nerf/run_outputs.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>


#include "common/errors.hpp"
#include "common/log.hpp"
#include "nerf/map_file.hpp"
#include "nerf/ply.hpp"
#include "nerf/view.hpp"

namespace core::nerf {

std::filesystem::path map_path(const std::filesystem::path& run_dir) {
  return run_dir / "artifacts" / "map.safetensors";
}

const Pose* estimated_pose(const Trajectory& trajectory, double timestamp) {
  const auto at = std::find_if(trajectory.begin(), trajectory.end(),
                               [timestamp](const StampedPose& p) { return std::abs(p.timestamp - timestamp) <= 1e-6; });
  return at == trajectory.end() ? nullptr : &at->pose;
}

ObservedViews observed_views(const Dataset& dataset, const Trajectory& trajectory, int stride) {
  ObservedViews views;
  views.camera = dataset.camera;
  for (std::size_t i = 0; i < dataset.frames.size(); i += std::size_t(stride)) {
    const Pose* pose = estimated_pose(trajectory, dataset.frames[i].timestamp);
    if (!pose) continue;
    views.poses.push_back(*pose);
    views.depths.push_back(load_frame(dataset, i).depth);
  }
  return views;
}

nlohmann::json write_mesh(const NiceModel<float>& model, const MeshOptions& options, bool binary,
                          const std::filesystem::path& path, const ObservedViews* views) {
  const auto t0 = std::chrono::steady_clock::now();
  const TriangleMesh mesh = extract_mesh(model, options, views);
  write_ply(path, mesh, binary);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log::info("mesh: {} vertices, {} triangles (lattice {} cells on the longest side) in {:.1f} s -> {}",
            mesh.vertices.size(), mesh.triangles.size(), options.resolution, s, path.string());
  return {{"mesh", path.string()},
          {"vertices", mesh.vertices.size()},
          {"triangles", mesh.triangles.size()},
          {"seconds", s}};
}

nlohmann::json write_run_outputs(const RunOutputOptions& o, const std::filesystem::path& run_dir,
                                 const NiceModel<float>& model, const nlohmann::json& provenance,
                                 const ObservedViews* views) {
  nlohmann::json j = nlohmann::json::object();
  if (o.output.map) {
    save_map(map_path(run_dir), model, provenance);
    j["map"] = map_path(run_dir).string();
  }
  if (o.output.mesh) j["mesh"] = write_mesh(model, o.mesh, o.output.binary_ply, run_dir / "artifacts" / "mesh.ply", views);
  return j;
}

nlohmann::json write_rendered_frames(const NiceModel<float>& model, const SamplingOptions& sampling,
                                     const Dataset& dataset, const Trajectory& trajectory,
                                     const std::vector<int>& frames, const std::filesystem::path& out_dir) {
  nlohmann::json list = nlohmann::json::array();
  if (frames.empty()) return list;
  std::filesystem::create_directories(out_dir);
  for (int i : frames) {
    if (i < 0 || std::size_t(i) >= dataset.frames.size())
      throw UsageError(fmt::format("render frame {} is not in the dataset (frames 0 .. {})", i,
                                   dataset.frames.size() - 1));
    const double t = dataset.frames[std::size_t(i)].timestamp;
    const Pose* pose = estimated_pose(trajectory, t);
    if (!pose)
      throw UsageError(fmt::format("render frame {} (timestamp {:.6f}) has no estimated pose in the trajectory", i, t));
    const RgbdFrame frame = load_frame(dataset, std::size_t(i));
    const RenderedView view = render_view(model, sampling, dataset.camera, *pose, frame.depth, std::uint64_t(i));
    const std::string stem = fmt::format("frame_{:06d}_", i);
    write_color_png(out_dir / (stem + "colour.png"), view.colour);
    write_depth_png(out_dir / (stem + "depth.png"), view.depth, dataset.depth_scale);
    write_color_png(out_dir / (stem + "compare.png"), comparison_image(frame, view));
    double l1 = 0;
    long n = 0;
    for (std::size_t p = 0; p < frame.depth.depth.size(); ++p)
      if (frame.depth.depth[p] > 0) {
        l1 += std::abs(view.depth.depth[p] - frame.depth.depth[p]);
        ++n;
      }
    list.push_back({{"frame", i},
                    {"colour", (out_dir / (stem + "colour.png")).string()},
                    {"depth", (out_dir / (stem + "depth.png")).string()},
                    {"compare", (out_dir / (stem + "compare.png")).string()},
                    {"depth_l1", n ? l1 / double(n) : 0.0}});
    log::info("rendered frame {}: depth L1 {:.4f} m against the input -> {}", i, list.back()["depth_l1"].get<double>(),
              (out_dir / (stem + "compare.png")).string());
  }
  return list;
}

}  // namespace core::nerf
