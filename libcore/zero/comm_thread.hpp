// The communication thread of `overlap_comm` (ZeRO, Rajbhandari et al. 2020, Sec. 7: gradient
// reduction and parameter gathers overlapped with compute): one thread that runs the engine's
// collectives in the order they were submitted, while the training thread computes. All ranks
// submit the same collectives in the same order, so the backends see the sequence a synchronous run
// issues (MPI is initialised MPI_THREAD_SERIALIZED: one thread at a time calls it, which holds as
// long as the training thread calls a collective only after drain()).
// It measures the seconds its tasks ran (busy) and the seconds the training thread waited for them
// (exposed): busy - exposed is the communication hidden behind compute. account_step() turns a step's
// times into the engines' comm_hidden_fraction (hidden over all the step's communication, the
// collectives the training thread ran itself included) and sums them over the run.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace core::zero {

class CommThread {
 public:
  using Ticket = std::uint64_t;  // 1, 2, ... in submission order
  CommThread();
  ~CommThread();  // finishes the running task, drops the queued ones (drain() first to run them), joins
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  Ticket submit(std::function<void()> task);
  bool done(Ticket t) const;  // without waiting
  bool idle() const { return done(submitted_); }  // (submit and idle: the training thread only)
  // Blocks until task t (and every earlier one) has run; rethrows the first exception a task threw.
  void wait(Ticket t);
  void drain() { wait(submitted_); }

  // Seconds since the last reset_times(): tasks running, and the training thread waiting in wait().
  double busy_seconds() const;
  double waited_seconds() const { return waited_s_; }
  void reset_times();
  // The step since reset_times(), with `own_seconds` of collectives the training thread ran itself: the
  // share of the step's communication seconds (busy + own) hidden (busy - waited, in [0, busy]); 0 without
  // any. Adds the step to the run's totals.
  double account_step(double own_seconds);
  // The same over every step accounted so far.
  double run_hidden_fraction() const { return run_comm_s_ > 0 ? run_hidden_s_ / run_comm_s_ : 0.0; }

 private:
  void loop();
  mutable std::mutex mu_;
  std::condition_variable wake_, finished_;
  std::deque<std::function<void()>> queue_;
  Ticket submitted_ = 0, completed_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  double busy_s_ = 0, waited_s_ = 0;
  double run_hidden_s_ = 0, run_comm_s_ = 0;  // (the training thread's)
  std::thread thread_;
};

}  // namespace core::zero
