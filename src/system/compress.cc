// Compression that runs the engine (include/dlas/system/compress.h): calibration inputs,
// the calibration run that collects each tapped tensor's statistics, quantize(),
// apply_compress_spec() and measure_output_error().
#include "dlas/system/compress.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

#include "dlas/algo/eltwise.h"
#include "dlas/core/error.h"
#include "dlas/core/npy.h"
#include "dlas/data/dataset.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/system/passes.h"
#include "dlas/system/plan.h"
#include "dlas/system/preprocess_meta.h"

namespace dlas {

std::vector<std::vector<Tensor>> calibration_inputs(const Graph& g, const QuantSpec& spec) {
  std::vector<std::vector<Tensor>> samples;
  if (spec.calib_data == "random") {
    DLAS_CHECK(spec.calib_samples >= 1, ErrorKind::kInvalidInput,
               "calibration samples must be >= 1, got ", spec.calib_samples);
    for (int s = 0; s < spec.calib_samples; ++s) {
      std::mt19937_64 rng(spec.seed * 1000003u + static_cast<uint64_t>(s));
      std::normal_distribution<float> normal(0.f, 1.f);
      std::vector<Tensor> in;
      for (const ValueInfo& v : g.inputs) {
        Tensor t(v.dtype, v.shape);
        if (v.dtype == DType::kF32)
          for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
        in.push_back(t);
      }
      samples.push_back(std::move(in));
    }
    return samples;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(spec.calib_data, ec)) {
    // A dataset name (dlas/data/dataset.h): batches of preprocessed training images.
    DLAS_CHECK(g.inputs.size() == 1 && g.inputs[0].shape.size() == 4, ErrorKind::kInvalidInput,
               "calibration data '", spec.calib_data,
               "': a dataset needs a model with one image input [N,C,H,W]");
    std::vector<Tensor> batches;
    try {
      // The preprocessing the graph carries (dlas/system/preprocess_meta.h), else the
      // dataset's default.
      const std::optional<data::Preprocess> pre = preprocess_from_metadata(g);
      batches = data::calibration_batches(spec.calib_data, g.inputs[0].shape,
                                          std::max(spec.calib_samples, 1), spec.seed,
                                          pre ? &*pre : nullptr);
    } catch (const Error& e) {
      throw Error(e.kind(), "calibration data '" + spec.calib_data +
                                "' (neither 'random', a directory of .npy files, nor a usable "
                                "dataset): " +
                                e.what());
    }
    for (const Tensor& t : batches)
      samples.push_back({t.dtype() == g.inputs[0].dtype ? t : t.cast(g.inputs[0].dtype)});
    return samples;
  }
  DLAS_CHECK(g.inputs.size() == 1, ErrorKind::kInvalidInput, "calibration data '", spec.calib_data,
             "': a directory of .npy files needs a model with one input, not ", g.inputs.size());
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(spec.calib_data, ec))
    if (e.is_regular_file() && e.path().extension() == ".npy") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  DLAS_CHECK(!files.empty(), ErrorKind::kInvalidInput, "calibration data '", spec.calib_data,
             "' has no .npy files");
  if (static_cast<int>(files.size()) > spec.calib_samples)
    files.resize(static_cast<size_t>(std::max(spec.calib_samples, 1)));
  const ValueInfo& v = g.inputs[0];
  for (const fs::path& f : files) {
    Tensor t = read_npy(f.string());
    if (t.dtype() != v.dtype && is_float(t.dtype())) t = t.cast(v.dtype);
    DLAS_CHECK(t.dtype() == v.dtype && t.shape() == v.shape, ErrorKind::kInvalidInput, f.string(),
               ": expected ", dtype_name(v.dtype), " ", shape_str(v.shape), " (the input '", v.name,
               "'), got ", t.describe());
    samples.push_back({t});
  }
  return samples;
}

