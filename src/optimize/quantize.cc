// Post-training quantization as graph rewrites (include/dlas/optimize/quantize.h): the
// calibrators, tensor selection, the int8 QDQ rewrite from calibration statistics, and the
// fp16 / bf16 conversion. The calibration run itself is in the system layer
// (src/system/compress.cc).
#include "dlas/optimize/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <thread>
#include <unordered_map>

#include "dlas/core/error.h"

namespace dlas {

namespace {

constexpr int kEntropyLevels = 128;        // TensorRT's: the positive half of int8
constexpr float kUncalibratedRange = 8.f;  // TVM's global_scale default

// The entropy rule's view of a histogram of |x|: every spike (a bin holding more than
// kSpikeRatio times the median of the kSpikeWindow bins on each side, and at least
// kSpikeShare of the mass) replaced by that median.
constexpr double kSpikeRatio = 8;
constexpr int kSpikeWindow = 16;
constexpr double kSpikeShare = 1e-3;

std::vector<double> entropy_histogram(const std::vector<double>& hist, double total) {
  const int bins = static_cast<int>(hist.size());
  std::vector<double> h = hist, around;
  for (int b = 0; b < bins; ++b) {
    if (hist[b] < kSpikeShare * total) continue;
    around.clear();
    for (int j = std::max(0, b - kSpikeWindow); j <= std::min(bins - 1, b + kSpikeWindow); ++j)
      if (j != b) around.push_back(hist[j]);
    if (around.empty()) continue;
    std::nth_element(around.begin(), around.begin() + around.size() / 2, around.end());
    const double median = around[around.size() / 2];
    if (hist[b] > kSpikeRatio * std::max(median, 1.0)) h[b] = median;
  }
  return h;
}

}  // namespace

// ---------------------------------------------------------------------------
// Calibrators
// ---------------------------------------------------------------------------

double calibrate_threshold(const std::vector<double>& hist, double bw, Calibrator c,
                           double percentile, int levels) {
  const int bins = static_cast<int>(hist.size());
  double total = 0;
  for (double h : hist) total += h;
  const double full = bins * bw;
  if (total <= 0 || bins == 0) return full;
  switch (c) {
    case Calibrator::kMinMax:
    case Calibrator::kNone: {
      int last = bins - 1;
      while (last > 0 && hist[last] == 0) --last;
      return (last + 1) * bw;
    }
    case Calibrator::kPercentile: {
      // Linear interpolation inside the bin that crosses the target count.
      const double target = percentile / 100.0 * total;
      double cum = 0;
      for (int i = 0; i < bins; ++i) {
        if (cum + hist[i] >= target && hist[i] > 0)
          return (i + std::clamp((target - cum) / hist[i], 0.0, 1.0)) * bw;
        cum += hist[i];
      }
      return full;
    }
    case Calibrator::kEntropy: {
      // Spikes first: bins far above their neighbourhood hold one value the tensor takes
      // again and again -- a conv over a constant background gives one per channel, zero
      // padding more. KL(P || Q) reads a histogram as a categorical distribution, so Q
      // spreading a spike over its level's bins costs much, while clipping everything
      // above the spikes, however far, costs little: on a PyTorch-trained Fashion-MNIST
      // CNN the rule clipped the first conv's output just above its highest background
      // spike (1.3 of 3.6; 18% relative error of the next layer's output, against 0.4% for
      // mse). A spike is represented within half a step wherever it lies inside the
      // range, so it is no evidence for a threshold: the search sees the neighbourhood's
      // median in its place, and the range keeps every spike.
      const std::vector<double> h = entropy_histogram(hist, total);
      int first = kEntropyLevels;
      for (int b = bins - 1; b >= 0; --b)
        if (h[b] != hist[b]) {
          first = std::max(first, b + 1);
          break;
        }
      // KL(P || Q) of every candidate i from prefix sums over the bins: with ps the total
      // mass and qs the mass of the first i bins, each level l of Q holds q_l = mass_l / nz_l
      // on its nz_l nonzero bins, so
      //   KL = sum_j p_j/ps * log(p_j/ps / (q_j/qs))
      //      = (sum_j p_j log p_j - sum_l log(q_l) * P_l) / ps + log(qs / ps)
      // (P_l the mass of P on level l's nonzero bins) over the bins P and Q share, plus the
      // last bin's clipped tail where Q has nothing (a mass Q cannot represent, as 1e-12).
      // One log per level instead of one per bin; the counts are integers, so the prefix
      // sums are exact.
      std::vector<double> mass(static_cast<size_t>(bins) + 1, 0.0), plogp(mass.size(), 0.0);
      std::vector<int> nonzero(mass.size(), 0);
      for (int j = 0; j < bins; ++j) {
        mass[j + 1] = mass[j] + h[j];
        plogp[j + 1] = plogp[j] + (h[j] > 0 ? h[j] * std::log(h[j]) : 0.0);
        nonzero[j + 1] = nonzero[j] + (h[j] != 0);
      }
      const double ps = mass[bins];
      double best_kl = std::numeric_limits<double>::infinity();
      int best = bins;
      for (int i = first; i <= bins; ++i) {
        const double qs = mass[i];
        if (ps <= 0 || qs <= 0) continue;
        const double last = h[i - 1], tail = ps - mass[i];
        const double last_p = last + tail;
        // sum over the first i - 1 bins of p_j log p_j, the last bin's apart.
        double sum = plogp[i - 1];
        const double per = static_cast<double>(i) / kEntropyLevels;
        double last_q = 0;
        for (int l = 0; l < kEntropyLevels; ++l) {
          const int start = static_cast<int>(std::floor(l * per));
          const int end = l == kEntropyLevels - 1 ? i : static_cast<int>(std::floor((l + 1) * per));
          const int nz = nonzero[end] - nonzero[start];
          if (nz == 0) continue;
          const double level_mass = mass[end] - mass[start];
          const double log_q = std::log(level_mass / nz);
          // P on this level's nonzero bins: its mass, the last bin counted below.
          sum -= log_q * (end == i ? level_mass - last : level_mass);
          if (end == i) last_q = level_mass / nz;
        }
        double kl = sum / ps + std::log(qs / ps) * ((ps - last_p) / ps);
        if (last_p > 0) {
          const double pj = last_p / ps;
          const double qj = last > 0 ? last_q / qs : 1e-12;
          kl += pj * std::log(pj / qj);
        }
        if (kl < best_kl) best_kl = kl, best = i;
      }
      return std::min(full, (best + 0.5) * bw);
    }
    case Calibrator::kMse: {
      // The error of clip t = i * bw: every bin above it clipped to t, (center - t)^2 per
      // value, every bin below rounded, step^2 / 12 per value (step = t / levels).
      double best_err = std::numeric_limits<double>::infinity(), best_t = full;
      bool counts = true;  // whole counts: the tail sums below are exact integers
      for (double h : hist) counts &= h >= 0 && h < 9007199254740992.0 && h == std::floor(h);
      if (counts) {
        // With centers (j + 1/2) * bw, the clipped part is bw^2 / 4 * sum_{j >= i} h_j
        // (2j + 1 - 2i)^2 = bw^2 / 4 * (S2 - 4i S1 + 4i^2 S0) over the suffix sums S_k of
        // h_j (2j + 1)^k, in 128-bit integers: O(bins) and exact where summing floats is not.
        using u128 = unsigned __int128;
        u128 s0 = 0, s1 = 0, s2 = 0;
        std::vector<double> below(static_cast<size_t>(bins) + 1, 0.0);  // sum of h_j, j < i
        for (int j = 0; j < bins; ++j) below[j + 1] = below[j] + hist[j];
        std::vector<double> err(static_cast<size_t>(bins) + 1, 0.0);
        for (int i = bins; i >= 1; --i) {
          if (i < bins) {
            const u128 h = static_cast<u128>(hist[i]), c = static_cast<u128>(2 * i + 1);
            s0 += h, s1 += h * c, s2 += h * c * c;
          }
          const u128 ii = static_cast<u128>(i);
          const u128 tail = s2 + 4 * ii * ii * s0 - 4 * ii * s1;
          const double t = i * bw, step = t / levels;
          err[i] = bw * bw / 4 * static_cast<double>(tail) + below[i] * step * step / 12.0;
        }
        for (int i = 1; i <= bins; ++i)
          if (err[i] < best_err) best_err = err[i], best_t = i * bw;
        return best_t;
      }
      for (int i = 1; i <= bins; ++i) {
        const double t = i * bw, step = t / levels;
        double err = 0;
        for (int j = 0; j < bins; ++j) {
          if (hist[j] == 0) continue;
          const double center = (j + 0.5) * bw;
          err += hist[j] * (center > t ? (center - t) * (center - t) : step * step / 12.0);
        }
        if (err < best_err) best_err = err, best_t = t;
      }
      return best_t;
    }
    case Calibrator::kAuto:  // a choice among calibrators (quantize_int8), not a threshold
      break;
  }
  return full;
}

QuantParams quant_params_for_range(float lo, float hi, DType type) {
  QuantParams q;
  q.type = type;
  // A floor only against a zero range (a dead activation): ranges of 1e-10 are real in
  // randomly initialised deep nets, so the floor is near the smallest normal float.
  constexpr float kTiny = std::numeric_limits<float>::min() * 1024.f;
  if (type == DType::kS8) {
    const float a = std::max({std::abs(lo), std::abs(hi), kTiny});
    q.scale = a / 127.f;
    q.zero_point = 0;
    return q;
  }
  lo = std::min(lo, 0.f);
  hi = std::max(hi, 0.f);
  if (hi - lo < kTiny) hi = lo + kTiny;
  q.scale = (hi - lo) / 255.f;
  q.zero_point = static_cast<int32_t>(std::clamp(std::nearbyint(-lo / q.scale), 0.f, 255.f));
  return q;
}

namespace {

// ---------------------------------------------------------------------------
// Which tensors to quantize
// ---------------------------------------------------------------------------

bool quantizable_layer(const Graph& g, const Node& n) {
  if (n.op == "Conv") {
    const Tensor* w = g.constant(n.inputs[1]);
    return w && w->dtype() == DType::kF32 && g.value(n.inputs[0]).dtype == DType::kF32;
  }
  if (n.op == "Gemm" || n.op == "MatMul") {  // a Linear layer: constant [K][N] or [N][K]
    const Tensor* b = g.constant(n.inputs[1]);
    return b && b->dtype() == DType::kF32 && b->rank() == 2 && !g.constant(n.inputs[0]) &&
           g.value(n.inputs[0]).dtype == DType::kF32;
  }
  return false;
}

bool clip_nonnegative(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || n.inputs[1].empty()) return false;
  const Tensor* lo = g.constant(n.inputs[1]);
  return lo && lo->numel() == 1 && lo->get_as_double(0) >= 0;
}

}  // namespace

