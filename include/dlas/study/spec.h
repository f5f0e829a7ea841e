// The study spec (across the stack): a TOML file naming the values of each
// dimension of the stack; the study is their cartesian product minus the
// [[exclude]] rules. Example:
//
//   [study]
//   name = "cifar10-cpu"
//   repeat = 150          # timed runs per variant (median reported)
//   warmup = 1
//   timeout = 600         # seconds one variant may take (child process killed after)
//   calibrate = false     # true: calibrate missing machine profiles before measuring
//   [space]
//   models = ["resnet18-cifar", "mobilenetv1-cifar"]   # zoo names or .onnx paths
//   conv_algo = ["direct", "gemm", "spatial-pack"]     # or winograd, depthwise, auto
//   layout = ["nchw", "nchwc"]                         # activation layout (default auto)
//   threads = [2]                                      # 0: one per logical CPU
//   compress = ["dense"]
//   batch = [1]
//   isa = ["native"]                                   # native or any --isa path (isa.h)
//   backend = ["dlas"]                                 # dlas, onednn, cudnn or an ONNX peer
//   device = ["cpu", "cuda"]                           # cpu or cuda[:N] (stored as cuda:0)
//   opt_level = [3]                                    # 0..3
//   tuning = ["untuned", "tuned:120s"]                 # auto-tune first (budget: s, m, trials)
//   dataset = ["fashion-mnist"]                        # build for it, measure top-1/top-5
//   [accuracy]
//   limit = 10000                                      # test images scored per variant
//   sweeps = ["sweeps/resnet18-weight"]                # prune-sweep dirs for `elbow` levels
//   [preprocess]                                       # how dataset images are fed (below)
//   scale = 255
//   [preprocess."models/keras.onnx"]                   # one model's own (as in models)
//   input_layout = "nhwc"
//   [[exclude]]                                        # skip a partial combination
//   model = "vgg16-cifar"
//   conv_algo = ["winograd", "direct"]
//
// Every error is a dlas::Error(kInvalidInput) whose message starts with
// "FILE:LINE:COL: FIELD: " so the user can jump to the fault. Keys and tables that are
// not part of a spec but look like one ([space].schedule, [space].accuracy, [tuning],
// [dataset]) are refused with where that setting lives instead.
//
// Accuracy: with a `dataset` dimension every variant is built for the dataset (zoo models
// take its image shape and classes; .onnx models must already) and the measuring child
// scores the deployed variant (the timed Plan itself) on the first [accuracy].limit test
// images. A compression's pruning level may be `elbow` ("wp:elbow", "cp:elbow+int8"): the
// prune-sweep of [accuracy].sweeps with the same model, method and dataset gives the level
// and its fine-tuned model, which the variant deploys (compress "wp:elbow=0.9").
//
// Devices: `device` places each variant on the CPU or a CUDA GPU (dlas/hw/gpu.h). On a GPU
// only the dlas and cudnn backends run, on f32 models (pruned ones too; int8/fp16/bf16 are
// excluded) with dlas's CUDA algorithms (auto, direct, gemm, winograd, depthwise; the CPU-only
// ones are excluded); isa, threads and layout do not apply there (they collapse to the device,
// 1 and auto). Backend cudnn is always on a GPU (cudnn on cpu becomes cuda:0), with conv_algo
// "cudnn" and untuned only. A tuned GPU variant runs the GPU tuner (dlas/system/cuda_tune.h) in
// its child. A GPU variant on a machine without that GPU is stored `unsupported` with the
// reason.
//
// Preprocessing: [preprocess] gives the preprocessing flags of `dlas eval` as keys -- mean,
// std (a number or one per channel), scale, channel_order, input_layout, resize,
// center_crop -- for every model; a sub-table named after a model of [space].models gives
// that model's own, key by key over the table's. They take precedence over a model's
// metadata, which takes precedence over the dataset's default (dlas/system/preprocess_meta.h),
// and are part of the variant's id.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/optimize/prune_sweep.h"
#include "dlas/system/preprocess_meta.h"

