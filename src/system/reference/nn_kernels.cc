// Reference kernels of the neural-network ops (schemas in src/model/ops/nn_ops.cc).
// Every kernel is written once for f32; f16, bf16 (and the s8/u8 inputs MaxPool
// accepts) are converted to f32, computed, and rounded back (in_f32 below).
// Shapes were validated by inference; kernels re-derive only what they need
// (window pads) from the attributes and the preallocated output shapes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "dlas/algo/conv.h"
#include "dlas/model/shape_math.h"
#include "system/reference/broadcast.h"
#include "system/reference/kernels_internal.h"

namespace dlas::reference {
namespace {

using Tensors = std::vector<Tensor>;

bool computed_as_f32(DType t) {
  return t == DType::kF16 || t == DType::kBF16 || t == DType::kS8 || t == DType::kU8;
}

// Runs the f32 kernel Fn on f32 copies of 16-bit / 8-bit inputs and outputs.
template <KernelFn Fn>
void in_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  bool convert = false;
  for (const Tensor& t : inputs) convert |= t.defined() && computed_as_f32(t.dtype());
  for (const Tensor& t : outputs) convert |= t.defined() && computed_as_f32(t.dtype());
  if (!convert) return Fn(node, inputs, outputs);
  Tensors in(inputs.size()), out(outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    in[i] = inputs[i].defined() && computed_as_f32(inputs[i].dtype()) ? inputs[i].cast(DType::kF32)
                                                                      : inputs[i];
  for (size_t i = 0; i < outputs.size(); ++i)
    out[i] = outputs[i].defined() && computed_as_f32(outputs[i].dtype())
                 ? Tensor(DType::kF32, outputs[i].shape())
                 : outputs[i];
  Fn(node, in, out);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined() || !computed_as_f32(outputs[i].dtype())) continue;
    const Tensor back = out[i].cast(outputs[i].dtype());
    std::memcpy(outputs[i].raw(), back.raw(), back.nbytes());
  }
}

bool has_output(const Tensors& outputs, size_t i) {
  return i < outputs.size() && outputs[i].defined();
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Indices i in [lo, hi) within [0, count) such that 0 <= i * step + offset < limit.
struct Range {
  int64_t lo, hi;
};
Range valid_range(int64_t count, int64_t step, int64_t offset, int64_t limit) {
  const int64_t lo = std::max<int64_t>(0, floor_div(-offset + step - 1, step));
  const int64_t hi = std::min<int64_t>(count, floor_div(limit - 1 - offset, step) + 1);
  return {lo, std::max(lo, hi)};
}

// ---------------------------------------------------------------------------
// Window geometry, normalised to 3 spatial dims (leading dims of size 1).
// ---------------------------------------------------------------------------

struct Geometry {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};  // pads at the begin and end
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};

// Geometry of Conv / pooling: input spatial dims `in`, output `out` (as inferred).
Geometry window_geometry(const Node& node, const Shape& x, const Shape& y, const Shape& kernel) {
  const size_t n = x.size() - 2, off = 3 - n;
  const auto strides = node.attr_ints("strides", std::vector<int64_t>(n, 1));
  const auto dil = node.attr_ints("dilations", std::vector<int64_t>(n, 1));
  const auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  Geometry g;
  for (size_t i = 0; i < n; ++i) {
    const size_t j = i + off;
    g.in[j] = x[i + 2];
    g.out[j] = y[i + 2];
    g.k[j] = kernel[i];
    g.s[j] = strides[i];
    g.d[j] = dil[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t eff = (g.k[j] - 1) * g.d[j] + 1;
      const int64_t total = std::max<int64_t>(0, (g.out[j] - 1) * g.s[j] + eff - g.in[j]);
      g.pb[j] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pe[j] = total - g.pb[j];
    } else if (auto_pad != "VALID") {
      g.pb[j] = pads[i];
      g.pe[j] = pads[i + n];
    }
  }
  return g;
}

// ---------------------------------------------------------------------------
// Conv: direct loop nest. For each output plane, every (input channel, tap)
// adds w * shifted input rows; the innermost loop runs along a contiguous
// output row, and its valid range is computed up front (no bounds checks).
// ---------------------------------------------------------------------------

void conv_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  const Tensor& w = inputs[1];
  Tensor& y = outputs[0];
  const Shape kernel(w.shape().begin() + 2, w.shape().end());
  const Geometry g = window_geometry(node, x.shape(), y.shape(), kernel);
  const int64_t batch = x.dim(0), c_in = x.dim(1), m_out = w.dim(0);
  const int64_t group = node.attr_int("group", 1);
  const int64_t cg = c_in / group, mg = m_out / group;
  const int64_t in_size = g.in_size(), out_size = g.out_size(), k_size = g.k_size();
  const float* xd = x.data<float>();
  const float* wd = w.data<float>();
  const float* bd = inputs.size() > 2 && inputs[2].defined() ? inputs[2].data<float>() : nullptr;
  float* yd = y.data<float>();
  // Each output plane accumulates in double: the oracle should be more accurate
  // than any fast kernel it checks, whatever the reduction length.
  std::vector<double> plane(static_cast<size_t>(out_size));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t m = 0; m < m_out; ++m) {
      const int64_t grp = m / mg;
      double* yp = plane.data();
      std::fill(yp, yp + out_size, bd ? static_cast<double>(bd[m]) : 0.0);
      for (int64_t c = 0; c < cg; ++c) {
        const float* xp = xd + (n * c_in + grp * cg + c) * in_size;
        const float* wp = wd + (m * cg + c) * k_size;
        for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
          const Range r0 = valid_range(g.out[0], g.s[0], k0 * g.d[0] - g.pb[0], g.in[0]);
          for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
            const Range r1 = valid_range(g.out[1], g.s[1], k1 * g.d[1] - g.pb[1], g.in[1]);
            for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
              const double wv = wp[(k0 * g.k[1] + k1) * g.k[2] + k2];
              const int64_t off2 = k2 * g.d[2] - g.pb[2];
              const Range r2 = valid_range(g.out[2], g.s[2], off2, g.in[2]);
              for (int64_t o0 = r0.lo; o0 < r0.hi; ++o0) {
                const int64_t i0 = o0 * g.s[0] + k0 * g.d[0] - g.pb[0];
                for (int64_t o1 = r1.lo; o1 < r1.hi; ++o1) {
                  const int64_t i1 = o1 * g.s[1] + k1 * g.d[1] - g.pb[1];
                  const int64_t xb = (i0 * g.in[1] + i1) * g.in[2] + off2;
                  double* yr = yp + (o0 * g.out[1] + o1) * g.out[2];
                  if (g.s[2] == 1) {  // the common case, kept separate so it vectorises
                    for (int64_t o2 = r2.lo; o2 < r2.hi; ++o2)
                      yr[o2] += wv * static_cast<double>(xp[xb + o2]);
                  } else {
                    const int64_t s2 = g.s[2];
                    for (int64_t o2 = r2.lo; o2 < r2.hi; ++o2)
                      yr[o2] += wv * static_cast<double>(xp[xb + o2 * s2]);
                  }
                }
              }
            }
          }
        }
      }
      float* out = yd + (n * m_out + m) * out_size;
      for (int64_t i = 0; i < out_size; ++i) out[i] = static_cast<float>(yp[i]);
    }
  }
}

