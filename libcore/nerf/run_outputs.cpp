#include "nerf/run_outputs.hpp"

#include <chrono>

#include "common/log.hpp"
#include "nerf/map_file.hpp"
#include "nerf/ply.hpp"

namespace core::nerf {

std::filesystem::path map_path(const std::filesystem::path& run_dir) {
  return run_dir / "artifacts" / "map.safetensors";
}

nlohmann::json write_mesh(const NiceModel<float>& model, const MeshOptions& options, bool binary,
                          const std::filesystem::path& path) {
  const auto t0 = std::chrono::steady_clock::now();
  const TriangleMesh mesh = extract_mesh(model, options);
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
                                 const NiceModel<float>& model, const nlohmann::json& provenance) {
  nlohmann::json j = nlohmann::json::object();
  if (o.output.map) {
    save_map(map_path(run_dir), model, provenance);
    j["map"] = map_path(run_dir).string();
  }
  if (o.output.mesh) j["mesh"] = write_mesh(model, o.mesh, o.output.binary_ply, run_dir / "artifacts" / "mesh.ply");
  return j;
}

}  // namespace core::nerf