std::vector<std::string> QuantTargets::calibrated() const {
  std::vector<std::string> c;
  for (const std::string& t : tensors)
    if (!shares.count(t)) c.push_back(t);
  return c;
}

QuantTargets quant_targets(const Graph& g) {
  QuantTargets s;
  std::set<std::string> seen;
  auto add = [&](const std::string& t) {
    if (!t.empty() && !g.constant(t) && g.value(t).dtype == DType::kF32 && seen.insert(t).second)
      s.tensors.push_back(t);
  };
  std::unordered_map<std::string, std::vector<size_t>> consumers;
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& in : g.nodes[i].inputs)
      if (!in.empty()) consumers[in].push_back(i);
    for (const std::string& o : g.nodes[i].outputs) producer[o] = i;
  }
  std::set<std::string> outputs(g.outputs.begin(), g.outputs.end());
  for (size_t ci = 0; ci < g.nodes.size(); ++ci) {
    const Node& n = g.nodes[ci];
    if (!quantizable_layer(g, n)) continue;
    add(n.inputs[0]);
    if (n.op != "Conv") continue;
    // The conv block's end: through one residual Add (unless the other operand comes from a
    // later conv, which then takes this one as its residual) and Relu / Clip.
    std::string cur = n.outputs[0];
    bool added = false;
    while (!outputs.count(cur) && consumers[cur].size() == 1) {
      const Node& c = g.nodes[consumers[cur][0]];
      if (c.op == "Relu" || (c.op == "Clip")) {
        if (c.op == "Relu" || clip_nonnegative(g, c)) s.nonnegative.insert(c.outputs[0]);
        cur = c.outputs[0];
        break;  // the activation ends the block
      }
      if (c.op != "Add" || added || c.inputs.size() != 2) break;
      const std::string& other = c.inputs[c.inputs[0] == cur ? 1 : 0];
      auto p = producer.find(other);
      if (p != producer.end() && g.nodes[p->second].op == "Conv" && p->second > ci) break;
      if (g.value(other).shape != g.value(cur).shape) break;
      add(other);  // the residual operand is quantized too
      added = true;
      cur = c.outputs[0];
    }
    add(cur);
  }
  // MaxPool of a quantized tensor shares its parameters (and then runs on 8-bit values).
  for (const Node& n : g.nodes)
    if (n.op == "MaxPool" && n.outputs.size() == 1 && seen.count(n.inputs[0])) {
      s.shares[n.outputs[0]] = n.inputs[0];
      if (s.nonnegative.count(n.inputs[0])) s.nonnegative.insert(n.outputs[0]);
      add(n.outputs[0]);
    }
  return s;
}

