// Triangle meshes in the PLY format (Turk 1994): a text header naming the elements and their properties,
// then the data as text (ascii) or little-endian binary. The writer emits vertices as float x, y, z
// (plus uchar red, green, blue when the mesh has colours) and faces as a uchar-counted list of int
// vertex_indices; the reader accepts exactly that layout in either format, which is what the tool writes
// (e.g. for a round trip or for checking a mesh file), and is a DataError naming the file otherwise.
#pragma once
#include <filesystem>

#include "nerf/mesh.hpp"

namespace core::nerf {

// Through a temporary file and rename; IoError on failure.
void write_ply(const std::filesystem::path& path, const TriangleMesh& mesh, bool binary = true);
TriangleMesh read_ply(const std::filesystem::path& path);

}  // namespace core::nerf
