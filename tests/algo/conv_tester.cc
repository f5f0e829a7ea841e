// ConvTester (conv_tester.h): data generation, oracles and tolerances per element type; one
// prepare / run / compare path for all of them.
#include "algo/conv_tester.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "algo/microkernels/f32-vepilogue/f32_vepilogue.h"
#include "algo/op_test_util.h"

namespace dlas::test {
namespace {

// The residual's element type (int8: its own quantization; else the output's).
DType residual_type(const ConvProblem& p) { return p.is_int8() ? p.quant.r.type : p.y_type; }

std::vector<uint8_t> buffer(int64_t count, DType t) {
  return std::vector<uint8_t>(static_cast<size_t>(count) * dtype_size(t));
}

// Element i of a buffer of type t, widened.
double value(DType t, const std::vector<uint8_t>& b, size_t i) {
  switch (t) {
    case DType::kF16:
      return f16_to_f32(elements<uint16_t>(b)[i]);
    case DType::kBF16:
      return bf16_to_f32(elements<uint16_t>(b)[i]);
    case DType::kU8:
      return b[i];
    case DType::kS8:
      return static_cast<int8_t>(b[i]);
    default:
      return elements<float>(b)[i];
  }
}

// n values uniform in [-1, 1] rounded to t (f32, f16 or bf16).
void fill_uniform(std::mt19937& rng, DType t, void* out, int64_t n) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int64_t i = 0; i < n; ++i) {
    const float v = dist(rng);
    if (t == DType::kF32)
      static_cast<float*>(out)[i] = v;
    else
      static_cast<uint16_t*>(out)[i] = t == DType::kF16 ? f32_to_f16(v) : f32_to_bf16(v);
  }
}

// f32 draws x, w, bias, residual; 16-bit x, w, residual, bias.
void float_data(const ConvProblem& p, std::mt19937& rng, ConvData& d) {
  d.bias.resize(static_cast<size_t>(p.k));
  fill_uniform(rng, p.x_type, d.x.data(), p.input_count());
  fill_uniform(rng, p.w_type, d.w.data(), p.weight_count());
  if (p.is_half()) fill_uniform(rng, p.y_type, d.r.data(), p.output_count());
  fill_uniform(rng, DType::kF32, d.bias.data(), p.k);
  if (!p.is_half()) fill_uniform(rng, p.y_type, d.r.data(), p.output_count());
}

// Every byte random; per-channel weight scales spread over 0.01 .. 0.032.
void int8_data(const ConvProblem& p, std::mt19937& rng, ConvData& d) {
  for (std::vector<uint8_t>* b : {&d.x, &d.w, &d.r})
    for (uint8_t& v : *b) v = static_cast<uint8_t>(rng());
  d.w_scale.resize(static_cast<size_t>(p.k));
  d.bias_s32.resize(static_cast<size_t>(p.k));
  for (int64_t k = 0; k < p.k; ++k) {
    d.w_scale[k] = 0.01f * (1.f + 0.37f * static_cast<float>(k % 7));
    d.bias_s32[k] = p.has_bias ? static_cast<int32_t>(rng() % 20001) - 10000 : 0;
  }
}

// x at the top of its range, w all -128: acc = -(255 * 128 * taps), at most -1.069e9; the
// multipliers spread the result over s8.
void extreme_int8_data(const ConvProblem& p, ConvData& d) {
  std::fill(d.x.begin(), d.x.end(), p.quant.x.type == DType::kU8 ? 255 : 127);
  std::fill(d.w.begin(), d.w.end(), 0x80);
  const float scales[] = {1e-7f, 2.3e-7f, 1.17e-7f, 3e-8f, 1.9e-7f};
  const int32_t biases[] = {1 << 26, -(1 << 26), 12345, 0, -7};
  for (int64_t k = 0; k < p.k; ++k) {
    d.w_scale.push_back(scales[k % 5]);
    d.bias_s32.push_back(biases[k % 5]);
  }
}

