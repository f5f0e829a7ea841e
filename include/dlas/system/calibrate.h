// Calibration (DLAS layer 5): measures every dense conv algorithm, in NCHW and in the ISA's
// blocked layout, at its default knobs and a few other knob points, on one representative
// f32 shape per shape class (conv_shape_class) and on its int8 twin (u8 activations, s8
// weights; an "int8-" class), and keeps the fastest per class as a MachineProfile
// (dlas/algo/machine_profile.h). `dlas hw --calibrate` runs it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/machine_profile.h"
#include "dlas/hw/isa.h"

namespace dlas {

struct CalibrateOptions {
  Isa isa = Isa::kScalar;
  int threads = 1;  // >= 1
  // The shapes measured, one per class (a later shape of a class already measured is
  // skipped); empty: calibration_shapes().
  std::vector<ConvProblem> shapes;
  int extra_knob_points = 3;  // besides the default: points spread over the knob space
  int repeat = 5;             // timed repeats per candidate (the median counts)
  // Also measure each shape's int8 twin (u8 input and output, s8 weights), after the f32
  // shapes: the int8 rule's classes.
  bool int8 = true;
  // Called after each shape (f32 shapes, then their int8 twins): (done, total, its class).
  std::function<void(int, int, const std::string&)> progress;
};

// One class's result.
struct CalibrateRow {
  std::string shape_class;
  std::string shape;   // the measured problem's key()
  int candidates = 0;  // measured to the end (not failed, not stopped as too slow)
  MachineProfile::Entry best;
  double rule_us = 0;  // the built-in auto rule's choice, at its default knobs (0: not measured)
  std::string rule_algo;
  double seconds = 0;  // spent measuring the class
};

struct CalibrateResult {
  MachineProfile profile;  // cpu, isa, threads, source set; one entry per row
  std::vector<CalibrateRow> rows;
  double seconds = 0;
};

// The built-in list: 60 f32 shapes of the zoo models (bench/shapes), one per class.
std::vector<ConvProblem> calibration_shapes();

// Runs the calibration. Throws kInvalidInput on bad options.
CalibrateResult calibrate(const CalibrateOptions& options);

}  // namespace dlas