namespace {

// Progress units of one error-measurement sample: the tapped model once, the layers' copy
// once on the f32 values and once per candidate (about the model's cost each).
constexpr int64_t kErrorSampleUnits = 6;

// At most this much memory goes to the calibration's worker plans (each holds the tapped
// model and, while the errors are measured, a copy of its Conv / Gemm layers).
constexpr size_t kCalibrationMemory = size_t{4} << 30;

// Workers for a calibration over `samples` samples: `threads` (<= 0: one per logical CPU),
// no more than samples, and no more than fit kCalibrationMemory at two copies of the
// weights each.
int calibration_workers(const Graph& g, int threads, size_t samples) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  size_t weights = 0;
  for (const auto& [name, t] : g.initializers) weights += t.nbytes();
  const size_t fit = std::max<size_t>(1, kCalibrationMemory / std::max<size_t>(1, 2 * weights));
  return static_cast<int>(
      std::max<size_t>(1, std::min({static_cast<size_t>(threads), samples, fit})));
}

// Calls fn(w) for w in [0, workers), each on its own thread (w = 0 on the caller's), and
// rethrows the first worker's error once all are done.
template <class Fn>
void on_workers(int workers, Fn&& fn) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
  auto body = [&](int w) {
    try {
      fn(w);
    } catch (...) {
      errors[static_cast<size_t>(w)] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back(body, w);
  body(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// The fp32 graph with tensors tapped as extra outputs, compiled once per worker on the
// worker's thread, each plan on one thread: a one-thread plan's algorithm choices, so the
// values, and every statistic taken from them, are the same whatever the worker count.
class TappedModel {
 public:
  TappedModel(const Graph& folded, const std::vector<std::string>& taps, int workers)
      : graph_(folded),
        first_tap_(folded.outputs.size()),
        plans_(static_cast<size_t>(workers)),
        outputs_(plans_.size()) {
    for (size_t i = 0; i < taps.size(); ++i) {
      tap_of_.emplace(taps[i], first_tap_ + i);
      graph_.outputs.push_back(taps[i]);
    }
  }
  int workers() const { return static_cast<int>(plans_.size()); }
  // Reports each run's samples to `progress` (may be null or empty) as units of `total`.
  void report_to(const CalibrationProgress* progress, int64_t total) {
    progress_ = progress && *progress ? progress : nullptr;
    total_ = total;
  }
  // The output index of a tapped tensor.
  size_t tap(const std::string& name) const { return tap_of_.at(name); }

  // Runs every worker w on its thread: w's plan (compiled on first use) on samples w, w + W,
  // ... below n, then fn(w, s, outputs) for each; each sample counts `units` of progress,
  // reported from the calling thread (worker 0's) and once more at the end.
  template <class Fn>
  void run(const std::vector<std::vector<Tensor>>& samples, size_t n, Fn&& fn, int64_t units = 1) {
    on_workers(workers(), [&](int w) {
      std::optional<Plan>& plan = plans_[static_cast<size_t>(w)];
      std::vector<Tensor>& out = outputs_[static_cast<size_t>(w)];
      if (!plan) {
        // One thread: calibration's values must not depend on the worker count, and spinning
        // workers cost more than they save when the machine is shared.
        plan.emplace(Graph(graph_), PlanOptions{});
        out = plan->make_outputs();
      }
      for (size_t s = static_cast<size_t>(w); s < n; s += plans_.size()) {
        plan->run_into(samples[s], out);
        fn(w, s, static_cast<const std::vector<Tensor>&>(out));
        const int64_t done = done_ += units;
        if (w == 0 && progress_) (*progress_)(done, total_);
      }
    });
    if (progress_) (*progress_)(done_, total_);
  }

 private:
  Graph graph_;
  size_t first_tap_;
  std::unordered_map<std::string, size_t> tap_of_;
  std::vector<std::optional<Plan>> plans_;
  std::vector<std::vector<Tensor>> outputs_;
  const CalibrationProgress* progress_ = nullptr;
  int64_t total_ = 0;
  std::atomic<int64_t> done_{0};
};

// Folds the finite values of d[0, n) into [lo, hi] (NaN and infinities skipped).
void add_finite_range(const float* d, int64_t n, float& lo, float& hi) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  float l = lo, h = hi;
  for (int64_t j = 0; j < n; ++j) {
    const float v = d[j];
    l = v < l && v > -inf ? v : l;
    h = v > h && v < inf ? v : h;
  }
  lo = l, hi = h;
}

// Adds the finite values of d[0, n) to a histogram of |x| with bins of width 1 / inv, the
// last bin open-ended, and counts the exact zeros.
void add_to_histogram(const float* d, int64_t n, double inv, uint64_t* counts, uint64_t& zeros) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  uint64_t z = 0;
  for (int64_t j = 0; j < n; ++j) {
    const float a = std::abs(d[j]);
    if (!(a < inf)) continue;  // NaN, infinities
    z += a == 0.f;
    const int b = std::min(kCalibrationBins - 1, static_cast<int>(a * inv));
    ++counts[b];
  }
  zeros += z;
}

// x -> dequantize(quantize(x)) as the engine's QuantizeLinear / DequantizeLinear compute it
// (round half to even, saturate; the ISA's vector kernels), in chunks through a byte buffer.
void fake_quantize(const float* x, float* y, int64_t n, const QuantParams& q) {
  constexpr int64_t kChunk = 4096;
  alignas(64) uint8_t bytes[kChunk];
  const Isa isa = active_isa();
  for (int64_t i = 0; i < n; i += kChunk) {
    const size_t m = static_cast<size_t>(std::min(kChunk, n - i));
    quantize_8bit(q.type, q.scale, q.zero_point, isa, m, x + i, bytes, ThreadPool::serial());
    dequantize_8bit(q.type, q.scale, q.zero_point, isa, m, bytes, y + i, ThreadPool::serial());
  }
}

// The sum of squares of x[0, n), and of (fake_quantize(x) - x) under q.
double sum_squares(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}
double squared_difference(const float* a, const float* b, int64_t n) {
  double e = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(b[i]) - a[i];
    e += d * d;
  }
  return e;
}

