// Error types and the exit codes of the conventions. Library code throws one of these; only a
// tool's main (through core::App) turns them into a process exit code.
#pragma once
#include <stdexcept>
#include <string>

namespace core {

enum class ExitCode : int {
  ok = 0,            // success; for a certifier: certified
  internal = 1,      // internal error (a bug)
  usage = 2,         // usage or configuration error
  negative = 3,      // ran to the end, answer is negative (not certified, verification failed)
  data = 65,         // malformed input data
  no_input = 66,     // input missing
  io = 74,           // I/O error
  interrupted = 75,  // stopped by a signal after saving a checkpoint
  skipped = 77,      // test skipped (tests only)
};

// The table printed by every tool's --help.
const char* exit_code_table();

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// Bad command line, config key, type or value (exit 2).
struct UsageError : Error {
  explicit UsageError(const std::string& what) : Error(ExitCode::usage, what) {}
};
// Malformed input data: parse errors, NaN, wrong shape, degenerate input (exit 65).
struct DataError : Error {
  explicit DataError(const std::string& what) : Error(ExitCode::data, what) {}
};
// An input file that does not exist or cannot be opened (exit 66).
struct InputMissingError : Error {
  explicit InputMissingError(const std::string& what) : Error(ExitCode::no_input, what) {}
};
// Failure to write or read an existing file (exit 74).
struct IoError : Error {
  explicit IoError(const std::string& what) : Error(ExitCode::io, what) {}
};

}  // namespace core
