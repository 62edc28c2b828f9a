// SDPA sparse format reader and writer (format of Fujisawa, Kojima, Nakata; the same as CSDP's
// input). See sdpa.hpp for the layout and the sign convention between the file and SdpProblem.
#include "certify/sdpa.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <unordered_map>
#include <sstream>
#include <tuple>
#include <vector>

#include "common/errors.hpp"

namespace core::certify {

namespace {

struct Line {
  int number = 0;
  std::vector<std::string> tokens;
};

class Reader {
 public:
  Reader(std::istream& in, std::string name) : in_(in), name_(std::move(name)) {}

  [[noreturn]] void fail(int line, const std::string& what) const {  // line 0: the file is empty
    throw DataError(name_ + (line > 0 ? ":" + std::to_string(line) : std::string(" (empty file)")) + ": " + what);
  }

  // The next non-blank line, split at blanks (and at ,(){} when `punctuation_blank`).
  bool next(Line& out, bool punctuation_blank) {
    std::string text;
    while (std::getline(in_, text)) {
      ++line_;
      if (punctuation_blank)
        for (char& ch : text)
          if (ch == ',' || ch == '(' || ch == ')' || ch == '{' || ch == '}') ch = ' ';
      std::istringstream ss(text);
      out.tokens.clear();
      for (std::string t; ss >> t;) out.tokens.push_back(t);
      out.number = line_;
      if (!out.tokens.empty()) return true;
    }
    if (in_.bad()) throw IoError(name_ + ": read error after line " + std::to_string(line_));
    out.number = line_;
    return false;
  }

  bool at_header_comment() {
    const int c = in_.peek();
    return c == '"' || c == '*';
  }
  void skip_line() {
    std::string t;
    std::getline(in_, t);
    ++line_;
  }
  int line() const { return line_; }

  long parse_int(const Line& l, std::size_t k, const std::string& what) const {
    const std::string& t = l.tokens[k];
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(t.c_str(), &end, 10);
    if (end == t.c_str() || *end != '\0' || errno == ERANGE)
      fail(l.number, what + " '" + t + "' is not an integer");
    return v;
  }
  double parse_double(const Line& l, std::size_t k, const std::string& what) const {
    const std::string& t = l.tokens[k];
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (end == t.c_str() || *end != '\0') fail(l.number, what + " '" + t + "' is not a number");
    if (!std::isfinite(v)) fail(l.number, what + " '" + t + "' is not finite");
    return v;
  }

