// g2o reader and writers (see g2o.hpp).
#include "slam/g2o.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Geometry>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/rundir.hpp"

namespace core::slam {

namespace fs = std::filesystem;

namespace {

enum class Kind { pose, landmark };

struct Vertex {
  Kind kind;
  int line = 0;
  Eigen::VectorXd value;  // SE2: x y theta; SE3: x y z qx qy qz qw; points: coordinates
};

struct RawEdge {
  bool landmark = false;
  long long a = 0, b = 0;
  long long offset = 0;  // EDGE_SE3_TRACKXYZ: its PARAMS_SE3OFFSET id (any 64-bit id: not kept in an int)
  int line = 0;
  PoseEdge pose;
  LandmarkEdge point;
};

struct Tag {
  int values;  // numbers after the tag
  int d;
};

const std::map<std::string, Tag>& known_tags() {
  static const std::map<std::string, Tag> tags = {
      {"VERTEX_SE2", {4, 2}},      {"VERTEX_SE3:QUAT", {8, 3}}, {"VERTEX_XY", {3, 2}},
      {"VERTEX_TRACKXYZ", {4, 3}}, {"EDGE_SE2", {11, 2}},       {"EDGE_SE3:QUAT", {30, 3}},
      {"EDGE_SE2_XY", {7, 2}},     {"EDGE_SE3_TRACKXYZ", {12, 3}}, {"PARAMS_SE3OFFSET", {8, 3}}};
  return tags;
}

class LineParser {
 public:
  LineParser(const fs::path& file, int line, std::vector<std::string> tokens, bool normalize)
      : file_(file), line_(line), tokens_(std::move(tokens)), normalize_(normalize) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw DataError(file_.string() + ":" + std::to_string(line_) + ": " + what);
  }
  long long id(int k) const {
    const std::string& s = tokens_.at(k);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0 || v < 0)
      fail(tokens_[0] + ": value " + std::to_string(k) + " ('" + s + "') is not a non-negative integer id");
    return v;
  }
  double number(int k) const {
    const std::string& s = tokens_.at(k);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0') fail(tokens_[0] + ": value " + std::to_string(k) + " ('" + s + "') is not a number");
    if (!std::isfinite(v)) fail(tokens_[0] + ": value " + std::to_string(k) + " is " + s);
    return v;
  }
  Eigen::VectorXd numbers(int first, int count) const {
    Eigen::VectorXd v(count);
    for (int k = 0; k < count; ++k) v(k) = number(first + k);
    return v;
  }
  // Symmetric matrix from its upper triangle, row by row (g2o's order).
  Eigen::MatrixXd upper_triangle(int first, int size) const {
    Eigen::MatrixXd I(size, size);
    int k = first;
    for (int r = 0; r < size; ++r)
      for (int c = r; c < size; ++c) I(r, c) = I(c, r) = number(k++);
    return I;
  }
  // The blocks of the information matrix that the weights come from must be positive definite.
  void require_positive_definite(const Eigen::MatrixXd& block, const char* which) const {
    if (Eigen::LLT<Eigen::MatrixXd>(block).info() != Eigen::Success)
      fail(tokens_[0] + ": " + which + " information block is not positive definite");
  }
  Eigen::Matrix3d rotation_from_quaternion(int first) const {
    const Eigen::Vector4d q = numbers(first, 4);  // qx qy qz qw
    if (q.norm() < 1e-12) fail(tokens_[0] + ": zero quaternion");
    const Eigen::Quaterniond quaternion(q(3), q(0), q(1), q(2));
    return normalize_ ? quaternion.normalized().toRotationMatrix() : quaternion.toRotationMatrix();
  }

 private:
  const fs::path& file_;
  int line_;
  std::vector<std::string> tokens_;
  bool normalize_;
};

double tau_from(const Eigen::MatrixXd& translational_information) {
  return translational_information.rows() / translational_information.inverse().trace();
}

// Union-find over poses and landmarks for the connectivity check.
struct Components {
  std::vector<int> parent;
  explicit Components(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int a) {
    while (parent[a] != a) a = parent[a] = parent[parent[a]];
    return a;
  }
  void join(int a, int b) { parent[find(a)] = find(b); }
};

struct Offset {
  Eigen::Matrix3d R = Eigen::Matrix3d::Identity();
  Eigen::Vector3d t = Eigen::Vector3d::Zero();
};

}  // namespace

G2oGraph read_g2o(const fs::path& path, const G2oOptions& options) {
  std::ifstream in(path);
  if (!in) throw InputMissingError("cannot open g2o file " + path.string());
  return parse_g2o(in, path.string(), options);
}

