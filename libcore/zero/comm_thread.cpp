// The overlap_comm communication thread (see comm_thread.hpp).
#include "zero/comm_thread.hpp"

#include <algorithm>

#include "common/timer.hpp"

namespace core::zero {

CommThread::CommThread() : thread_([this] { loop(); }) {}

CommThread::~CommThread() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

CommThread::Ticket CommThread::submit(std::function<void()> task) {
  Ticket t;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(task));
    t = ++submitted_;
  }
  wake_.notify_one();
  return t;
}

bool CommThread::done(Ticket t) const {
  std::lock_guard lock(mu_);
  return completed_ >= t;
}

void CommThread::wait(Ticket t) {
  Timer timer;
  std::unique_lock lock(mu_);
  finished_.wait(lock, [&] { return completed_ >= t || error_; });
  waited_s_ += timer.seconds();
  if (error_) std::rethrow_exception(error_);
}

double CommThread::busy_seconds() const {
  std::lock_guard lock(mu_);
  return busy_s_;
}

void CommThread::reset_times() {
  std::lock_guard lock(mu_);
  busy_s_ = waited_s_ = 0;
}

double CommThread::account_step(double own_seconds) {
  const double busy = busy_seconds(), total = busy + own_seconds;
  const double hidden = std::clamp(busy - waited_s_, 0.0, busy);
  run_hidden_s_ += hidden;
  run_comm_s_ += total;
  return total > 0 ? hidden / total : 0.0;
}

void CommThread::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;  // the engine goes (after a failure, tasks may be left: the other ranks are not there)
    auto task = std::move(queue_.front());
    queue_.pop_front();
    const bool skip = error_ != nullptr;  // after a failure the rest would run out of step with the other ranks
    lock.unlock();
    Timer timer;
    std::exception_ptr failed;
    if (!skip) {
      try {
        task();
      } catch (...) {
        failed = std::current_exception();
      }
    }
    const double secs = timer.seconds();
    lock.lock();
    busy_s_ += secs;
    if (failed && !error_) error_ = failed;
    ++completed_;
    finished_.notify_all();
  }
}

}  // namespace core::zero
