// Measuring CUDA convs: the GPU tuner (dlas/system/cuda_tune.h: layer extraction, the
// per-layer walk over the CUDA algorithms' knob spaces, records in and out) and the GPU
// calibration (dlas/system/cuda_profile.h: one shape per class, the winner per class), on
// one CUDA-event timing of a candidate.
#include "dlas/system/cuda_tune.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>

#include "dlas/algo/cuda_conv.h"
#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"
#include "dlas/model/zoo.h"
#include "dlas/system/cuda_executor.h"
#include "dlas/system/cuda_profile.h"
#include "dlas/system/measure.h"
#include "dlas/system/passes.h"
#include "system/backends/cuda/conv_node.h"

namespace dlas::tune {

using Clock = std::chrono::steady_clock;

// What the tuner and the calibration share (internal to this file).
namespace gpu_measure {

// One unique conv layer: its problem, its real weights (the first node's) and its nodes.
struct Layer {
  std::string key;
  cuda::ConvNode conv;
  std::vector<float> weights, bias;
  std::vector<std::string> nodes;
};

// A constant's values as f32 (16-bit ones widened exactly).
std::vector<float> widened_floats(const Tensor& t) {
  const Tensor f = t.dtype() == DType::kF32 ? t : t.cast(DType::kF32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.numel());
}

std::vector<Layer> extract_layers(const Graph& optimized) {
  std::vector<Layer> layers;
  std::map<std::string, size_t> index;
  for (const Node& n : optimized.nodes) {
    if (n.op != "Conv" && n.op != "FusedConv") continue;
    const std::optional<cuda::ConvNode> c = cuda::conv_node(optimized, n);
    if (!c) continue;
    const std::string key = c->layer_key();
    if (const auto it = index.find(key); it != index.end()) {
      layers[it->second].nodes.push_back(n.name);
      continue;
    }
    Layer l;
    l.key = key;
    l.conv = *c;
    l.weights = widened_floats(*optimized.constant(n.inputs[1]));
    if (c->has_bias) {
      const Tensor* b = optimized.constant(n.inputs[2]);
      if (b) l.bias = widened_floats(*b);
    }
    l.nodes.push_back(n.name);
    index[key] = layers.size();
    layers.push_back(std::move(l));
  }
  return layers;
}

std::string task_key_of(const Layer& l, const std::string& algo, const std::string& hardware) {
  return "cuda-conv2d|" + l.key + "|" + algo + "|" + cuda::storage_name(l.conv.shape.storage) +
         "|" + hardware;
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Random values of a layer's storage type on the device.
DeviceBuffer upload_random(size_t n, uint64_t seed, cuda::Storage storage, const char* what) {
  const std::vector<float> v = random_floats(n, seed);
  if (storage == cuda::Storage::kF32) return upload_floats(v.data(), v.size(), what);
  std::vector<uint16_t> bits(n);
  for (size_t i = 0; i < n; ++i)
    bits[i] = storage == cuda::Storage::kF16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
  DeviceBuffer b(n * sizeof(uint16_t), what);
  b.upload(bits.data(), n * sizeof(uint16_t));
  return b;
}

// A layer's device buffers (activations in its storage type), shared by its candidates.
struct LayerBuffers {
  DeviceBuffer x, y, residual, bias;
  explicit LayerBuffers(const Layer& l) {
    const cuda::ConvShape& s = l.conv.shape;
    x = upload_random(static_cast<size_t>(s.n * s.c * s.h * s.w), 1, s.storage, "tuning input");
    const size_t out = static_cast<size_t>(s.n * s.k * s.oh * s.ow);
    y = DeviceBuffer(out * cuda::storage_bytes(s.storage), "tuning output");
    if (l.conv.has_residual) residual = upload_random(out, 2, s.storage, "tuning residual");
    if (!l.bias.empty()) bias = upload_floats(l.bias.data(), l.bias.size(), "tuning bias");
  }
};

// A non-blocking stream, destroyed with its owner.
class OwnedStream {
 public:
  OwnedStream() {
    check_cuda(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "create stream");
  }
  ~OwnedStream() { cudaStreamDestroy(s_); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class EventPair {
 public:
  EventPair() {
    check_cuda(cudaEventCreate(&a_), "create event");
    check_cuda(cudaEventCreate(&b_), "create event");
  }
  ~EventPair() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  cudaEvent_t a() const { return a_; }
  cudaEvent_t b() const { return b_; }
  float ms() const {
    float v = 0;
    check_cuda(cudaEventElapsedTime(&v, a_, b_), "event time");
    return v;
  }

 private:
  cudaEvent_t a_ = nullptr, b_ = nullptr;
};

// Times one candidate: prepared on the layer's weights, warmed up, then `repeat` repeats of
// `number` back-to-back runs (number grown so that a repeat lasts about 0.2 ms), each
// repeat's mean per run; seconds.
MeasureResult measure_candidate(const Layer& l, const cuda::ConvAlgorithm& algo, const Knobs& knobs,
                                LayerBuffers& buf, cudaStream_t stream, int repeat) {
  MeasureResult r;
  const auto t0 = Clock::now();
  try {
    const std::unique_ptr<cuda::ConvKernel> k = algo.prepare(l.conv.shape, knobs, l.weights.data());
    DeviceBuffer ws(k->workspace_bytes(), "tuning workspace");
    cuda::Epilogue e;
    e.act = l.conv.act, e.p0 = l.conv.p0, e.p1 = l.conv.p1;
    e.bias = buf.bias.as<float>();
    e.residual = buf.residual.as<float>();
    const auto run = [&](int times) {
      for (int i = 0; i < times; ++i)
        k->run(buf.x.as<float>(), buf.y.as<float>(), ws.get(), e, stream);
    };
    EventPair ev;
    run(2);
    check_cuda(cudaEventRecord(ev.a(), stream), "record event");
    run(1);
    check_cuda(cudaEventRecord(ev.b(), stream), "record event");
    check_cuda(cudaStreamSynchronize(stream), "candidate run");
    const double once = std::max<double>(ev.ms(), 1e-4);
    const int number = static_cast<int>(std::clamp(std::ceil(0.2 / once), 1.0, 200.0));
    for (int i = 0; i < repeat; ++i) {
      check_cuda(cudaEventRecord(ev.a(), stream), "record event");
      run(number);
      check_cuda(cudaEventRecord(ev.b(), stream), "record event");
      check_cuda(cudaStreamSynchronize(stream), "candidate run");
      r.costs.push_back(ev.ms() / number * 1e-3);
    }
  } catch (const Error& err) {
    r.costs.clear();
    r.error = err.what();
    (void)cudaGetLastError();
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

}  // namespace gpu_measure

using namespace gpu_measure;

namespace {

// The whole model's kernel time (its CUDA graph), median of 50 runs, ms: with `choices`, or
// untuned (no choices) on the hand-written rule, as the tuner's first step measured it.
double model_kernel_ms(const Graph& graph, const CudaTuneOptions& o, const LayerChoices& choices) {
  CudaPlanOptions po;
  po.device = o.device;
  po.opt_level = o.opt_level;
  po.layers = choices;
  po.profile = "none";
  CudaExecutor e(graph, po);
  LatencyOptions lo;
  lo.warmup = 3;
  lo.repeat = 50;
  return measure_latency(e, random_inputs(e.graph(), 0), lo).device_median_ms;
}

}  // namespace

std::string cuda_hardware_id(int device) {
  const auto& gpus = list_gpus();
  DLAS_CHECK(device >= 0 && device < static_cast<int>(gpus.size()), ErrorKind::kUnsupported,
             "cuda:", device, ": ", gpus.empty() ? gpu_unavailable_reason() : "no such device");
  const GpuInfo& g = gpus[device];
  return g.name + "|sm_" + std::to_string(g.cc_major) + std::to_string(g.cc_minor);
}

CudaTuneReport tune_cuda(const Graph& graph, const CudaTuneOptions& o) {
  const std::string hardware = cuda_hardware_id(o.device);
  check_cuda(cudaSetDevice(o.device), "select device");
  Graph optimized = graph;
  optimize_graph(optimized, o.opt_level);
  const std::vector<Layer> layers = extract_layers(optimized);
  DLAS_CHECK(!layers.empty(), ErrorKind::kUnsupported,
             "no conv layer with constant weights to tune on the GPU");
  CudaTuneReport rep;
  rep.layers = static_cast<int>(layers.size());
  for (const Layer& l : layers) rep.convs += static_cast<int>(l.nodes.size());

  const tune::gpu_measure::OwnedStream owned;
  const cudaStream_t stream = owned.get();

  const auto t0 = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  const auto out_of_budget = [&] {
    return (o.budget_seconds > 0 && elapsed() >= o.budget_seconds) ||
           (o.budget_trials > 0 && rep.trials >= o.budget_trials);
  };
  // Each layer's best so far (seconds per run), for the curve; +inf until its first success.
  std::vector<double> best(layers.size(), std::numeric_limits<double>::infinity());
  std::vector<std::pair<std::string, Knobs>> best_choice(layers.size());
  const auto curve_point = [&] {
    double sum = 0;
    for (size_t i = 0; i < layers.size(); ++i) {
      if (!std::isfinite(best[i])) return;  // not every layer measured yet
      sum += best[i] * 1e3 * static_cast<double>(layers[i].nodes.size());
    }
    rep.curve.emplace_back(elapsed(), sum);
  };
  std::mt19937_64 rng(o.seed);

  // Every layer's buffers, and one candidate's measurement as a record.
  std::vector<std::unique_ptr<LayerBuffers>> buffers;
  for (const Layer& l : layers) buffers.push_back(std::make_unique<LayerBuffers>(l));
  const auto try_candidate = [&](size_t li, const cuda::ConvAlgorithm& a, const Knobs& k) {
    const Layer& l = layers[li];
    MeasureResult m = measure_candidate(l, a, k, *buffers[li], stream, o.repeat);
    Record r;
    r.task = task_key_of(l, a.name, hardware);
    r.algo = a.name;
    r.knobs = k;
    r.costs = m.costs;
    r.error = m.error;
    r.timestamp = now_iso8601();
    r.version = dlas_version();
    r.hardware = hardware;
    ++rep.trials;
    if (!r.ok()) ++rep.failures;
    if (o.on_record) o.on_record(r);
    rep.records.push_back(r);
    const double c = r.cost();
    if (c < best[li]) {
      best[li] = c;
      best_choice[li] = {a.name, k};
    }
    curve_point();
    return c;
  };
  // 1. The untuned plan: each layer's auto-rule algorithm at its default point (the curve's
  // start).
  std::vector<const cuda::ConvAlgorithm*> untuned(layers.size());
  std::vector<double> untuned_cost(layers.size());
  for (size_t li = 0; li < layers.size(); ++li) {
    untuned[li] = &cuda::auto_conv_algorithm(layers[li].conv.shape);
    untuned_cost[li] =
        try_candidate(li, *untuned[li], untuned[li]->default_knobs(layers[li].conv.shape));
  }
  for (size_t li = 0; li < layers.size(); ++li) {
    const Layer& l = layers[li];
    // 2. Every other algorithm's default point.
    std::vector<std::pair<double, const cuda::ConvAlgorithm*>> defaults = {
        {untuned_cost[li], untuned[li]}};
    for (const cuda::ConvAlgorithm* a : cuda::conv_algorithms()) {
      if (a == untuned[li] || !a->supports(l.conv.shape)) continue;
      if (out_of_budget()) break;
      defaults.emplace_back(try_candidate(li, *a, a->default_knobs(l.conv.shape)), a);
    }
    std::sort(defaults.begin(), defaults.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    // 3. The warm algorithms' knob spaces, best default first.
    for (const auto& [cost, a] : defaults) {
      if (!std::isfinite(cost) || cost > o.cold_factor * defaults.front().first) {
        ++rep.cold_algorithms;
        continue;
      }
      const KnobSpace space = a->knob_space(l.conv.shape);
      const Knobs def = a->default_knobs(l.conv.shape);
      std::vector<int64_t> order(static_cast<size_t>(std::min<int64_t>(space.size(), 4096)));
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
      std::shuffle(order.begin(), order.end(), rng);
      double algo_best = cost;
      int stale = 0;
      for (int64_t i : order) {
        if (out_of_budget() || stale >= o.patience) break;
        const Knobs k = space.point(i);
        if (k == def) continue;
        const double c = try_candidate(li, *a, k);
        if (c < algo_best * 0.99) {
          algo_best = c;
          stale = 0;
        } else {
          ++stale;
        }
      }
    }
    for (const std::string& node : l.nodes)
      if (std::isfinite(best[li]))
        rep.choices[node] = LayerChoice{best_choice[li].first, best_choice[li].second, ""};
    if (std::isfinite(best[li])) ++rep.winners[best_choice[li].first];
    if (o.on_layer) o.on_layer(static_cast<int>(li + 1), rep.layers, elapsed());
  }
  rep.seconds = elapsed();
  if (!rep.curve.empty()) {
    const double final_ms = rep.curve.back().second;
    for (const auto& [sec, ms] : rep.curve)
      if (ms <= final_ms / 0.95) {
        rep.seconds_to_95 = sec;
        break;
      }
  }
  rep.untuned_ms = model_kernel_ms(graph, o, {});
  rep.tuned_ms = model_kernel_ms(graph, o, rep.choices);
  return rep;
}

LayerChoices apply_cuda_records(const Graph& graph, int opt_level, int device,
                                const std::vector<Record>& records, int* matched, int* convs) {
  const std::string hardware = cuda_hardware_id(device);
  // The fastest ok record of this GPU model per layer key.
  std::map<std::string, const Record*> best;
  for (const Record& r : records) {
    if (!r.ok() || r.hardware != hardware || r.task.rfind("cuda-conv2d|", 0) != 0) continue;
    const size_t a = r.task.find('|'), b = r.task.find('|', a + 1);
    const std::string layer = r.task.substr(a + 1, b - a - 1);
    const auto it = best.find(layer);
    if (it == best.end() || r.cost() < it->second->cost()) best[layer] = &r;
  }
  Graph optimized = graph;
  optimize_graph(optimized, opt_level);
  LayerChoices choices;
  int m = 0, c = 0;
  for (const Node& n : optimized.nodes) {
    if (n.op != "Conv" && n.op != "FusedConv") continue;
    const std::optional<cuda::ConvNode> cn = cuda::conv_node(optimized, n);
    if (!cn) continue;
    ++c;
    const auto it = best.find(cn->layer_key());
    if (it == best.end()) continue;
    const cuda::ConvAlgorithm* a = cuda::find_conv_algorithm(it->second->algo);
    if (!a || !a->supports(cn->shape)) continue;
    try {  // a record of an older knob space (another dlas version) does not apply
      a->knob_space(cn->shape).validate(it->second->knobs, "record");
    } catch (const Error&) {
      continue;
    }
    choices[n.name] = LayerChoice{it->second->algo, it->second->knobs, ""};
    ++m;
  }
  if (matched) *matched = m;
  if (convs) *convs = c;
  return choices;
}

}  // namespace dlas::tune

namespace dlas {

CudaCalibrateResult calibrate_cuda(int device, int points,
                                   std::function<void(int, int, const std::string&)> progress) {
  using tune::Clock;
  using tune::gpu_measure::Layer;
  const std::string gpu = tune::cuda_hardware_id(device);
  check_cuda(cudaSetDevice(device), "select device");
  const auto t0 = Clock::now();
  // One shape per class: the zoo's conv layers at batch 1, then pruned copies of the dense
  // 1x1 and 3x3 ones (90% zeros), then fp16 copies of the unpruned classes.
  std::map<std::string, Layer> by_class;
  std::vector<std::string> order;
  const auto add = [&](Layer l) {
    const std::string cls = cuda_shape_class(l.conv.shape);
    if (by_class.count(cls)) return;
    order.push_back(cls);
    by_class.emplace(cls, std::move(l));
  };
  std::vector<Layer> dense;
  for (const ZooEntry& z : zoo_models()) {
    Graph g = build_zoo_model(z.name);
    optimize_graph(g, 3);
    for (Layer& l : tune::gpu_measure::extract_layers(g)) {
      if (!l.conv.shape.depthwise() && l.conv.shape.groups == 1 &&
          (l.conv.shape.kh == 1 || l.conv.shape.kh == 3))
        dense.push_back(l);
      add(std::move(l));
    }
  }
  for (Layer l : dense) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (float& w : l.weights)
      if (u(rng) < 0.9f) w = 0.f;
    l.conv.shape.density = 0.1;
    add(std::move(l));
  }
  // 16-bit copies of the dense classes (fp16 and bf16 share them: the same kernels).
  const std::vector<std::string> f32_classes = order;
  for (const std::string& cls : f32_classes) {
    Layer l = by_class.at(cls);
    if (l.conv.shape.storage != cuda::Storage::kF32 || l.conv.shape.density < 0.95) continue;
    l.conv.shape.storage = cuda::Storage::kF16;
    add(std::move(l));
  }
  const tune::gpu_measure::OwnedStream owned;
  const cudaStream_t stream = owned.get();
  CudaCalibrateResult res;
  res.profile.gpu = gpu;
  res.profile.created = tune::now_iso8601();
  res.profile.version = tune::dlas_version();
  std::mt19937_64 rng(0);
  int done = 0;
  for (const std::string& cls : order) {
    const Layer& l = by_class.at(cls);
    tune::gpu_measure::LayerBuffers buf(l);
    CudaCalibrateRow row;
    row.shape_class = cls;
    row.shape = l.conv.shape.str();
    double best = std::numeric_limits<double>::infinity();
    const cuda::ConvAlgorithm& rule = cuda::auto_conv_algorithm(l.conv.shape);
    for (const cuda::ConvAlgorithm* a : cuda::conv_algorithms()) {
      if (!a->supports(l.conv.shape)) continue;
      const KnobSpace space = a->knob_space(l.conv.shape);
      std::vector<Knobs> cands = {a->default_knobs(l.conv.shape)};
      for (int i = 0; i < points && i < space.size() - 1; ++i) {
        const Knobs k =
            space.point(static_cast<int64_t>(rng() % static_cast<uint64_t>(space.size())));
        if (std::find(cands.begin(), cands.end(), k) == cands.end()) cands.push_back(k);
      }
      for (size_t i = 0; i < cands.size(); ++i) {
        const tune::MeasureResult m =
            tune::gpu_measure::measure_candidate(l, *a, cands[i], buf, stream, 3);
        ++row.candidates;
        if (!m.ok()) continue;
        const double us = m.cost() * 1e6;
        if (a == &rule && i == 0) row.best.rule_us = us;
        if (us < best) {
          best = us;
          row.best.algo = a->name;
          row.best.knobs = cands[i];
          row.best.us = us;
        }
      }
    }
    row.best.rule = rule.name;
    row.best.shape = row.shape;
    if (std::isfinite(best)) res.profile.classes[cls] = row.best;
    res.rows.push_back(row);
    if (progress) progress(++done, static_cast<int>(order.size()), cls);
  }
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace dlas
