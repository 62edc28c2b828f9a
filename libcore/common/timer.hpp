// Wall-clock timers: a stopwatch and named stage timings collected for result JSON.
#pragma once
#include <chrono>
#include <map>
#include <string>

namespace core {

class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  void reset() { start_ = std::chrono::steady_clock::now(); }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Accumulates seconds per named stage: { auto t = stages.scope("load"); ... }.
class StageTimes {
 public:
  class Scope {
   public:
    Scope(StageTimes& owner, std::string name) : owner_(owner), name_(std::move(name)) {}
    ~Scope() { owner_.times_[name_] += timer_.seconds(); }

   private:
    StageTimes& owner_;
    std::string name_;
    Timer timer_;
  };
  Scope scope(std::string name) { return Scope(*this, std::move(name)); }
  void add(const std::string& name, double s) { times_[name] += s; }
  const std::map<std::string, double>& times() const { return times_; }

 private:
  std::map<std::string, double> times_;
};

}  // namespace core
