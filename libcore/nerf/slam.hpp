// NICE-SLAM's tracking and mapping loop (Zhu et al. 2022, Sec. 3.3-3.4) on the CPU.
//  - Tracking: the camera pose (rotation as a left SO(3) increment, translation) is optimised with Adam
//    on the depth residual normalised by the rendered standard deviation plus a weighted L1 colour loss
//    over `pixels` random pixels (eq. 9-10); rays whose depth error exceeds `outlier_factor` times the
//    median are dropped; the iterate with the lowest loss is kept. The start is the constant-velocity
//    prediction from the two previous estimates.
//  - Mapping every `every` frames: grid features of the stage's levels are optimised over the current
//    frame and a window of keyframes chosen by overlap (pixels of the current frame back-projected with
//    their depth, counted where they project into a keyframe), in stages: middle, then fine, then colour
//    (iteration ratios middle_ratio and fine_ratio, as the reference); decoders stay fixed unless
//    decoder_lr > 0 (pretraining). With `refine_poses` the colour stage also steps the window's poses
//    (all but the earliest frame's) with Adam on the same loss: NICE-SLAM's bundle adjustment; the refined
//    poses replace the tracked ones in the trajectory.
//  - Keyframes: every `keyframe_every` frames and the first.
//  - Depth uncertainty (extension 1, `uncertainty.enabled`): tracking divides each depth residual by
//    sqrt(V + sigma(z)^2) (rendered variance plus the sensor model), mapping weights each ray's L1 depth
//    residual by 1 / sqrt(V + sigma(z)^2); both rescaled to mean weight 1 over the step's depth rays.
//  - IMU (extension 2, `imu.enabled`): the samples between the previous frame and this one are
//    preintegrated (imu_preintegration.hpp) and, from the previous ESTIMATED pose, velocity and bias,
//    predict this frame's pose: tracking starts there and adds the factor of that prediction (rotation and
//    position residuals, information from the preintegrated covariance marginalised over the free velocity
//    plus the previous pose's uncertainty and the velocity's covariance from the window's least squares). After tracking, the velocities of the last `imu.window`
//    frames and a bias update follow by linear least squares over the window's preintegrated deltas.
//    With mapping.refine_poses, IMU factors between the window's frames consecutive in time join the
//    bundle adjustment (keyframe_imu_factor.hpp), weighted by imu.mapping_weight.
//  - Background (extension 3, `model.background`): the direction-only colour model of model.hpp is
//    rendered behind every ray in the colour stage (tracking and mapping) and its logits are mapped in the
//    colour stage with step size lr_background.
//  - Device (use_device, `device: cuda` of nice-slam-run run): the map lives on the device for the run
//    (map_device.hpp); tracking renders, takes the loss and reduces the pose gradient there, and mapping
//    accumulates the grid gradients and takes its Adam steps there. Pixels and sample depths still come
//    from this class's random streams, so both paths see the same rays.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "nerf/dataset.hpp"
#include "nerf/imu_preintegration.hpp"
#include "nerf/keyframe_imu_factor.hpp"
#include "nerf/map_device.hpp"
#include "nerf/render.hpp"

namespace core::io {
class SafetensorsWriter;
}