// ---------------------------------------------------------------------------
// ConvTranspose: the adjoint scatter of Conv. Input position i with tap k lands
// on output position i * stride + k * dilation - pad_begin.
// ---------------------------------------------------------------------------

void conv_transpose_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  const Tensor& w = inputs[1];
  Tensor& y = outputs[0];
  const size_t n_sp = x.shape().size() - 2, off = 3 - n_sp;
  const int64_t batch = x.dim(0), c_in = x.dim(1), m_out = y.dim(1);
  const int64_t group = node.attr_int("group", 1);
  const int64_t cg = c_in / group, mg = m_out / group;
  Geometry g;
  const auto strides = node.attr_ints("strides", std::vector<int64_t>(n_sp, 1));
  const auto dil = node.attr_ints("dilations", std::vector<int64_t>(n_sp, 1));
  const auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * n_sp, 0));
  const auto out_pad = node.attr_ints("output_padding", std::vector<int64_t>(n_sp, 0));
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < n_sp; ++i) {
    const size_t j = i + off;
    g.in[j] = x.dim(static_cast<int>(i + 2));
    g.out[j] = y.dim(static_cast<int>(i + 2));
    g.k[j] = w.dim(static_cast<int>(i + 2));
    g.s[j] = strides[i];
    g.d[j] = dil[i];
    if (node.has_attr("output_shape") || same) {
      // ONNX: total = s * (in - 1) + output_padding + eff_kernel - out; SAME_UPPER puts
      // floor(total / 2) at the begin, every other mode puts the larger half there.
      const int64_t total =
          g.s[j] * (g.in[j] - 1) + out_pad[i] + (g.k[j] - 1) * g.d[j] + 1 - g.out[j];
      g.pb[j] = auto_pad == "SAME_UPPER" ? floor_div(total, 2) : total - floor_div(total, 2);
    } else if (auto_pad != "VALID") {
      g.pb[j] = pads[i];
    }
  }
  const int64_t in_size = g.in_size(), out_size = g.out_size(), k_size = g.k_size();
  const float* xd = x.data<float>();
  const float* wd = w.data<float>();
  const float* bd = inputs.size() > 2 && inputs[2].defined() ? inputs[2].data<float>() : nullptr;
  float* yd = y.data<float>();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t m = 0; m < m_out; ++m) {
      const int64_t grp = m / mg, mo = m % mg;
      float* yp = yd + (n * m_out + m) * out_size;
      std::fill(yp, yp + out_size, bd ? bd[m] : 0.0f);
      for (int64_t c = 0; c < cg; ++c) {
        const int64_t ci = grp * cg + c;
        const float* xp = xd + (n * c_in + ci) * in_size;
        const float* wp = wd + (ci * mg + mo) * k_size;
        for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
          const Range r0 = valid_range(g.in[0], g.s[0], k0 * g.d[0] - g.pb[0], g.out[0]);
          for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
            const Range r1 = valid_range(g.in[1], g.s[1], k1 * g.d[1] - g.pb[1], g.out[1]);
            for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
              const float wv = wp[(k0 * g.k[1] + k1) * g.k[2] + k2];
              const int64_t off2 = k2 * g.d[2] - g.pb[2];
              const Range r2 = valid_range(g.in[2], g.s[2], off2, g.out[2]);
              for (int64_t i0 = r0.lo; i0 < r0.hi; ++i0) {
                const int64_t o0 = i0 * g.s[0] + k0 * g.d[0] - g.pb[0];
                for (int64_t i1 = r1.lo; i1 < r1.hi; ++i1) {
                  const int64_t o1 = i1 * g.s[1] + k1 * g.d[1] - g.pb[1];
                  const float* xr = xp + (i0 * g.in[1] + i1) * g.in[2];
                  const int64_t yb = (o0 * g.out[1] + o1) * g.out[2] + off2;
                  for (int64_t i2 = r2.lo; i2 < r2.hi; ++i2) yp[yb + i2 * g.s[2]] += wv * xr[i2];
                }
              }
            }
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// BatchNormalization (inference): y = (x - mean) / sqrt(var + eps) * scale + B.
// ---------------------------------------------------------------------------

void batch_norm_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  const float eps = node.attr_float("epsilon", 1e-5f);
  const float* scale = inputs[1].data<float>();
  const float* bias = inputs[2].data<float>();
  const float* mean = inputs[3].data<float>();
  const float* var = inputs[4].data<float>();
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t inner = channels ? x.numel() / (batch * channels) : 0;
  const float* xd = x.data<float>();
  float* yd = outputs[0].data<float>();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const double a = scale[c] / std::sqrt(static_cast<double>(var[c]) + eps);
      const float mul = static_cast<float>(a);
      const float add = static_cast<float>(bias[c] - mean[c] * a);
      const float* xp = xd + (n * channels + c) * inner;
      float* yp = yd + (n * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) yp[i] = xp[i] * mul + add;
    }
  }
}

// ---------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------

void max_pool_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  Tensor& y = outputs[0];
  const Geometry g =
      window_geometry(node, x.shape(), y.shape(), node.attr_ints("kernel_shape", {}));
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  const bool column_major = node.attr_int("storage_order", 0) != 0;
  int64_t* idx = has_output(outputs, 1) ? outputs[1].data<int64_t>() : nullptr;
  const float* xd = x.data<float>();
  float* yd = y.data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = xd + p * in_size;
    for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t b0 = -1, b1 = -1, b2 = -1;
          for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
            const int64_t i0 = o0 * g.s[0] + k0 * g.d[0] - g.pb[0];
            if (i0 < 0 || i0 >= g.in[0]) continue;
            for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
              const int64_t i1 = o1 * g.s[1] + k1 * g.d[1] - g.pb[1];
              if (i1 < 0 || i1 >= g.in[1]) continue;
              for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                const int64_t i2 = o2 * g.s[2] + k2 * g.d[2] - g.pb[2];
                if (i2 < 0 || i2 >= g.in[2]) continue;
                const float v = xp[(i0 * g.in[1] + i1) * g.in[2] + i2];
                if (b0 < 0 || v > best || (std::isnan(v) && !std::isnan(best))) {
                  best = v;
                  b0 = i0, b1 = i1, b2 = i2;
                }
              }
            }
          }
          const int64_t o = (o0 * g.out[1] + o1) * g.out[2] + o2;
          yd[p * out_size + o] = best;
          if (idx) {
            // Flat index into the input; storage_order=1 makes the spatial part column-major.
            const int64_t sp = column_major ? b2 * g.in[1] * g.in[0] + b1 * g.in[0] + b0
                                            : (b0 * g.in[1] + b1) * g.in[2] + b2;
            idx[p * out_size + o] = b0 < 0 ? -1 : p * in_size + sp;
          }
        }
  }
}

