// Seeded simulator of range-only localization problems as in the noise and timing studies of
// "Safe and Smooth" (RA-L 2023, Sec. VI-A): N states at times dt apart, the velocity a random walk
// (v_{n+1} = v_n + sigma_a sqrt(dt) w_n, w_n ~ N(0, I), constant-velocity position steps), anchors
// uniform in the bounding box of the trajectory, ranges ||a_m - p_n|| + sigma_d e_mn to all anchors,
// to 2 or to 1 anchor per time (round robin).
#pragma once
#include <cstdint>
#include <string>

#include "common/config.hpp"
#include "rangeloc/dataset.hpp"

namespace core::rangeloc {

struct SimOptions {
  int n = 100;               // states
  int anchors = 6;
  int dim = 2;
  std::uint64_t seed = 0;
  double sigma_d = 0.1;      // range noise (standard deviation, same unit as positions)
  double sigma_a = 0.2;      // random-walk step of the velocity per sqrt(time)
  double dt = 1.0;
  std::string ranges = "all";  // all | 2 | 1 (anchors measured per time, round robin)
  bool planar_anchors = false;  // 3-D: all anchors at the same height (reflection minima)

  template <class V>
  void visit(V& v) {
    v("n", n, "number of states", core::in_range(2, 100000000));
    v("anchors", anchors, "number of anchors", core::in_range(2, 100000));
    v("dim", dim, "dimension: 2 or 3", core::in_range(2, 3));
    v("seed", seed, "seed of the simulation");
    v("sigma_d", sigma_d, "range noise standard deviation", core::at_least(0.0));
    v("sigma_a", sigma_a, "velocity random walk per sqrt(time)", core::at_least(0.0));
    v("dt", dt, "time between states", core::positive<double>());
    v("ranges", ranges, "ranges per time: all, 2 or 1 (round robin over the anchors)", core::one_of({"all", "2", "1"}));
    v("planar_anchors", planar_anchors, "3-D only: put every anchor at the same height");
  }
  void validate() const;
};

// `range-certify sim`: the simulation's keys plus the folder to write.
struct SimCommandOptions : SimOptions {
  std::string output;
  template <class V>
  void visit(V& v) {
    SimOptions::visit(v);
    v("output", output, "dataset folder to write (anchors.csv, ranges.csv, groundtruth.csv)");
  }
  void validate() const;
};

Dataset simulate(const SimOptions& options);

}  // namespace core::rangeloc
