// The GPU's machine profile (DLAS layer 5/6, docs/gpu.md "Measured defaults"): which CUDA
// conv algorithm, at which knobs, runs each shape class fastest on this GPU model, measured
// by `dlas hw --calibrate --device cuda` and cached per GPU model. The CUDA plan's auto rule
// follows it where it has the layer's class and falls back to the hand-written rule
// (cuda_conv.h auto_conv_algorithm) elsewhere -- the GPU's twin of the CPU's machine
// profile (dlas/algo/machine_profile.h).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dlas/algo/cuda_conv.h"
#include "dlas/algo/knobs.h"

namespace dlas {

// "dense-3x3-s1-p1k-k256": kind (dense, group, dw, sparse: at most kSparseDensity nonzero),
// kernel (1x1, 3x3, 5x5, 7x7, other), stride (s1, s2: 2 and more), output pixels of the
// batch (p64, p256, p1k, p4k, pbig), except for depthwise, output channels (k64, k256,
// kbig), and "-h16" for 16-bit (fp16 and bf16) layers.
std::string cuda_shape_class(const cuda::ConvShape& shape);

struct CudaProfileEntry {
  std::string algo;
  Knobs knobs;
  double us = 0;       // its time on the class's shape
  std::string rule;    // the hand-written rule's choice there
  double rule_us = 0;  // and its time at its default knobs (0: not measured)
  std::string shape;   // the shape measured (ConvShape::str)
};

struct CudaProfile {
  std::string gpu;  // "NVIDIA H200|sm_90" (tune::cuda_hardware_id)
  std::string created, version;
  std::map<std::string, CudaProfileEntry> classes;

  std::string to_json() const;
  // kInvalidInput naming `what` and the field.
  static CudaProfile from_json(const std::string& text, const std::string& what);
  static CudaProfile load(const std::string& path);
  void save(const std::string& path) const;  // atomically
};

// $XDG_CACHE_HOME/dlas (else $HOME/.cache/dlas) /gpu-profile-<gpu slug>.json; empty when
// neither variable is set. `gpu` as CudaProfile::gpu.
std::string default_cuda_profile_path(const std::string& gpu);

// The profile the CUDA plan on GPU `gpu` uses: none when `option` is "none"; the file
// `option` names; else the cache file when it exists. A file that is unreadable, invalid or
// made on another GPU model is ignored with one warning line on stderr. Null: none.
std::shared_ptr<const CudaProfile> active_cuda_profile(const std::string& option,
                                                       const std::string& gpu);

// The CUDA plan's measured rule for one conv: the algorithm of the shape's class in
// `profile` when it runs the shape (else algo is null), at that algorithm's default knobs
// for the shape; the class's measured knobs only when the shape is the one measured (a
// class spans reductions of 10x and more, and knobs fitted to one shape, such as the
// split-K count, starve another). Defined with the CUDA backend.
struct CudaProfileChoice {
  const cuda::ConvAlgorithm* algo = nullptr;
  Knobs knobs;
};
CudaProfileChoice cuda_profile_choice(const CudaProfile& profile, const cuda::ConvShape& shape);

struct CudaCalibrateRow {
  std::string shape_class, shape;
  int candidates = 0;
  CudaProfileEntry best;
};
struct CudaCalibrateResult {
  CudaProfile profile;
  std::vector<CudaCalibrateRow> rows;
  double seconds = 0;
};
// Measures every CUDA conv algorithm (its default and up to `points` other knob points) on
// one shape per class, the classes of the zoo's conv layers at batch 1 and their pruned
// (90% zero) variants, on CUDA device `device`. kUnsupported without CUDA or the device.
CudaCalibrateResult calibrate_cuda(int device, int points = 4,
                                   std::function<void(int, int, const std::string&)> progress = {});

}  // namespace dlas
