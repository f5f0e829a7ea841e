// Compression that runs the engine (include/dlas/system/compress.h): calibration inputs,
// the calibration run that collects each tapped tensor's statistics, quantize(),
// apply_compress_spec() and measure_output_error().
#include "dlas/system/compress.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>

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

namespace {

// x -> dequantize(quantize(x)) as the QDQ pair computes it (round half to even, saturate).
void fake_quantize(const float* x, float* y, int64_t n, const QuantParams& q) {
  const float inv = 1.f / q.scale;
  const float qmin = q.type == DType::kU8 ? 0.f : -128.f;
  const float qmax = q.type == DType::kU8 ? 255.f : 127.f;
  const float zp = static_cast<float>(q.zero_point);
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::clamp(std::nearbyint(x[i] * inv) + zp, qmin, qmax);
    y[i] = (v - zp) * q.scale;
  }
}

}  // namespace

void measure_range_errors(const Graph& folded, const QuantTargets& targets,
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

  // The layers graph: a copy of every Conv / Gemm reading a quantized tensor, its input a
  // graph input, its f32 weights as they are. Run once on the f32 values and once per
  // candidate on their fake-quantized values, it gives each tensor's output error.
  Graph layers;
  layers.name = "calibration_layers";
  std::vector<std::string> layer_inputs;   // quantized tensors read by some layer
  std::vector<size_t> output_tensor;       // layers.outputs[j] -> calibrated index
  std::set<std::string> have_input;
  for (const Node& n : folded.nodes) {
    if ((n.op != "Conv" && n.op != "Gemm") || n.inputs.empty() || !index.count(n.inputs[0]))
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

  // The full model with every quantized tensor tapped.
  Graph tapped = folded;
  const size_t first_tap = tapped.outputs.size();
  for (const std::string& t : targets.tensors) tapped.outputs.push_back(t);
  PlanOptions o;  // one thread, as calibrate()
  Plan model(std::move(tapped), o);
  std::vector<Tensor> model_out = model.make_outputs();
  std::optional<Plan> layer_plan;
  std::vector<Tensor> ref_out, q_out, q_in;
  if (!layers.nodes.empty()) {
    layers.infer();
    layer_plan.emplace(std::move(layers), o);
    ref_out = layer_plan->make_outputs();
    q_out = layer_plan->make_outputs();
  }
  std::unordered_map<std::string, size_t> tap_of;
  for (size_t i = 0; i < targets.tensors.size(); ++i) tap_of[targets.tensors[i]] = first_tap + i;

  std::vector<std::vector<double>> err(calibrated.size(), std::vector<double>(k_count, 0.0));
  std::vector<double> ref(calibrated.size(), 0.0);
  const size_t n_samples = std::min(samples.size(), kErrorSamples);
  std::vector<float> buf;
  for (size_t s = 0; s < n_samples; ++s) {
    model.run_into(samples[s], model_out);
    // Tensors that feed no layer: the error of the tensor itself.
    for (size_t i = 0; i < calibrated.size(); ++i) {
      if (fed.count(i)) continue;
      const Tensor& x = model_out[tap_of.at(calibrated[i])];
      const float* xd = x.data<float>();
      buf.resize(static_cast<size_t>(x.numel()));
      for (int64_t j = 0; j < x.numel(); ++j) ref[i] += static_cast<double>(xd[j]) * xd[j];
      for (size_t k = 0; k < k_count; ++k) {
        fake_quantize(xd, buf.data(), x.numel(), params[i][k]);
        double e = 0;
        for (int64_t j = 0; j < x.numel(); ++j) {
          const double d = static_cast<double>(buf[j]) - xd[j];
          e += d * d;
        }
        err[i][k] += e;
      }
    }
    if (!layer_plan) continue;
    std::vector<Tensor> ref_in;
    for (const std::string& v : layer_inputs) ref_in.push_back(model_out[tap_of.at(v)]);
    layer_plan->run_into(ref_in, ref_out);
    for (size_t j = 0; j < ref_out.size(); ++j) {
      const float* y = ref_out[j].data<float>();
      double r = 0;
      for (int64_t e = 0; e < ref_out[j].numel(); ++e) r += static_cast<double>(y[e]) * y[e];
      ref[output_tensor[j]] += r;
    }
    if (q_in.empty())
      for (const Tensor& t : ref_in) q_in.emplace_back(t.dtype(), t.shape());
    for (size_t k = 0; k < k_count; ++k) {
      for (size_t v = 0; v < layer_inputs.size(); ++v)
        fake_quantize(ref_in[v].data<float>(), q_in[v].data<float>(), ref_in[v].numel(),
                      params[index.at(layer_inputs[v])][k]);
      layer_plan->run_into(q_in, q_out);
      for (size_t j = 0; j < q_out.size(); ++j) {
        const float* a = ref_out[j].data<float>();
        const float* b = q_out[j].data<float>();
        double e = 0;
        for (int64_t m = 0; m < q_out[j].numel(); ++m) {
          const double d = static_cast<double>(b[m]) - a[m];
          e += d * d;
        }
        err[output_tensor[j]][k] += e;
      }
    }
  }
  for (size_t i = 0; i < calibrated.size(); ++i)
    for (size_t k = 0; k < k_count; ++k)
      candidates[i][k].error = ref[i] > 0 ? std::sqrt(err[i][k] / ref[i]) : (err[i][k] > 0 ? 1.0 : 0.0);
}

QuantReport quantize(Graph& graph, const QuantSpec& spec) {
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
    stats = calibrate(graph, calibrated, inputs, /*histograms=*/true);
    // Every data calibrator's range, each with its measured error: int8:auto picks by them,
    // and the report shows where another calibrator would have done better.
    candidates = range_candidates(graph, spec, targets, stats);
    measure_range_errors(graph, targets, inputs, candidates, spec.activations);
  }
  QuantReport r = quantize_int8(graph, spec, targets, stats, candidates);
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