// The reference Conv kernel, then the scalar epilogue per output row.
void reference_f32(const ConvProblem& p, const ConvData& d, float* y) {
  const int64_t cg = p.c_per_group();
  const op_test::Attrs attrs{{"strides", std::vector<int64_t>{p.stride_h, p.stride_w}},
                             {"pads", std::vector<int64_t>{p.pad_t, p.pad_l, p.pad_b, p.pad_r}},
                             {"dilations", std::vector<int64_t>{p.dil_h, p.dil_w}},
                             {"group", p.groups},
                             {"kernel_shape", std::vector<int64_t>{p.kh, p.kw}}};
  const float* x = elements<float>(d.x);
  const float* w = elements<float>(d.w);
  Tensor conv =
      op_test::run1("Conv",
                    {op_test::rt(op_test::f32({p.n, p.c, p.h, p.w}, {x, x + p.input_count()})),
                     op_test::cst(op_test::f32({p.k, cg, p.kh, p.kw}, {w, w + p.weight_count()}))},
                    attrs);
  std::memcpy(y, conv.data<float>(), static_cast<size_t>(p.output_count()) * sizeof(float));
  const size_t plane = static_cast<size_t>(p.oh() * p.ow());
  const float* res = elements<float>(d.r);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k) {
      const size_t off = static_cast<size_t>(n * p.k + k) * plane;
      ukernel::f32_vepilogue__scalar(plane, y + off, p.has_bias ? d.bias[k] : 0.f,
                                     p.epilogue.residual ? res + off : nullptr, p.epilogue.act,
                                     p.epilogue.p0, p.epilogue.p1);
    }
}

// The oracle's output for problem p on d, in p's output type.
std::vector<uint8_t> reference(const ConvProblem& p, const ConvData& d) {
  std::vector<uint8_t> y = buffer(p.output_count(), p.y_type);
  const void* res = p.epilogue.residual ? d.r.data() : nullptr;
  if (p.is_int8())
    reference_qconv(p, d.x.data(), d.weights(p), res, y.data());
  else if (p.is_half())
    reference_hconv(p, elements<uint16_t>(d.x), d.weights(p), static_cast<const uint16_t*>(res),
                    elements<uint16_t>(y));
  else
    reference_f32(p, d, elements<float>(y));
  return y;
}

// sum_r |w_r x_r| per output, in double (exact for the float types' products).
std::vector<double> magnitudes(const ConvProblem& c, const ConvData& d) {
  std::vector<double> ax(static_cast<size_t>(c.input_count()));
  std::vector<double> aw(static_cast<size_t>(c.weight_count()));
  for (size_t i = 0; i < ax.size(); ++i) ax[i] = std::fabs(value(c.x_type, d.x, i));
  for (size_t i = 0; i < aw.size(); ++i) aw[i] = std::fabs(value(c.w_type, d.w, i));
  std::vector<double> mag(static_cast<size_t>(c.output_count()), 0.0);
  const int64_t oh = c.oh(), ow = c.ow(), cg = c.c_per_group(), kg = c.k_per_group();
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t kk = 0; kk < c.k; ++kk)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double& m = mag[static_cast<size_t>(((n * c.k + kk) * oh + oy) * ow + ox)];
          const int64_t g = kk / kg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < c.kh; ++ky)
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                const int64_t iy = oy * c.stride_h - c.pad_t + ky * c.dil_h;
                const int64_t ix = ox * c.stride_w - c.pad_l + kx * c.dil_w;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                m += ax[((n * c.c + g * cg + ci) * c.h + iy) * c.w + ix] *
                     aw[((kk * cg + ci) * c.kh + ky) * c.kw + kx];
              }
        }
  return mag;
}

