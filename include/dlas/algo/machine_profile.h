// Machine profiles (DLAS layer 4): which conv algorithm, layout and knobs won per coarse
// shape class on one CPU, ISA path and thread count, as `dlas hw --calibrate` measured them
// (dlas/system/calibrate.h). Under --conv-algo auto and --layout auto the plan follows the
// active profile's entry for a layer's class before the built-in auto rule
// (docs/engine.md "Machine profile").
//
// File format (JSON, one object):
//   {"format": "dlas-machine-profile", "version": 1, "cpu": "AMD EPYC 9B14", "isa": "avx512",
//    "threads": 2, "source": "dlas hw --calibrate",
//    "entries": [{"class": "dense-3x3-s1-o16-c256-k256", "algo": "winograd", "layout": "nchw",
//                 "knobs": {"tile": 4}, "us": 812.5,
//                 "other": {"algo": "direct", "layout": "nchw16c", "knobs": {...}, "us": 840},
//                 "reorder_us": 61.2}, ...]}
// ("other" and "reorder_us" from version 2 on; version 1 files are read too.)
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/knobs.h"
#include "dlas/algo/layout.h"
#include "dlas/hw/isa.h"

namespace dlas {

// The coarse class of an f32 or int8 conv that a profile keys on:
//   "[int8-]<kind>-<kh>x<kw>-s<stride>[-d<dilation>]-o<side>[-c<channels>][-k<outputs>]"
// kind: "dw" (depthwise), "stem" (<= 4 input channels per group, groups 1), "group" (other
// grouped convs) or "dense"; stride "1", "2" or "<sh>x<sw>" when they differ; side: the
// larger output side bucketed to 2, 4, 8, 16, 32 or "big" (> 32); channels (not for stems):
// the input channels bucketed to 64, 256 or "big" (> 256); outputs (dense and group only): the
// output channels, bucketed the same way. A dense stride-1 3x3 conv on a plane of 5-16 that
// F(4x4, 3x3) tiles with a ragged edge (a side not a multiple of 4: 7, 14) has the side
// marked "r" ("o16r"). Batch, padding and the epilogue do not enter. E.g.
// "dense-3x3-s1-o16-c256-k64", "dw-3x3-s2-obig-c64", "stem-7x7-s2-obig"; an int8 conv's
// class carries the prefix "int8-" ("int8-dense-1x1-s1-o8-c256-k64").
std::string conv_shape_class(const ConvProblem& p);

struct MachineProfile {
  // One measured candidate.
  struct Choice {
    std::string algo;               // a dense algorithm's name
    Layout layout = Layout::kNchw;  // the output layout it ran in (stems read NCHW)
    Knobs knobs;
    double us = 0;  // its measured time on the calibration shape, microseconds
    bool operator==(const Choice&) const = default;
  };
  struct Entry {
    std::string shape_class;        // conv_shape_class
    std::string algo;               // the fastest candidate: a dense algorithm's name,
    Layout layout = Layout::kNchw;  // its output layout,
    Knobs knobs;                    // its knobs
    double us = 0;                  // and its time
    // The fastest candidate in the other layout family (blocked when the fastest is NCHW and
    // the reverse); absent when none was measured.
    std::optional<Choice> other;
    // What running the class in NCHW costs between blocked neighbours: reordering its input
    // (not a stem's: that is the image) to NCHW and its output back, microseconds.
    double reorder_us = 0;

    Choice best() const { return {algo, layout, knobs, us}; }
    // Whether a layer of the class runs blocked when its neighbours do: the fastest layout,
    // unless that is NCHW and its lead is smaller than the reorders it costs.
    bool blocked_wins() const;
    // The candidate in p's output layout family (blocked or NCHW), else the fastest.
    Choice for_layout(Layout y) const;
  };
  std::string cpu;    // CpuInfo::model_name
  std::string cpuid;  // CpuInfo::signature() ("family 26 model 2"); "" in older files
  Isa isa = Isa::kScalar;
  int threads = 1;
  std::string source;          // what made it ("dlas hw --calibrate")
  std::vector<Entry> entries;  // one per class

