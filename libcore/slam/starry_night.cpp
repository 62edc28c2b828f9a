// UTIAS Starry Night to a landmark g2o problem (see starry_night.hpp).
#include "slam/starry_night.hpp"

#include <nlohmann/json.hpp>

#include <Eigen/Geometry>

#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <vector>

#include "common/errors.hpp"
#include "io/csv.hpp"

namespace core::slam {

namespace fs = std::filesystem;

namespace {

Eigen::Matrix3d hat(const Eigen::Vector3d& a) {
  Eigen::Matrix3d A;
  A << 0, -a(2), a(1), a(2), 0, -a(0), -a(1), a(0), 0;
  return A;
}

// exp(-theta^): the dataset's inertial-to-vehicle rotation of an axis-angle vector.
Eigen::Matrix3d psi(const Eigen::Vector3d& theta) {
  const double angle = theta.norm();
  if (angle < 1e-15) return Eigen::Matrix3d::Identity() - hat(theta);
  return Eigen::AngleAxisd(-angle, theta / angle).toRotationMatrix();
}

Eigen::Vector3d row3(const io::NumericTable& t, std::size_t r, std::size_t c) {
  return Eigen::Vector3d(t.at(r, c), t.at(r, c + 1), t.at(r, c + 2));
}

double json_number(const nlohmann::json& cal, const char* key, const fs::path& file) {
  if (!cal.contains(key)) throw DataError(file.string() + ": no key '" + key + "'");
  const auto& v = cal[key];
  return v.is_array() ? v.at(0).get<double>() : v.get<double>();
}

Eigen::VectorXd json_vector(const nlohmann::json& cal, const char* key, std::size_t size, const fs::path& file) {
  if (!cal.contains(key) || !cal[key].is_array() || cal[key].size() != size)
    throw DataError(file.string() + ": key '" + key + "' must be an array of " + std::to_string(size) + " numbers");
  Eigen::VectorXd v(size);
  for (std::size_t k = 0; k < size; ++k) v(k) = cal[key][k].get<double>();
  return v;
}

void write_upper(std::ostream& os, const Eigen::MatrixXd& I) {
  for (int r = 0; r < I.rows(); ++r)
    for (int c = r; c < I.cols(); ++c) os << ' ' << I(r, c);
}

void write_pose(std::ostream& os, const Eigen::Matrix3d& R, const Eigen::Vector3d& t) {
  const Eigen::Quaterniond q(R);
  os << t(0) << ' ' << t(1) << ' ' << t(2) << ' ' << q.x() << ' ' << q.y() << ' ' << q.z() << ' ' << q.w();
}

}  // namespace

StarryNightProblem starry_night_problem(const fs::path& folder, int first, int last) {
  const io::NumericTable gt = io::read_numeric_csv(folder / "ground_truth.csv", 7);
  const io::NumericTable od = io::read_numeric_csv(folder / "odometry.csv", 7);
  const io::NumericTable st = io::read_numeric_csv(folder / "stereo_measurements.csv", 7);
  const fs::path cal_path = folder / "calibration.json";
  std::ifstream cal_in(cal_path);
  if (!cal_in) throw InputMissingError("cannot open " + cal_path.string());
  nlohmann::json cal;
  try {
    cal = nlohmann::json::parse(cal_in);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(cal_path.string() + ": " + e.what());
  }
  const Eigen::VectorXd Ccv_rows = json_vector(cal, "C_c_v", 9, cal_path);
  const Eigen::Matrix3d C_cv = Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(Ccv_rows.data());
  const Eigen::Vector3d rho = json_vector(cal, "rho_v_c_v", 3, cal_path);
  const Eigen::Vector3d w_var = json_vector(cal, "w_var", 3, cal_path), v_var = json_vector(cal, "v_var", 3, cal_path);
  const Eigen::VectorXd y_var = json_vector(cal, "y_var", 4, cal_path);
  const double fu = json_number(cal, "fu", cal_path), fv = json_number(cal, "fv", cal_path);
  const double cu = json_number(cal, "cu", cal_path), cv = json_number(cal, "cv", cal_path);
  const double b = json_number(cal, "b", cal_path);

  const int K = static_cast<int>(gt.rows);
  if (od.rows != gt.rows) throw DataError((folder / "odometry.csv").string() + ": not as many rows as ground_truth.csv");
  if (last == 0) last = K;
  if (first < 0 || last > K || last - first < 2)
    throw UsageError("steps " + std::to_string(first) + ":" + std::to_string(last) + " must lie in 0:" +
                     std::to_string(K) + " and hold at least two steps");

  StarryNightProblem out;
  out.steps = last - first;
  std::ostringstream edges, vertices, truth;
  edges << std::setprecision(17);
  vertices << std::setprecision(17);
  truth << std::setprecision(17);
  edges << "PARAMS_SE3OFFSET 0 0 0 0 0 0 0 1\n";
  // Poses: odometry edges and dead reckoning.
  Eigen::Matrix3d R = psi(row3(gt, first, 1)).transpose();
  Eigen::Vector3d t = row3(gt, first, 4);
  std::vector<Eigen::Matrix3d> reckoned_R;
  std::vector<Eigen::Vector3d> reckoned_t;
  for (int k = first; k < last; ++k) {
    if (k > first) {
      const double T = gt.at(k, 0) - gt.at(k - 1, 0);
      if (!(T > 0)) throw DataError((folder / "ground_truth.csv").string() + ":" + std::to_string(gt.source_lines[k]) + ": time does not increase");
      const Eigen::Matrix3d dR = psi(T * row3(od, k - 1, 1)).transpose();
      const Eigen::Vector3d dt = T * row3(od, k - 1, 4);
      Eigen::VectorXd info(6);
      info << (T * T * v_var).cwiseInverse(), (T * T * w_var).cwiseInverse();
      edges << "EDGE_SE3:QUAT " << k - 1 << ' ' << k << ' ';
      write_pose(edges, dR, dt);
      write_upper(edges, Eigen::MatrixXd(info.asDiagonal()));
      edges << '\n';
      t += R * dt;
      R = R * dR;
    }
    reckoned_R.push_back(R);
    reckoned_t.push_back(t);
    vertices << "VERTEX_SE3:QUAT " << k << ' ';
    write_pose(vertices, R, t);
    vertices << '\n';
    truth << k << ' ';
    write_pose(truth, psi(row3(gt, k, 1)).transpose(), row3(gt, k, 4));
    truth << '\n';
  }
  // Landmarks: triangulated stereo points in the vehicle frame.
  const int landmark_base = K;  // g2o ids after every step's
  std::map<int, Eigen::Vector3d> first_sighting;
  const Eigen::DiagonalMatrix<double, 3> pixel_var(y_var(0), y_var(1), y_var(2));
  for (std::size_t row = 0; row < st.rows; ++row) {
    const int k = static_cast<int>(st.at(row, 0)), j = static_cast<int>(st.at(row, 2));
    if (k < first || k >= last) continue;
    const double ul = st.at(row, 3), vl = st.at(row, 4), ur = st.at(row, 5);
    const double disparity = ul - ur;
    if (!(disparity > 0)) {
      ++out.skipped_observations;
      continue;
    }
    const double z = fu * b / disparity;
    const Eigen::Vector3d pc((ul - cu) * z / fu, (vl - cv) * z / fv, z);
    // d p_c / d (u_l, v_l, u_r)
    Eigen::Matrix3d J;
    const double dz_dd = -z / disparity;  // dz/d(disparity)
    J << z / fu + (ul - cu) / fu * dz_dd, 0.0, -(ul - cu) / fu * dz_dd,  //
        (vl - cv) / fv * dz_dd, z / fv, -(vl - cv) / fv * dz_dd,          //
        dz_dd, 0.0, -dz_dd;
    const Eigen::Matrix3d cov = C_cv.transpose() * J * pixel_var * J.transpose() * C_cv;
    const Eigen::Vector3d pv = C_cv.transpose() * pc + rho;
    edges << "EDGE_SE3_TRACKXYZ " << k << ' ' << landmark_base + j << " 0 " << pv(0) << ' ' << pv(1) << ' ' << pv(2);
    write_upper(edges, cov.inverse());
    edges << '\n';
    ++out.observations;
    if (!first_sighting.count(j)) first_sighting[j] = reckoned_R[k - first] * pv + reckoned_t[k - first];
  }
  for (const auto& [j, m] : first_sighting)
    vertices << "VERTEX_TRACKXYZ " << landmark_base + j << ' ' << m(0) << ' ' << m(1) << ' ' << m(2) << '\n';
  out.landmarks = static_cast<int>(first_sighting.size());
  out.g2o = vertices.str() + edges.str();
  out.truth_tum = truth.str();
  return out;
}

}  // namespace core::slam