void average_pool_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  Tensor& y = outputs[0];
  const Geometry g =
      window_geometry(node, x.shape(), y.shape(), node.attr_ints("kernel_shape", {}));
  const bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t in_size = g.in_size(), out_size = g.out_size();
  const float* xd = x.data<float>();
  float* yd = y.data<float>();
  // Taps of a window along one dim: those inside the input, and (count_include_pad) those
  // inside the padded input.
  auto taps = [&](int dim, int64_t o, bool padded) {
    int64_t count = 0;
    for (int64_t k = 0; k < g.k[dim]; ++k) {
      const int64_t i = o * g.s[dim] + k * g.d[dim] - g.pb[dim];
      const int64_t lo = padded ? -g.pb[dim] : 0, hi = padded ? g.in[dim] + g.pe[dim] : g.in[dim];
      count += i >= lo && i < hi;
    }
    return count;
  };
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = xd + p * in_size;
    for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
          float sum = 0.0f;
          for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
            const int64_t i0 = o0 * g.s[0] + k0 * g.d[0] - g.pb[0];
            if (i0 < 0 || i0 >= g.in[0]) continue;
            for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
              const int64_t i1 = o1 * g.s[1] + k1 * g.d[1] - g.pb[1];
              if (i1 < 0 || i1 >= g.in[1]) continue;
              for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                const int64_t i2 = o2 * g.s[2] + k2 * g.d[2] - g.pb[2];
                if (i2 < 0 || i2 >= g.in[2]) continue;
                sum += xp[(i0 * g.in[1] + i1) * g.in[2] + i2];
              }
            }
          }
          const int64_t count =
              taps(0, o0, include_pad) * taps(1, o1, include_pad) * taps(2, o2, include_pad);
          yd[p * out_size + (o0 * g.out[1] + o1) * g.out[2] + o2] =
              count > 0 ? sum / static_cast<float>(count) : 0.0f;
        }
  }
}

template <bool kMax>
void global_pool_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t inner = planes ? x.numel() / planes : 0;
  const float* xd = x.data<float>();
  float* yd = outputs[0].data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = xd + p * inner;
    if (kMax) {
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < inner; ++i)
        if (xp[i] > best || std::isnan(xp[i])) best = xp[i];
      yd[p] = best;
    } else {
      double sum = 0;
      for (int64_t i = 0; i < inner; ++i) sum += xp[i];
      yd[p] = inner ? static_cast<float>(sum / static_cast<double>(inner)) : 0.0f;
    }
  }
}

// LRN: y = x / (bias + alpha / size * sum of x^2 over the channel window) ^ beta.
void lrn_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  const float alpha = node.attr_float("alpha", 1e-4f);
  const float beta = node.attr_float("beta", 0.75f);
  const float bias = node.attr_float("bias", 1.0f);
  const int64_t size = node.attr_int("size", 1);
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t inner = channels ? x.numel() / (batch * channels) : 0;
  const int64_t before = (size - 1) / 2, after = size - 1 - before;  // floor, ceil of (size-1)/2
  const float* xd = x.data<float>();
  float* yd = outputs[0].data<float>();
  std::vector<float> sq(static_cast<size_t>(inner));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      std::fill(sq.begin(), sq.end(), 0.0f);
      for (int64_t j = std::max<int64_t>(0, c - before); j <= std::min(channels - 1, c + after);
           ++j) {
        const float* xj = xd + (n * channels + j) * inner;
        for (int64_t i = 0; i < inner; ++i) sq[static_cast<size_t>(i)] += xj[i] * xj[i];
      }
      const float* xc = xd + (n * channels + c) * inner;
      float* yc = yd + (n * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i)
        yc[i] =
            xc[i] /
            std::pow(bias + alpha / static_cast<float>(size) * sq[static_cast<size_t>(i)], beta);
    }
}

// ---------------------------------------------------------------------------
// Gemm, MatMul
// ---------------------------------------------------------------------------

void gemm_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& a = inputs[0];
  const Tensor& b = inputs[1];
  Tensor& y = outputs[0];
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  const int64_t m = y.dim(0), n = y.dim(1), k = ta ? a.dim(0) : a.dim(1);
  const float* ad = a.data<float>();
  const float* bd = b.data<float>();
  float* yd = y.data<float>();
  std::vector<double> acc(static_cast<size_t>(n));  // double accumulation, as in Conv
  for (int64_t i = 0; i < m; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0);
    if (tb) {  // B is [N, K]: dot products along contiguous rows
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int64_t p = 0; p < k; ++p)
          s += static_cast<double>(ta ? ad[p * m + i] : ad[i * k + p]) * bd[j * k + p];
        acc[static_cast<size_t>(j)] = s;
      }
    } else {  // B is [K, N]: axpy of B's rows
      for (int64_t p = 0; p < k; ++p) {
        const double av = ta ? ad[p * m + i] : ad[i * k + p];
        const float* br = bd + p * n;
        for (int64_t j = 0; j < n; ++j) acc[static_cast<size_t>(j)] += av * br[j];
      }
    }
    for (int64_t j = 0; j < n; ++j)
      yd[i * n + j] = static_cast<float>(alpha * acc[static_cast<size_t>(j)]);
  }
  if (inputs.size() > 2 && inputs[2].defined()) {
    const Tensor& c = inputs[2];
    const float* cd = c.data<float>();
    // Unidirectional broadcast of C (rank <= 2) to [M, N].
    const int64_t cr = c.rank() == 2 ? c.dim(0) : 1;
    const int64_t cc = c.rank() >= 1 ? c.dim(-1) : 1;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        yd[i * n + j] += beta * cd[(cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : j)];
  }
}

// Einsum: every output element the sum, in double, over the letters it does not keep, of
// the product of the operands' elements those subscripts name.
void einsum_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  const shape_math::EinsumSpec s = shape_math::parse_einsum(node, shapes);
  std::string letters = s.output;  // kept first, summed after
  for (const auto& [c, d] : s.sizes)
    if (letters.find(c) == std::string::npos) letters += c;
  const size_t nl = letters.size(), kept = s.output.size();
  std::vector<int64_t> dims(nl);
  for (size_t i = 0; i < nl; ++i) dims[i] = s.size_of(letters[i]);
  // Each operand's element stride per letter (0 where it lacks the letter).
  std::vector<std::vector<int64_t>> strides(inputs.size(), std::vector<int64_t>(nl, 0));
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string& t = s.inputs[k];
    int64_t st = 1;
    for (size_t j = t.size(); j-- > 0;) {
      strides[k][letters.find(t[j])] = st;
      st *= shapes[k][j];
    }
  }
  int64_t inner = 1;
  for (size_t i = kept; i < nl; ++i) inner *= dims[i];
  float* y = outputs[0].data<float>();
  std::vector<int64_t> idx(nl, 0);
  for (int64_t o = 0, n = outputs[0].numel(); o < n; ++o) {
    // idx[0..kept) is output element o's index (row-major); the rest run over the sums.
    int64_t rest = o;
    for (size_t i = kept; i-- > 0;) {
      idx[i] = rest % dims[i];
      rest /= dims[i];
    }
    double sum = 0;
    for (int64_t r = 0; r < inner; ++r) {
      int64_t q = r;
      for (size_t i = nl; i-- > kept;) {
        idx[i] = q % dims[i];
        q /= dims[i];
      }
      double p = 1;
      for (size_t k = 0; k < inputs.size(); ++k) {
        int64_t off = 0;
        for (size_t i = 0; i < nl; ++i) off += idx[i] * strides[k][i];
        p *= inputs[k].data<float>()[off];
      }
      sum += p;
    }
    y[o] = static_cast<float>(sum);
  }
}

