// Progress bar / periodic progress lines on stderr (see progress.hpp).
#include "common/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include "common/errors.hpp"
#include "common/log.hpp"

namespace core {

static ProgressMode g_mode = ProgressMode::automatic;

ProgressMode parse_progress_mode(const std::string& s) {
  if (s == "auto") return ProgressMode::automatic;
  if (s == "always") return ProgressMode::always;
  if (s == "never") return ProgressMode::never;
  throw UsageError("--progress must be auto, always or never (got '" + s + "')");
}

void set_progress_mode(ProgressMode mode) { g_mode = mode; }

Progress::Progress(std::string label, std::uint64_t total)
    : label_(std::move(label)), total_(total), tty_(::isatty(STDERR_FILENO) != 0) {
  enabled_ = g_mode != ProgressMode::never && log_rank() == 0 &&
             (g_mode == ProgressMode::always || spdlog::get_level() <= spdlog::level::info);
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { finish(); }

void Progress::update(std::uint64_t done, const std::string& note) {
  done_ = done;
  note_ = note;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_draw_).count();
  if (since < (tty_ ? 0.1 : 10.0)) return;
  last_draw_ = now;
  draw(false);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (enabled_ && (tty_ || done_ > 0)) draw(true);
}

void Progress::draw(bool final_line) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double frac = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 0.0;
  const double rate = elapsed > 0 ? done_ / elapsed : 0.0;
  const double eta = rate > 0 && total_ >= done_ ? (total_ - done_) / rate : 0.0;
  if (tty_) {
    const int width = 30, filled = static_cast<int>(frac * width + 0.5);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(width, '.');
    std::fprintf(stderr, "\r%s [%s] %llu/%llu %.1f/s eta %.0fs %s\033[K%s", label_.c_str(), bar.c_str(),
                 static_cast<unsigned long long>(done_), static_cast<unsigned long long>(total_), rate, eta,
                 note_.c_str(), final_line ? "\n" : "");
    std::fflush(stderr);
  } else {
    core::log::info("{}: {}/{} ({:.0f}%) {:.1f}/s eta {:.0f}s {}", label_, done_, total_, 100 * frac, rate, eta,
                    note_);
  }
}

}  // namespace core