// The range, and with `histograms` the histogram of |x| (bins up to the largest |x|), of
// every tapped tensor `taps[i]` over the samples.
std::vector<TensorStats> tensor_stats(TappedModel& model, const std::vector<std::string>& taps,
                                      const std::vector<std::vector<Tensor>>& samples,
                                      bool histograms) {
  const size_t workers = static_cast<size_t>(model.workers());
  std::vector<size_t> index;
  for (const std::string& t : taps) index.push_back(model.tap(t));
  // Per worker, merged after: min / max and integer counts merge exactly in any order.
  std::vector<std::vector<TensorStats>> part(workers, std::vector<TensorStats>(taps.size()));
  model.run(samples, samples.size(), [&](int w, size_t, const std::vector<Tensor>& out) {
    for (size_t i = 0; i < taps.size(); ++i) {
      const Tensor& t = out[index[i]];
      TensorStats& s = part[static_cast<size_t>(w)][i];
      add_finite_range(t.data<float>(), t.numel(), s.min, s.max);
    }
  });
  std::vector<TensorStats> stats(taps.size());
  for (const auto& p : part)
    for (size_t i = 0; i < taps.size(); ++i) {
      stats[i].min = std::min(stats[i].min, p[i].min);
      stats[i].max = std::max(stats[i].max, p[i].max);
    }
  if (!histograms) return stats;
  for (TensorStats& s : stats) {
    const double a = std::max(std::abs(s.min), std::abs(s.max));
    s.bin_width = a > 0 ? a / kCalibrationBins : 1.0;
  }
  std::vector<std::vector<uint64_t>> counts(
      workers, std::vector<uint64_t>(taps.size() * kCalibrationBins, 0));
  std::vector<std::vector<uint64_t>> zeros(workers, std::vector<uint64_t>(taps.size(), 0));
  model.run(samples, samples.size(), [&](int w, size_t, const std::vector<Tensor>& out) {
    const size_t wi = static_cast<size_t>(w);
    for (size_t i = 0; i < taps.size(); ++i) {
      const Tensor& t = out[index[i]];
      add_to_histogram(t.data<float>(), t.numel(), 1.0 / stats[i].bin_width,
                       counts[wi].data() + i * kCalibrationBins, zeros[wi][i]);
    }
  });
  for (size_t i = 0; i < taps.size(); ++i) {
    TensorStats& s = stats[i];
    s.hist.assign(kCalibrationBins, 0.0);
    uint64_t z = 0;
    for (size_t w = 0; w < workers; ++w) {
      for (int b = 0; b < kCalibrationBins; ++b)
        s.hist[static_cast<size_t>(b)] +=
            static_cast<double>(counts[w][i * kCalibrationBins + static_cast<size_t>(b)]);
      z += zeros[w][i];
    }
    s.zeros = static_cast<double>(z);
  }
  return stats;
}

