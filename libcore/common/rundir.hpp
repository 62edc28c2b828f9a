// Run directory of the conventions: config.resolved.yaml, command.txt, manifest.json,
// metrics.jsonl (one JSON object per line, flushed), result.json, artifacts/, checkpoints/.
// Every whole file is written to a temporary name and renamed, so readers never see half a file.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace core {

namespace fs = std::filesystem;

// Writes `bytes` to `path` through `path.tmp.<pid>` + rename. Throws IoError.
void write_file_atomic(const fs::path& path, std::string_view bytes);

// A file that appears under its name only on commit(); dropped (tmp removed) otherwise.
class AtomicFile {
 public:
  explicit AtomicFile(fs::path path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  std::ofstream& stream() { return out_; }
  void commit();  // flush, check, rename; throws IoError

 private:
  fs::path path_, tmp_;
  std::ofstream out_;
  bool committed_ = false;
};

// Appends JSON objects as lines, flushed after each; adds time_s (seconds since open) when absent.
class MetricsWriter {
 public:
  explicit MetricsWriter(const fs::path& path);
  ~MetricsWriter();
  void write(nlohmann::json record);

 private:
  std::FILE* file_ = nullptr;
  fs::path path_;
  double t0_;
  std::mutex mu_;
};

// UsageError when `dir` already holds the run directory of another command (its manifest.json
// names another tool or command, or cannot be read): writing this command's config, manifest and
// result there would overwrite that run's records. A missing folder or one without manifest.json,
// and a run of the same command (resumed, or redone), pass.
void check_run_dir_reuse(const fs::path& dir, const std::string& tool, const std::string& command);

// Holds an exclusive lock on a run directory (flock on `<dir>/.lock`, which names the holder's pid and host)
// for the lifetime of the object. A second holder is refused with UsageError naming the first one's pid; the
// kernel drops the lock when its process ends (also by kill -9), so a stale lock is taken over (with a note).
class RunDirLock {
 public:
  explicit RunDirLock(const fs::path& dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_ = -1;
};

class RunDir {
 public:
  // Creates the folder (and artifacts/, checkpoints/) and locks it (RunDirLock).
  // `dir` empty: runs/<tool>/<UTC>-<id>.
  RunDir(const std::string& tool, const fs::path& dir);
  const fs::path& path() const { return path_; }
  fs::path artifact(const std::string& name) const { return path_ / "artifacts" / name; }
  fs::path checkpoints() const { return path_ / "checkpoints"; }
  MetricsWriter& metrics();

  void write_manifest(const nlohmann::json& manifest);  // atomically replaces manifest.json
  nlohmann::json& manifest() { return manifest_; }

 private:
  fs::path path_;
  RunDirLock lock_;
  nlohmann::json manifest_;
  std::unique_ptr<MetricsWriter> metrics_;
};

}  // namespace core
