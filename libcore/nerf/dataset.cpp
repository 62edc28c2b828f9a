#include "nerf/dataset.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <Eigen/SVD>
#include <sstream>

#include "common/errors.hpp"
#include "common/rundir.hpp"
#include "io/input.hpp"

namespace core::nerf {

namespace fs = std::filesystem;

namespace {

struct StampedFile {
  double timestamp;
  std::string file;
};

// TUM's rgb.txt / depth.txt: `timestamp filename` per line, `#` comments.
std::vector<StampedFile> read_file_list(const fs::path& path) {
  std::ifstream in = io::open_input(path);
  std::vector<StampedFile> out;
  std::string line;
  for (std::size_t lineno = 1; std::getline(in, line); ++lineno) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream ss(line);
    StampedFile f;
    std::string extra;
    if (!(ss >> f.timestamp >> f.file) || (ss >> extra) || !std::isfinite(f.timestamp))
      throw DataError(path.string() + ":" + std::to_string(lineno) + ": expected 'timestamp filename', got " +
                      io::quote_excerpt(line));
    if (!out.empty() && !(f.timestamp > out.back().timestamp))
      throw DataError(path.string() + ":" + std::to_string(lineno) + ": timestamp does not increase");
    out.push_back(f);
  }
  if (out.empty()) throw DataError(path.string() + ": no frames listed");
  return out;
}

// Nearest entry of `b` to time t within max_dt (b sorted), or -1.
long nearest(const std::vector<double>& b, double t, double max_dt) {
  const auto it = std::lower_bound(b.begin(), b.end(), t);
  long best = -1;
  double best_dt = max_dt;
  for (auto j : {it - b.begin() - 1, it - b.begin()}) {
    if (j < 0 || j >= long(b.size())) continue;
    const double dt = std::abs(b[std::size_t(j)] - t);
    if (dt <= best_dt) {
      best_dt = dt;
      best = j;
    }
  }
  return best;
}

void open_tum(Dataset& d, const DatasetOptions& o) {
  const auto rgb = read_file_list(d.root / "rgb.txt");
  const auto depth = read_file_list(d.root / "depth.txt");
  std::vector<double> depth_t;
  for (const auto& f : depth) depth_t.push_back(f.timestamp);
  if (fs::exists(d.root / "groundtruth.txt")) d.groundtruth = read_tum_trajectory(d.root / "groundtruth.txt");
  std::vector<double> gt_t;
  for (const auto& g : d.groundtruth) gt_t.push_back(g.timestamp);
  for (const auto& c : rgb) {
    const long j = nearest(depth_t, c.timestamp, o.max_dt);
    if (j < 0) continue;  // colour frames without a depth image are skipped, as associate.py does
    FrameRecord r{c.timestamp, d.root / c.file, d.root / depth[std::size_t(j)].file, std::nullopt};
    if (!gt_t.empty()) {
      const long g = nearest(gt_t, c.timestamp, o.max_dt);
      if (g >= 0) r.groundtruth = d.groundtruth[std::size_t(g)].pose;
    }
    d.frames.push_back(r);
  }
  if (d.frames.empty())
    throw DataError((d.root / "rgb.txt").string() + ": no colour frame has a depth image within " +
                    std::to_string(o.max_dt) + " s in depth.txt");
}

// Files `prefix<number>suffix` in dir, by number.
std::map<long, fs::path> numbered_files(const fs::path& dir, const std::string& prefix,
                                        const std::vector<std::string>& suffixes) {
  std::map<long, fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    for (const auto& s : suffixes) {
      if (name.size() <= prefix.size() + s.size() || name.compare(name.size() - s.size(), s.size(), s) != 0) continue;
      const std::string num = name.substr(prefix.size(), name.size() - prefix.size() - s.size());
      if (num.find_first_not_of("0123456789") != std::string::npos) continue;
      long k = 0;
      if (std::from_chars(num.data(), num.data() + num.size(), k).ec != std::errc())
        throw DataError(e.path().string() + ": frame number " + num + " is out of range");
      if (!out.emplace(k, e.path()).second)
        throw DataError(e.path().string() + ": frame number " + std::to_string(k) + " also names " +
                        out[k].filename().string());
    }
  }
  return out;
}

