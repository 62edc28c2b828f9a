// Reader of the STAR-loc UWB recordings (Dümbgen et al., arXiv:2309.05518) as range-only problems:
// `FOLDER/RUN` names FOLDER/RUN/uwb.csv, and FOLDER/dataset_params.json names the run's anchor file
// FOLDER/uwb_markers_<landmarks>.csv. Ranges of one tag (from_id) are grouped onto states: a state
// collects consecutive rows within `group_window` seconds of its first row (and at most one range
// per anchor); its time is the mean of their times. The ground truth is the tag position of every
// row. Bias calibration as in "Safe and Smooth" on its real data: each anchor's mean of
// range - ||a - tag|| over the rows used is subtracted from its ranges.
#pragma once
#include <string>
#include <vector>

#include "rangeloc/dataset.hpp"

namespace core::rangeloc {

struct StarlocOptions {
  int tag = 1;                      // from_id
  double group_window = 0.0;        // seconds; 0: one state per distinct row time
  bool calibrate = true;            // subtract each anchor's mean bias (uses the ground truth)
  std::vector<double> time_range;   // [t0, t1] seconds, or empty for the whole run
};

struct StarlocInfo {
  std::string anchors_file;          // the anchor file used
  std::string anchors_note;          // why another file than dataset_params.json names, when so
  std::vector<double> biases;        // per anchor, subtracted when calibrate
};

// `spec` is FOLDER/RUN (the part after "starloc:"). Missing files: InputMissingError; bad rows: DataError FILE:LINE.
Dataset read_starloc(const std::string& spec, const StarlocOptions& options, StarlocInfo* info = nullptr);

}  // namespace core::rangeloc
