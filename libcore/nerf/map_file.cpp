#include "nerf/map_file.hpp"

#include "common/errors.hpp"
#include "io/safetensors.hpp"
#include "nerf/slam.hpp"

namespace core::nerf {

namespace {

std::string grid_name(int level) { return std::string("grid.") + stage_name(Stage(level)); }

nlohmann::json vec_json(const Vec3& v) { return {v.x(), v.y(), v.z()}; }

}  // namespace

void save_map(const std::filesystem::path& path, const NiceModel<float>& model, const nlohmann::json& provenance) {
  io::SafetensorsWriter w;
  nlohmann::json levels = nlohmann::json::array();
  for (int l = 0; l < 4; ++l) {
    const auto& g = model.grid[l];
    w.add_view<float>(grid_name(l), {g.nz, g.ny, g.nx, g.channels}, std::span<const float>(g.values));
    levels.push_back({{"lo", vec_json(g.lo)}, {"voxel", g.voxel}});
  }
  add_decoders(w, model);
  const auto& bg = model.background;
  if (bg.enabled()) w.add_view<float>("background", {bg.elevation, bg.azimuth, 3}, std::span<const float>(bg.values));
  const nlohmann::json map = {{"bound_lo", vec_json(model.bound_lo)},
                              {"bound_hi", vec_json(model.bound_hi)},
                              {"occupancy_scale", model.occupancy_scale},
                              {"levels", levels}};
  w.set_metadata("map", map.dump());
  w.set_metadata("provenance", provenance.dump());
  w.write(path);
}

NiceModel<float> load_map(const std::filesystem::path& path) {
  const io::SafetensorsFile f(path);
  const std::string name = path.string();
  const auto meta = f.metadata().find("map");
  if (meta == f.metadata().end()) throw DataError(name + ": no 'map' metadata (not a nice-slam-run map file)");
  NiceModel<float> m;
  try {
    const auto j = nlohmann::json::parse(meta->second);
    auto vec = [](const nlohmann::json& a) { return Vec3(a.at(0).get<double>(), a.at(1).get<double>(), a.at(2).get<double>()); };
    m.bound_lo = vec(j.at("bound_lo"));
    m.bound_hi = vec(j.at("bound_hi"));
    m.occupancy_scale = j.at("occupancy_scale").get<double>();
    for (int l = 0; l < 4; ++l) {
      auto& g = m.grid[l];
      const auto& lj = j.at("levels").at(std::size_t(l));
      g.lo = vec(lj.at("lo"));
      g.voxel = lj.at("voxel").get<double>();
      const auto t = f.get(grid_name(l));
      if (t.shape.size() != 4 || !(g.voxel > 0))
        throw DataError(name + ": tensor " + grid_name(l) + " is not [nz, ny, nx, channels] or its spacing is not > 0");
      g.nz = int(t.shape[0]);
      g.ny = int(t.shape[1]);
      g.nx = int(t.shape[2]);
      g.channels = int(t.shape[3]);
      g.values = io::to_f32(t);
      // Decoder shapes from their tensors; load_decoders then checks and reads them.
      const std::string prefix = std::string("decoder.") + stage_name(Stage(l));
      for (int k = 0; f.contains(prefix + ".W" + std::to_string(k)); ++k) {
        const auto w = f.get(prefix + ".W" + std::to_string(k));
        if (w.shape.size() != 2) throw DataError(name + ": tensor " + prefix + ".W" + std::to_string(k) + " is not 2-D");
        if (k > 0 && w.shape[1] != m.decoder[l].W.back().rows())
          throw DataError(name + ": tensor " + prefix + ".W" + std::to_string(k) + " does not follow the layer before");
        m.decoder[l].W.push_back(Mat<float>::Zero(w.shape[0], w.shape[1]));
        m.decoder[l].b.push_back(Col<float>::Zero(w.shape[0]));
      }
      if (m.decoder[l].W.empty()) throw DataError(name + ": no tensors " + prefix + ".W0 ...");
    }
  } catch (const nlohmann::json::exception& e) {
    throw DataError(name + ": malformed 'map' metadata: " + e.what());
  }
  const int C = m.grid[1].channels;
  if (m.decoder[1].inputs() != C || m.decoder[2].inputs() != C + m.grid[2].channels ||
      m.decoder[3].inputs() != m.grid[3].channels || m.decoder[0].inputs() != m.grid[0].channels)
    throw DataError(name + ": decoder inputs do not match the grids' channels");
  for (int l = 0; l < 4; ++l)
    if (m.decoder[l].outputs() != (l == 3 ? 3 : 1)) throw DataError(name + ": decoder outputs are not 1, 1, 1, 3");
  load_decoders(path, m);
  if (f.contains("background")) {
    const auto t = f.get("background");
    if (t.shape.size() != 3 || t.shape[0] < 2 || t.shape[1] < 2 || t.shape[2] != 3)
      throw DataError(name + ": tensor background is not [elevation >= 2, azimuth >= 2, 3]");
    m.background.init(int(t.shape[1]), int(t.shape[0]));
    m.background.values = io::to_f32(t);
  }
  return m;
}

}  // namespace core::nerf