namespace dlas::study {

// The dimensions of [space], in expansion order (outermost first).
struct StudySpace {
  std::vector<std::string> models;    // as written (zoo name or .onnx path)
  std::vector<std::string> compress;  // "dense", "wp:0.9", "cp:0.5", "int8", "wp:0.9+int8", ...
  std::vector<int64_t> batch;         // default {1}
  std::vector<std::string> backend;   // "dlas" | "onednn" | "cudnn" | a peer; default {"dlas"}
  // "cpu" | "cuda:N" (canonical_device: "cuda" is stored as "cuda:0"); default {"cpu"}
  std::vector<std::string> device;
  std::vector<std::string> isa;        // "native" | isa_name(); default {"native"}
  std::vector<int> opt_level;          // 0..3; default {3}
  std::vector<std::string> conv_algo;  // conv_algorithm_names() | "auto"; default {"auto"}
  // Activation layout (PlanOptions::layout): "nchw" | "nchwc" (the ISA's blocked layout) |
  // "auto" (blocked where the layout rule expects it to win); default {"auto"}
  std::vector<std::string> layout;
  std::vector<int> threads;  // >= 0 (0: every logical CPU); default {1}
  // "untuned" (the algorithms' default knobs) | "tuned:<budget>" (120s, 2m, 500trials, or
  // "120s,500trials"): the child auto-tunes the variant's conv layers first; default {"untuned"}
  std::vector<std::string> tuning;
  // Labelled datasets (dlas/data/dataset.h names); default {""}: no dataset, latency only.
  std::vector<std::string> dataset;
};

// [accuracy]: how variants with a dataset are scored, and the prune-sweeps behind `elbow`.
struct AccuracySpec {
  int64_t limit = 10000;            // test images per variant (0: the whole split)
  std::vector<std::string> sweeps;  // sweep directories, resolved against the spec's folder
  std::vector<SweepResult> loaded;  // their sweep.json, in order
};

// One `elbow` level resolved: the sweep of (model, method, dataset) and its elbow point.
struct ElbowChoice {
  std::string model, dataset;  // as in the spec ("" dataset: the spec has none)
  PruneMethod method = PruneMethod::kWeight;
  std::string level;       // the elbow's spec without its method: "0.9", "0.35:layer"
  std::string model_path;  // the elbow's fine-tuned model (absolute or spec-relative path)
  std::string sweep_dir;
};

// One [[exclude]] table: a point is excluded when, for every dimension named,
// its value is one of the listed values.
struct ExcludeRule {
  std::map<std::string, std::vector<std::string>> match;  // dimension -> values (as text)
  int line = 0;                                           // where the table starts
};

struct StudySpec {
  std::string source;      // the file read ("<string>" for parse_study_spec)
  std::string name;        // [study].name; default: the file's stem
  int repeat = 150;        // timed repeats per variant
  int warmup = 1;          // discarded runs before timing
  double timeout_s = 600;  // per variant; 0 means no limit
  // [study].calibrate: before the first variant, the runner measures the machine profile
  // (dlas hw --calibrate) of every (ISA path, threads) its dlas variants run with that has
  // none in the calibration cache yet (dlas/study/runner.h).
  bool calibrate = false;
  StudySpace space;
  AccuracySpec accuracy;
  std::vector<ElbowChoice> elbows;  // every (model, method, dataset) an `elbow` level needs
  std::vector<ExcludeRule> exclude;
  // [preprocess]: "" -> the table's own keys (every model), a model (as in [space].models)
  // -> its sub-table's.
  std::map<std::string, PreprocessFlags> preprocess;
  // .onnx paths in `models` are resolved against this folder (the spec's own).
  std::string base_dir;
};

// Reads and validates a spec file. Throws kInvalidInput ("FILE:LINE:COL: FIELD: why").
StudySpec parse_study_spec_file(const std::string& path);
// Same for text already in memory; `source_name` is used in messages, `base_dir`
// resolves relative .onnx paths.
StudySpec parse_study_spec(std::string_view text, const std::string& source_name,
                           const std::string& base_dir = ".");

// One point of the space, hardware-independent (the spec's values after the
// oneDNN normalisation below). Runners resolve "native" ISAs and threads = 0 on
// the machine they run on.
struct StudyPoint {
  std::string model;       // as in the spec: part of the variant's canonical id
  std::string model_path;  // what to load: the zoo name, or the .onnx path resolved
  std::string compress = "dense";
  int64_t batch = 1;
  std::string backend = "dlas";
  // "cpu" | "cuda:N". On a GPU, isa is the device string, threads 1 and layout auto.
  std::string device = "cpu";
  std::string isa = "native";
  int opt_level = 3;
  std::string conv_algo = "auto";
  // Activation layout: "auto" | "nchw" | "nchwc" ("auto" for the oneDNN backend, which picks
  // its own layouts).
  std::string layout = "auto";
  int threads = 1;
  std::string tuning = "untuned";
  std::string dataset;  // "" = none
  // With a dataset: [accuracy] limit, the test images scored (0: all); 0 and unused without.
  int64_t accuracy_limit = 0;
  // With a dataset: [preprocess] for this model (its sub-table over the table's keys).
  PreprocessFlags preprocess;

  // The value of a dimension as text ("models" / "model" -> model, "threads" -> "2").
  std::string value(std::string_view dimension) const;
  // "model=...;compress=...;batch=..;backend=..;isa=..;opt=..;conv=..;threads=.." (messages;
  // ";layout=.." when not auto, ";device=cuda:0" off the CPU, ";tuning=..", ";dataset=..;
  // limit=.." when set,
  // ";preprocess=--scale 1" with [preprocess] flags).
  std::string str() const;
};

struct Expansion {
  std::vector<StudyPoint> points;  // deterministic order: the spec's, outermost dimension first
  size_t total = 0;                // size of the cartesian product
  // Removed by [[exclude]], and the points a backend or device cannot run: quantized
  // compressions on oneDNN or a GPU, CPU-only backends and algorithms on a GPU.
  size_t excluded = 0;
  // Removed as duplicates after normalisation: the oneDNN backend has no conv
  // algorithm, ISA override, graph opt level or activation layout of dlas's, so those
  // dimensions collapse to "onednn"/"onednn"/0/"auto" for it (as `dlas bench --backend
  // onednn` labels them); on a GPU isa, threads and layout collapse to the device, 1 and
  // "auto", and cudnn's algorithm to "cudnn".
  size_t collapsed = 0;
};

// Points' `compress` is the deployed one: an `elbow` level is resolved ("wp:elbow=0.9") and
// the point's model_path is the elbow's model.
Expansion expand_study(const StudySpec& spec);

// What the measuring child applies for a (resolved) compress value: "wp:elbow=0.9+int8" ->
// "wp:0.9+int8" (the elbow model carries the zeros; the spec keeps sparse algorithms on),
// "cp:elbow=0.35+int8" -> "int8" (the elbow model is already channel-pruned), else as is.
std::string deployed_compress(const std::string& compress);

// The dimension names of [space] (also valid [[exclude]] keys; "model" is an alias of "models").
const std::vector<std::string>& study_dimensions();

}  // namespace dlas::study
