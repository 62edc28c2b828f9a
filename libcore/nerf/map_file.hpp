// The learned map of a run in one safetensors file (artifacts/map.safetensors): the four feature grids
// (grid.<level>, F32 [nz, ny, nx, channels]), the decoders under the names save_decoders uses
// (decoder.<level>.W<k> / .b<k>), and metadata "map" (JSON: scene bound, occupancy scale, each grid's
// origin and spacing) plus "provenance". `nice-slam-run mesh` and `render` read it back.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>

#include "nerf/model.hpp"

namespace core::nerf {

// Through a temporary file and rename; IoError on failure.
void save_map(const std::filesystem::path& path, const NiceModel<float>& model, const nlohmann::json& provenance);
// InputMissingError when absent; DataError naming the file for anything that is not such a map.
NiceModel<float> load_map(const std::filesystem::path& path);

}  // namespace core::nerf