G2oGraph parse_g2o(std::istream& in, const std::string& name, const G2oOptions& options) {
  const fs::path path(name);
  G2oGraph g;
  std::unordered_map<long long, Vertex> vertices;
  std::vector<RawEdge> edges;
  std::map<long long, Offset> offsets;
  std::map<long long, int> offset_use_line;  // offset parameter id -> first edge line using it
  std::set<std::string> warned;
  int d = 0, d_line = 0;
  std::size_t indefinite = 0;  // pose edges whose whole information matrix is indefinite
  std::string text;
  int line_no = 0;
  while (std::getline(in, text)) {
    ++line_no;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    std::istringstream words(text);
    std::vector<std::string> tokens;
    for (std::string w; words >> w;) tokens.push_back(w);
    if (tokens.empty() || tokens[0][0] == '#') continue;
    const std::string& tag = tokens[0];
    const auto known = known_tags().find(tag);
    if (known == known_tags().end()) {
      if (warned.insert(tag).second) {
        log::warn("{}:{}: skipping unknown g2o tag {} (and any later lines with it)", path.string(), line_no, tag);
        g.skipped_tags.push_back(tag);
      }
      continue;
    }
    const LineParser p(path, line_no, tokens, options.normalize_quaternions);
    const int values = static_cast<int>(tokens.size()) - 1;
    if (values != known->second.values)
      p.fail(tag + " expects " + std::to_string(known->second.values) + " values, got " + std::to_string(values));
    if (d == 0) {
      d = known->second.d;
      d_line = line_no;
    } else if (d != known->second.d) {
      p.fail(tag + " is " + std::to_string(known->second.d) + "D but line " + std::to_string(d_line) + " was " +
             std::to_string(d) + "D");
    }

    if (tag.rfind("VERTEX_", 0) == 0) {
      const long long id = p.id(1);
      const Kind kind = (tag == "VERTEX_SE2" || tag == "VERTEX_SE3:QUAT") ? Kind::pose : Kind::landmark;
      const auto [it, fresh] = vertices.emplace(id, Vertex{kind, line_no, p.numbers(2, values - 1)});
      if (!fresh) p.fail("vertex " + std::to_string(id) + " already declared on line " + std::to_string(it->second.line));
      if (tag == "VERTEX_SE3:QUAT") (void)p.rotation_from_quaternion(5);
      continue;
    }
    if (tag == "PARAMS_SE3OFFSET") {
      Offset o;
      o.t = p.numbers(2, 3);
      o.R = p.rotation_from_quaternion(5);
      if (!offsets.emplace(p.id(1), o).second) p.fail("parameter " + tokens[1] + " already defined");
      g.edge_lines.push_back(text);
      continue;
    }

    RawEdge e;
    e.line = line_no;
    e.a = p.id(1);
    e.b = p.id(2);
    if (e.a == e.b) p.fail(tag + " joins vertex " + std::to_string(e.a) + " to itself");
    if (tag == "EDGE_SE2") {
      const Eigen::Vector3d m = p.numbers(3, 3);
      const Eigen::MatrixXd I = p.upper_triangle(6, 3);
      p.require_positive_definite(I.topLeftCorner(2, 2), "translational");
      p.require_positive_definite(I.bottomRightCorner(1, 1), "rotational");
      indefinite += Eigen::LLT<Eigen::MatrixXd>(I).info() != Eigen::Success;
      e.pose.t = m.head<2>();
      e.pose.R = rotation_2d(m(2));
      e.pose.tau = tau_from(I.topLeftCorner(2, 2));
      e.pose.kappa = I(2, 2);
    } else if (tag == "EDGE_SE3:QUAT") {
      const Eigen::MatrixXd I = p.upper_triangle(10, 6);
      p.require_positive_definite(I.topLeftCorner(3, 3), "translational");
      p.require_positive_definite(I.bottomRightCorner(3, 3), "rotational");
      indefinite += Eigen::LLT<Eigen::MatrixXd>(I).info() != Eigen::Success;
      e.pose.t = p.numbers(3, 3);
      e.pose.R = p.rotation_from_quaternion(6);
      e.pose.tau = tau_from(I.topLeftCorner(3, 3));
      e.pose.kappa = 3.0 / (2.0 * I.bottomRightCorner(3, 3).inverse().trace());
    } else if (tag == "EDGE_SE2_XY") {
      e.landmark = true;
      e.point.y = p.numbers(3, 2);
      const Eigen::MatrixXd I = p.upper_triangle(5, 2);
      p.require_positive_definite(I, "point");
      e.point.tau = tau_from(I);
    } else {  // EDGE_SE3_TRACKXYZ pose point offset x y z I(6)
      e.landmark = true;
      const long long offset = p.id(3);
      offset_use_line.emplace(offset, line_no);
      e.point.y = p.numbers(4, 3);
      const Eigen::MatrixXd I = p.upper_triangle(7, 3);
      p.require_positive_definite(I, "point");
      e.point.tau = tau_from(I);
      e.offset = offset;  // resolved below, once all parameters are read
    }
    edges.push_back(std::move(e));
    g.edge_lines.push_back(text);
  }
  if (in.bad()) throw IoError("error reading " + path.string());
  if (indefinite > 0)
    log::warn("{}: {} pose edges have an indefinite information matrix (their translational and rotational "
              "blocks, the only parts the weights use, are positive definite)", path.string(), indefinite);
  if (edges.empty() && !options.estimate_only)
    throw DataError(path.string() + ": no edges (" + std::to_string(line_no) + " lines read)");

  // Vertex kinds: declared, or (when the file declares none) implied by the edges.
  g.has_vertices = !vertices.empty();
  auto kind_at = [&](long long id, Kind kind, const RawEdge& e) {
    auto it = vertices.find(id);
    if (it == vertices.end()) {
      if (g.has_vertices)
        throw DataError(path.string() + ":" + std::to_string(e.line) + ": vertex " + std::to_string(id) +
                        " is not declared (dangling id)");
      it = vertices.emplace(id, Vertex{kind, e.line, {}}).first;
    }
    if (it->second.kind != kind)
      throw DataError(path.string() + ":" + std::to_string(e.line) + ": vertex " + std::to_string(id) + " is a " +
                      (it->second.kind == Kind::pose ? "pose" : "landmark") + " (line " +
                      std::to_string(it->second.line) + ") but this edge needs a " +
                      (kind == Kind::pose ? "pose" : "landmark"));
  };
  for (const RawEdge& e : edges) {
    kind_at(e.a, Kind::pose, e);
    kind_at(e.b, e.landmark ? Kind::landmark : Kind::pose, e);
  }
  std::vector<long long> ids;
  for (const auto& [id, v] : vertices) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  std::unordered_map<long long, int> index;
  Problem& P = g.problem;
  P.d = d;
  for (long long id : ids) {
    auto& list = vertices.at(id).kind == Kind::pose ? P.pose_ids : P.landmark_ids;
    index[id] = static_cast<int>(list.size());
    list.push_back(id);
  }
  if (P.pose_ids.empty()) throw DataError(path.string() + ": no poses");

  for (RawEdge& e : edges) {
    if (e.landmark) {
      if (d == 3) {
        const long long offset = e.offset;
        const auto o = offsets.find(offset);
        if (o == offsets.end())
          throw DataError(path.string() + ":" + std::to_string(e.line) + ": offset parameter " +
                          std::to_string(offset) + " is not defined by a PARAMS_SE3OFFSET line");
        e.point.y = o->second.R * e.point.y + o->second.t;  // into the pose's frame
      }
      e.point.pose = index.at(e.a);
      e.point.landmark = index.at(e.b);
      P.landmark_edges.push_back(std::move(e.point));
    } else {
      e.pose.i = index.at(e.a);
      e.pose.j = index.at(e.b);
      P.pose_edges.push_back(std::move(e.pose));
    }
  }

  // Connectivity: every vertex joined to the first pose.
  const int n = P.num_poses();
  Components comp(n + P.num_landmarks());
  for (const PoseEdge& e : P.pose_edges) comp.join(e.i, e.j);
  for (const LandmarkEdge& e : P.landmark_edges) comp.join(e.pose, n + e.landmark);
  for (long long id : options.estimate_only ? std::vector<long long>{} : ids) {
    const Vertex& v = vertices.at(id);
    const int node = (v.kind == Kind::pose ? 0 : n) + index.at(id);
    if (comp.find(node) != comp.find(0))
      throw DataError(path.string() + ":" + std::to_string(v.line) + ": vertex " + std::to_string(id) +
                      " is not connected to vertex " + std::to_string(P.pose_ids[0]) +
                      " (the graph is disconnected)");
  }

  // Initial estimates from the vertices.
  g.initial.R = Eigen::MatrixXd::Zero(d, d * n);
  g.initial.t = Eigen::MatrixXd::Zero(d, n);
  g.initial.m = Eigen::MatrixXd::Zero(d, P.num_landmarks());
  for (int i = 0; i < n; ++i) {
    const Vertex& v = vertices.at(P.pose_ids[i]);
    if (v.value.size() == 0) {
      g.initial.R.middleCols(d * i, d).setIdentity();
    } else if (d == 2) {
      g.initial.t.col(i) = v.value.head(2);
      g.initial.R.middleCols(2 * i, 2) = rotation_2d(v.value(2));
    } else {
      g.initial.t.col(i) = v.value.head(3);
      const Eigen::Vector4d q = v.value.tail(4);
      g.initial.R.middleCols(3 * i, 3) = Eigen::Quaterniond(q(3), q(0), q(1), q(2)).normalized().toRotationMatrix();
    }
  }
  for (int j = 0; j < P.num_landmarks(); ++j) {
    const Vertex& v = vertices.at(P.landmark_ids[j]);
    if (v.value.size()) g.initial.m.col(j) = v.value;
  }
  return g;
}

