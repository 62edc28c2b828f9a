// Shared helpers for the doctest binaries: paths handed in by ctest, scratch folders, and running
// a tool end to end with its stdout, stderr and exit code captured.
#pragma once
#include <chrono>
#include <functional>
#include <filesystem>
#include <string>
#include <vector>

namespace core::test {

namespace fs = std::filesystem;

fs::path source_dir();    // the project root (TOOLKIT_SOURCE_DIR)
fs::path bin_dir();       // where tools are built (TOOLKIT_BIN_DIR)
fs::path datasets_dir();  // ../shared/datasets (TOOLKIT_DATASETS)
bool have_dataset(const std::string& relative);  // true when datasets_dir()/relative exists

// A fresh empty folder under the build tree's test-tmp/, removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& label);
  ~TempDir();
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs bin_dir()/tool with args (no shell involved), in `cwd` and with standard input read from
// `stdin_file` when given.
CommandResult run_tool(const std::string& tool, const std::vector<std::string>& args, const fs::path& cwd = {},
                       const fs::path& stdin_file = {});

// Runs bin_dir()/tool on `np` ranks under `mpiexec` (Open MPI's mpirun: --oversubscribe, root allowed).
CommandResult run_tool_mpi(const std::string& mpiexec, int np, const std::string& tool, const std::vector<std::string>& args,
                           const fs::path& cwd = {});

// Runs bin_dir()/tool with args, sends it `sig` `after` its start and waits up to `grace` for it to
// end (then SIGKILL). exit_code is 128 + the signal when a signal ended the process. With `ready`,
// `after` counts from the moment ready() first holds (polled; at most 5 minutes), so that a slow start
// on a loaded machine does not receive the signal before it could handle it.
struct SignalledResult : CommandResult {
  bool ended_in_time = false;  // false: it outlived `grace` and was killed
};
SignalledResult run_tool_signalled(const std::string& tool, const std::vector<std::string>& args, int sig,
                                   std::chrono::milliseconds after,
                                   std::chrono::milliseconds grace = std::chrono::seconds(5),
                                   const std::function<bool()>& ready = {});
// A `ready` condition: `file` exists and holds more than `lines` lines.
std::function<bool()> file_has_lines(const fs::path& file, std::size_t lines = 0);

// Writes text to a file (creating parent folders).
void write_text(const fs::path& path, const std::string& text);
std::string read_text(const fs::path& path);

// Inner product of two equal-length vectors (the scalar a finite-difference check differentiates).
double dot(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace core::test