void matmul_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  Shape as = inputs[0].shape(), bs = inputs[1].shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const size_t ra = as.size() - 2, rb = bs.size() - 2, nb = std::max(ra, rb);
  // Batch dims right-aligned, with strides 0 where a side broadcasts.
  std::vector<int64_t> dims(nb), sa(nb, 0), sb(nb, 0);
  int64_t stride_a = m * k, stride_b = k * n;
  for (size_t t = nb; t-- > 0;) {
    const int64_t da = t + ra >= nb ? as[t + ra - nb] : 1;
    const int64_t db = t + rb >= nb ? bs[t + rb - nb] : 1;
    dims[t] = std::max(da, db);
    if (da != 1) sa[t] = stride_a;
    if (db != 1) sb[t] = stride_b;
    stride_a *= da;
    stride_b *= db;
  }
  int64_t batches = 1;
  for (int64_t d : dims) batches *= d;
  const float* ad = inputs[0].data<float>();
  const float* bd = inputs[1].data<float>();
  float* yd = outputs[0].data<float>();
  std::vector<int64_t> index(nb, 0);
  std::vector<double> acc(static_cast<size_t>(n));
  for (int64_t bt = 0; bt < batches; ++bt) {
    int64_t oa = 0, ob = 0;
    for (size_t t = 0; t < nb; ++t) oa += index[t] * sa[t], ob += index[t] * sb[t];
    const float* ap = ad + oa;
    const float* bp = bd + ob;
    float* yp = yd + bt * m * n;
    for (int64_t i = 0; i < m; ++i) {
      std::fill(acc.begin(), acc.end(), 0.0);  // double accumulation, as in Conv
      for (int64_t p = 0; p < k; ++p) {
        const double av = ap[i * k + p];
        const float* br = bp + p * n;
        for (int64_t j = 0; j < n; ++j) acc[static_cast<size_t>(j)] += av * br[j];
      }
      for (int64_t j = 0; j < n; ++j)
        yp[i * n + j] = static_cast<float>(acc[static_cast<size_t>(j)]);
    }
    for (size_t t = nb; t-- > 0;) {
      if (++index[t] < dims[t]) break;
      index[t] = 0;
    }
  }
}

// ---------------------------------------------------------------------------
// Softmax / LogSoftmax along one axis (max-subtracted).
// ---------------------------------------------------------------------------

template <bool kLog>
void softmax_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  int64_t axis = node.attr_int("axis", -1);
  if (axis < 0) axis += x.rank();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= x.dim(i);
  for (int i = static_cast<int>(axis) + 1; i < x.rank(); ++i) inner *= x.dim(i);
  const int64_t len = x.dim(static_cast<int>(axis));
  const float* xd = x.data<float>();
  float* yd = outputs[0].data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      const float* xp = xd + o * len * inner + in;
      float* yp = yd + o * len * inner + in;
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < len; ++i) mx = std::max(mx, xp[i * inner]);
      double sum = 0;
      for (int64_t i = 0; i < len; ++i) sum += std::exp(static_cast<double>(xp[i * inner] - mx));
      if (kLog) {
        const double lse = std::log(sum);
        for (int64_t i = 0; i < len; ++i)
          yp[i * inner] = static_cast<float>(static_cast<double>(xp[i * inner] - mx) - lse);
      } else {
        for (int64_t i = 0; i < len; ++i)
          yp[i * inner] =
              static_cast<float>(std::exp(static_cast<double>(xp[i * inner] - mx)) / sum);
      }
    }
}

// ---------------------------------------------------------------------------
// Selection along one axis: Hardmax, ArgMax, ArgMin, TopK
// ---------------------------------------------------------------------------

// Strides of one axis: outer blocks, the axis length, the inner (contiguous) extent.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};
AxisView axis_view(const Shape& s, int axis) {
  AxisView v;
  for (int i = 0; i < axis; ++i) v.outer *= s[static_cast<size_t>(i)];
  v.len = s[static_cast<size_t>(axis)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) v.inner *= s[i];
  return v;
}

int normalized_axis(const Node& node, int64_t fallback, int rank) {
  const int64_t a = node.attr_int("axis", fallback);
  return static_cast<int>(a < 0 ? a + rank : a);
}

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}

// Whether a is a strictly better maximum (kMax) or minimum than b. A NaN beats every
// number either way, as NumPy's and PyTorch's argmax and argmin treat it.
template <class T, bool kMax>
bool beats(T a, T b) {
  if (is_nan(a) || is_nan(b)) return is_nan(a) && !is_nan(b);
  return kMax ? a > b : a < b;
}

template <class T>
bool ties(T a, T b) {
  return is_nan(a) ? is_nan(b) : a == b;  // NaN == NaN here
}

// Hardmax: 1 at the first maximum along the axis (a NaN counts as the maximum, as in
// ArgMax), 0 elsewhere.
void hardmax_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  const AxisView v = axis_view(x.shape(), normalized_axis(node, -1, x.rank()));
  const float* xd = x.data<float>();
  float* yd = outputs[0].data<float>();  // zero-filled
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t in = 0; in < v.inner; ++in) {
      const int64_t base = o * v.len * v.inner + in;
      int64_t best = 0;
      for (int64_t i = 1; i < v.len; ++i)
        if (beats<float, true>(xd[base + i * v.inner], xd[base + best * v.inner])) best = i;
      if (v.len > 0) yd[base + best * v.inner] = 1.0f;
    }
}

// ArgMax, ArgMin: the first (or, select_last_index, the last) extreme along the axis.
// f16, bf16, s8 and u8 are compared as f32 (exactly); s32 and s64 as themselves.
template <class T, bool kMax>
void arg_typed(const Node& node, const Tensor& x, Tensor& y) {
  const AxisView v = axis_view(x.shape(), normalized_axis(node, 0, x.rank()));
  const bool last = node.attr_int("select_last_index", 0) != 0;
  const T* xd = x.data<T>();
  int64_t* yd = y.data<int64_t>();
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t in = 0; in < v.inner; ++in) {
      const T* p = xd + o * v.len * v.inner + in;
      int64_t best = 0;
      for (int64_t i = 1; i < v.len; ++i) {
        const T a = p[i * v.inner], b = p[best * v.inner];
        if (beats<T, kMax>(a, b) || (last && ties(a, b))) best = i;
      }
      yd[o * v.inner + in] = best;
    }
}

template <bool kMax>
void arg_kernel(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  switch (x.dtype()) {
    case DType::kF32:
      return arg_typed<float, kMax>(node, x, outputs[0]);
    case DType::kS32:
      return arg_typed<int32_t, kMax>(node, x, outputs[0]);
    case DType::kS64:
      return arg_typed<int64_t, kMax>(node, x, outputs[0]);
    default:
      fail(ErrorKind::kInternal, node.label(), ": unexpected dtype ", dtype_name(x.dtype()));
  }
}

