// Reference kernels of the quantized ops (schemas in src/model/ops/nn_ops.cc): ONNX's
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv, ConvInteger,
// QLinearMatMul, MatMulInteger, and the dlas-internal QFusedConv. Scales and zero points
// may be runtime inputs (the ONNX node tests feed them), so they are read per run.
// Rounding is ONNX's: to nearest, ties to even (std::nearbyint under the default mode),
// then saturation to the output type.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "dlas/algo/qconv.h"
#include "dlas/system/conv_shapes.h"
#include "system/reference/kernels_internal.h"
#include "system/reference/quant_kernels.h"

namespace dlas::reference {
namespace {

using Tensors = std::vector<Tensor>;

int32_t saturate(DType t, double v) {
  const double lo = t == DType::kU8 ? 0 : -128, hi = t == DType::kU8 ? 255 : 127;
  return static_cast<int32_t>(std::min(hi, std::max(lo, v)));
}

void store_int(Tensor& y, int64_t i, int32_t v) {
  if (y.dtype() == DType::kU8) {
    y.data<uint8_t>()[i] = static_cast<uint8_t>(v);
  } else if (y.dtype() == DType::kS8) {
    y.data<int8_t>()[i] = static_cast<int8_t>(v);
  } else {
    y.data<int32_t>()[i] = v;
  }
}

float load_float(const Tensor& t, int64_t i) { return static_cast<float>(t.get_as_double(i)); }

// Per-tensor or per-axis parameter layout: element i of x uses parameter (i / inner) % count.
struct AxisParams {
  int64_t count = 1, inner = 1;
  int64_t index(int64_t i) const { return count == 1 ? 0 : (i / inner) % count; }
};

AxisParams axis_params(const Node& node, const Tensor& x, const Tensor& scale) {
  AxisParams a;
  a.count = scale.numel();
  if (a.count == 1) return a;
  int64_t axis = node.attr_int("axis", 1);
  if (axis < 0) axis += x.rank();
  for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) a.inner *= x.dim(d);
  return a;
}

void quantize_linear(const Node& node, const Tensors& in, Tensors& out) {
  const Tensor& x = in[0];
  const Tensor& s = in[1];
  const bool has_zp = in.size() > 2 && in[2].defined();
  Tensor& y = out[0];
  const AxisParams a = axis_params(node, x, s);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t p = a.index(i);
    const float q = std::nearbyint(load_float(x, i) / load_float(s, p));
    const double zp = has_zp ? static_cast<double>(in[2].get_as_int64(p)) : 0.0;
    store_int(y, i, saturate(y.dtype(), static_cast<double>(q) + zp));
  }
}

void dequantize_linear(const Node& node, const Tensors& in, Tensors& out) {
  const Tensor& x = in[0];
  const Tensor& s = in[1];
  const bool has_zp = in.size() > 2 && in[2].defined();
  const AxisParams a = axis_params(node, x, s);
  float* y = out[0].data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t p = a.index(i);
    const int64_t zp = has_zp ? in[2].get_as_int64(p) : 0;
    y[i] = static_cast<float>(x.get_as_int64(i) - zp) * load_float(s, p);
  }
}

// y_scale = (max(0, max x) - min(0, min x)) / 255, zero point round(-min / scale) (u8).
void dynamic_quantize_linear(const Node&, const Tensors& in, Tensors& out) {
  const Tensor& x = in[0];
  const float* xd = x.data<float>();
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < x.numel(); ++i) lo = std::min(lo, xd[i]), hi = std::max(hi, xd[i]);
  const float scale = (hi - lo) / 255.f;
  const int32_t zp =
      scale > 0.f ? saturate(DType::kU8, std::nearbyint(-lo / scale)) : 0;  // all-zero input
  uint8_t* y = out[0].data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i)
    y[i] = static_cast<uint8_t>(
        scale > 0.f ? saturate(DType::kU8, std::nearbyint(xd[i] / scale) + zp) : zp);
  if (out.size() > 1 && out[1].defined()) out[1].data<float>()[0] = scale;
  if (out.size() > 2 && out[2].defined()) out[2].data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

