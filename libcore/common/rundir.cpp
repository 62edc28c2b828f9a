// Run directory and atomic file writing (see rundir.hpp).
#include "common/rundir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <random>

#include "common/errors.hpp"
#include "common/log.hpp"

namespace core {

static fs::path temp_name(const fs::path& path) {
  return path.string() + ".tmp." + std::to_string(::getpid());
}

AtomicFile::AtomicFile(fs::path path) : path_(std::move(path)), tmp_(temp_name(path_)) {
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) throw IoError("cannot create '" + tmp_.string() + "' (does the folder exist and is it writable?)");
}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    out_.close();
    std::error_code ec;
    fs::remove(tmp_, ec);
  }
}

void AtomicFile::commit() {
  out_.flush();
  if (!out_) throw IoError("write to '" + tmp_.string() + "' failed (disk full?)");
  out_.close();
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) throw IoError("cannot rename '" + tmp_.string() + "' to '" + path_.string() + "': " + ec.message());
  committed_ = true;
}

void write_file_atomic(const fs::path& path, std::string_view bytes) {
  AtomicFile f(path);
  f.stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.commit();
}

static double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

MetricsWriter::MetricsWriter(const fs::path& path) : path_(path), t0_(now_seconds()) {
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) throw IoError("cannot open '" + path.string() + "' for appending");
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

void MetricsWriter::write(nlohmann::json record) {
  if (!record.contains("time_s")) record["time_s"] = now_seconds() - t0_;
  // Strings from inputs and error messages need not be UTF-8: invalid bytes become U+FFFD.
  const std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    throw IoError("cannot append to '" + path_.string() + "'");
}

static std::string default_run_name() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  std::random_device rd;
  char id[8];
  std::snprintf(id, sizeof id, "%06x", rd() & 0xffffffu);
  return std::string(stamp) + "-" + id;
}

static fs::path create_run_folders(const fs::path& path) {
  std::error_code ec;
  for (const auto& sub : {path, path / "artifacts", path / "checkpoints"}) {
    fs::create_directories(sub, ec);
    if (ec) throw IoError("cannot create run directory '" + sub.string() + "': " + ec.message());
  }
  return path;
}

static std::string read_lock_holder(int fd) {
  char buf[256] = {0};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string text(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

RunDirLock::RunDirLock(const fs::path& dir) {
  const fs::path path = dir / ".lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError("cannot create the run directory lock '" + path.string() + "'");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const std::string holder = read_lock_holder(fd_);
    ::close(fd_);
    fd_ = -1;
    throw UsageError("--out " + dir.string() + " is in use by another run (" +
                     (holder.empty() ? std::string("pid unknown") : holder) +
                     "); wait for it to end or choose another --out");
  }
  const std::string stale = read_lock_holder(fd_);
  if (!stale.empty()) log::debug("run directory {}: taking over the lock of an ended run ({})", dir.string(), stale);
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const std::string me = "pid " + std::to_string(::getpid()) + " on " + host + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size()))
    log::warn("cannot write the holder's pid into '{}'", path.string());
}

RunDirLock::~RunDirLock() {
  if (fd_ < 0) return;
  // An ended run leaves an empty lock file; the lock itself goes with the descriptor either way.
  if (::ftruncate(fd_, 0) != 0) log::debug("cannot clear the run directory lock file");
  ::close(fd_);
}

RunDir::RunDir(const std::string& tool, const fs::path& dir)
    : path_(create_run_folders(dir.empty() ? fs::path("runs") / tool / default_run_name() : dir)), lock_(path_) {}

void check_run_dir_reuse(const fs::path& dir, const std::string& tool, const std::string& command) {
  const fs::path manifest = dir / "manifest.json";
  std::error_code ec;
  if (dir.empty() || !fs::exists(manifest, ec)) return;
  std::string other;
  try {
    std::ifstream in(manifest);
    const nlohmann::json m = nlohmann::json::parse(in);
    if (m.value("tool", "") == tool && m.value("command", "") == command) return;
    other = "a run of '" + m.value("tool", std::string("?")) + " " + m.value("command", std::string("?")) + "'";
  } catch (const std::exception&) {
    other = "a manifest.json that cannot be read";
  }
  throw UsageError("--out " + dir.string() + " holds " + other + "; '" + tool + " " + command +
                   "' would overwrite its records: choose another --out");
}

MetricsWriter& RunDir::metrics() {
  if (!metrics_) metrics_ = std::make_unique<MetricsWriter>(path_ / "metrics.jsonl");
  return *metrics_;
}

void RunDir::write_manifest(const nlohmann::json& manifest) {
  manifest_ = manifest;
  // An error message quoting a non-UTF-8 input must not keep the manifest from closing: U+FFFD instead.
  write_file_atomic(path_ / "manifest.json",
                    manifest_.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace core