namespace {

// ---------------------------------------------------------------------------
// The QDQ rewrite
// ---------------------------------------------------------------------------

std::string add_init(Graph& g, const std::string& prefix, Tensor t) {
  const std::string name = g.unique_value_name(prefix);
  g.initializers[name] = std::move(t);
  return name;
}

Tensor scalar_of(DType t, int32_t v) {
  Tensor z(t, {});
  if (t == DType::kU8) z.data<uint8_t>()[0] = static_cast<uint8_t>(v);
  if (t == DType::kS8) z.data<int8_t>()[0] = static_cast<int8_t>(v);
  return z;
}

// Q -> DQ of activation `t`; every other reader of `t` reads the dequantized value.
void insert_qdq(Graph& g, const std::string& t, const QuantParams& q) {
  const std::string scale = add_init(g, t + "_scale", Tensor::scalar_f32(q.scale));
  const std::string zp = add_init(g, t + "_zero_point", scalar_of(q.type, q.zero_point));
  const std::string qv = g.unique_value_name(t + "_quantized");
  const std::string dqv = g.unique_value_name(t + "_dequantized");
  for (Node& n : g.nodes)
    for (std::string& in : n.inputs)
      if (in == t) in = dqv;
  Node qn;
  qn.name = g.unique_node_name(t + "_QuantizeLinear");
  qn.op = "QuantizeLinear";
  qn.inputs = {t, scale, zp};
  qn.outputs = {qv};
  g.nodes.push_back(qn);
  Node dq;
  dq.name = g.unique_node_name(t + "_DequantizeLinear");
  dq.op = "DequantizeLinear";
  dq.inputs = {qv, scale, zp};
  dq.outputs = {dqv};
  g.nodes.push_back(dq);
  // Values must be known for unique_value_name; placeholders until infer().
  g.set_value({qv, q.type, g.value(t).shape});
  g.set_value({dqv, DType::kF32, g.value(t).shape});
}

std::string add_dq_node(Graph& g, const std::string& base, const std::string& q,
                        const std::string& scale, const std::string& zp, int64_t axis) {
  Node dq;
  dq.name = g.unique_node_name(base + "_DequantizeLinear");
  dq.op = "DequantizeLinear";
  dq.inputs = {q, scale, zp};
  dq.outputs = {g.unique_value_name(base + "_dequantized")};
  dq.attrs["axis"] = axis;
  const Tensor* qt = g.constant(q);
  g.set_value({dq.outputs[0], DType::kF32, qt->shape()});
  g.nodes.push_back(dq);
  return dq.outputs[0];
}

// Weights of one Conv / Gemm / MatMul: symmetric per output channel s8 (zero point 0); the bias s32
// at x_scale * w_scale.
QuantLayer quantize_weights(Graph& g, Node& n, float x_scale) {
  QuantLayer l;
  l.node = n.name;
  l.op = n.op;
  l.input = n.inputs[0];
  const Tensor w = *g.constant(n.inputs[1]);
  // Channel axis: Conv weights [K][...]; Gemm B [N][K] with transB, [K][N] without (and
  // MatMul's).
  const int64_t axis = n.op == "MatMul" || (n.op == "Gemm" && n.attr_int("transB", 0) == 0) ? 1 : 0;
  const int64_t k = w.dim(static_cast<int>(axis));
  const int64_t inner = axis == 0 ? w.numel() / k : 1;
  const int64_t outer_stride = axis == 0 ? 0 : k;  // Gemm [K][N]: channel = i % N
  const float* wd = w.data<float>();
  std::vector<float> amax(static_cast<size_t>(k), 0.f);
  auto channel = [&](int64_t i) { return axis == 0 ? i / inner : i % outer_stride; };
  for (int64_t i = 0; i < w.numel(); ++i)
    amax[channel(i)] = std::max(amax[channel(i)], std::abs(wd[i]));
  Tensor scales(DType::kF32, {k});
  for (int64_t c = 0; c < k; ++c)
    scales.data<float>()[c] = amax[c] > 0 ? amax[c] / 127.f : 1.f;  // all-zero (pruned) channel
  Tensor wq(DType::kS8, w.shape());
  for (int64_t i = 0; i < w.numel(); ++i) {
    const float v = std::nearbyint(wd[i] / scales.data<float>()[channel(i)]);
    wq.data<int8_t>()[i] = static_cast<int8_t>(std::clamp(v, -127.f, 127.f));
  }
  l.channels = k;
  l.w_scale_min = *std::min_element(scales.data<float>(), scales.data<float>() + k);
  l.w_scale_max = *std::max_element(scales.data<float>(), scales.data<float>() + k);
  const std::string base = n.inputs[1];
  const std::string wq_name = add_init(g, base + "_quantized", wq);
  const std::string ws_name = add_init(g, base + "_scale", scales);
  const std::string wz_name = add_init(g, base + "_zero_point", Tensor(DType::kS8, {k}));
  n.inputs[1] = add_dq_node(g, base, wq_name, ws_name, wz_name, axis);

  // Bias (Conv input 2, Gemm C of shape [N]) as s32 at x_scale * w_scale[c].
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* b = g.constant(n.inputs[2]);
    if (b && b->dtype() == DType::kF32 && b->shape() == Shape{k} &&
        (n.op == "Conv" || n.attr_float("beta", 1.f) == 1.f)) {
      Tensor bq(DType::kS32, {k}), bs(DType::kF32, {k});
      bool fits = true;  // int8 convs leave 2^30 of the int32 accumulator to the bias
      for (int64_t c = 0; c < k; ++c) {
        const double s = static_cast<double>(x_scale) * scales.data<float>()[c];
        bs.data<float>()[c] = static_cast<float>(s);
        const double v = std::nearbyint(b->data<float>()[c] / s);
        fits &= std::abs(v) <= 1073741823.0;
        bq.data<int32_t>()[c] = static_cast<int32_t>(std::clamp(v, -1073741823.0, 1073741823.0));
      }
      if (!fits) return l;  // the bias stays f32 (the layer then runs in float)
      const std::string bbase = n.inputs[2];
      const std::string bq_name = add_init(g, bbase + "_quantized", bq);
      const std::string bs_name = add_init(g, bbase + "_scale", bs);
      const std::string bz_name = add_init(g, bbase + "_zero_point", Tensor(DType::kS32, {k}));
      n.inputs[2] = add_dq_node(g, bbase, bq_name, bs_name, bz_name, 0);
    }
  }
  return l;
}

}  // namespace