// ---------------------------------------------------------------------------
// Integer 2-D convolution (QLinearConv, ConvInteger): acc[k][p] = sum (x - xzp)(w - wzp[k]),
// padding contributes 0.
// ---------------------------------------------------------------------------

struct Conv2d {
  ConvProblem p;   // the geometry (pads resolved from auto_pad)
  int64_t oh, ow;  // the inferred output size
};

Conv2d conv2d_geometry(const Node& node, const Shape& x, const Shape& w, const Shape& y) {
  DLAS_CHECK(x.size() == 4, ErrorKind::kUnsupported, node.label(),
             ": only 2-D quantized convolutions are supported");
  Conv2d g{conv_geometry(node, x, w), y[2], y[3]};
  ConvProblem& p = g.p;
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const int64_t th =
        std::max<int64_t>(0, (g.oh - 1) * p.stride_h + (p.kh - 1) * p.dil_h + 1 - p.h);
    const int64_t tw =
        std::max<int64_t>(0, (g.ow - 1) * p.stride_w + (p.kw - 1) * p.dil_w + 1 - p.w);
    p.pad_t = auto_pad == "SAME_UPPER" ? th / 2 : th - th / 2;
    p.pad_l = auto_pad == "SAME_UPPER" ? tw / 2 : tw - tw / 2;
  } else if (auto_pad == "VALID") {
    p.pad_t = p.pad_l = 0;
  }
  return g;
}

// Calls out(n, k, oy, ox, acc) for every output element.
template <class Out>
void integer_conv(const Conv2d& g, const Tensor& x, int64_t xzp, const Tensor& w, const Tensor* wzp,
                  Out&& out) {
  const ConvProblem& p = g.p;
  const int64_t kg = p.k / p.groups, per_k = p.c_per_group() * p.kh * p.kw;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k) {
      const int64_t wz = wzp ? wzp->get_as_int64(wzp->numel() == 1 ? 0 : k) : 0;
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          int64_t acc = 0;
          for_each_tap_inside(p, n, k / kg, oy, ox, [&](int64_t xi, int64_t wi) {
            acc += (x.get_as_int64(xi) - xzp) * (w.get_as_int64(k * per_k + wi) - wz);
          });
          out(n, k, oy, ox, static_cast<int32_t>(acc));
        }
    }
}

int64_t zp_of(const Tensors& in, size_t i) {
  return in.size() > i && in[i].defined() ? in[i].get_as_int64(0) : 0;
}

void conv_integer(const Node& node, const Tensors& in, Tensors& out) {
  const Conv2d g = conv2d_geometry(node, in[0].shape(), in[1].shape(), out[0].shape());
  const Tensor* wzp = in.size() > 3 && in[3].defined() ? &in[3] : nullptr;
  int32_t* y = out[0].data<int32_t>();
  integer_conv(g, in[0], zp_of(in, 2), in[1], wzp,
               [&](int64_t n, int64_t k, int64_t oy, int64_t ox, int32_t acc) {
                 y[((n * g.p.k + k) * g.oh + oy) * g.ow + ox] = acc;
               });
}

