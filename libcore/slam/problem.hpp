// The landmark-SLAM / pose-graph problem of slam-certify (Holmes & Barfoot, RA-L 2023, eq. 1;
// SE-Sync, Rosen et al., IJRR 2019, Problem 1): rotations R_i in SO(d), translations t_i, landmarks
// m_j (d = 2 or 3), with the cost
//   sum kappa_ik ||R_k - R_i R~_ik||_F^2 + sum tau_ik ||t_k - t_i - R_i t~_ik||^2
//   + sum tau_ij ||m_j - t_i - R_i y~_ij||^2
// (SE-Sync's convention, no factor 1/2). Poses and landmarks are indexed 0..n-1 and 0..L-1; the g2o
// ids they came from are kept beside them.
#pragma once
#include <Eigen/Dense>

#include <string>
#include <vector>

namespace core::slam {

struct PoseEdge {
  int i = 0, j = 0;   // measurement of pose j in the frame of pose i
  Eigen::MatrixXd R;  // R~_ij, d x d
  Eigen::VectorXd t;  // t~_ij, d
  double kappa = 0.0, tau = 0.0;
};

struct LandmarkEdge {
  int pose = 0, landmark = 0;
  Eigen::VectorXd y;  // y~_ij: the landmark in the frame of the pose, d
  double tau = 0.0;
};

struct Problem {
  int d = 0;
  std::vector<long long> pose_ids, landmark_ids;  // g2o ids by index
  std::vector<PoseEdge> pose_edges;
  std::vector<LandmarkEdge> landmark_edges;
  int num_poses() const { return static_cast<int>(pose_ids.size()); }
  int num_landmarks() const { return static_cast<int>(landmark_ids.size()); }
  std::size_t num_edges() const { return pose_edges.size() + landmark_edges.size(); }
};

// A configuration: R = [R_0 ... R_{n-1}] (d x dn), t (d x n), landmarks m (d x L).
struct Estimate {
  Eigen::MatrixXd R, t, m;
};

// The cost of the problem's eq. above, summed edge by edge.
double evaluate_cost(const Problem& problem, const Estimate& x);

// Nearest rotation (polar factor with det +1) of a d x d matrix.
Eigen::MatrixXd project_to_rotation(const Eigen::MatrixXd& A);

// The 2D rotation by angle theta.
Eigen::Matrix2d rotation_2d(double theta);

// Moves a configuration so that pose 0 is the identity (the gauge the solver reports).
Estimate anchor_first_pose(const Estimate& x);

}  // namespace core::slam