// TopK: per row along the axis, a stable sort of the indices by value (descending for
// largest, ascending otherwise; a NaN is larger than every number, as in PyTorch), then
// the first K. Equal values keep their order: the lower index comes first. The output is
// sorted also when sorted=0, which leaves the order open.
template <class T>
bool less_nan_largest(T a, T b) {
  if (is_nan(a)) return false;
  return is_nan(b) || a < b;
}

template <class T>
void topk_typed(const Node& node, const Tensor& x, Tensor& values, Tensor& indices) {
  const int axis = normalized_axis(node, -1, x.rank());
  const AxisView v = axis_view(x.shape(), axis);
  const int64_t k = values.dim(axis);
  const bool largest = node.attr_int("largest", 1) != 0;
  const T* xd = x.data<T>();
  T* vd = values.data<T>();
  int64_t* id = indices.defined() ? indices.data<int64_t>() : nullptr;
  std::vector<int64_t> order(static_cast<size_t>(v.len));
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t in = 0; in < v.inner; ++in) {
      const T* p = xd + o * v.len * v.inner + in;
      for (int64_t i = 0; i < v.len; ++i) order[static_cast<size_t>(i)] = i;
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
        const T a = p[i * v.inner], b = p[j * v.inner];
        return largest ? less_nan_largest(b, a) : less_nan_largest(a, b);
      });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t out = (o * k + j) * v.inner + in;
        vd[out] = p[order[static_cast<size_t>(j)] * v.inner];
        if (id) id[out] = order[static_cast<size_t>(j)];
      }
    }
}

void topk_kernel(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  Tensor no_indices;
  Tensor& indices = has_output(outputs, 1) ? outputs[1] : no_indices;
  switch (x.dtype()) {
    case DType::kF32:
      return topk_typed<float>(node, x, outputs[0], indices);
    case DType::kS32:
      return topk_typed<int32_t>(node, x, outputs[0], indices);
    case DType::kS64:
      return topk_typed<int64_t>(node, x, outputs[0], indices);
    default:
      fail(ErrorKind::kInternal, node.label(), ": unexpected dtype ", dtype_name(x.dtype()));
  }
}

// ---------------------------------------------------------------------------
// Normalisations, with statistics in double: InstanceNormalization (per sample and
// channel over the spatial dims), LayerNormalization (over the trailing dims from
// `axis`), MeanVarianceNormalization (over `axes`).
// ---------------------------------------------------------------------------

void instance_norm_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  const double eps = node.attr_float("epsilon", 1e-5f);
  const float* scale = inputs[1].data<float>();
  const float* bias = inputs[2].data<float>();
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t inner = batch * channels != 0 ? x.numel() / (batch * channels) : 0;
  const float* xd = x.data<float>();
  float* yd = outputs[0].data<float>();
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      const float* xp = xd + (n * channels + c) * inner;
      float* yp = yd + (n * channels + c) * inner;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < inner; ++i) mean += xp[i];
      mean /= static_cast<double>(inner);
      for (int64_t i = 0; i < inner; ++i) var += (xp[i] - mean) * (xp[i] - mean);
      var /= static_cast<double>(inner);
      const double a = scale[c] / std::sqrt(var + eps);
      for (int64_t i = 0; i < inner; ++i) yp[i] = static_cast<float>((xp[i] - mean) * a + bias[c]);
    }
}

// `t` broadcast (unidirectionally) to `shape`, as a flat vector.
std::vector<double> broadcast_values(const Tensor& t, const Shape& shape) {
  std::vector<double> out(static_cast<size_t>(shape_numel(shape)));
  const BroadcastPlan plan = make_broadcast_plan(shape, {t.shape()});
  const int64_t s = plan.inner_stride(0);
  const float* p = t.data<float>();
  for_each_broadcast_row(plan, [&](int64_t o, const int64_t* off, int64_t len) {
    for (int64_t i = 0; i < len; ++i) out[static_cast<size_t>(o + i)] = p[off[0] + i * s];
  });
  return out;
}

void layer_norm_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  const int axis = normalized_axis(node, -1, x.rank());
  const double eps = node.attr_float("epsilon", 1e-5f);
  const Shape normalized(x.shape().begin() + axis, x.shape().end());
  const int64_t inner = shape_numel(normalized);
  const int64_t outer = inner ? x.numel() / inner : 0;
  const std::vector<double> scale = broadcast_values(inputs[1], normalized);
  const std::vector<double> bias = inputs.size() > 2 && inputs[2].defined()
                                       ? broadcast_values(inputs[2], normalized)
                                       : std::vector<double>(static_cast<size_t>(inner), 0.0);
  const float* xd = x.data<float>();
  float* yd = outputs[0].data<float>();
  float* mean_out = has_output(outputs, 1) ? outputs[1].data<float>() : nullptr;
  float* inv_out = has_output(outputs, 2) ? outputs[2].data<float>() : nullptr;
  for (int64_t o = 0; o < outer; ++o) {
    const float* xp = xd + o * inner;
    float* yp = yd + o * inner;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i) mean += xp[i];
    mean /= static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) var += (xp[i] - mean) * (xp[i] - mean);
    var /= static_cast<double>(inner);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < inner; ++i) {
      const size_t j = static_cast<size_t>(i);
      yp[i] = static_cast<float>((xp[i] - mean) * inv * scale[j] + bias[j]);
    }
    if (mean_out) mean_out[o] = static_cast<float>(mean);
    if (inv_out) inv_out[o] = static_cast<float>(inv);
  }
}

// ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9); the variance is
// computed here as E[(x - E[x])^2], the same value without the cancellation.
void mvn_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  const size_t r = x.shape().size();
  std::vector<bool> reduced(r, false);
  for (int64_t a : node.attr_ints("axes", {0, 2, 3}))
    reduced[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(r) : a)] = true;
  // The group of an element is its offset among the kept dims.
  std::vector<int64_t> gstride(r, 0);
  int64_t groups = 1;
  for (size_t i = r; i-- > 0;)
    if (!reduced[i]) {
      gstride[i] = groups;
      groups *= x.shape()[i];
    }
  const size_t n = static_cast<size_t>(x.numel());
  std::vector<size_t> group(n);
  std::vector<int64_t> index(r, 0);
  int64_t g = 0;
  for (size_t i = 0; i < n; ++i) {
    group[i] = static_cast<size_t>(g);
    for (size_t t = r; t-- > 0;) {  // odometer over x's dims
      g += gstride[t];
      if (++index[t] < x.shape()[t]) break;
      g -= gstride[t] * index[t];
      index[t] = 0;
    }
  }
  const double count = groups ? static_cast<double>(n) / static_cast<double>(groups) : 0.0;
  const float* xd = x.data<float>();
  std::vector<double> mean(static_cast<size_t>(groups), 0.0), var(static_cast<size_t>(groups), 0.0);
  for (size_t i = 0; i < n; ++i) mean[group[i]] += xd[i];
  for (double& m : mean) m /= count;
  for (size_t i = 0; i < n; ++i)
    var[group[i]] += (xd[i] - mean[group[i]]) * (xd[i] - mean[group[i]]);
  float* yd = outputs[0].data<float>();
  for (size_t i = 0; i < n; ++i) {
    const double stddev = std::sqrt(var[group[i]] / count);
    yd[i] = static_cast<float>((xd[i] - mean[group[i]]) / (stddev + 1e-9));
  }
}