// QLinearConv: per-channel s8 weights with zero points 0 run the integer oracle of
// include/dlas/algo/qconv.h; anything else (u8 weights, weight zero points) the general
// loop, requantized as acc * (x_scale * w_scale[k] / y_scale) rounded to nearest even.
void qlinear_conv(const Node& node, const Tensors& in, Tensors& out) {
  const Tensor &x = in[0], &w = in[3], &ws = in[4], &wz = in[5];
  Tensor& y = out[0];
  const float xs = load_float(in[1], 0), ys = load_float(in[6], 0);
  const int64_t xzp = in[2].get_as_int64(0), yzp = in[7].get_as_int64(0);
  const Tensor* bias = in.size() > 8 && in[8].defined() ? &in[8] : nullptr;
  const Conv2d g = conv2d_geometry(node, x.shape(), w.shape(), y.shape());
  bool zero_wzp = true;
  for (int64_t i = 0; i < wz.numel(); ++i) zero_wzp &= wz.get_as_int64(i) == 0;
  if (w.dtype() == DType::kS8 && zero_wzp && node.attr_string("auto_pad", "NOTSET") == "NOTSET") {
    ConvProblem p = qfused_conv_shape(node, x.shape(), w.shape(), bias != nullptr, false);
    p.set_int8({xs, static_cast<int32_t>(xzp), x.dtype()},
               {ys, static_cast<int32_t>(yzp), y.dtype()});
    std::vector<float> scales(static_cast<size_t>(g.p.k));
    for (int64_t k = 0; k < g.p.k; ++k) scales[k] = load_float(ws, ws.numel() == 1 ? 0 : k);
    reference_qconv(
        p, x.raw(),
        ConvWeights::int8(w.data<int8_t>(), scales.data(), bias ? bias->data<int32_t>() : nullptr),
        nullptr, y.raw());
    return;
  }
  integer_conv(g, x, xzp, w, &wz, [&](int64_t n, int64_t k, int64_t oy, int64_t ox, int32_t acc) {
    const float m = xs * load_float(ws, ws.numel() == 1 ? 0 : k) / ys;
    const int64_t b = bias ? bias->get_as_int64(k) : 0;
    const float v = std::nearbyint(static_cast<float>(acc + b) * m);
    store_int(y, ((n * g.p.k + k) * g.oh + oy) * g.ow + ox,
              saturate(y.dtype(), static_cast<double>(v) + static_cast<double>(yzp)));
  });
}

// ---------------------------------------------------------------------------
// Integer matmul (QLinearMatMul, MatMulInteger) with NumPy batch broadcasting.
// ---------------------------------------------------------------------------

// Calls out(i, row, col, acc) for output element i; a_zp(row), b_zp(col) give zero points.
template <class AZp, class BZp, class Out>
void integer_matmul(const Tensor& a, const Tensor& b, const Shape& y, AZp&& a_zp, BZp&& b_zp,
                    Out&& out) {
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], kk = as.back(), nn = bs.back();
  const size_t nb = std::max(as.size(), bs.size()) - 2;
  int64_t batches = 1;
  for (size_t i = 0; i < nb; ++i) batches *= y[i];
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Batch offsets of a and b with broadcasting (dims aligned at the right).
    int64_t rem = bi, a_off = 0, b_off = 0, a_stride = m * kk, b_stride = kk * nn;
    for (int64_t d = static_cast<int64_t>(nb) - 1; d >= 0; --d) {
      const int64_t idx = rem % y[static_cast<size_t>(d)];
      rem /= y[static_cast<size_t>(d)];
      const int64_t ad = d - static_cast<int64_t>(nb) + static_cast<int64_t>(as.size()) - 2;
      const int64_t bd = d - static_cast<int64_t>(nb) + static_cast<int64_t>(bs.size()) - 2;
      if (ad >= 0) {
        if (as[ad] != 1) a_off += idx * a_stride;
        a_stride *= as[ad];
      }
      if (bd >= 0) {
        if (bs[bd] != 1) b_off += idx * b_stride;
        b_stride *= bs[bd];
      }
    }
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < nn; ++c) {
        int64_t acc = 0;
        for (int64_t i = 0; i < kk; ++i)
          acc += (a.get_as_int64(a_off + r * kk + i) - a_zp(r)) *
                 (b.get_as_int64(b_off + i * nn + c) - b_zp(c));
        out((bi * m + r) * nn + c, static_cast<int32_t>(acc), c);
      }
  }
}

void matmul_integer(const Node&, const Tensors& in, Tensors& out) {
  const Tensor* az = in.size() > 2 && in[2].defined() ? &in[2] : nullptr;
  const Tensor* bz = in.size() > 3 && in[3].defined() ? &in[3] : nullptr;
  int32_t* y = out[0].data<int32_t>();
  integer_matmul(
      in[0], in[1], out[0].shape(),
      [&](int64_t r) { return az ? az->get_as_int64(az->numel() == 1 ? 0 : r) : 0; },
      [&](int64_t c) { return bz ? bz->get_as_int64(bz->numel() == 1 ? 0 : c) : 0; },
      [&](int64_t i, int32_t acc, int64_t) { y[i] = acc; });
}