// Per-output tolerances (conv_tester.h's bounds; int8: 0, exact). half_steps: reduction
// steps a 16-bit conv accumulates in half precision.
std::vector<double> tolerances(const ConvProblem& p, const ConvData& d,
                               const std::vector<uint8_t>& want, int64_t half_steps) {
  std::vector<double> tol(static_cast<size_t>(p.output_count()), 0.0);
  if (p.is_int8()) return tol;
  const std::vector<double> mag = magnitudes(p, d);
  const double r = static_cast<double>(p.c_per_group() * p.kh * p.kw);
  const double acc = 4 * std::ldexp(1.0, -23) * std::sqrt(r);  // f32 accumulation, per mag
  const Epilogue& e = p.epilogue;
  double lip = e.act == Activation::kHardSigmoid ? std::max(1.0, std::fabs((double)e.p0)) : 1.0;
  if (!p.is_half()) {
    for (size_t i = 0; i < tol.size(); ++i) tol[i] = lip * (acc * (mag[i] + 2.0)) + 1e-6;
    return tol;
  }
  if (e.act == Activation::kHardSwish) lip = 1.5;
  if (e.act == Activation::kSilu) lip = 1.1;
  const bool f16 = p.y_type == DType::kF16;
  const double ulp = f16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
  const double tiny = f16 ? std::ldexp(1.0, -24) : 1e-38;
  const double nsteps = static_cast<double>(std::min<int64_t>(half_steps, static_cast<int64_t>(r)));
  for (size_t i = 0; i < tol.size(); ++i) {
    const double err = acc * (mag[i] + 2) + 1e-6 + nsteps * std::ldexp(1.0, -11) * mag[i] +
                       r * std::ldexp(1.0, -25);
    tol[i] = lip * err * (1 + ulp) + ulp * std::fabs(value(p.y_type, want, i)) + tiny;
  }
  return tol;
}

// An NCHW tensor (f32, 16-bit bit patterns or bytes) in layout l, the padding lanes of a
// blocked one set to `pad`, a finite non-zero value that no kernel may let into a real lane.
template <class T>
std::vector<T> to_layout(const T* src, Layout l, int64_t n, int64_t c, int64_t hw, T pad) {
  std::vector<T> out(static_cast<size_t>(layout_numel(n, c, hw, l)));
  reorder(src, Layout::kNchw, out.data(), l, n, c, hw, ThreadPool::serial());
  const int64_t cpad = blocked_channels(c, l);
  for (int64_t img = 0; img < n; ++img)
    for (int64_t ch = c; ch < cpad; ++ch)
      for (int64_t px = 0; px < hw; ++px) out[layout_offset(l, cpad, hw, img, ch, px)] = pad;
  return out;
}

// Runs `prepared` on d with `threads` threads into y; false after ADD_FAILURE on a write past
// workspace_bytes(threads).
bool run(const PreparedConv& prepared, const ConvProblem& p, const ConvData& d, int threads,
         std::vector<uint8_t>& y, const std::string& what) {
  ThreadPool pool(threads);
  const size_t wsb = prepared.workspace_bytes(threads);
  std::vector<uint8_t> ws(wsb + 64 + kWorkspaceGuard, kGuardByte);
  uint8_t* base = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
  if (!p.is_blocked()) {
    prepared.run(d.x.data(), y.data(), p.epilogue.residual ? d.r.data() : nullptr, base, pool);
  } else if (p.is_half()) {
    // 16-bit blocks: the same reorders on the bit patterns, padding lanes set to 3.
    const uint16_t three = p.x_type == DType::kBF16 ? f32_to_bf16(3.f) : f32_to_f16(3.f);
    const int64_t ohw = p.oh() * p.ow();
    const std::vector<uint16_t> x =
        to_layout(elements<uint16_t>(d.x), p.x_layout, p.n, p.c, p.h * p.w, three);
    std::vector<uint16_t> r;
    if (p.epilogue.residual)
      r = to_layout(elements<uint16_t>(d.r), p.y_layout, p.n, p.k, ohw, three);
    std::vector<uint16_t> yb(static_cast<size_t>(layout_numel(p.n, p.k, ohw, p.y_layout)),
                             uint16_t{0xffff});  // NaN: every real lane must be written
    prepared.run(x.data(), yb.data(), r.empty() ? nullptr : r.data(), base, pool);
    for (size_t i = 0; i < yb.size(); ++i) {
      const float v = p.y_type == DType::kBF16 ? bf16_to_f32(yb[i]) : f16_to_f32(yb[i]);
      if (!std::isfinite(v)) {
        ADD_FAILURE() << what << ": blocked output element " << i << " is not finite";
        return false;
      }
    }
    reorder(yb.data(), p.y_layout, elements<uint16_t>(y), Layout::kNchw, p.n, p.k, ohw,
            ThreadPool::serial());
  } else if (p.is_int8()) {
    // 8-bit blocks: padding lanes of the input and residual set to 77 (convs multiply them
    // by zero weights); the output's real lanes all come back from the oracle's check.
    const int64_t ohw = p.oh() * p.ow();
    const std::vector<uint8_t> x =
        to_layout(d.x.data(), p.x_layout, p.n, p.c, p.h * p.w, uint8_t{77});
    std::vector<uint8_t> r;
    if (p.epilogue.residual) r = to_layout(d.r.data(), p.y_layout, p.n, p.k, ohw, uint8_t{77});
    std::vector<uint8_t> yb(static_cast<size_t>(layout_numel(p.n, p.k, ohw, p.y_layout)),
                            kGuardByte);
    prepared.run(x.data(), yb.data(), r.empty() ? nullptr : r.data(), base, pool);
    reorder(yb.data(), p.y_layout, y.data(), Layout::kNchw, p.n, p.k, ohw, ThreadPool::serial());
  } else {
    const int64_t ohw = p.oh() * p.ow();
    const std::vector<float> x =
        to_layout(elements<float>(d.x), p.x_layout, p.n, p.c, p.h * p.w, 3.f);
    std::vector<float> r;
    if (p.epilogue.residual) r = to_layout(elements<float>(d.r), p.y_layout, p.n, p.k, ohw, 3.f);
    std::vector<float> yb(static_cast<size_t>(layout_numel(p.n, p.k, ohw, p.y_layout)), -1.f);
    prepared.run(x.data(), yb.data(), r.empty() ? nullptr : r.data(), base, pool);
    for (size_t i = 0; i < yb.size(); ++i)
      if (!std::isfinite(yb[i])) {
        ADD_FAILURE() << what << ": blocked output element " << i << " is not finite";
        return false;
      }
    reorder(yb.data(), p.y_layout, elements<float>(y), Layout::kNchw, p.n, p.k, ohw,
            ThreadPool::serial());
  }
  for (size_t i = wsb; i < wsb + kWorkspaceGuard; ++i)
    if (base[i] != kGuardByte) {
      ADD_FAILURE() << what << ": wrote workspace byte " << i << " past workspace_bytes " << wsb;
      return false;
    }
  return true;
}

}  // namespace