double QuantTensor::best_error() const {
  double best = -1;
  for (const RangeCandidate& c : candidates)
    if (c.error >= 0 && (best < 0 || c.error < best)) best = c.error;
  return best;
}

RangeCandidate calibrated_range(const TensorStats& s, const QuantSpec& spec, Calibrator c,
                                bool nonneg, bool model_input) {
  DLAS_CHECK(c != Calibrator::kAuto, ErrorKind::kInternal,
             "calibrated_range: auto is a choice among calibrators, not one");
  RangeCandidate r;
  r.calibrator = c;
  if (c == Calibrator::kNone) {
    r.lo = nonneg ? 0.f : -kUncalibratedRange;
    r.hi = kUncalibratedRange;
    return r;
  }
  const float mn = std::isfinite(s.min) ? s.min : 0.f;
  const float mx = std::isfinite(s.max) ? s.max : 0.f;
  double t = std::max(std::abs(mn), std::abs(mx));
  // A model input keeps its observed range: it is data, not a heavy-tailed activation, and
  // normalised images put most pixels in one background spike (Fashion-MNIST: -0.81 of
  // [-0.81, 2.02]) that the entropy rule matched, clipping every bright pixel.
  if (c != Calibrator::kMinMax && !model_input && !s.hist.empty()) {
    const int levels = spec.activations == DType::kU8 && mn >= 0 ? 255 : 127;
    // Exact zeros quantize exactly at any scale (zero is always a level), so they are no
    // evidence for a threshold. Left in, a ReLU output's spike of zeros dominates
    // KL(P || Q): any Q merging bin 0 with its neighbours smears the spike, so the entropy
    // rule picked its smallest candidate (1/16 of the range) and clipped most activations --
    // top-1 fell from 80% to 29% on a trained resnet18-cifar.
    std::vector<double> hist = s.hist;
    if (c == Calibrator::kEntropy) hist[0] = std::max(0.0, hist[0] - s.zeros);
    t = calibrate_threshold(hist, s.bin_width, c, spec.percentile, levels);
  }
  r.lo = std::max(mn, static_cast<float>(-t));
  r.hi = std::min(mx, static_cast<float>(t));
  return r;
}