void qlinear_matmul(const Node&, const Tensors& in, Tensors& out) {
  const float as = load_float(in[1], 0), ys = load_float(in[6], 0);
  const Tensor &bs = in[4], &bz = in[5];
  const int64_t azp = in[2].get_as_int64(0), yzp = in[7].get_as_int64(0);
  Tensor& y = out[0];
  integer_matmul(
      in[0], in[3], y.shape(), [&](int64_t) { return azp; },
      [&](int64_t c) { return bz.get_as_int64(bz.numel() == 1 ? 0 : c); },
      [&](int64_t i, int32_t acc, int64_t c) {
        const float m = as * load_float(bs, bs.numel() == 1 ? 0 : c) / ys;
        const float v = std::nearbyint(static_cast<float>(acc) * m);
        store_int(y, i, saturate(y.dtype(), static_cast<double>(v) + static_cast<double>(yzp)));
      });
}

void qfused_conv(const Node& node, const Tensors& in, Tensors& out) {
  const bool has_bias = in.size() > 2 && in[2].defined();
  const bool has_res = in.size() > 3 && in[3].defined();
  const ConvProblem p =
      qfused_conv_problem(node, in[0].shape(), in[1].shape(), in[0].dtype(), has_bias,
                          has_res ? in[3].dtype() : DType::kU8, has_res);
  const std::vector<float> ws = qfused_conv_w_scales(node, p.k);
  reference_qconv(p, in[0].raw(),
                  ConvWeights::int8(in[1].data<int8_t>(), ws.data(),
                                    has_bias ? in[2].data<int32_t>() : nullptr),
                  has_res ? in[3].raw() : nullptr, out[0].raw());
}

// QFc: the exact int32 sum, then one fused multiply-add per element in f32 and the clamp,
// as PreparedFullyConnectedQs8 computes it.
void qfc(const Node& node, const Tensors& in, Tensors& out) {
  const Tensor &x = in[0], &w = in[1];
  const QFcParams q = qfc_params(node, w.shape());
  const float* bias = in.size() > 2 && in[2].defined() ? in[2].data<float>() : nullptr;
  const int64_t rows = x.numel() / q.k;
  const int8_t* wd = w.data<int8_t>();
  float* y = out[0].data<float>();
  std::vector<int32_t> row(static_cast<size_t>(q.k));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t kk = 0; kk < q.k; ++kk)
      row[kk] = static_cast<int32_t>(x.get_as_int64(r * q.k + kk)) - q.x_zero_point;
    for (int64_t j = 0; j < q.n; ++j) {
      int32_t acc = 0;
      for (int64_t kk = 0; kk < q.k; ++kk)
        acc += row[kk] * (q.trans_b ? wd[j * q.k + kk] : wd[kk * q.n + j]);
      const float v =
          std::fmaf(static_cast<float>(acc), q.x_scale * q.w_scale[j], bias ? bias[j] : 0.f);
      y[r * q.n + j] = std::min(std::max(v, q.lo), q.hi);
    }
  }
  if (!q.epilogue.is_clamp())
    apply_epilogue(Isa::kScalar, q.epilogue, static_cast<size_t>(rows * q.n), y, 0.f, nullptr);
}

}  // namespace

ConvProblem qfused_conv_shape(const Node& node, const Shape& x, const Shape& w, bool has_bias,
                              bool has_residual) {
  DLAS_CHECK(x.size() == 4 && w.size() == 4, ErrorKind::kUnsupported, node.label(),
             ": only 2-D quantized convolutions are supported");
  DLAS_CHECK(node.attr_string("auto_pad", "NOTSET") == "NOTSET", ErrorKind::kUnsupported,
             node.label(), ": auto_pad is not supported here");
  ConvProblem p = conv_geometry(node, x, w);
  p.has_bias = has_bias;
  p.epilogue.residual = has_residual;
  return p;
}

ConvProblem qfused_conv_problem(const Node& node, const Shape& x, const Shape& w, DType x_type,
                                bool has_bias, DType r_type, bool has_residual) {
  ConvProblem p = qfused_conv_shape(node, x, w, has_bias, has_residual);
  QuantParams r;
  if (has_residual)
    r = {node.attr_float("r_scale", 1.f), static_cast<int32_t>(node.attr_int("r_zero_point", 0)),
         r_type};
  p.set_int8(
      {node.attr_float("x_scale", 1.f), static_cast<int32_t>(node.attr_int("x_zero_point", 0)),
       x_type},
      {node.attr_float("y_scale", 1.f), static_cast<int32_t>(node.attr_int("y_zero_point", 0)),
       dtype_from_name(node.attr_string("y_type", "u8")).value_or(DType::kU8)},
      r);
  p.validate();
  return p;
}