 private:
  std::istream& in_;
  std::string name_;
  int line_ = 0;
};

}  // namespace

SdpProblem parse_sdpa(std::istream& in, const std::string& name) {
  Reader r(in, name);
  while (r.at_header_comment()) r.skip_line();
  SdpProblem p;
  Line l;

  if (!r.next(l, true)) r.fail(r.line(), "missing the number of constraints");
  const long m = r.parse_int(l, 0, "number of constraints");
  if (m < 0) r.fail(l.number, "negative number of constraints " + std::to_string(m));
  if (!r.next(l, true)) r.fail(r.line(), "missing the number of blocks");
  const long nblocks = r.parse_int(l, 0, "number of blocks");
  if (nblocks < 1) r.fail(l.number, "number of blocks must be >= 1, got " + std::to_string(nblocks));

  // Block sizes and the m values c_i: as many numbers as needed, over as many lines as needed.
  std::vector<long> sizes;
  while (static_cast<long>(sizes.size()) < nblocks) {
    if (!r.next(l, true)) r.fail(r.line(), "missing block sizes");
    for (std::size_t k = 0; k < l.tokens.size() && static_cast<long>(sizes.size()) < nblocks; ++k) {
      const long s = r.parse_int(l, k, "block size");
      if (s == 0) r.fail(l.number, "block size 0");
      sizes.push_back(s);
    }
  }
  for (long s : sizes) {
    if (std::labs(s) > std::numeric_limits<int>::max()) r.fail(l.number, "block size " + std::to_string(s) + " is too large");
    p.blocks.push_back({static_cast<int>(std::labs(s)), s < 0});
  }
  // Storage grows with what the file holds, never with a declared count (a corrupt count of 1e11
  // is an error about missing values, not an allocation of 800 GB).
  std::vector<double> c_values;
  while (static_cast<long>(c_values.size()) < m) {
    if (!r.next(l, true)) r.fail(r.line(), "expected " + std::to_string(m) + " objective values c_i, got " +
                                               std::to_string(c_values.size()));
    for (std::size_t k = 0; k < l.tokens.size(); ++k) {
      if (static_cast<long>(c_values.size()) == m) r.fail(l.number, "more than " + std::to_string(m) + " values c_i");
      c_values.push_back(r.parse_double(l, k, "value c_" + std::to_string(c_values.size() + 1)));
    }
  }
  p.b = Eigen::Map<const Eigen::VectorXd>(c_values.data(), static_cast<Eigen::Index>(c_values.size()));

  p.A.resize(m);
  // Each entry once (CSDP rejects a repeat; SDPA sums some and not others): (matrix, block, i <= j) -> line.
  struct EntryKey {
    long mat, blk, i, j;
    bool operator==(const EntryKey&) const = default;
  };
  struct EntryHash {
    std::size_t operator()(const EntryKey& k) const {
      std::size_t h = std::hash<long>()(k.mat);
      for (long v : {k.blk, k.i, k.j}) h = h * 1000003u ^ std::hash<long>()(v);
      return h;
    }
  };
  std::unordered_map<EntryKey, int, EntryHash> first_line;
  while (r.next(l, false)) {
    if (l.tokens.size() != 5)
      r.fail(l.number, "expected 'matno block i j value' (5 fields), got " + std::to_string(l.tokens.size()));
    const long mat = r.parse_int(l, 0, "matrix number");
    const long blk = r.parse_int(l, 1, "block number");
    long i = r.parse_int(l, 2, "row index");
    long j = r.parse_int(l, 3, "column index");
    const double v = r.parse_double(l, 4, "value");
    if (mat < 0 || mat > m) r.fail(l.number, "matrix number " + std::to_string(mat) + " outside 0.." + std::to_string(m));
    if (blk < 1 || blk > nblocks)
      r.fail(l.number, "block number " + std::to_string(blk) + " outside 1.." + std::to_string(nblocks));
    const BlockSpec& spec = p.blocks[blk - 1];
    if (i < 1 || j < 1 || i > spec.size || j > spec.size)
      r.fail(l.number, "index (" + std::to_string(i) + ", " + std::to_string(j) + ") outside block " +
                           std::to_string(blk) + " of size " + std::to_string(spec.size));
    if (spec.diagonal && i != j)
      r.fail(l.number, "off-diagonal entry (" + std::to_string(i) + ", " + std::to_string(j) +
                           ") in diagonal block " + std::to_string(blk));
    const auto [seen, fresh] = first_line.try_emplace(EntryKey{mat, blk, std::min(i, j), std::max(i, j)}, l.number);
    if (!fresh)
      r.fail(l.number, "entry (" + std::to_string(i) + ", " + std::to_string(j) + ") of block " + std::to_string(blk) +
                           " of matrix " + std::to_string(mat) + " repeats line " + std::to_string(seen->second) +
                           " (an SDPA file lists each entry of the upper triangle once)");
    SdpMatrix& M = mat == 0 ? p.C : p.A[mat - 1];
    M.add(static_cast<int>(blk - 1), static_cast<int>(i - 1), static_cast<int>(j - 1), mat == 0 ? -v : v);
  }
  try {
    p.validate();
  } catch (const DataError& e) {
    throw DataError(name + ": " + e.what());
  }
  return p;
}

SdpProblem read_sdpa(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputMissingError(path.string() + ": cannot open SDPA file");
  return parse_sdpa(in, path.string());
}

namespace {

// Entries merged per (block, row, col), zeros dropped, in a stable order.
std::map<std::tuple<int, int, int>, double> merged(const SdpMatrix& M) {
  std::map<std::tuple<int, int, int>, double> out;
  for (const auto& e : M.entries) out[{e.block, std::min(e.row, e.col), std::max(e.row, e.col)}] += e.value;
  return out;
}

}  // namespace

std::string format_sdpa(const SdpProblem& p, const std::string& comment) {
  std::ostringstream os;
  os.precision(17);
  os << "\"" << (comment.empty() ? "SDP written by core::certify" : comment) << "\n";
  os << p.num_constraints() << "\n" << p.blocks.size() << "\n";
  for (std::size_t k = 0; k < p.blocks.size(); ++k)
    os << (k ? " " : "") << (p.blocks[k].diagonal ? -p.blocks[k].size : p.blocks[k].size);
  os << "\n";
  for (int i = 0; i < p.num_constraints(); ++i) os << (i ? " " : "") << p.b(i);
  os << "\n";
  auto write = [&](int matno, const SdpMatrix& M, double sign) {
    for (const auto& [key, v] : merged(M))
      if (v != 0.0)
        os << matno << " " << std::get<0>(key) + 1 << " " << std::get<1>(key) + 1 << " "
           << std::get<2>(key) + 1 << " " << sign * v << "\n";
  };
  write(0, p.C, -1.0);
  for (int i = 0; i < p.num_constraints(); ++i) write(i + 1, p.A[i], 1.0);
  return os.str();
}

std::string format_sdpa_solution(const std::vector<BlockSpec>& blocks, const Eigen::VectorXd& y, const BlockValues& X,
                                 const BlockValues& Z) {
  std::ostringstream os;
  os.precision(17);
  for (Eigen::Index i = 0; i < y.size(); ++i) os << (i ? " " : "") << -y(i);  // the file's y: F_0 = -C
  os << "\n";
  auto write = [&](int matno, const BlockValues& V) {
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      const Eigen::MatrixXd& B = V[k];
      for (int j = 0; j < blocks[k].size; ++j)
        for (int i = 0; i <= j; ++i) {
          if (blocks[k].diagonal && i != j) continue;
          const double v = blocks[k].diagonal ? B(j, 0) : B(i, j);
          if (v != 0.0) os << matno << " " << k + 1 << " " << i + 1 << " " << j + 1 << " " << v << "\n";
        }
    }
  };
  write(1, Z);
  write(2, X);
  return os.str();
}

void write_sdpa(const std::filesystem::path& path, const SdpProblem& problem, const std::string& comment) {
  const std::string text = format_sdpa(problem, comment);
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw IoError(path.string() + ": cannot open for writing");
    out << text;
    out.flush();
    if (!out) throw IoError(path.string() + ": write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw IoError(path.string() + ": cannot rename the temporary file into place");
  }
}

}  // namespace core::certify
