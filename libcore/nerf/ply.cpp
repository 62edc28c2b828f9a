#include "nerf/ply.hpp"

#include <bit>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "common/errors.hpp"
#include "common/rundir.hpp"

namespace core::nerf {

static_assert(std::endian::native == std::endian::little, "the binary PLY writer assumes a little-endian host");

namespace {

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

}  // namespace

void write_ply(const std::filesystem::path& path, const TriangleMesh& mesh, bool binary) {
  const bool colour = !mesh.colours.empty();
  std::ostringstream h;
  h << "ply\nformat " << (binary ? "binary_little_endian" : "ascii") << " 1.0\n"
    << "comment written by nice-slam-run (marching tetrahedra of the learned occupancy)\n"
    << "element vertex " << mesh.vertices.size() << "\nproperty float x\nproperty float y\nproperty float z\n";
  if (colour) h << "property uchar red\nproperty uchar green\nproperty uchar blue\n";
  h << "element face " << mesh.triangles.size() << "\nproperty list uchar int vertex_indices\nend_header\n";
  std::string out = h.str();
  std::ostringstream text;
  text.precision(9);  // floats round-trip exactly
  for (std::size_t v = 0; v < mesh.vertices.size(); ++v) {
    const auto& p = mesh.vertices[v];
    if (binary) {
      for (int a = 0; a < 3; ++a) put(out, float(p[a]));
      if (colour)
        for (auto c : mesh.colours[v]) put(out, c);
    } else {
      text << float(p.x()) << ' ' << float(p.y()) << ' ' << float(p.z());
      if (colour)
        for (auto c : mesh.colours[v]) text << ' ' << int(c);
      text << '\n';
    }
  }
  for (const auto& t : mesh.triangles) {
    if (binary) {
      put(out, std::uint8_t(3));
      for (auto i : t) put(out, std::int32_t(i));
    } else {
      text << "3 " << t[0] << ' ' << t[1] << ' ' << t[2] << '\n';
    }
  }
  if (!binary) out += text.str();
  write_file_atomic(path, out);
}

TriangleMesh read_ply(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputMissingError(path.string() + ": cannot open the PLY file");
  const std::string name = path.string();
  auto bad = [&](const std::string& what) { return DataError(name + ": " + what); };
  std::string line;
  std::getline(in, line);
  if (line != "ply") throw bad("not a PLY file (no 'ply' on the first line)");
  bool binary = false, colour = false;
  std::size_t vertices = 0, faces = 0;
  std::vector<std::string> properties;
  std::string element;
  int n = 1;
  while (std::getline(in, line)) {
    ++n;
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    if (word == "end_header") break;
    if (word == "comment") continue;
    if (word == "format") {
      std::string format;
      ls >> format;
      if (format != "ascii" && format != "binary_little_endian")
        throw bad("line " + std::to_string(n) + ": format '" + format + "' is not read (ascii, binary_little_endian)");
      binary = format == "binary_little_endian";
    } else if (word == "element") {
      long long count = -1;
      ls >> element >> count;
      if (count < 0 || (element != "vertex" && element != "face"))
        throw bad("line " + std::to_string(n) + ": unexpected element '" + line + "'");
      (element == "vertex" ? vertices : faces) = std::size_t(count);
    } else if (word == "property") {
      properties.push_back(element + ":" + line.substr(9));
    } else {
      throw bad("line " + std::to_string(n) + ": unexpected header line '" + line + "'");
    }
  }
  if (line != "end_header") throw bad("the header has no end_header");
  const std::vector<std::string> plain = {"vertex:float x", "vertex:float y", "vertex:float z",
                                          "face:list uchar int vertex_indices"};
  std::vector<std::string> coloured = plain;
  coloured.insert(coloured.begin() + 3, {"vertex:uchar red", "vertex:uchar green", "vertex:uchar blue"});
  if (properties == coloured) colour = true;
  else if (properties != plain) throw bad("vertex/face properties are not the layout nice-slam-run writes");
  TriangleMesh mesh;
  mesh.vertices.resize(vertices);
  if (colour) mesh.colours.resize(vertices);
  mesh.triangles.resize(faces);
  auto get = [&](auto& v) {
    if (binary) in.read(reinterpret_cast<char*>(&v), sizeof(v));
    else if constexpr (sizeof(v) == 1) {
      int x = -1;
      in >> x;
      if (x < 0 || x > 255) in.setstate(std::ios::failbit);
      v = static_cast<std::remove_reference_t<decltype(v)>>(x);
    } else in >> v;
    if (!in) throw bad("the data ends early or is malformed");
  };
  for (std::size_t v = 0; v < vertices; ++v) {
    float p[3];
    for (auto& x : p) get(x);
    mesh.vertices[v] = Vec3(p[0], p[1], p[2]);
    if (colour)
      for (auto& c : mesh.colours[v]) get(c);
  }
  for (auto& t : mesh.triangles) {
    std::uint8_t count = 0;
    get(count);
    if (count != 3) throw bad("a face has " + std::to_string(int(count)) + " vertices (triangles only)");
    for (auto& i : t) {
      get(i);
      if (i < 0 || std::size_t(i) >= vertices) throw bad("a face names vertex " + std::to_string(i) + " of " +
                                                         std::to_string(vertices));
    }
  }
  return mesh;
}

}  // namespace core::nerf
