// io::MappedFile: a file's bytes in place; a missing file, a folder and a fifo are InputMissingError
// naming the path, and a fifo is refused at once (no wait for a writer that never comes); a file
// truncated while mapped ends the process with exit 74 naming it, not a bus error.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <string>

#include "common/errors.hpp"
#include "io/mapped_file.hpp"
#include "test_support.hpp"

using core::io::MappedFile;
using core::test::TempDir;

TEST_CASE("MappedFile maps a file's bytes; an empty file maps to no bytes") {
  TempDir dir("io_mapped_file");
  core::test::write_text(dir / "a.bin", "hello");
  const MappedFile f(dir / "a.bin");
  REQUIRE(f.bytes().size() == 5);
  CHECK(std::string(reinterpret_cast<const char*>(f.bytes().data()), 5) == "hello");
  core::test::write_text(dir / "empty.bin", "");
  CHECK(MappedFile(dir / "empty.bin").bytes().empty());
}

TEST_CASE("MappedFile refuses a missing file, a folder and a fifo with InputMissingError naming it, at once") {
  TempDir dir("io_mapped_file_bad");
  CHECK_THROWS_WITH_AS(MappedFile(dir / "absent.bin"), doctest::Contains("absent.bin: no such file"),
                       core::InputMissingError);
  CHECK_THROWS_WITH_AS(MappedFile(dir.path()), doctest::Contains("is a directory"), core::InputMissingError);
  REQUIRE(::mkfifo((dir / "fifo.bin").c_str(), 0600) == 0);
  ::alarm(10);  // a blocking open would wait forever for a writer: fail the test instead
  CHECK_THROWS_WITH_AS(MappedFile(dir / "fifo.bin"), doctest::Contains("fifo.bin: not a regular file"),
                       core::InputMissingError);
  ::alarm(0);
}

namespace {

struct ChildResult {
  int status;          // as waitpid returns it
  std::string stderr_text;
};

// Runs `body` in a forked child (its stderr captured) that exits 0 if `body` returns.
ChildResult run_in_child(const std::function<void()>& body) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    body();
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  ChildResult result{0, ""};
  char buffer[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) result.stderr_text.append(buffer, n);
  ::close(pipe_fds[0]);
  ::waitpid(pid, &result.status, 0);
  return result;
}

}  // namespace

TEST_CASE("a mapped file truncated by another program: exit 74 naming it at the next read, not SIGBUS") {
  TempDir dir("io_mapped_file_truncated");
  const auto path = dir / "shard.bin";
  core::test::write_text(path, std::string(3 * 4096, 'x'));
  const auto result = run_in_child([&] {
    const MappedFile f(path);
    std::filesystem::resize_file(path, 0);  // as `open(path, "wb")` of a rewriting writer does
    volatile std::byte last = f.bytes().back();
    (void)last;
  });
  CAPTURE(result.stderr_text);
  REQUIRE(WIFEXITED(result.status));
  CHECK(WEXITSTATUS(result.status) == 74);
  CHECK(result.stderr_text.find(path.string() + ": the file shrank while it was being read") != std::string::npos);

  // Reads within what is left, and a SIGBUS that is not about a mapping, keep their usual outcomes.
  core::test::write_text(path, std::string(3 * 4096, 'x'));
  const auto intact = run_in_child([&] {
    const MappedFile f(path);
    std::filesystem::resize_file(path, 4096);
    volatile std::byte first = f.bytes().front();
    (void)first;
  });
  CHECK((WIFEXITED(intact.status) && WEXITSTATUS(intact.status) == 0));
  const auto other = run_in_child([&] {
    const MappedFile f(path);
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::raise(SIGBUS);  // the previous action: the default (killed), or a sanitizer's report
  });
  const bool ended_as_before = WIFSIGNALED(other.status) || (WIFEXITED(other.status) && WEXITSTATUS(other.status) != 0);
  CHECK(ended_as_before);
  CHECK(other.stderr_text.find("shrank") == std::string::npos);
}