void range_errors(TappedModel& model, const Graph& folded, const QuantTargets& targets,
                  const std::vector<std::vector<Tensor>>& samples,
                  std::vector<std::vector<RangeCandidate>>& candidates, DType activations) {
  const std::vector<std::string> calibrated = targets.calibrated();
  DLAS_CHECK(candidates.size() == calibrated.size(), ErrorKind::kInternal, "range candidates for ",
             candidates.size(), " tensors, expected ", calibrated.size());
  if (calibrated.empty() || samples.empty()) return;
  std::unordered_map<std::string, size_t> index;  // every quantized tensor -> its calibrated one
  for (size_t i = 0; i < calibrated.size(); ++i) index[calibrated[i]] = i;
  for (const std::string& t : targets.tensors) {
    std::string src = t;
    while (targets.shares.count(src)) src = targets.shares.at(src);
    index[t] = index.at(src);
  }
  const size_t k_count = candidates[0].size();
  std::vector<std::vector<QuantParams>> params(calibrated.size());
  for (size_t i = 0; i < calibrated.size(); ++i) {
    DLAS_CHECK(candidates[i].size() == k_count, ErrorKind::kInternal, "uneven candidates");
    for (const RangeCandidate& c : candidates[i])
      params[i].push_back(quant_params_for_range(c.lo, c.hi, activations));
  }

  // The layers graph: a copy of every Conv / Gemm / MatMul reading a quantized tensor (with
  // constant weights: a layer quantize_int8 quantizes), its input a
  // graph input, its f32 weights as they are. Run once on the f32 values and once per
  // candidate on their fake-quantized values, it gives each tensor's output error.
  Graph layers;
  layers.name = "calibration_layers";
  std::vector<std::string> layer_inputs;  // quantized tensors read by some layer
  std::vector<size_t> output_tensor;      // layers.outputs[j] -> calibrated index
  std::set<std::string> have_input;
  for (const Node& n : folded.nodes) {
    if ((n.op != "Conv" && n.op != "Gemm" && n.op != "MatMul") || n.inputs.empty() ||
        !index.count(n.inputs[0]))
      continue;
    bool constant_rest = true;
    for (size_t i = 1; i < n.inputs.size(); ++i)
      constant_rest &= n.inputs[i].empty() || folded.constant(n.inputs[i]) != nullptr;
    if (!constant_rest || n.outputs.size() != 1) continue;
    if (have_input.insert(n.inputs[0]).second) {
      layers.inputs.push_back(folded.value(n.inputs[0]));
      layer_inputs.push_back(n.inputs[0]);
    }
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (!n.inputs[i].empty()) layers.initializers[n.inputs[i]] = *folded.constant(n.inputs[i]);
    // Its output renamed: a layer's output may itself be a quantized tensor another layer
    // reads, which is an input of this graph.
    Node copy = n;
    copy.outputs[0] = n.outputs[0] + "/calibration_output";
    layers.outputs.push_back(copy.outputs[0]);
    layers.nodes.push_back(std::move(copy));
    output_tensor.push_back(index.at(n.inputs[0]));
  }
  std::set<size_t> fed;
  for (size_t t : output_tensor) fed.insert(t);
  if (!layers.nodes.empty()) layers.infer();

  // Per sample, summed in sample order after: the same sums whatever the worker count.
  const size_t n_samples = std::min(samples.size(), kErrorSamples);
  std::vector<std::vector<double>> sample_ref(n_samples), sample_err(n_samples);
  struct Scratch {
    std::optional<Plan> layer_plan;
    std::vector<Tensor> ref_out, q_out, q_in, ref_in;
    std::vector<float> buf;
  };
  std::vector<Scratch> scratch(static_cast<size_t>(model.workers()));
  model.run(
      samples, n_samples,
      [&](int w, size_t s, const std::vector<Tensor>& model_out) {
        Scratch& sc = scratch[static_cast<size_t>(w)];
        std::vector<double>& ref = sample_ref[s];
        std::vector<double>& err = sample_err[s];  // [i * k_count + k]
        ref.assign(calibrated.size(), 0.0);
        err.assign(calibrated.size() * k_count, 0.0);
        // Tensors that feed no layer: the error of the tensor itself.
        for (size_t i = 0; i < calibrated.size(); ++i) {
          if (fed.count(i)) continue;
          const Tensor& x = model_out[model.tap(calibrated[i])];
          const float* xd = x.data<float>();
          sc.buf.resize(static_cast<size_t>(x.numel()));
          ref[i] += sum_squares(xd, x.numel());
          for (size_t k = 0; k < k_count; ++k) {
            fake_quantize(xd, sc.buf.data(), x.numel(), params[i][k]);
            err[i * k_count + k] += squared_difference(xd, sc.buf.data(), x.numel());
          }
        }
        if (layers.nodes.empty()) return;
        if (!sc.layer_plan) {
          sc.layer_plan.emplace(Graph(layers), PlanOptions{});  // one thread, as the model
          sc.ref_out = sc.layer_plan->make_outputs();
          sc.q_out = sc.layer_plan->make_outputs();
        }
        sc.ref_in.clear();
        for (const std::string& v : layer_inputs) sc.ref_in.push_back(model_out[model.tap(v)]);
        sc.layer_plan->run_into(sc.ref_in, sc.ref_out);
        for (size_t j = 0; j < sc.ref_out.size(); ++j)
          ref[output_tensor[j]] += sum_squares(sc.ref_out[j].data<float>(), sc.ref_out[j].numel());
        if (sc.q_in.empty())
          for (const Tensor& t : sc.ref_in) sc.q_in.emplace_back(t.dtype(), t.shape());
        for (size_t k = 0; k < k_count; ++k) {
          for (size_t v = 0; v < layer_inputs.size(); ++v)
            fake_quantize(sc.ref_in[v].data<float>(), sc.q_in[v].data<float>(),
                          sc.ref_in[v].numel(), params[index.at(layer_inputs[v])][k]);
          sc.layer_plan->run_into(sc.q_in, sc.q_out);
          for (size_t j = 0; j < sc.q_out.size(); ++j)
            err[output_tensor[j] * k_count + k] += squared_difference(
                sc.ref_out[j].data<float>(), sc.q_out[j].data<float>(), sc.q_out[j].numel());
        }
      },
      kErrorSampleUnits);
  std::vector<double> ref(calibrated.size(), 0.0), err(calibrated.size() * k_count, 0.0);
  for (size_t s = 0; s < n_samples; ++s) {
    for (size_t i = 0; i < ref.size(); ++i) ref[i] += sample_ref[s][i];
    for (size_t i = 0; i < err.size(); ++i) err[i] += sample_err[s][i];
  }
  for (size_t i = 0; i < calibrated.size(); ++i)
    for (size_t k = 0; k < k_count; ++k) {
      const double e = err[i * k_count + k];
      candidates[i][k].error = ref[i] > 0 ? std::sqrt(e / ref[i]) : (e > 0 ? 1.0 : 0.0);
    }
}

}  // namespace