std::vector<std::vector<double>> read_number_rows(const fs::path& path, std::size_t fields) {
  std::ifstream in = io::open_input(path);
  std::vector<std::vector<double>> rows;
  std::string line;
  for (std::size_t lineno = 1; std::getline(in, line); ++lineno) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream ss(line);
    std::vector<double> row;
    for (double x; ss >> x;) row.push_back(x);
    const bool clean = ss.eof();
    if (!clean || row.size() != fields ||
        !std::all_of(row.begin(), row.end(), [](double x) { return std::isfinite(x); }))
      throw DataError(path.string() + ":" + std::to_string(lineno) + ": expected " + std::to_string(fields) +
                      " finite numbers, got " + io::quote_excerpt(line));
    rows.push_back(row);
  }
  return rows;
}

void check_counts(const fs::path& where, std::size_t colours, std::size_t depths, std::size_t poses) {
  if (colours == 0) throw DataError(where.string() + ": no colour images found");
  if (colours != depths || colours != poses)
    throw DataError(where.string() + ": " + std::to_string(colours) + " colour images, " + std::to_string(depths) +
                    " depth images and " + std::to_string(poses) + " poses: the counts must match");
}

void open_replica(Dataset& d) {
  const fs::path results = d.root / "results";
  const auto colours = numbered_files(results, "frame", {".jpg", ".png"});
  const auto depths = numbered_files(results, "depth", {".png"});
  const auto rows = read_number_rows(d.root / "traj.txt", 16);
  check_counts(results, colours.size(), depths.size(), rows.size());
  std::size_t i = 0;
  for (const auto& [k, c] : colours) {
    const auto dit = depths.find(k);
    if (dit == depths.end()) throw DataError(c.string() + ": no depth image with the same number");
    Pose p;
    for (int r = 0; r < 3; ++r) {
      for (int q = 0; q < 3; ++q) p.R(r, q) = rows[i][std::size_t(4 * r + q)];
      p.t[r] = rows[i][std::size_t(4 * r + 3)];
    }
    const Eigen::JacobiSVD<Mat3> svd(p.R, Eigen::ComputeFullU | Eigen::ComputeFullV);  // nearest rotation
    p.R = svd.matrixU() * svd.matrixV().transpose();
    d.frames.push_back({double(i), c, dit->second, p});
    d.groundtruth.push_back({double(i), p});
    ++i;
  }
}

void open_folder(Dataset& d) {
  const auto colours = numbered_files(d.root, "color_", {".png", ".jpg"});
  const auto depths = numbered_files(d.root, "depth_", {".png"});
  const auto rows = read_number_rows(d.root / "pose.txt", 7);
  check_counts(d.root, colours.size(), depths.size(), rows.size());
  std::size_t i = 0;
  for (const auto& [k, c] : colours) {
    const auto dit = depths.find(k);
    if (dit == depths.end()) throw DataError(c.string() + ": no depth image with the same number");
    const auto& r = rows[i];
    const Eigen::Quaterniond q(r[6], r[3], r[4], r[5]);
    if (std::abs(q.norm() - 1) > 0.1)
      throw DataError((d.root / "pose.txt").string() + ": pose " + std::to_string(i + 1) + " has a non-unit quaternion");
    const Pose p = Pose::from_quaternion(q, Vec3(r[0], r[1], r[2]));
    d.frames.push_back({double(i), c, dit->second, p});
    d.groundtruth.push_back({double(i), p});
    ++i;
  }
}

}  // namespace

void write_camera_json(const fs::path& path, const Intrinsics& c, double depth_scale) {
  const nlohmann::json j = {{"fx", c.fx},       {"fy", c.fy},         {"cx", c.cx},
                            {"cy", c.cy},       {"width", c.width},   {"height", c.height},
                            {"depth_scale", depth_scale}};
  write_file_atomic(path, j.dump(2) + "\n");
}

