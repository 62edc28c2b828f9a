// g2o files for slam-certify: VERTEX_SE2 / EDGE_SE2, VERTEX_SE3:QUAT / EDGE_SE3:QUAT and g2o's point
// landmarks VERTEX_XY / EDGE_SE2_XY and VERTEX_TRACKXYZ / EDGE_SE3_TRACKXYZ (with PARAMS_SE3OFFSET).
// The weights follow SE-Sync's reader (read_g2o_file in SESync_utils.cpp): from the information
// matrix's translational block I_t and rotational block I_R,
//   tau = d / tr(I_t^-1),  kappa = I_33 (2D) or 3 / (2 tr(I_R^-1)) (3D);
// a landmark edge gets tau = d / tr(I^-1). Unlike SE-Sync's reader a blank line is skipped (SE-Sync
// pushes the previous edge again there: kitti_00/02/05 end in a blank line, so SE-Sync optimises
// them with their last edge counted twice), quaternions are normalised, and ids need not be 0..n-1.
// Unknown tags are skipped with one warning per tag, as g2o does. Malformed known lines (wrong number
// of values, non-numeric or non-finite values), information blocks that the weights come from (the
// translational and rotational blocks, a point's matrix) that are not positive definite,
// edges naming undeclared or wrong-kind vertices, self-loops, mixed dimensions and disconnected
// graphs are DataError (exit 65) with FILE:LINE; a missing file is InputMissingError (66). A whole
// 6 x 6 matrix that is indefinite while its blocks are not (cubicle.g2o: 5,021 edges) is a warning.
#pragma once
#include <filesystem>
#include <istream>
#include <string>
#include <vector>

#include "slam/problem.hpp"

namespace core::slam {

struct G2oGraph {
  Problem problem;
  Estimate initial;                     // the vertices' estimates (zero where the file declares none)
  bool has_vertices = false;            // the file declares vertices (else ids come from the edges)
  std::vector<std::string> edge_lines;  // the edge and parameter lines verbatim, in file order
  std::vector<std::string> skipped_tags;
};

struct G2oOptions {
  // false: an edge's quaternion as written (SE-Sync's reader: R~ is then not exactly a rotation;
  // the benchmark files' quaternions are unit to 2e-6, which moves their optima by up to 3e-5).
  bool normalize_quaternions = true;
  // Only the vertices matter (a candidate): a file without edges, or a disconnected one, is fine.
  bool estimate_only = false;
};

G2oGraph read_g2o(const std::filesystem::path& path, const G2oOptions& options = {});
// The same from a stream; `name` stands for the file in messages.
G2oGraph parse_g2o(std::istream& in, const std::string& name, const G2oOptions& options = {});

// A second file's vertex estimates mapped onto `problem`'s poses and landmarks by g2o id
// (for --candidate: the file may hold vertices only); DataError naming the file when one of the
// problem's vertices is absent.
Estimate read_g2o_estimate(const std::filesystem::path& path, const Problem& problem);

// The graph with its vertices at `x` and its edge lines verbatim (atomic write; IoError).
void write_g2o(const std::filesystem::path& path, const G2oGraph& graph, const Estimate& x);

// Poses in TUM format ("index tx ty tz qx qy qz qw", the g2o id as timestamp; 2D poses at z = 0).
void write_tum(const std::filesystem::path& path, const Problem& problem, const Estimate& x);
// Landmarks as CSV: id,x,y[,z].
void write_landmarks_csv(const std::filesystem::path& path, const Problem& problem, const Estimate& x);

}  // namespace core::slam