// ---------------------------------------------------------------------------
// Resize: each output coordinate maps to a source coordinate per axis (the
// coordinate_transformation_mode), which selects taps: one input index for nearest,
// two for linear, four for cubic, clamped to the input (edge padding) or, with
// exclude_outside, dropped and the rest renormalised. An output element is the sum over
// the taps of all axes of the product of their weights times the input element, in
// double: the N-linear (N-cubic) interpolation of the ONNX spec.
// ---------------------------------------------------------------------------

struct Tap {
  int64_t index;
  double weight;
};

// Keys' cubic convolution kernel with coefficient a, at distance t.
double cubic_weight(double t, double a) {
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

struct ResizeAxis {
  int64_t in = 1;
  double scale = 1;    // output / input, as given or from sizes
  double resized = 1;  // the "length_resized" of the spec: scale * in, or the given size
  double roi_start = 0, roi_end = 1;
};

struct ResizeParams {
  std::string mode, transform, nearest;
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false;
};

// The source coordinate of output index x along one axis; nullopt outside the crop
// (tf_crop_and_resize extrapolates there).
std::optional<double> source_coordinate(const ResizeParams& p, const ResizeAxis& a, int64_t xo) {
  const double x = static_cast<double>(xo), in = static_cast<double>(a.in);
  const std::string& m = p.transform;
  if (m == "half_pixel") return (x + 0.5) / a.scale - 0.5;
  if (m == "pytorch_half_pixel") return a.resized > 1 ? (x + 0.5) / a.scale - 0.5 : 0.0;
  if (m == "align_corners") return a.resized == 1 ? 0.0 : x * (in - 1) / (a.resized - 1);
  if (m == "asymmetric") return x / a.scale;
  if (m == "tf_half_pixel_for_nn") return (x + 0.5) / a.scale;
  // tf_crop_and_resize
  const double c = a.resized > 1 ? a.roi_start * (in - 1) +
                                       x * (a.roi_end - a.roi_start) * (in - 1) / (a.resized - 1)
                                 : 0.5 * (a.roi_start + a.roi_end) * (in - 1);
  if (c < 0 || c > in - 1) return std::nullopt;
  return c;
}

// Taps of one output index; empty means extrapolate.
std::vector<Tap> resize_taps(const ResizeParams& p, const ResizeAxis& a, int64_t xo) {
  const std::optional<double> src = source_coordinate(p, a, xo);
  if (!src) return {};
  const double x = *src;
  const double fl = std::floor(x), ratio = x - fl;
  const int64_t base = static_cast<int64_t>(fl);
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, a.in - 1); };
  if (p.mode == "nearest") {
    bool up = ratio > 0;  // ceil
    if (ratio == 0 || p.nearest == "floor")
      up = false;
    else if (p.nearest == "round_prefer_floor")
      up = ratio > 0.5;
    else if (p.nearest == "round_prefer_ceil")
      up = ratio >= 0.5;
    return {{clamp(base + (up ? 1 : 0)), 1.0}};
  }
  std::vector<Tap> taps;
  if (p.mode == "linear") {
    taps = {{base, 1 - ratio}, {base + 1, ratio}};
  } else {
    for (int64_t k = -1; k <= 2; ++k)
      taps.push_back({base + k, cubic_weight(x - static_cast<double>(base + k), p.cubic_a)});
  }
  if (p.exclude_outside) {
    double sum = 0;
    for (Tap& t : taps) {
      if (t.index < 0 || t.index >= a.in) t.weight = 0;
      sum += t.weight;
    }
    for (Tap& t : taps) t.weight /= sum;
  }
  std::vector<Tap> kept;
  for (const Tap& t : taps)
    if (t.weight != 0) kept.push_back({clamp(t.index), t.weight});
  return kept;
}

void resize_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  Tensor& y = outputs[0];
  const int r = x.rank();
  ResizeParams p;
  p.mode = node.attr_string("mode", "nearest");
  p.transform = node.attr_string("coordinate_transformation_mode", "half_pixel");
  p.nearest = node.attr_string("nearest_mode", "round_prefer_floor");
  p.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  p.extrapolation = node.attr_float("extrapolation_value", 0.0f);
  p.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  // Axes that scales / sizes / roi cover (opset 18), else all.
  std::vector<int64_t> axes = node.attr_ints("axes", {});
  if (!node.has_attr("axes"))
    for (int d = 0; d < r; ++d) axes.push_back(d);
  for (int64_t& a : axes) a = a < 0 ? a + r : a;
  auto given = [&](size_t i) {
    return inputs.size() > i && inputs[i].defined() && inputs[i].numel() > 0;
  };
  std::vector<ResizeAxis> ax(static_cast<size_t>(r));
  for (int d = 0; d < r; ++d) {
    ResizeAxis& a = ax[static_cast<size_t>(d)];
    a.in = x.dim(d);
    a.scale = 1;
    a.resized = static_cast<double>(a.in);
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    ResizeAxis& a = ax[static_cast<size_t>(axes[i])];
    if (given(2)) {
      a.scale = inputs[2].get_as_double(static_cast<int64_t>(i));
      a.resized = a.scale * static_cast<double>(a.in);
    } else {
      a.resized = static_cast<double>(inputs[3].get_as_int64(static_cast<int64_t>(i)));
      a.scale = a.resized / static_cast<double>(a.in);
    }
    if (given(1)) {
      a.roi_start = inputs[1].get_as_double(static_cast<int64_t>(i));
      a.roi_end = inputs[1].get_as_double(static_cast<int64_t>(i + axes.size()));
    }
  }
  // taps[d][o]: the taps of output index o along axis d.
  std::vector<std::vector<std::vector<Tap>>> taps(static_cast<size_t>(r));
  for (int d = 0; d < r; ++d)
    for (int64_t o = 0; o < y.dim(d); ++o)
      taps[static_cast<size_t>(d)].push_back(resize_taps(p, ax[static_cast<size_t>(d)], o));
  std::vector<int64_t> xstride(static_cast<size_t>(r), 1);
  for (int d = r - 2; d >= 0; --d)
    xstride[static_cast<size_t>(d)] = xstride[static_cast<size_t>(d) + 1] * x.dim(d + 1);
  const float* xd = x.data<float>();
  float* yd = y.data<float>();
  std::vector<size_t> index(static_cast<size_t>(r), 0);  // of the output element
  auto taps_at = [&](size_t d) -> const std::vector<Tap>& { return taps[d][index[d]]; };
  // Sum over the taps of axes d, d + 1, ... of the product of their weights times x.
  auto interpolate = [&](auto&& self, size_t d, int64_t offset) -> double {
    if (d == index.size()) return xd[offset];
    double sum = 0;
    for (const Tap& t : taps_at(d))
      sum += t.weight * self(self, d + 1, offset + t.index * xstride[d]);
    return sum;
  };
  for (int64_t i = 0, n = y.numel(); i < n; ++i) {
    bool outside = false;
    for (size_t d = 0; d < index.size(); ++d) outside |= taps_at(d).empty();
    yd[i] = static_cast<float>(outside ? p.extrapolation : interpolate(interpolate, 0, 0));
    for (size_t d = index.size(); d-- > 0;) {  // odometer over y's dims
      if (++index[d] < taps[d].size()) break;
      index[d] = 0;
    }
  }
}