std::vector<std::vector<RangeCandidate>> range_candidates(const Graph& g, const QuantSpec& spec,
                                                          const QuantTargets& sel,
                                                          const std::vector<TensorStats>& stats,
                                                          int threads) {
  std::vector<std::vector<RangeCandidate>> out;
  if (spec.calibrator == Calibrator::kNone) return out;
  const std::vector<std::string> calibrated = sel.calibrated();
  DLAS_CHECK(stats.size() == calibrated.size(), ErrorKind::kInternal, "calibration statistics for ",
             stats.size(), " tensors, expected ", calibrated.size());
  out.resize(calibrated.size());
  // Each tensor's candidates apart, tensor i on thread i % threads.
  auto tensors = [&](size_t first, size_t step) {
    for (size_t i = first; i < calibrated.size(); i += step) {
      const bool nonneg = sel.nonnegative.count(calibrated[i]) != 0;
      const bool model_input =
          std::any_of(g.inputs.begin(), g.inputs.end(),
                      [&](const ValueInfo& v) { return v.name == calibrated[i]; });
      for (Calibrator k : kAutoCalibrators)
        out[i].push_back(calibrated_range(stats[i], spec, k, nonneg, model_input));
    }
  };
  const size_t n = static_cast<size_t>(std::clamp<size_t>(
      static_cast<size_t>(std::max(threads, 1)), 1, std::max<size_t>(calibrated.size(), 1)));
  std::vector<std::thread> workers;
  for (size_t t = 1; t < n; ++t) workers.emplace_back(tensors, t, n);
  tensors(0, n);
  for (std::thread& t : workers) t.join();
  return out;
}