ConvWeights ConvData::weights(const ConvProblem& p) const {
  if (p.is_int8()) return ConvWeights::int8(elements<int8_t>(w), w_scale.data(), bias_s32.data());
  return {w.data(), p.has_bias ? bias.data() : nullptr};
}

std::vector<QVariant> qconv_variants() {
  return {{DType::kU8, DType::kU8, 3, 0, Activation::kRelu, false},
          {DType::kU8, DType::kU8, 128, 130, Activation::kNone, false},
          {DType::kS8, DType::kS8, 0, 0, Activation::kNone, false},
          {DType::kS8, DType::kU8, -5, 10, Activation::kClip, false},
          {DType::kU8, DType::kS8, 251, -3, Activation::kNone, true},
          {DType::kS8, DType::kS8, 1, -1, Activation::kRelu, true}};
}

std::string isa_test_name(Isa isa) {
  std::string s = isa_name(isa);
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

ConvTester& ConvTester::int8(const QVariant& v) {
  p_.epilogue = {v.act, 0.f, 6.f, v.residual};
  q_ = {{0.02f, v.xzp, v.x}, {0.1f, v.yzp, v.y}, {0.09f, v.x == DType::kU8 ? 128 : 0, v.x}};
  spread_y_scale_ = true;
  extreme_ = false;
  return dtype(ConvTypes::kInt8);
}

ConvTester& ConvTester::extreme_int8(DType xt) {
  p_ = ConvProblem();
  p_.c = 3640, p_.k = 5, p_.h = 3, p_.w = 4, p_.kh = p_.kw = 3;  // R = 32760
  p_.pad_t = p_.pad_l = p_.pad_b = p_.pad_r = 1;
  p_.has_bias = true;
  q_ = {{0.5f, xt == DType::kU8 ? 0 : -128, xt}, {1.f, 0, DType::kS8}, {}};
  spread_y_scale_ = false;
  extreme_ = true;
  return dtype(ConvTypes::kInt8);
}

ConvProblem ConvTester::problem() const {
  ConvProblem p = p_;
  if (dtype_ == ConvTypes::kHalf) p.set_half(half_);
  if (dtype_ == ConvTypes::kInt8) {
    ConvQuant q = q_;
    if (spread_y_scale_) {
      // The std of sum((x - zp) * w) is ~ sqrt(R) * 74 * 74; m = x.scale * w_scale / y.scale
      // ~ 50 / spread.
      const double spread =
          std::sqrt(static_cast<double>(p.c_per_group() * p.kh * p.kw)) * 74.0 * 74.0;
      q.y.scale = static_cast<float>(q.x.scale * 0.01 * spread / 50.0);
    }
    p.set_int8(q.x, q.y, q.r);
  }
  return p;
}

ConvData ConvTester::data() const {
  const ConvProblem p = problem();
  ConvData d;
  d.x = buffer(p.input_count(), p.x_type);
  d.w = buffer(p.weight_count(), p.w_type);
  d.r = buffer(p.output_count(), residual_type(p));
  std::mt19937 rng(seed_.value_or(p.is_half() ? 7 : 1));
  if (!p.is_int8())
    float_data(p, rng, d);
  else if (extreme_)
    extreme_int8_data(p, d);
  else
    int8_data(p, rng, d);
  const size_t es = dtype_size(p.w_type);
  auto zero = [&](int64_t i) { std::memset(d.w.data() + static_cast<size_t>(i) * es, 0, es); };
  if (sparsity_ > 0) {
    std::bernoulli_distribution drop(sparsity_);
    for (int64_t i = 0; i < p.weight_count(); ++i)
      if (drop(rng)) zero(i);
  }
  if (keep_) {
    const int64_t rr = p.c_per_group() * p.kh * p.kw;
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t i = 0; i < rr; ++i)
        if (!keep_(k, i)) zero(k * rr + i);
  }
  return d;
}

