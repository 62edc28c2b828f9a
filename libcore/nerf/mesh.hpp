// Meshes of a learned map (NICE-SLAM, Zhu et al. 2022, Sec. 4: "we extract meshes with marching cubes").
// The fine-level occupancy is sampled on a regular lattice over the scene bound and its level set
// {occupancy = 0.5} is extracted by marching tetrahedra: every lattice cube is split into the six
// tetrahedra of the Kuhn (Freudenthal) triangulation, which share their faces with those of the
// neighbouring cubes, so the surface is closed wherever it does not leave the lattice. Each tetrahedron
// is cut by one triangle (one corner on the other side) or one quad (two and two) whose vertices lie
// on the tetrahedron's edges, placed by linear interpolation; vertices on a shared lattice edge are
// shared. Triangles are oriented (counter-clockwise seen from outside) so that their normals point
// from the occupied side (value above the level) to the free side. Vertex colours come from the colour
// decoder evaluated at the vertices. Space no camera observed has whatever occupancy the untrained grids
// give it, so, as NICE-SLAM culls its meshes, triangles with a vertex outside the observed space (in no
// view's image at a pixel with depth, or behind that depth by more than a margin) can be removed.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "common/config.hpp"
#include "nerf/dataset.hpp"
#include "nerf/model.hpp"

namespace core::nerf {

// Values at the points lo + spacing * (i, j, k) of a regular lattice, x fastest.
struct ScalarLattice {
  Vec3 lo = Vec3::Zero();
  double spacing = 1;
  int nx = 0, ny = 0, nz = 0;
  std::vector<float> values;  // values[(k * ny + j) * nx + i]
  std::size_t index(int i, int j, int k) const { return (std::size_t(k) * ny + j) * nx + i; }
  Vec3 point(int i, int j, int k) const { return lo + spacing * Vec3(i, j, k); }
};

struct TriangleMesh {
  std::vector<Vec3> vertices;
  std::vector<std::array<std::uint8_t, 3>> colours;  // empty, or one per vertex
  std::vector<std::array<std::int32_t, 3>> triangles;
};

// The surface {value = level} of the lattice, oriented from values above the level to values below.
TriangleMesh extract_isosurface(const ScalarLattice& lattice, double level);

struct MeshOptions {
  int resolution = 256;  // lattice cells along the longest side of the scene bound
  double level = 0.5;    // occupancy of the surface
  bool colour = true;    // vertex colours from the colour decoder
  bool cull = true;      // drop triangles outside the observed space
  double cull_margin = 0.05;
  int cull_stride = 5;   // every n-th frame of the run is a view for culling
  template <class V>
  void visit(V& v) {
    v("resolution", resolution, "mesh lattice cells along the longest side of the scene bound",
      core::in_range(2, 4096));
    v("level", level, "occupancy of the extracted surface", core::in_range(0.0, 1.0));
    v("colour", colour, "vertex colours from the colour decoder");
    v("cull", cull, "drop triangles outside the space the run's frames observed (needs the dataset)");
    v("cull_margin", cull_margin, "a vertex up to this far (m) behind a view's measured depth counts as observed",
      core::at_least(0.0));
    v("cull_stride", cull_stride, "every n-th frame of the run is a view for culling", core::in_range(1, 100000));
  }
};

// Depth images and their camera poses (camera to world) that define the observed space.
struct ObservedViews {
  Intrinsics camera;
  std::vector<Pose> poses;
  std::vector<DepthImage> depths;
};

// Whether p projects into some view at a pixel with depth d and lies in front of d + margin.
bool observed(const ObservedViews& views, const Vec3& p, double margin);
// Removes the triangles with a vertex not observed, and the vertices no triangle uses any more.
void cull_unobserved(TriangleMesh& mesh, const ObservedViews& views, double margin);

// The model's surface as a mesh, culled to the views' observed space when options.cull and views are given,
// with vertex colours when options.colour.
TriangleMesh extract_mesh(const NiceModel<float>& model, const MeshOptions& options, const ObservedViews* views);

// Fine-level occupancy (middle + fine decoders) of the model at the lattice over its scene bound.
ScalarLattice occupancy_lattice(const NiceModel<float>& model, int resolution);
// Occupancy (fine level) and colour of the model at points (3 x P); colour 3 x P in [0, 1].
void evaluate_points(const NiceModel<float>& model, const Mat<float>& points, std::vector<float>* occupancy,
                     Mat<float>* colour);


}  // namespace core::nerf