QuantReport quantize_int8(Graph& g, const QuantSpec& spec, const QuantTargets& sel,
                          const std::vector<TensorStats>& stats,
                          const std::vector<std::vector<RangeCandidate>>& candidates) {
  QuantReport r;
  r.spec = spec;
  const std::vector<std::string> calibrated = sel.calibrated();
  DLAS_CHECK(spec.calibrator == Calibrator::kNone || stats.size() == calibrated.size(),
             ErrorKind::kInternal, "calibration statistics for ", stats.size(),
             " tensors, expected ", calibrated.size());
  DLAS_CHECK(candidates.empty() || candidates.size() == calibrated.size(), ErrorKind::kInternal,
             "range candidates for ", candidates.size(), " tensors, expected ", calibrated.size());
  DLAS_CHECK(spec.calibrator != Calibrator::kAuto || !candidates.empty() || calibrated.empty(),
             ErrorKind::kInternal, "int8:auto needs the measured errors of every calibrator");
  std::unordered_map<std::string, QuantTensor> params;
  for (size_t i = 0; i < calibrated.size(); ++i) {
    QuantTensor qt;
    qt.name = calibrated[i];
    const bool nonneg = sel.nonnegative.count(qt.name) != 0;
    const bool model_input = std::any_of(g.inputs.begin(), g.inputs.end(),
                                         [&](const ValueInfo& v) { return v.name == qt.name; });
    if (spec.calibrator != Calibrator::kNone) {
      qt.min = std::isfinite(stats[i].min) ? stats[i].min : 0.f;
      qt.max = std::isfinite(stats[i].max) ? stats[i].max : 0.f;
    }
    if (!candidates.empty()) qt.candidates = candidates[i];
    RangeCandidate chosen;
    if (spec.calibrator == Calibrator::kAuto) {
      // The smallest measured error; ties (an unclipped model input: every calibrator gives
      // its observed range) go to the first of kAutoCalibrators.
      const RangeCandidate* best = nullptr;
      for (const RangeCandidate& c : qt.candidates)
        if (!best || (c.error >= 0 && (best->error < 0 || c.error < best->error))) best = &c;
      DLAS_CHECK(best, ErrorKind::kInternal, "int8:auto: no candidate range for ", qt.name);
      chosen = *best;
    } else {
      chosen.calibrator = spec.calibrator;
      const auto it =
          std::find_if(qt.candidates.begin(), qt.candidates.end(),
                       [&](const RangeCandidate& c) { return c.calibrator == spec.calibrator; });
      chosen =
          it != qt.candidates.end()
              ? *it
              : calibrated_range(spec.calibrator == Calibrator::kNone ? TensorStats{} : stats[i],
                                 spec, spec.calibrator, nonneg, model_input);
    }
    // Whatever the calibrator, a model input's range is its observed one: say so.
    qt.calibrator = model_input && spec.calibrator != Calibrator::kNone ? Calibrator::kMinMax
                                                                        : chosen.calibrator;
    qt.error = chosen.error;
    qt.lo = chosen.lo;
    qt.hi = chosen.hi;
    qt.q = quant_params_for_range(qt.lo, qt.hi, spec.activations);
    params[qt.name] = qt;
  }
  for (const std::string& t : sel.tensors) {
    if (!sel.shares.count(t)) continue;
    std::string src = sel.shares.at(t);
    while (sel.shares.count(src)) src = sel.shares.at(src);
    QuantTensor qt = params.at(src);
    qt.name = t;
    qt.shares = src;
    qt.candidates.clear();
    qt.error = -1;
    params[t] = qt;
  }
  // The layers each tensor feeds; a MaxPool's source feeds its readers too (its error counts
  // them: MaxPool commutes with quantization).
  for (const Node& n : g.nodes) {
    if (!quantizable_layer(g, n) || !params.count(n.inputs[0])) continue;
    params.at(n.inputs[0]).feeds.push_back(n.name);
    std::string src = n.inputs[0];
    while (sel.shares.count(src)) {
      src = sel.shares.at(src);
      params.at(src).feeds.push_back(n.name);
    }
  }
  for (const std::string& t : sel.tensors) r.tensors.push_back(params.at(t));

  // Weights first (they read the layers' input scales), then the activation Q/DQ pairs.
  const size_t original = g.nodes.size();
  for (size_t i = 0; i < original; ++i) {
    Node& n = g.nodes[i];
    if (!quantizable_layer(g, n)) continue;
    auto it = params.find(n.inputs[0]);
    if (it == params.end()) continue;
    Node copy = n;
    QuantLayer l = quantize_weights(g, copy, it->second.q.scale);
    g.nodes[i] = copy;  // quantize_weights appended nodes; `n` may have moved
    r.layers.push_back(l);
  }
  for (const std::string& t : sel.tensors) insert_qdq(g, t, params.at(t).q);
  g.infer();
  return r;
}

