#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace core::test {

static fs::path env_path(const char* name, const fs::path& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? fs::path(v) : fallback;
}

// Defaults when a test binary is run by hand rather than by ctest: the source tree it was built
// from, and the bin/ folder beside the tests/ folder that holds the running binary.
fs::path source_dir() { return env_path("TOOLKIT_SOURCE_DIR", TOOLKIT_SOURCE_DIR_DEFAULT); }
fs::path bin_dir() { return env_path("TOOLKIT_BIN_DIR", fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "bin"); }
fs::path datasets_dir() { return env_path("TOOLKIT_DATASETS", source_dir() / ".." / "shared" / "datasets"); }
bool have_dataset(const std::string& relative) { return fs::exists(datasets_dir() / relative); }

TempDir::TempDir(const std::string& label) {
  static std::atomic<int> counter{0};
  const fs::path root = env_path("TOOLKIT_TEST_TMP", fs::temp_directory_path() / "toolkit-tests");
  path_ = root / (label + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

namespace {

// Starts bin_dir()/tool with args (no shell), stdout and stderr into files (no pipe deadlock
// whatever the output size), in `cwd` when given.
pid_t spawn_tool(const std::string& tool, const std::vector<std::string>& args, const fs::path& cwd,
                 const fs::path& out_path, const fs::path& err_path, const fs::path& in_path = {}) {
  const std::string exe = (bin_dir() / tool).string();
  std::vector<std::string> owned = {exe};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int o = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    if (!in_path.empty()) {
      const int i = ::open(in_path.c_str(), O_RDONLY);
      if (i < 0) ::_exit(127);
      ::dup2(i, 0);
    }
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(127);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

CommandResult run_tool(const std::string& tool, const std::vector<std::string>& args, const fs::path& cwd,
                       const fs::path& stdin_file) {
  TempDir scratch("run-" + tool);
  const pid_t pid = spawn_tool(tool, args, cwd, scratch / "stdout", scratch / "stderr", stdin_file);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CommandResult r;
  r.exit_code = exit_code_of(status);
  r.out = read_text(scratch / "stdout");
  r.err = read_text(scratch / "stderr");
  return r;
}

CommandResult run_tool_mpi(const std::string& mpiexec, int np, const std::string& tool, const std::vector<std::string>& args,
                           const fs::path& cwd) {
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  std::vector<std::string> all = {"-np", std::to_string(np), "--oversubscribe", (bin_dir() / tool).string()};
  all.insert(all.end(), args.begin(), args.end());
  return run_tool(mpiexec, all, cwd);
}

std::function<bool()> file_has_lines(const fs::path& file, std::size_t lines) {
  return [file, lines] {
    std::ifstream in(file);
    std::size_t n = 0;
    for (std::string line; n <= lines && std::getline(in, line);) ++n;
    return n > lines;
  };
}

SignalledResult run_tool_signalled(const std::string& tool, const std::vector<std::string>& args, int sig,
                                   std::chrono::milliseconds after, std::chrono::milliseconds grace,
                                   const std::function<bool()>& ready) {
  TempDir scratch("run-" + tool);
  const pid_t pid = spawn_tool(tool, args, {}, scratch / "stdout", scratch / "stderr");
  SignalledResult r;
  int status = 0;
  bool ended = false;  // before the signal (a start that failed): reported as not ended in time
  if (ready) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    while (!ready() && std::chrono::steady_clock::now() < limit && !(ended = ::waitpid(pid, &status, WNOHANG) == pid))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!ended) {
    std::this_thread::sleep_for(after);
    ::kill(pid, sig);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (!(r.ended_in_time = ::waitpid(pid, &status, WNOHANG) == pid) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!r.ended_in_time) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
  }
  r.exit_code = exit_code_of(status);
  r.out = read_text(scratch / "stdout");
  r.err = read_text(scratch / "stderr");
  return r;
}

void write_text(const fs::path& path, const std::string& text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path.string());
}

std::string read_text(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace core::test
