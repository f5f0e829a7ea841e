// Compression that runs the engine (include/dlas/system/compress.h): calibration inputs,
// the calibration run that collects each tapped tensor's statistics, quantize(),
// apply_compress_spec() and measure_output_error().
#include "dlas/system/compress.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>

#include "dlas/core/error.h"
#include "dlas/core/npy.h"
#include "dlas/data/dataset.h"
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

std::vector<TensorStats> calibrate(const Graph& folded, const std::vector<std::string>& taps,
                                   const std::vector<std::vector<Tensor>>& samples,
                                   bool histograms) {
  Graph g = folded;
  const size_t first_tap = g.outputs.size();
  for (const std::string& t : taps) g.outputs.push_back(t);
  PlanOptions o;  // one thread: calibration is short, and spinning workers cost more when
                  // the machine is shared
  Plan plan(std::move(g), o);
  std::vector<Tensor> out = plan.make_outputs();
  std::vector<TensorStats> stats(taps.size());
  for (const auto& in : samples) {
    plan.run_into(in, out);
    for (size_t i = 0; i < taps.size(); ++i) {
      const Tensor& t = out[first_tap + i];
      const float* d = t.data<float>();
      for (int64_t j = 0; j < t.numel(); ++j)
        if (std::isfinite(d[j]))
          stats[i].min = std::min(stats[i].min, d[j]), stats[i].max = std::max(stats[i].max, d[j]);
    }
  }
  if (!histograms) return stats;
  for (TensorStats& s : stats) {
    const double a = std::max(std::abs(s.min), std::abs(s.max));
    s.bin_width = a > 0 ? a / kCalibrationBins : 1.0;
    s.hist.assign(kCalibrationBins, 0.0);
  }
  for (const auto& in : samples) {
    plan.run_into(in, out);
    for (size_t i = 0; i < taps.size(); ++i) {
      const Tensor& t = out[first_tap + i];
      const float* d = t.data<float>();
      TensorStats& s = stats[i];
      const double inv = 1.0 / s.bin_width;
      for (int64_t j = 0; j < t.numel(); ++j) {
        if (!std::isfinite(d[j])) continue;
        s.zeros += d[j] == 0.f;
        const int b = std::min(kCalibrationBins - 1, static_cast<int>(std::abs(d[j]) * inv));
        s.hist[static_cast<size_t>(b)] += 1;
      }
    }
  }
  return stats;
}

QuantReport quantize(Graph& graph, const QuantSpec& spec) {
  // BatchNormalization folded into the convs (standard Conv nodes stay Conv: opt-level 2).
  optimize_graph(graph, 2);
  if (spec.type != QuantType::kInt8) return convert_half(graph, spec);
  const QuantTargets targets = quant_targets(graph);
  const std::vector<std::string> calibrated = targets.calibrated();
  std::vector<TensorStats> stats;
  int samples = 0;
  if (spec.calibrator != Calibrator::kNone && !calibrated.empty()) {
    const auto inputs = calibration_inputs(graph, spec);
    samples = static_cast<int>(inputs.size());
    stats = calibrate(graph, calibrated, inputs, spec.calibrator != Calibrator::kMinMax);
  }
  QuantReport r = quantize_int8(graph, spec, targets, stats);
  r.samples = samples;
  return r;
}

std::string apply_compress_spec(Graph& graph, const CompressSpec& spec) {
  if (spec.prune) prune(graph, *spec.prune);
  if (spec.quant) quantize(graph, *spec.quant);
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