Estimate read_g2o_estimate(const fs::path& path, const Problem& problem) {
  const G2oGraph c = read_g2o(path, G2oOptions{.estimate_only = true});
  if (!c.has_vertices) throw DataError(path.string() + ": the candidate declares no vertices");
  if (c.problem.d != problem.d)
    throw DataError(path.string() + ": the candidate is " + std::to_string(c.problem.d) + "D, the problem " +
                    std::to_string(problem.d) + "D");
  auto lookup = [&](const std::vector<long long>& ids, long long id, const char* what) {
    const auto it = std::lower_bound(ids.begin(), ids.end(), id);
    if (it == ids.end() || *it != id)
      throw DataError(path.string() + ": the candidate has no " + what + " vertex " + std::to_string(id));
    return static_cast<int>(it - ids.begin());
  };
  const int d = problem.d;
  Estimate x;
  x.R.resize(d, d * problem.num_poses());
  x.t.resize(d, problem.num_poses());
  x.m.resize(d, problem.num_landmarks());
  for (int i = 0; i < problem.num_poses(); ++i) {
    const int k = lookup(c.problem.pose_ids, problem.pose_ids[i], "pose");
    x.R.middleCols(d * i, d) = c.initial.R.middleCols(d * k, d);
    x.t.col(i) = c.initial.t.col(k);
  }
  for (int j = 0; j < problem.num_landmarks(); ++j)
    x.m.col(j) = c.initial.m.col(lookup(c.problem.landmark_ids, problem.landmark_ids[j], "landmark"));
  return x;
}