std::string quant_warning(const QuantReport& r) {
  if (r.spec.type != QuantType::kInt8) return "";
  const QuantTensor* worst = nullptr;
  int high = 0;
  for (const QuantTensor& t : r.tensors) {
    const double best = t.best_error();
    if (t.error < kHighQuantError || best < 0 || best > 0.5 * t.error) continue;
    ++high;
    if (!worst || t.error > worst->error) worst = &t;
  }
  if (!worst) return "";
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "warning: %s: %d tensor%s with a high int8 error, worst '%s' %.1f%% (another "
                "calibrator: %.1f%%); int8:auto picks the best range per tensor",
                r.spec.str().c_str(), high, high == 1 ? "" : "s", worst->name.c_str(),
                100 * worst->error, 100 * worst->best_error());
  return buf;
}

// ---------------------------------------------------------------------------
// fp16 / bf16
// ---------------------------------------------------------------------------

QuantReport convert_half(Graph& g, const QuantSpec& spec) {
  QuantReport r;
  r.spec = spec;
  const DType half = spec.type == QuantType::kF16 ? DType::kF16 : DType::kBF16;
  // Initializers that must stay f32 whatever the data type (Resize's roi and scales).
  std::set<std::string> keep;
  for (const Node& n : g.nodes)
    if (n.op == "Resize")
      for (size_t i = 1; i < n.inputs.size(); ++i) keep.insert(n.inputs[i]);
  for (auto& [name, t] : g.initializers)
    if (t.dtype() == DType::kF32 && !keep.count(name)) {
      t = t.cast(half);
      ++r.converted_initializers;
    }
  const int64_t half_code = dtype_to_onnx(half);
  for (const ValueInfo& in : g.inputs) {
    if (in.dtype != DType::kF32) continue;
    const std::string cast_out = g.unique_value_name(in.name + "_" + dtype_name(half));
    for (Node& n : g.nodes)
      for (std::string& x : n.inputs)
        if (x == in.name) x = cast_out;
    Node c;
    c.name = g.unique_node_name(in.name + "_Cast");
    c.op = "Cast";
    c.inputs = {in.name};
    c.outputs = {cast_out};
    c.attrs["to"] = half_code;
    g.set_value({cast_out, half, in.shape});
    g.nodes.insert(g.nodes.begin(), c);
  }
  for (std::string& out : g.outputs) {
    if (!g.has_value(out) || g.value(out).dtype != DType::kF32 || g.constant(out)) continue;
    const std::string inner = g.unique_value_name(out + "_" + dtype_name(half));
    for (Node& n : g.nodes) {
      for (std::string& x : n.inputs)
        if (x == out) x = inner;
      for (std::string& x : n.outputs)
        if (x == out) x = inner;
    }
    Node c;
    c.name = g.unique_node_name(out + "_Cast");
    c.op = "Cast";
    c.inputs = {inner};
    c.outputs = {out};
    c.attrs["to"] = static_cast<int64_t>(dtype_to_onnx(DType::kF32));
    g.set_value({inner, half, g.value(out).shape});
    g.nodes.push_back(c);
  }
  g.infer();
  return r;
}

}  // namespace dlas