std::vector<float> qfused_conv_w_scales(const Node& node, int64_t k) {
  std::vector<float> s = node.attr_floats("w_scale", {});
  DLAS_CHECK(!s.empty(), ErrorKind::kInvalidInput, node.label(), ": w_scale is missing");
  if (s.size() == 1) s.assign(static_cast<size_t>(k), s[0]);
  DLAS_CHECK(static_cast<int64_t>(s.size()) == k, ErrorKind::kInvalidInput, node.label(),
             ": w_scale has ", s.size(), " values, expected ", k);
  return s;
}

QFcParams qfc_params(const Node& node, const Shape& w) {
  QFcParams q;
  DLAS_CHECK(w.size() == 2, ErrorKind::kInvalidInput, node.label(), ": w must have rank 2");
  q.trans_b = node.attr_int("trans_b", 0) != 0;
  q.k = q.trans_b ? w[1] : w[0];
  q.n = q.trans_b ? w[0] : w[1];
  q.x_scale = node.attr_float("x_scale", 1.f);
  q.x_zero_point = static_cast<int32_t>(node.attr_int("x_zero_point", 0));
  q.w_scale = qfused_conv_w_scales(node, q.n);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const std::string act = node.attr_string("activation", "none");
  const std::vector<float> ap = node.attr_floats("activation_params", {});
  q.lo = act == "relu" ? 0.f : act == "clip" && ap.size() == 2 ? ap[0] : -kInf;
  q.hi = act == "clip" && ap.size() == 2 ? ap[1] : kInf;
  q.epilogue = epilogue_from_attrs(act, ap);
  return q;
}

// QLookup: y[i] = table[x[i]] (the byte as unsigned; a byte or f32 table).
void qlookup(const Node&, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const uint8_t* x = static_cast<const uint8_t*>(in[0].raw());
  const size_t size = dtype_size(in[1].dtype());
  const uint8_t* t = static_cast<const uint8_t*>(in[1].raw());
  uint8_t* y = static_cast<uint8_t*>(out[0].raw());
  for (int64_t i = 0; i < in[0].numel(); ++i)
    std::memcpy(y + static_cast<size_t>(i) * size, t + x[i] * size, size);
}

// QChannelScale: QuantizeLinear(x * g), g broadcast over each [H, W] plane: the product
// rounded to f32 as Mul stores it, then quantize_linear's arithmetic.
void qchannel_scale(const Node& node, const Tensors& in, Tensors& out) {
  const Tensor& x = in[0];
  const int64_t planes = x.shape()[0] * x.shape()[1];
  const int64_t plane = x.numel() / planes;
  Tensor prod(DType::kF32, x.shape());
  const float* xd = x.data<float>();
  const float* g = in[1].data<float>();
  float* pd = prod.data<float>();
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < plane; ++i) pd[p * plane + i] = xd[p * plane + i] * g[p];
  Tensors q_in{prod, in[2]};
  if (in.size() > 3) q_in.push_back(in[3]);
  quantize_linear(node, q_in, out);
}

void append_quant_kernels(std::vector<KernelEntry>& table) {
  table.push_back({"QuantizeLinear", quantize_linear});
  table.push_back({"DequantizeLinear", dequantize_linear});
  table.push_back({"DynamicQuantizeLinear", dynamic_quantize_linear});
  table.push_back({"QLinearConv", qlinear_conv});
  table.push_back({"ConvInteger", conv_integer});
  table.push_back({"QLinearMatMul", qlinear_matmul});
  table.push_back({"QFc", qfc});
  table.push_back({"MatMulInteger", matmul_integer});
  table.push_back({"QFusedConv", qfused_conv});
  table.push_back({"QLookup", qlookup});
  table.push_back({"QChannelScale", qchannel_scale});
}

}  // namespace dlas::reference
