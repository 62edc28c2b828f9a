// Progress reporting on stderr: a redrawn bar when stderr is a terminal, else a log line at most
// every few seconds. Rate-limited, and silent on ranks other than 0.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace core {

enum class ProgressMode { automatic, always, never };
ProgressMode parse_progress_mode(const std::string& s);  // auto|always|never, UsageError otherwise

// Process-wide setting chosen by --progress; rank set by the comm module.
void set_progress_mode(ProgressMode mode);

class Progress {
 public:
  Progress(std::string label, std::uint64_t total);
  ~Progress();
  // Sets the absolute count done; `note` is appended (e.g. "loss 3.21").
  void update(std::uint64_t done, const std::string& note = "");
  void finish();

 private:
  void draw(bool final_line);
  std::string label_;
  std::uint64_t total_, done_ = 0;
  std::string note_;
  bool tty_, enabled_, finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace core