std::vector<TensorStats> calibrate(const Graph& folded, const std::vector<std::string>& taps,
                                   const std::vector<std::vector<Tensor>>& samples, bool histograms,
                                   int threads) {
  TappedModel model(folded, taps, calibration_workers(folded, threads, samples.size()));
  return tensor_stats(model, taps, samples, histograms);
}

void measure_range_errors(const Graph& folded, const QuantTargets& targets,
                          const std::vector<std::vector<Tensor>>& samples,
                          std::vector<std::vector<RangeCandidate>>& candidates, DType activations,
                          int threads) {
  TappedModel model(folded, targets.tensors,
                    calibration_workers(folded, threads, std::min(samples.size(), kErrorSamples)));
  range_errors(model, folded, targets, samples, candidates, activations);
}

QuantReport quantize(Graph& graph, const QuantSpec& spec, int threads,
                     const CalibrationProgress& progress) {
  // BatchNormalization folded into the convs (standard Conv nodes stay Conv: opt-level 2).
  optimize_graph(graph, 2);
  if (spec.type != QuantType::kInt8) return convert_half(graph, spec);
  const QuantTargets targets = quant_targets(graph);
  const std::vector<std::string> calibrated = targets.calibrated();
  std::vector<TensorStats> stats;
  std::vector<std::vector<RangeCandidate>> candidates;
  int samples = 0;
  if (spec.calibrator != Calibrator::kNone && !calibrated.empty()) {
    const auto inputs = calibration_inputs(graph, spec);
    samples = static_cast<int>(inputs.size());
    // One compiled model (per worker) for the statistics and the errors: every quantized
    // tensor tapped.
    TappedModel model(graph, targets.tensors, calibration_workers(graph, threads, inputs.size()));
    model.report_to(&progress, static_cast<int64_t>(2 * inputs.size()) +
                                   kErrorSampleUnits * static_cast<int64_t>(
                                                           std::min(inputs.size(), kErrorSamples)));
    stats = tensor_stats(model, calibrated, inputs, /*histograms=*/true);
    // Every data calibrator's range, each with its measured error: int8:auto picks by them,
    // and the report shows where another calibrator would have done better.
    candidates = range_candidates(graph, spec, targets, stats, model.workers());
    range_errors(model, graph, targets, inputs, candidates, spec.activations);
  }
  QuantReport r = quantize_int8(graph, spec, targets, stats, candidates);
  eliminate_dead_code(graph);  // the f32 weights the quantized ones replaced
  r.samples = samples;
  return r;
}

