// Calibration (DLAS layer 5): measures every dense conv algorithm, in NCHW and in the ISA's
// blocked layout, at its default knobs and a few other knob points, on one representative
// f32 shape per shape class (conv_shape_class) and on its int8 twin (u8 activations, s8
// weights; an "int8-" class) -- the survey -- then, within a time budget, searches the knob
// spaces of each class's leading candidates with the tuner, and keeps the fastest per class
// as a MachineProfile (dlas/algo/machine_profile.h). `dlas hw --calibrate` runs it.
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
  int extra_knob_points = 3;  // besides the default (ConvAlgorithm::survey_knobs picks them)
  int repeat = 3;             // timed repeats per candidate (the median counts)
  // The cache state candidates are timed in (tune::MeasureOptions::reuse_bytes): prepared
  // copies whose packed weights together exceed this many bytes, run in turn, so weights
  // come from where a model's other layers leave them, not warm from the last run.
  // < 0: twice the last-level cache (of 32 MiB where it is unknown); 0: one warm copy.
  double reuse_bytes = -1;
  // Also measure each shape's int8 twin (u8 input and output, s8 weights), after the f32
  // shapes: the int8 rule's classes.
  bool int8 = true;
  // The search stage after the survey: the tuner over each class's leading candidates for
  // at most this long (it stops earlier when its gains flatten; 0: the survey only).
  double search_seconds = 30;
  // The whole calibration's budget: the search stage ends once the calibration has taken
  // this long, whatever is left of search_seconds, and on a machine slow enough to spend it
  // in the survey, the shapes not yet surveyed are skipped (0: no limit).
  double budget_seconds = 55;
  // Called after each shape (f32 shapes, then their int8 twins): (done, total, its class).
  std::function<void(int, int, const std::string&)> progress;
  // Called after each search round: (seconds so far, search_seconds, trials, round).
  std::function<void(double, double, int64_t, int)> search_progress;
};

// One class's result.
struct CalibrateRow {
  std::string shape_class;
  std::string shape;   // the measured problem's key()
  int candidates = 0;  // measured to the end (not failed, not stopped as too slow)
  MachineProfile::Entry best;
  double rule_us = 0;  // the built-in auto rule's choice, at its default knobs (0: not measured)
  std::string rule_algo;
  double seconds = 0;    // spent measuring the class (the survey)
  double survey_us = 0;  // the survey's fastest (best.us: of the survey and the search)
  int searched = 0;      // candidates the search stage measured for it
};

struct CalibrateResult {
  MachineProfile profile;  // cpu, isa, threads, source set; one entry per row
  std::vector<CalibrateRow> rows;
  double seconds = 0;
  int64_t search_trials = 0;  // the search stage's candidates
  double search_seconds = 0;
  std::string search_stop;  // why it stopped: "seconds", "phi", "exhausted", ...
  int skipped_shapes = 0;   // shapes left unsurveyed when the budget ran out (no entry)
};

// The built-in list: 86 f32 shapes of the zoo models (bench/shapes), one per class of
// every zoo conv but those on 1x1 planes.
std::vector<ConvProblem> calibration_shapes();

// Runs the calibration. Throws kInvalidInput on bad options.
CalibrateResult calibrate(const CalibrateOptions& options);

}  // namespace dlas