bool ConvTester::test(const ConvAlgorithm& algo, Isa isa, Knobs knobs) const {
  const ConvProblem p = problem();
  p.validate();
  if (knobs.empty()) knobs = algo.default_knobs(p, isa);
  return test_with(
      [&](const ConvProblem& q, const ConvWeights& w) { return algo.prepare(q, w, knobs, isa); },
      std::string(algo.name()) + " " + isa_name(isa), knobs);
}

bool ConvTester::test_with(const Prepare& prepare, const std::string& label,
                           const Knobs& knobs) const {
  const ConvProblem p = problem();
  const ConvData d = data();
  const std::vector<uint8_t> want = reference(p, d);
  const std::unique_ptr<PreparedConv> prepared = prepare(p, d.weights(p));
  const std::string what =
      label + " " + conv_compute_name(prepared->compute()) + " " + p.key() +
      " act=" + activation_name(p.epilogue.act) + (p.epilogue.residual ? " +res" : "") +
      " knobs=" + knobs_to_string(knobs) + " threads=" + std::to_string(threads_);
  // Outputs start as NaN (int8: 0xA5), so one never written shows.
  std::vector<uint8_t> got = buffer(p.output_count(), p.y_type);
  std::fill(got.begin(), got.end(), p.is_int8() ? 0xA5 : 0xFF);
  if (!run(*prepared, p, d, threads_, got, what)) return false;
  int64_t steps = half_steps_;
  if (prepared->compute() == ConvCompute::kNativeFp16) {
    const int64_t flush = knobs.count("flush") ? knobs.at("flush") : 0;
    steps = flush > 0 ? flush : (knobs.count("kc") ? knobs.at("kc") : 0);
  }
  const std::vector<double> tol = tolerances(p, d, want, steps);
  int64_t bad = 0;
  for (size_t i = 0; i < tol.size(); ++i) {
    const double g = value(p.y_type, got, i), w = value(p.y_type, want, i);
    if (!(std::fabs(g - w) <= tol[i]) && bad++ < 5)
      ADD_FAILURE() << what << ": output " << i << " got " << g << " want " << w << " tol "
                    << tol[i];
  }
  if (bad) ADD_FAILURE() << what << ": " << bad << " of " << tol.size() << " outputs differ";
  return bad == 0;
}

bool ConvTester::test_points(const ConvAlgorithm& algo, Isa isa,
                             const std::vector<Knobs>& more) const {
  ConvTester t = *this;
  if (!t.threads(2).test(algo, isa) || !t.threads(1).test(algo, isa)) return false;
  t.threads(2);
  for (const Knobs& k : more)
    if (!t.test(algo, isa, k)) return false;
  return true;
}

}  // namespace dlas::test