Dataset open_dataset(const fs::path& dir, const DatasetOptions& o) {
  if (!fs::is_directory(dir)) throw InputMissingError(dir.string() + ": dataset folder does not exist");
  Dataset d;
  d.root = dir;
  d.layout = o.layout;
  if (d.layout == "auto") {
    if (fs::exists(dir / "rgb.txt")) d.layout = "tum";
    else if (fs::is_directory(dir / "results")) d.layout = "replica";
    else if (fs::exists(dir / "pose.txt")) d.layout = "folder";
    else
      throw InputMissingError(dir.string() +
                              ": not a dataset (no rgb.txt for TUM, results/ for Replica, pose.txt for a folder)");
  }
  if (d.layout == "tum") open_tum(d, o);
  else if (d.layout == "replica") open_replica(d);
  else open_folder(d);
  d.depth_scale = o.depth_scale > 0 ? o.depth_scale : d.layout == "replica" ? 6553.5 : 5000.0;

  Intrinsics cam;
  if (o.fx != 0) {
    if (o.fy == 0) throw UsageError("config key 'data.fy' is required when data.fx is given");
    cam.fx = o.fx;
    cam.fy = o.fy;
    cam.cx = o.cx;
    cam.cy = o.cy;
  } else if (fs::exists(dir / "camera.json")) {
    const auto bytes = io::read_file_bytes(dir / "camera.json");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
      cam.fx = j.at("fx").get<double>();
      cam.fy = j.at("fy").get<double>();
      cam.cx = j.at("cx").get<double>();
      cam.cy = j.at("cy").get<double>();
      if (o.depth_scale == 0 && j.contains("depth_scale")) d.depth_scale = j["depth_scale"].get<double>();
    } catch (const nlohmann::json::exception& e) {
      throw DataError((dir / "camera.json").string() + ": " + e.what());
    }
    if (cam.fx == 0 || cam.fy == 0) throw DataError((dir / "camera.json").string() + ": zero focal length");
  } else {
    throw UsageError(dir.string() + " has no camera.json: give the intrinsics as data.fx, data.fy, "
                                    "data.cx, data.cy");
  }
  // Frame selection.
  std::vector<FrameRecord> chosen;
  for (std::size_t i = 0; i < d.frames.size(); i += std::size_t(o.stride)) {
    if (o.max_frames > 0 && chosen.size() >= std::size_t(o.max_frames)) break;
    chosen.push_back(d.frames[i]);
  }
  d.frames = std::move(chosen);
  int w = 0, h = 0;
  read_depth_png16(d.frames.front().depth, w, h);
  d.downscale = o.downscale;
  if (w % o.downscale || h % o.downscale)
    throw UsageError("data.downscale=" + std::to_string(o.downscale) + " does not divide the image size " +
                     std::to_string(w) + "x" + std::to_string(h));
  const double s = 1.0 / o.downscale;
  cam.width = w / o.downscale;
  cam.height = h / o.downscale;
  // Pixel centres: u' = (u + 0.5) s - 0.5.
  cam.fx *= s;
  cam.fy *= s;
  cam.cx = (cam.cx + 0.5) * s - 0.5;
  cam.cy = (cam.cy + 0.5) * s - 0.5;
  d.camera = cam;
  return d;
}

RgbdFrame load_frame(const Dataset& d, std::size_t i) {
  const FrameRecord& r = d.frames.at(i);
  RgbdFrame f;
  f.timestamp = r.timestamp;
  f.groundtruth = r.groundtruth;
  ColorImage c = read_color_image(r.color);
  DepthImage z = read_depth_image(r.depth, d.depth_scale);
  const int k = d.downscale;
  const int W = d.camera.width * k, H = d.camera.height * k;
  if (c.width != W || c.height != H || z.width != W || z.height != H)
    throw DataError(r.color.string() + " / " + r.depth.filename().string() + ": image size " + std::to_string(c.width) +
                    "x" + std::to_string(c.height) + " / " + std::to_string(z.width) + "x" + std::to_string(z.height) +
                    " differs from the first frame's " + std::to_string(W) + "x" + std::to_string(H));
  if (k == 1) {
    f.color = std::move(c);
    f.depth = std::move(z);
    return f;
  }
  const int w = d.camera.width, h = d.camera.height;
  f.color.width = f.depth.width = w;
  f.color.height = f.depth.height = h;
  f.color.rgb.assign(std::size_t(w) * h * 3, 0.0f);
  f.depth.depth.assign(std::size_t(w) * h, 0.0f);
  const float inv = 1.0f / float(k * k);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      float* out = &f.color.rgb[3 * (std::size_t(y) * w + x)];
      for (int dy = 0; dy < k; ++dy)
        for (int dx = 0; dx < k; ++dx) {
          const float* in = c.at(x * k + dx, y * k + dy);
          for (int ch = 0; ch < 3; ++ch) out[ch] += in[ch] * inv;
        }
      // Depth is not averaged across edges: the sample nearest the reduced pixel's centre.
      f.depth.depth[std::size_t(y) * w + x] = z.at(x * k + k / 2, y * k + k / 2);
    }
  return f;
}

nlohmann::json Dataset::describe() const {
  return {{"layout", layout},
          {"root", root.string()},
          {"frames", frames.size()},
          {"width", camera.width},
          {"height", camera.height},
          {"fx", camera.fx},
          {"fy", camera.fy},
          {"cx", camera.cx},
          {"cy", camera.cy},
          {"depth_scale", depth_scale},
          {"groundtruth", has_groundtruth()}};
}

}  // namespace core::nerf