namespace core::nerf {

struct TrackingOptions {
  int pixels = 200;
  int iterations = 20;
  double lr_rotation = 0.003;     // rad
  double lr_translation = 0.003;  // m
  double colour_weight = 0.5;
  double outlier_factor = 10.0;
  bool variance_normalised = false;  // measured: normalised residuals drift from the true pose on our maps
  int edge = 2;  // pixels ignored at the image border
  template <class V>
  void visit(V& v) {
    v("pixels", pixels, "pixels sampled per tracking iteration", core::in_range(1, 1000000));
    v("iterations", iterations, "Adam iterations per frame", core::in_range(0, 100000));
    v("lr_rotation", lr_rotation, "Adam step size of the rotation (rad)", core::at_least(0.0));
    v("lr_translation", lr_translation, "Adam step size of the translation (m)", core::at_least(0.0));
    v("colour_weight", colour_weight, "weight of the L1 colour loss", core::at_least(0.0));
    v("outlier_factor", outlier_factor, "drop rays whose depth error exceeds this times the median (0: keep all)",
      core::at_least(0.0));
    v("variance_normalised", variance_normalised,
      "depth residuals divided by the rendered standard deviation (NICE-SLAM eq. 9); false: plain L1");
    v("edge", edge, "border pixels never sampled", core::in_range(0, 1000));
  }
};

struct MappingOptions {
  int every = 5;
  int pixels = 1000;
  int iterations = 60;
  int first_iterations = 300;
  int window = 5;  // frames per mapping window, current frame included
  double middle_ratio = 0.4, fine_ratio = 0.6;
  double lr_coarse = 0.001, lr_middle = 0.1, lr_fine = 0.005, lr_colour = 0.005;
  double lr_middle_late = 0.005;  // middle features during the fine and colour stages
  double lr_background = 0.05;    // background model logits (colour stage; model.background)
  double decoder_lr = 0.0;
  double colour_weight = 0.2;
  int coarse_every = 0;  // a coarse-level step every n middle-stage iterations (0: none)
  int keyframe_every = 5;
  bool refine_poses = false;  // bundle adjustment of the window's poses in the colour stage
  double lr_pose_rotation = 0.001, lr_pose_translation = 0.001;
  template <class V>
  void visit(V& v) {
    v("every", every, "map every n frames", core::in_range(1, 100000));
    v("pixels", pixels, "pixels sampled per mapping iteration (over the window)", core::in_range(1, 10000000));
    v("iterations", iterations, "iterations per mapping call", core::in_range(0, 100000));
    v("first_iterations", first_iterations, "iterations of the first mapping call", core::in_range(0, 1000000));
    v("window", window, "frames per mapping window (current frame included)", core::in_range(1, 1000));
    v("middle_ratio", middle_ratio, "share of iterations in the middle stage", core::in_range(0.0, 1.0));
    v("fine_ratio", fine_ratio, "share of iterations up to the end of the fine stage", core::in_range(0.0, 1.0));
    v("lr_coarse", lr_coarse, "coarse feature step size", core::at_least(0.0));
    v("lr_middle", lr_middle, "middle feature step size in the middle stage", core::at_least(0.0));
    v("lr_middle_late", lr_middle_late, "middle feature step size in the fine and colour stages", core::at_least(0.0));
    v("lr_fine", lr_fine, "fine feature step size", core::at_least(0.0));
    v("lr_colour", lr_colour, "colour feature step size", core::at_least(0.0));
    v("lr_background", lr_background, "background model step size (colour stage, model.background)",
      core::at_least(0.0));
    v("decoder_lr", decoder_lr, "decoder step size (0: decoders fixed, as with pretrained ones)", core::at_least(0.0));
    v("colour_weight", colour_weight, "weight of the L1 colour loss", core::at_least(0.0));
    v("coarse_every", coarse_every, "a coarse-level step every n middle-stage iterations (0: none)",
      core::at_least(0));
    v("keyframe_every", keyframe_every, "a keyframe every n frames", core::in_range(1, 100000));
    v("refine_poses", refine_poses,
      "refine the window's poses (all but the earliest) jointly with the map in the colour stage");
    v("lr_pose_rotation", lr_pose_rotation, "Adam step size of a window pose's rotation (rad; refine_poses)",
      core::at_least(0.0));
    v("lr_pose_translation", lr_pose_translation, "Adam step size of a window pose's translation (m; refine_poses)",
      core::at_least(0.0));
  }
};

struct ImuOptions {
  bool enabled = false;
  double gyro_noise = 2.4e-3, accel_noise = 2.83e-2;  // per-sample white noise (synth's defaults)
  double weight = 0.002;              // the IMU factor's weight against the rendering loss in tracking
  double mapping_weight = 0.002;      // ... of the factors between the mapping window's frames
  double sigma_position = 0.05;       // uncertainty of the previous estimated position (m)
  double sigma_rotation = 0.005;      // ... rotation (rad)
  int window = 10;                    // frames of the velocity and bias least squares
  double prior_gyro_bias = 0.01, prior_accel_bias = 0.1;  // prior standard deviations of the bias updates
  template <class V>
  void visit(V& v) {
    v("enabled", enabled, "use the dataset's imu.txt: preintegrated IMU factor in tracking, velocity and bias states");
    v("gyro_noise", gyro_noise, "gyroscope white noise per sample (rad/s)", core::positive<double>());
    v("accel_noise", accel_noise, "accelerometer white noise per sample (m/s^2)", core::positive<double>());
    v("weight", weight, "weight of the IMU factor against the rendering loss in tracking", core::at_least(0.0));
    v("mapping_weight", mapping_weight,
      "weight of the IMU factors between the mapping window's frames (mapping.refine_poses)", core::at_least(0.0));
    v("sigma_position", sigma_position, "uncertainty of the previous estimated position (m)", core::positive<double>());
    v("sigma_rotation", sigma_rotation, "uncertainty of the previous estimated rotation (rad)", core::positive<double>());
    v("window", window, "frames of the velocity and bias least squares", core::in_range(2, 1000));
    v("prior_gyro_bias", prior_gyro_bias, "prior standard deviation of a gyroscope bias update (rad/s)",
      core::positive<double>());
    v("prior_accel_bias", prior_accel_bias, "prior standard deviation of an accelerometer bias update (m/s^2)",
      core::positive<double>());
  }
};

// A Gaussian factor on the tracked pose: r = (Log(mean.R^T R), frame^T (t - mean.t)), cost
// weight * r^T information r / 2 (the IMU prediction from the previous estimated state).
struct PosePrior {
  Pose mean;
  Mat3 frame = Mat3::Identity();
  Eigen::Matrix<double, 6, 6> information = Eigen::Matrix<double, 6, 6>::Identity();
  double weight = 1.0;
  // Cost and its gradient with respect to a left rotation increment and the translation.
  double cost(const Pose& p, Vec3* g_rot, Vec3* g_trans) const;
};

struct SlamOptions {
  ModelOptions model;
  SamplingOptions sampling;
  TrackingOptions tracking;
  MappingOptions mapping;
  DepthNoiseModel uncertainty;  // extension 1: depth residuals weighted by 1 / sqrt(V + sigma(z)^2)
  ImuOptions imu;               // extension 2: preintegrated IMU factor in tracking
  std::vector<double> bound{-2.6, -2.6, -0.1, 2.6, 2.6, 2.7};  // the synthetic room; []: from the first frame
  double bound_margin = 1.0;   // metres added around the first frame's points when bound is empty
  std::string decoders;        // safetensors of pretrained decoders; "none": random decoders
  bool use_groundtruth_poses = false;  // mapping only (pretraining, ablations)
  std::uint64_t seed = 0;
  template <class V>
  void visit(V& v) {
    v.section("model", model);
    v.section("sampling", sampling);
    v.section("tracking", tracking);
    v.section("mapping", mapping);
    v.section("uncertainty", uncertainty);
    v.section("imu", imu);
    v("bound", bound, "scene bound [xmin, ymin, zmin, xmax, ymax, zmax] in metres ([]: first frame's points + margin)");
    v("bound_margin", bound_margin, "margin around the first frame's points when bound is []", core::at_least(0.0));
    v("decoders", decoders, "pretrained decoders (.safetensors; '': the shipped ones; 'none': random)");
    v("use_groundtruth_poses", use_groundtruth_poses, "skip tracking and map with the ground-truth poses");
  }
};

struct FrameStats {
  std::size_t index = 0;
  double timestamp = 0;
  Pose pose;
  double track_loss = 0, depth_l1 = 0;
  int track_iterations = 0, map_iterations = 0;
  double track_s = 0, map_s = 0;
  bool keyframe = false;
  double position_error = -1;  // |t - t_gt| when ground truth exists (frame 0 anchored to it)
};

class NiceSlam {
 public:
  NiceSlam(const SlamOptions& options, const Intrinsics& camera, NiceModel<float> model);
  // Tracks (unless the first frame or ground-truth mode), maps when due, and returns the frame's stats.
  FrameStats process(const RgbdFrame& frame);
  // The map (copied back from the device first when mapping there changed it since).
  const NiceModel<float>& model();
  // Tracking and mapping on `device` from now on; it must hold this object's model (make_cuda_map(model())).
  // UsageError when mapping would train the decoders (mapping.decoder_lr > 0: the device keeps them fixed).
  void use_device(std::unique_ptr<MapDevice> device);
  const MapDevice* device() const { return device_.get(); }
  const Trajectory& trajectory() const { return trajectory_; }
  const Intrinsics& camera() const { return camera_; }
  // Grid features optimised by mapping with the given frames and poses (pretraining, tests).
  void map_frames(const std::vector<const RgbdFrame*>& frames, const std::vector<Pose>& poses, int iterations);
  // The same with the poses of the frames marked free refined in place in the colour stage, under the
  // given IMU factors between window entries (bundle adjustment; tests call it directly).
  void map_and_refine(const std::vector<const RgbdFrame*>& frames, std::vector<Pose>& poses,
                      const std::vector<bool>& free, const std::vector<KeyframeImuFactor>& factors, int iterations);
  // Pose optimisation of one frame from `start` (tests call it directly), with an optional pose factor.
  Pose track(const RgbdFrame& frame, const Pose& start, FrameStats& stats, const PosePrior* prior = nullptr);
  // IMU samples of the sequence (imu.enabled); timestamps on the frames' clock.
  void set_imu(std::vector<ImuSample> samples) { imu_ = std::move(samples); }
  const std::vector<Vec3>& velocities() const { return velocities_; }
  const ImuBias& imu_bias() const { return bias_; }