// ---------------------------------------------------------------------------
// Pad: any dtype, byte copies. Output index o along a dim maps to input o - begin,
// folded back inside by the mode (edge clamps, reflect mirrors, wrap is periodic);
// in constant mode an index outside the input takes the constant.
// ---------------------------------------------------------------------------

int64_t pad_source(int64_t i, int64_t n, int mode) {  // mode 1 reflect, 2 edge, 3 wrap
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case 1: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      int64_t j = i % period;
      if (j < 0) j += period;
      return j < n ? j : period - j;
    }
    case 2:
      return i < 0 ? 0 : n - 1;
    case 3: {
      int64_t j = i % n;
      return j < 0 ? j + n : j;
    }
    default:
      return -1;
  }
}

void pad_kernel(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  Tensor& y = outputs[0];
  const int r = x.rank();
  const std::string mode_name = node.attr_string("mode", "constant");
  const int mode = mode_name == "reflect" ? 1
                   : mode_name == "edge"  ? 2
                   : mode_name == "wrap"  ? 3
                                          : 0;
  std::vector<int64_t> pads = inputs.size() > 1 && inputs[1].defined() ? inputs[1].to_int64_vector()
                                                                       : node.attr_ints("pads", {});
  std::vector<int64_t> begin(static_cast<size_t>(r), 0);
  if (inputs.size() > 3 && inputs[3].defined()) {
    const auto axes = inputs[3].to_int64_vector();
    for (size_t i = 0; i < axes.size(); ++i)
      begin[static_cast<size_t>(axes[i] < 0 ? axes[i] + r : axes[i])] = pads[i];
  } else {
    for (int i = 0; i < r; ++i) begin[static_cast<size_t>(i)] = pads[static_cast<size_t>(i)];
  }
  const size_t es = dtype_size(x.dtype());
  // The constant as one element of x's dtype.
  std::vector<unsigned char> fill(es, 0);
  if (inputs.size() > 2 && inputs[2].defined()) {
    std::memcpy(fill.data(), inputs[2].raw(), es);
  } else if (node.has_attr("value")) {
    Tensor v = Tensor::scalar_f32(node.attr_float("value", 0.0f)).cast(x.dtype());
    std::memcpy(fill.data(), v.raw(), es);
  }
  if (y.numel() == 0) return;
  const auto* xd = static_cast<const unsigned char*>(x.raw());
  auto* yd = static_cast<unsigned char*>(y.raw());
  if (r == 0) {
    std::memcpy(yd, xd, es);
    return;
  }
  std::vector<int64_t> xstride(static_cast<size_t>(r), 1);
  for (int i = r - 2; i >= 0; --i) xstride[static_cast<size_t>(i)] = xstride[i + 1] * x.dim(i + 1);
  const int64_t row = y.dim(r - 1), rows = y.numel() / row, xlast = x.dim(r - 1);
  std::vector<int64_t> index(static_cast<size_t>(r - 1), 0);  // output index of the row
  for (int64_t rw = 0; rw < rows; ++rw) {
    unsigned char* yr = yd + static_cast<size_t>(rw * row) * es;
    int64_t src = 0;
    bool outside = false;
    for (int i = 0; i < r - 1; ++i) {
      const int64_t s =
          pad_source(index[static_cast<size_t>(i)] - begin[static_cast<size_t>(i)], x.dim(i), mode);
      if (s < 0) outside = true;
      src += s * xstride[static_cast<size_t>(i)];
    }
    for (int64_t o = 0; o < row; ++o) {
      const int64_t s =
          outside ? -1 : pad_source(o - begin[static_cast<size_t>(r - 1)], xlast, mode);
      const unsigned char* from = s < 0 ? fill.data() : xd + static_cast<size_t>(src + s) * es;
      std::memcpy(yr + static_cast<size_t>(o) * es, from, es);
    }
    for (int i = r - 2; i >= 0; --i) {
      if (++index[static_cast<size_t>(i)] < y.dim(i)) break;
      index[static_cast<size_t>(i)] = 0;
    }
  }
}

// ---------------------------------------------------------------------------
// Reductions. The reduced axes are recovered from the input and output shapes and
// the attributes; accumulation is in double.
// ---------------------------------------------------------------------------

enum class Reduce { kMean, kSum, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

template <Reduce kOp>
void reduce_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const Tensor& x = inputs[0];
  const int r = x.rank();
  std::vector<int64_t> axes = inputs.size() > 1 && inputs[1].defined() ? inputs[1].to_int64_vector()
                                                                       : node.attr_ints("axes", {});
  const bool noop = node.attr_int("noop_with_empty_axes", 0) != 0;
  std::vector<bool> reduced(static_cast<size_t>(r), axes.empty() && !noop);
  for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + r : a)] = true;
  // Output strides over the input's dims (0 on reduced dims).
  std::vector<int64_t> ostride(static_cast<size_t>(r), 0);
  int64_t s = 1;
  for (int i = r - 1; i >= 0; --i)
    if (!reduced[static_cast<size_t>(i)]) {
      ostride[static_cast<size_t>(i)] = s;
      s *= x.dim(i);
    }
  const int64_t out_n = outputs[0].numel();
  const int64_t count = out_n ? x.numel() / out_n : 0;
  double init = 0;
  if (kOp == Reduce::kMax || kOp == Reduce::kLogSumExp) init = -INFINITY;
  if (kOp == Reduce::kMin) init = INFINITY;
  if (kOp == Reduce::kProd) init = 1;
  std::vector<double> acc(static_cast<size_t>(out_n), init);
  const float* xd = x.data<float>();
  // Visits x in order with the output offset of each element.
  auto walk = [&](auto&& body) {
    std::vector<int64_t> index(static_cast<size_t>(r), 0);
    int64_t o = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      body(static_cast<double>(xd[i]), static_cast<size_t>(o));
      for (int t = r - 1; t >= 0; --t) {
        const size_t tt = static_cast<size_t>(t);
        o += ostride[tt];
        if (++index[tt] < x.dim(t)) break;
        o -= ostride[tt] * index[tt];
        index[tt] = 0;
      }
    }
  };
  if (kOp == Reduce::kLogSumExp) {
    // log(sum(exp(x))) = max + log(sum(exp(x - max))); an infinite max is used as is.
    walk([&](double v, size_t o) { acc[o] = std::max(acc[o], v); });
    const std::vector<double> mx = acc;
    std::fill(acc.begin(), acc.end(), 0.0);
    walk([&](double v, size_t o) { acc[o] += std::exp(std::isinf(mx[o]) ? v : v - mx[o]); });
    for (size_t i = 0; i < acc.size(); ++i)
      acc[i] = std::isinf(mx[i]) ? std::log(acc[i]) : mx[i] + std::log(acc[i]);
  } else {
    walk([&](double v, size_t o) {
      double& a = acc[o];
      switch (kOp) {
        case Reduce::kMax:
          a = (v > a || std::isnan(v)) ? v : a;
          break;
        case Reduce::kMin:
          a = (v < a || std::isnan(v)) ? v : a;
          break;
        case Reduce::kProd:
          a *= v;
          break;
        case Reduce::kL1:
          a += std::fabs(v);
          break;
        case Reduce::kL2:
        case Reduce::kSumSquare:
          a += v * v;
          break;
        default:
          a += v;
          break;
      }
    });
  }
  float* yd = outputs[0].data<float>();
  for (int64_t i = 0; i < out_n; ++i) {
    double a = acc[static_cast<size_t>(i)];
    if (kOp == Reduce::kMean) a = count ? a / static_cast<double>(count) : NAN;
    if (kOp == Reduce::kL2) a = std::sqrt(a);
    if (kOp == Reduce::kLogSum) a = std::log(a);
    yd[i] = static_cast<float>(a);
  }
}