std::string apply_compress_spec(Graph& graph, const CompressSpec& spec, int threads,
                                const CalibrationProgress& progress) {
  if (spec.prune) prune(graph, *spec.prune);
  if (spec.quant) quantize(graph, *spec.quant, threads, progress);
  return spec.str();
}

OutputError measure_output_error(const Graph& fp32, const Graph& compressed, int samples,
                                 uint64_t seed, const PlanOptions& options) {
  DLAS_CHECK(samples >= 1, ErrorKind::kInvalidInput, "samples must be >= 1, got ", samples);
  DLAS_CHECK(!fp32.outputs.empty() && fp32.outputs.size() == compressed.outputs.size(),
             ErrorKind::kInvalidInput, "the models have different outputs");
  Plan a(fp32, options), b(compressed, options);
  OutputError e;
  e.samples = samples;
  double sum = 0;
  int64_t count = 0, agree = 0;
  for (int s = 0; s < samples; ++s) {
    std::vector<Tensor> in;
    for (size_t i = 0; i < fp32.inputs.size(); ++i) {
      const ValueInfo& v = fp32.inputs[i];
      std::mt19937_64 rng(seed + static_cast<uint64_t>(s) * 7919u + i);
      std::normal_distribution<float> normal(0.f, 1.f);
      Tensor t(DType::kF32, v.shape);
      for (int64_t j = 0; j < t.numel(); ++j) t.data<float>()[j] = normal(rng);
      in.push_back(v.dtype == DType::kF32 ? t : t.cast(v.dtype));
    }
    const std::vector<Tensor> ya = a.run(in), yb = b.run(in);
    const Tensor fa = ya[0].cast(DType::kF32), fb = yb[0].cast(DType::kF32);
    DLAS_CHECK(fa.shape() == fb.shape(), ErrorKind::kInvalidInput,
               "output shapes differ: ", fa.describe(), " vs ", fb.describe());
    const float* pa = fa.data<float>();
    const float* pb = fb.data<float>();
    for (int64_t j = 0; j < fa.numel(); ++j) {
      const double d = std::abs(static_cast<double>(pa[j]) - pb[j]);
      e.max_abs_err = std::max(e.max_abs_err, d);
      sum += d;
      ++count;
    }
    const int64_t rows = fa.rank() > 0 ? fa.dim(0) : 1;
    const int64_t per = rows > 0 ? fa.numel() / rows : 0;
    for (int64_t r = 0; r < rows && per > 0; ++r) {
      const float* ra = pa + r * per;
      const float* rb = pb + r * per;
      agree += std::max_element(ra, ra + per) - ra == std::max_element(rb, rb + per) - rb;
      ++e.images;
    }
  }
  e.mean_abs_err = count ? sum / static_cast<double>(count) : 0.0;
  e.top1_agreement = e.images ? static_cast<double>(agree) / static_cast<double>(e.images) : 0.0;
  return e;
}

}  // namespace dlas