 private:
  struct Keyframe {
    RgbdFrame frame;
    Pose pose;
    std::size_t index;  // in the trajectory
  };
  struct WindowRefinement {
    std::vector<bool> free;
    std::vector<KeyframeImuFactor> factors;
  };
  void map_window(const std::vector<const RgbdFrame*>& frames, std::vector<Pose>& poses, int iterations,
                  const WindowRefinement* refinement);
  // Which window entries are free (all but the earliest in time) and the IMU factors between entries
  // consecutive in time (imu.enabled); `indices` are the entries' frame indices in the trajectory.
  WindowRefinement window_refinement(const std::vector<std::size_t>& indices, const std::vector<Pose>& poses) const;
  // Information of the IMU rotation and position residuals after `dt` from a frame with rotation R: the
  // preintegrated covariance with the velocity marginalised, the frame's pose uncertainty and the
  // velocity's covariance carried over dt.
  Eigen::Matrix<double, 6, 6> imu_information(const ImuPreintegration& pre, const Mat3& R) const;
  std::vector<std::size_t> select_window(const RgbdFrame& frame, const Pose& pose);
  // Velocities of the last imu.window frames and the bias update by linear least squares on the
  // preintegrated deltas with the estimated poses held fixed.
  void estimate_velocities_and_bias();
  // The IMU factor of the frame after `previous`: its predicted pose and information.
  PosePrior imu_prior(const ImuPreintegration& pre, const Pose& previous, const Vec3& velocity) const;
  SlamOptions opt_;
  Intrinsics camera_;
  NiceModel<float> model_;
  std::unique_ptr<MapDevice> device_;  // nullptr: the CPU path
  bool device_map_newer_ = false;      // mapping on the device changed the grids since model_ was copied
  std::vector<Vec3> pixel_rays_;  // unit-depth ray of every pixel
  std::vector<Keyframe> keyframes_;
  Trajectory trajectory_;
  Rng rng_;
  std::size_t frames_seen_ = 0;
  std::vector<ImuSample> imu_;
  std::vector<ImuPreintegration> preintegrations_;  // [j - 1]: from frame j - 1 to frame j
  std::vector<Vec3> velocities_;                    // per frame (imu.enabled), world frame
  bool velocity_known_ = false;
  Mat3 velocity_cov_ = Mat3::Zero();  // of the newest velocity
  ImuBias bias_;
};

// The bound from options or from the first frame's back-projected depth.
void slam_bound(const SlamOptions& options, const Intrinsics& camera, const RgbdFrame& first, const Pose& pose,
                Vec3& lo, Vec3& hi);

// Decoder weights to and from safetensors (names decoder.<level>.<W|b>.<layer>; F32).
void save_decoders(const std::filesystem::path& path, const NiceModel<float>& model, const nlohmann::json& provenance);
// The same decoder tensors added to a file being assembled (e.g. the map file, map_file.hpp).
void add_decoders(io::SafetensorsWriter& writer, const NiceModel<float>& model);
void load_decoders(const std::filesystem::path& path, NiceModel<float>& model);
// The decoders the project ships (datasets/nice-slam-run/decoders.safetensors in the source tree).
std::filesystem::path shipped_decoders_path();

}  // namespace core::nerf