  // The entry for p's class, else the entry of the same class with the nearest output-channel
  // bucket (ties: the larger) or with none (a file written before classes had one); for a
  // ragged class ("o16r") with none of these, the same for its even twin ("o16"); nullptr
  // when none of these exists or p is a 16-bit problem (those take their f32 twin's entry).
  const Entry* lookup(const ConvProblem& p) const;
  // lookup() of one class name, without the ragged-to-even step.
  const Entry* lookup_class(const std::string& cls) const;
  // The profile's algorithm for p (in p's layouts) on `isa` where the auto rule picked
  // `rule`: nullptr when there is no entry, the rule picked a sparse algorithm (a profile
  // measures dense weights), or the entry's algorithm is unknown or does not support p.
  // Otherwise sets `knobs` to the entry's when valid in the algorithm's space for p, else
  // to its default point.
  const ConvAlgorithm* choose(const ConvProblem& p, Isa isa, const ConvAlgorithm& rule,
                              Knobs& knobs) const;

  std::string to_json() const;  // 2-space indented, entries in order
  // Strict: every field present with its type, a known ISA and layout, threads >= 1,
  // classes unique, knob values integers. Throws kInvalidInput naming `what` and the field.
  static MachineProfile from_json(std::string_view text, std::string_view what = "profile");
  // from_json of the file (kInvalidInput naming the path when unreadable or invalid).
  static MachineProfile load(const std::string& path);
  // Writes to_json() atomically (dlas/core/file.h).
  void save(const std::string& path) const;
};

// How well profile m fits this machine's CPU: 2 when its model name and cpuid signature
// match, 1 when the name matches and m has no signature (a file written before profiles
// carried one), 0 otherwise -- a different name, or the same name on another
// microarchitecture (a generic "AMD EPYC" of another family or model).
int cpu_match(const MachineProfile& m);

// "AMD EPYC 9B14" -> "amd-epyc-9b14": lowercase letters and digits, runs of anything else
// one '-'; "unknown-cpu" when nothing is left.
std::string cpu_slug(const std::string& model_name);
// The calibration cache folder: $XDG_CACHE_HOME/dlas, else $HOME/.cache/dlas; empty when
// neither variable is set.
std::string calibration_cache_dir();
// <calibration_cache_dir()>/profile-<cpu-slug>-<isa>-t<threads>.json, the slug of the model
// name and cpuid signature ("amd-epyc-family-26-model-2"); empty without a cache folder.
std::string default_profile_path(Isa isa, int threads);

struct ActiveProfile {
  std::shared_ptr<const MachineProfile> profile;  // null: the built-in rule
  // Of the profile in use: a file's path, "builtin:<name>" for a built-in table; empty when
  // none.
  std::string path;
};

// The built-in tables: profiles measured by `dlas hw --calibrate` on reference CPUs
// (data/profiles/*.json, compiled in), in name order. `name` is the file's stem.
struct BuiltinProfile {
  std::string name;
  std::shared_ptr<const MachineProfile> profile;
};
const std::vector<BuiltinProfile>& builtin_machine_profiles();
// The built-in table for a machine without a profile of its own: among the tables whose ISA
// path runs the same f32 kernels as `isa` (base_isa), the one measured on this CPU (cpu_match:
// name and signature, then name alone) if any, then the one with the nearest thread count
// (ties: fewer threads), then the first by name. A table that records a cpuid signature
// serves only that CPU; the tables without one serve every other. Empty (no profile) for the
// scalar path or when no table fits.
ActiveProfile builtin_machine_profile(Isa isa, int threads);
// The same choice among `tables` (tests).
const BuiltinProfile* pick_builtin_profile(const std::vector<BuiltinProfile>& tables, Isa isa,
                                           int threads);

// The profile a plan uses on (isa, threads). `option` is PlanOptions::profile: a path,
// "builtin" (the built-in table, ignoring the cache), "none" (the hand-written rule only) or
// empty -- then $DLAS_PROFILE (the same choices), else default_profile_path when that file
// exists, else the built-in table. A file that is missing (an explicit one: kInvalidInput),
// unreadable, invalid, or made for another CPU, ISA or thread count is ignored with one
// warning line on stderr (once per file version) and the built-in table used instead. Files
// are re-read when they change; thread-safe.
ActiveProfile active_machine_profile(const std::string& option, Isa isa, int threads);

}  // namespace dlas