namespace {

std::ostream& precise(std::ostream& os) { return os << std::setprecision(17); }

Eigen::Quaterniond quaternion_of(const Eigen::MatrixXd& R) {
  Eigen::Matrix3d R3 = Eigen::Matrix3d::Identity();
  R3.topLeftCorner(R.rows(), R.cols()) = R;
  return Eigen::Quaterniond(R3).normalized();
}

}  // namespace

void write_g2o(const fs::path& path, const G2oGraph& g, const Estimate& x) {
  const Problem& P = g.problem;
  const int d = P.d;
  std::ostringstream os;
  precise(os);
  for (int i = 0; i < P.num_poses(); ++i) {
    const Eigen::MatrixXd R = x.R.middleCols(d * i, d);
    if (d == 2) {
      os << "VERTEX_SE2 " << P.pose_ids[i] << ' ' << x.t(0, i) << ' ' << x.t(1, i) << ' ' << std::atan2(R(1, 0), R(0, 0)) << '\n';
    } else {
      const Eigen::Quaterniond q = quaternion_of(R);
      os << "VERTEX_SE3:QUAT " << P.pose_ids[i] << ' ' << x.t(0, i) << ' ' << x.t(1, i) << ' ' << x.t(2, i) << ' '
         << q.x() << ' ' << q.y() << ' ' << q.z() << ' ' << q.w() << '\n';
    }
  }
  for (int j = 0; j < P.num_landmarks(); ++j) {
    os << (d == 2 ? "VERTEX_XY " : "VERTEX_TRACKXYZ ") << P.landmark_ids[j];
    for (int k = 0; k < d; ++k) os << ' ' << x.m(k, j);
    os << '\n';
  }
  for (const std::string& line : g.edge_lines) os << line << '\n';
  write_file_atomic(path, os.str());
}

void write_tum(const fs::path& path, const Problem& P, const Estimate& x) {
  const int d = P.d;
  std::ostringstream os;
  precise(os);
  for (int i = 0; i < P.num_poses(); ++i) {
    const Eigen::Quaterniond q = quaternion_of(x.R.middleCols(d * i, d));
    os << P.pose_ids[i] << ' ' << x.t(0, i) << ' ' << x.t(1, i) << ' ' << (d == 3 ? x.t(2, i) : 0.0) << ' ' << q.x()
       << ' ' << q.y() << ' ' << q.z() << ' ' << q.w() << '\n';
  }
  write_file_atomic(path, os.str());
}

void write_landmarks_csv(const fs::path& path, const Problem& P, const Estimate& x) {
  std::ostringstream os;
  precise(os);
  os << (P.d == 2 ? "id,x,y\n" : "id,x,y,z\n");
  for (int j = 0; j < P.num_landmarks(); ++j) {
    os << P.landmark_ids[j];
    for (int k = 0; k < P.d; ++k) os << ',' << x.m(k, j);
    os << '\n';
  }
  write_file_atomic(path, os.str());
}

}  // namespace core::slam