// FusedConv: the reference Conv, then the scalar epilogue per output plane.
void fused_conv_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  conv_f32(node, inputs, outputs);
  const Epilogue e = epilogue_from_attrs(node.attr_string("activation", "none"),
                                         node.attr_floats("activation_params", {}));
  float* y = outputs[0].data<float>();
  const float* r = inputs.size() > 3 && inputs[3].defined() ? inputs[3].data<float>() : nullptr;
  const size_t n = static_cast<size_t>(outputs[0].numel());
  apply_epilogue(Isa::kScalar, e, n, y, 0.f, r);
}

// FusedMatMul: the reference MatMul, then per row + B + R and the scalar epilogue's
// activation.
void fused_matmul_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  matmul_f32(node, {inputs[0], inputs[1]}, outputs);
  const Epilogue e = epilogue_from_attrs(node.attr_string("activation", "none"),
                                         node.attr_floats("activation_params", {}));
  const float* b = inputs.size() > 2 && inputs[2].defined() ? inputs[2].data<float>() : nullptr;
  const float* r = inputs.size() > 3 && inputs[3].defined() ? inputs[3].data<float>() : nullptr;
  float* y = outputs[0].data<float>();
  const int64_t n = inputs[1].dim(1), rows = n ? outputs[0].numel() / n : 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float& v = y[i * n + j];
      if (b) v += b[j];
      if (r) v += r[i * n + j];
    }
  apply_epilogue(Isa::kScalar, e, static_cast<size_t>(outputs[0].numel()), y, 0.f, nullptr);
}

// ChannelAffine: the inputs concatenated along axis 1, y = x * scale[c] + shift[c], then the
// scalar epilogue's activation (BatchNormalization's arithmetic, then the activation's).
void channel_affine_f32(const Node& node, const Tensors& inputs, Tensors& outputs) {
  const size_t xs = inputs.size() - 2;
  const float* scale = inputs[xs].data<float>();
  const float* shift = inputs[xs + 1].data<float>();
  Tensor& y = outputs[0];
  const int64_t batch = y.dim(0), channels = y.dim(1);
  const int64_t inner = channels ? y.numel() / (batch * channels) : 0;
  float* yd = y.data<float>();
  for (int64_t n = 0; n < batch; ++n) {
    int64_t c0 = 0;
    for (size_t k = 0; k < xs; ++k) {
      const int64_t ck = inputs[k].dim(1);
      for (int64_t c = 0; c < ck; ++c) {
        const float* xp = inputs[k].data<float>() + (n * ck + c) * inner;
        float* yp = yd + (n * channels + c0 + c) * inner;
        for (int64_t i = 0; i < inner; ++i) yp[i] = xp[i] * scale[c0 + c] + shift[c0 + c];
      }
      c0 += ck;
    }
  }
  const Epilogue e = epilogue_from_attrs(node.attr_string("activation", "none"),
                                         node.attr_floats("activation_params", {}));
  apply_epilogue(Isa::kScalar, e, static_cast<size_t>(y.numel()), yd, 0.f, nullptr);
}

// Dropout in inference: a copy of the input.
void dropout_kernel(const Node& node, const Tensors& inputs, Tensors& outputs) {
  std::memcpy(outputs[0].raw(), inputs[0].raw(), inputs[0].nbytes());
  if (outputs.size() > 1 && outputs[1].defined() && outputs[1].nbytes() > 0)
    std::memset(outputs[1].raw(), 1, outputs[1].nbytes());  // nothing dropped
}

}  // namespace

void append_nn_kernels(std::vector<KernelEntry>& table) {
  table.push_back({"Conv", in_f32<conv_f32>});
  table.push_back({"FusedConv", in_f32<fused_conv_f32>});
  table.push_back({"ConvTranspose", in_f32<conv_transpose_f32>});
  table.push_back({"BatchNormalization", in_f32<batch_norm_f32>});
  table.push_back({"ChannelAffine", in_f32<channel_affine_f32>});
  table.push_back({"MaxPool", in_f32<max_pool_f32>});
  table.push_back({"AveragePool", in_f32<average_pool_f32>});
  table.push_back({"GlobalAveragePool", in_f32<global_pool_f32<false>>});
  table.push_back({"GlobalMaxPool", in_f32<global_pool_f32<true>>});
  table.push_back({"LRN", in_f32<lrn_f32>});
  table.push_back({"Gemm", in_f32<gemm_f32>});
  table.push_back({"MatMul", in_f32<matmul_f32>});
  table.push_back({"Einsum", in_f32<einsum_f32>});
  table.push_back({"FusedMatMul", in_f32<fused_matmul_f32>});
  table.push_back({"Softmax", in_f32<softmax_f32<false>>});
  table.push_back({"LogSoftmax", in_f32<softmax_f32<true>>});
  table.push_back({"Pad", pad_kernel});
  table.push_back({"ReduceMean", in_f32<reduce_f32<Reduce::kMean>>});
  table.push_back({"ReduceSum", in_f32<reduce_f32<Reduce::kSum>>});
  table.push_back({"ReduceMax", in_f32<reduce_f32<Reduce::kMax>>});
  table.push_back({"ReduceMin", in_f32<reduce_f32<Reduce::kMin>>});
  table.push_back({"ReduceProd", in_f32<reduce_f32<Reduce::kProd>>});
  table.push_back({"ReduceL1", in_f32<reduce_f32<Reduce::kL1>>});
  table.push_back({"ReduceL2", in_f32<reduce_f32<Reduce::kL2>>});
  table.push_back({"ReduceLogSum", in_f32<reduce_f32<Reduce::kLogSum>>});
  table.push_back({"ReduceLogSumExp", in_f32<reduce_f32<Reduce::kLogSumExp>>});
  table.push_back({"ReduceSumSquare", in_f32<reduce_f32<Reduce::kSumSquare>>});
  table.push_back({"Dropout", dropout_kernel});
  table.push_back({"ArgMax", in_f32<arg_kernel<true>>});
  table.push_back({"ArgMin", in_f32<arg_kernel<false>>});
  table.push_back({"TopK", in_f32<topk_kernel>});
  table.push_back({"Hardmax", in_f32<hardmax_f32>});
  table.push_back({"InstanceNormalization", in_f32<instance_norm_f32>});
  table.push_back({"LayerNormalization", in_f32<layer_norm_f32>});
  table.push_back({"MeanVarianceNormalization", in_f32<mvn_f32>});
  table.push_back({"Resize", in_f32<resize_f32>});
}

}  // namespace dlas::reference
