// Schemas of the neural-network ops: convolution, normalisation, pooling, dense
// products, softmax, padding, reductions, index selection (ArgMax, TopK) and Resize.
// Semantics and output-shape formulas are ONNX opset 13's (with the later additive
// forms: Pad's axes input, reduction axes as an input, AveragePool dilations, Resize's
// axes, LayerNormalization of opset 17).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <set>
#include <string>

#include "dlas/model/shape_math.h"
#include "model/ops/ops_internal.h"

namespace dlas::ops {
namespace {

// ---------------------------------------------------------------------------
// Shared checks
// ---------------------------------------------------------------------------

[[noreturn]] void unsupported(const InferContext& ctx, const std::string& what) {
  fail(ErrorKind::kUnsupported, ctx.node().label(), ": ", what);
}

// Input i must be f32, f16 or bf16 (the reference kernels compute in float).
void require_float(const InferContext& ctx, int i, const char* what) {
  const DType t = ctx.dtype(i);
  if (!is_float(t))
    unsupported(ctx,
                str(what, " has dtype ", dtype_name(t), "; only f32, f16 and bf16 are supported"));
}

// Input i must exist and have the same dtype as input 0.
void require_same_dtype(const InferContext& ctx, int i, const char* what) {
  ctx.check(ctx.dtype(i) == ctx.dtype(0), what, " has dtype ", dtype_name(ctx.dtype(i)),
            " but the input has dtype ", dtype_name(ctx.dtype(0)));
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// ---------------------------------------------------------------------------
// Sliding-window geometry (Conv, ConvTranspose, pooling)
// ---------------------------------------------------------------------------

struct Window {
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  // [b_1, ..., b_n, e_1, ..., e_n]
  std::string auto_pad;
  bool explicit_pads = false;
};

// Reads an ints attribute of length n with every value >= min_value (default fill otherwise).
std::vector<int64_t> sized_ints(const InferContext& ctx, const char* key, size_t n, int64_t fill,
                                int64_t min_value) {
  std::vector<int64_t> v = ctx.node().attr_ints(key, std::vector<int64_t>(n, fill));
  ctx.check(v.size() == n, "attribute '", key, "' has ", v.size(), " values, expected ", n);
  for (int64_t x : v) ctx.check(x >= min_value, "attribute '", key, "' has invalid value ", x);
  return v;
}

Window read_window(const InferContext& ctx, std::vector<int64_t> kernel) {
  const size_t n = kernel.size();
  Window w;
  w.kernel = std::move(kernel);
  for (int64_t k : w.kernel) ctx.check(k >= 1, "kernel size ", k, " must be positive");
  w.strides = sized_ints(ctx, "strides", n, 1, 1);
  w.dilations = sized_ints(ctx, "dilations", n, 1, 1);
  w.explicit_pads = ctx.node().has_attr("pads");
  w.pads = sized_ints(ctx, "pads", 2 * n, 0, 0);
  w.auto_pad = ctx.node().attr_string("auto_pad", "NOTSET");
  if (w.auto_pad.empty()) w.auto_pad = "NOTSET";
  ctx.check(w.auto_pad == "NOTSET" || w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER" ||
                w.auto_pad == "VALID",
            "unknown auto_pad '", w.auto_pad, "'");
  if (w.auto_pad != "NOTSET" && w.explicit_pads) {
    for (int64_t p : w.pads)
      ctx.check(p == 0, "pads cannot be given together with auto_pad ", w.auto_pad);
  }
  return w;
}

// Output spatial dims of a convolution or pooling window over `in` (ONNX formulas).
std::vector<int64_t> window_output(const InferContext& ctx, const Window& w,
                                   const std::vector<int64_t>& in, bool ceil_mode) {
  std::vector<int64_t> out(in.size());
  const size_t n = in.size();
  for (size_t i = 0; i < n; ++i) {
    const int64_t eff = (w.kernel[i] - 1) * w.dilations[i] + 1;
    const int64_t s = w.strides[i];
    if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
      out[i] = ceil_div(in[i], s);
    } else if (w.auto_pad == "VALID") {
      ctx.check(in[i] >= eff, "window of extent ", eff, " (kernel ", w.kernel[i], ", dilation ",
                w.dilations[i], ") is larger than input dimension ", in[i]);
      out[i] = floor_div(in[i] - eff, s) + 1;
    } else {
      const int64_t padded = in[i] + w.pads[i] + w.pads[i + n];
      ctx.check(padded >= eff, "window of extent ", eff, " (kernel ", w.kernel[i], ", dilation ",
                w.dilations[i], ") is larger than padded input dimension ", padded);
      if (ceil_mode) {
        out[i] = ceil_div(padded - eff, s) + 1;
        // A last window starting in the end padding is dropped (PyTorch and ONNX agree).
        if ((out[i] - 1) * s >= in[i] + w.pads[i]) --out[i];
      } else {
        out[i] = floor_div(padded - eff, s) + 1;
      }
    }
  }
  return out;
}

Shape spatial_of(const Shape& s) { return Shape(s.begin() + 2, s.end()); }

void check_spatial_rank(const InferContext& ctx, int i, const char* what) {
  const int r = ctx.rank(i);
  ctx.check(r >= 3 && r <= 5, what, " must have rank 3 to 5 (N, C and 1 to 3 spatial dims), got ",
            shape_str(ctx.shape(i)));
}

// ---------------------------------------------------------------------------
// Conv
// ---------------------------------------------------------------------------

// Output shape of a convolution of input xi by weights wi (bias bi, or -1), checking
// ranks, groups and the window; dtypes are the caller's to check.
Shape conv_output_shape(const InferContext& ctx, int xi, int wi, int bi) {
  check_spatial_rank(ctx, xi, "X");
  const Shape& x = ctx.shape(xi);
  const Shape& w = ctx.shape(wi);
  ctx.check(w.size() == x.size(), "W ", shape_str(w), " must have the rank of X ", shape_str(x));
  const int64_t group = ctx.node().attr_int("group", 1);
  ctx.check(group >= 1, "group ", group, " must be positive");
  const int64_t c = x[1], m = w[0];
  ctx.check(c % group == 0, "input channels ", c, " are not divisible by group ", group);
  ctx.check(w[1] * group == c, "W ", shape_str(w), " expects ", w[1] * group,
            " input channels (W[1] * group ", group, ") but X ", shape_str(x), " has ", c);
  ctx.check(m >= 1 && m % group == 0, "output channels ", m, " are not divisible by group ", group);
  Shape kernel = spatial_of(w);
  if (ctx.node().has_attr("kernel_shape")) {
    const auto ks = ctx.node().attr_ints("kernel_shape", {});
    ctx.check(ks == kernel, "kernel_shape ", shape_str(ks), " does not match W ", shape_str(w));
  }
  if (bi >= 0 && ctx.has_input(bi))
    ctx.check(ctx.shape(bi) == Shape{m}, "B ", shape_str(ctx.shape(bi)), " must have shape [", m,
              "]");
  const Window win = read_window(ctx, kernel);
  Shape y = {x[0], m};
  for (int64_t d : window_output(ctx, win, spatial_of(x), false)) y.push_back(d);
  return y;
}

void infer_conv(InferContext& ctx) {
  check_spatial_rank(ctx, 0, "X");
  require_float(ctx, 0, "X");
  require_same_dtype(ctx, 1, "W");
  if (ctx.has_input(2)) require_same_dtype(ctx, 2, "B");
  ctx.set_output(0, ctx.dtype(0), conv_output_shape(ctx, 0, 1, 2));
}

int64_t conv_macs(const Graph& g, const Node& n) {
  const Shape& w = g.value(n.inputs[1]).shape;
  return shape_numel(g.value(n.outputs[0]).shape) * (shape_numel(w) / std::max<int64_t>(w[0], 1));
}

// ---------------------------------------------------------------------------
// FusedConv (dlas-internal, made by the fusion passes): Conv + bias + optional
// residual (input 3, shaped like Y) + optional activation, applied in that order:
// Y = act(conv(X, W) + B + R). Attributes: Conv's, plus `activation` (none, relu,
// clip, sigmoid, silu, hardsigmoid, hardswish) and `activation_params` (clip
// min/max, hardsigmoid alpha/beta).
// ---------------------------------------------------------------------------

// The `activation` and `activation_params` attributes of the fused ops (FusedConv,
// ChannelAffine; FusedMatMul also takes gelu).
void check_fused_activation(InferContext& ctx, bool gelu_ok = false) {
  static const char* kActs[] = {"none", "relu",        "clip",     "sigmoid",
                                "silu", "hardsigmoid", "hardswish"};
  const std::string act = ctx.node().attr_string("activation", "none");
  bool known = gelu_ok && act == "gelu";
  for (const char* a : kActs) known |= act == a;
  ctx.check(known, "unknown activation '", act, "'");
  const size_t want_params = act == "clip" || act == "hardsigmoid" ? 2 : 0;
  const auto params = ctx.node().attr_floats("activation_params", {});
  ctx.check(params.size() == want_params, "activation '", act, "' takes ", want_params,
            " activation_params, got ", params.size());
}

void infer_fused_conv(InferContext& ctx) {
  infer_conv(ctx);
  check_fused_activation(ctx);
  if (ctx.has_input(3)) {
    require_same_dtype(ctx, 3, "R");
    ctx.check(ctx.shape(3) == ctx.outputs()[0].shape, "residual R ", shape_str(ctx.shape(3)),
              " must have the output shape ", shape_str(ctx.outputs()[0].shape));
  }
}

// ---------------------------------------------------------------------------
// ConvTranspose
// ---------------------------------------------------------------------------

void infer_conv_transpose(InferContext& ctx) {
  check_spatial_rank(ctx, 0, "X");
  require_float(ctx, 0, "X");
  require_same_dtype(ctx, 1, "W");
  const Shape& x = ctx.shape(0);
  const Shape& w = ctx.shape(1);
  const size_t n = x.size() - 2;
  ctx.check(w.size() == x.size(), "W ", shape_str(w), " must have the rank of X ", shape_str(x));
  const int64_t group = ctx.node().attr_int("group", 1);
  ctx.check(group >= 1, "group ", group, " must be positive");
  const int64_t c = x[1];
  ctx.check(c % group == 0, "input channels ", c, " are not divisible by group ", group);
  ctx.check(w[0] == c, "W ", shape_str(w), " expects ", w[0], " input channels but X ",
            shape_str(x), " has ", c);
  const int64_t m = w[1] * group;
  Shape kernel = spatial_of(w);
  if (ctx.node().has_attr("kernel_shape")) {
    const auto ks = ctx.node().attr_ints("kernel_shape", {});
    ctx.check(ks == kernel, "kernel_shape ", shape_str(ks), " does not match W ", shape_str(w));
  }
  if (ctx.has_input(2)) {
    require_same_dtype(ctx, 2, "B");
    ctx.check(ctx.shape(2) == Shape{m}, "B ", shape_str(ctx.shape(2)), " must have shape [", m,
              "]");
  }
  const Window win = read_window(ctx, kernel);
  const auto out_pad = sized_ints(ctx, "output_padding", n, 0, 0);
  Shape y = {x[0], m};
  if (ctx.node().has_attr("output_shape")) {
    auto os = ctx.node().attr_ints("output_shape", {});
    if (os.size() == n + 2) os.erase(os.begin(), os.begin() + 2);
    ctx.check(os.size() == n, "output_shape has ", os.size(), " values, expected ", n);
    for (int64_t d : os) ctx.check(d >= 1, "output_shape value ", d, " must be positive");
    y.insert(y.end(), os.begin(), os.end());
  } else {
    for (size_t i = 0; i < n; ++i) {
      const int64_t eff = (kernel[i] - 1) * win.dilations[i] + 1;
      int64_t d;
      if (win.auto_pad == "SAME_UPPER" || win.auto_pad == "SAME_LOWER") {
        d = x[i + 2] * win.strides[i];
      } else if (win.auto_pad == "VALID") {
        d = win.strides[i] * (x[i + 2] - 1) + out_pad[i] + eff;
      } else {
        d = win.strides[i] * (x[i + 2] - 1) + out_pad[i] + eff - win.pads[i] - win.pads[i + n];
      }
      ctx.check(d >= 1, "output dimension ", i, " would be ", d, " (pads too large)");
      y.push_back(d);
    }
  }
  ctx.set_output(0, ctx.dtype(0), y);
}

int64_t conv_transpose_macs(const Graph& g, const Node& n) {
  const Shape& w = g.value(n.inputs[1]).shape;
  return shape_numel(g.value(n.inputs[0]).shape) * (shape_numel(w) / std::max<int64_t>(w[0], 1));
}

// ---------------------------------------------------------------------------
// BatchNormalization (inference)
// ---------------------------------------------------------------------------

// Shared by BatchNormalization and InstanceNormalization: inputs 1.. (named in order)
// are per-channel vectors [C] of a float type (with same_dtype: X's type), epsilon is
// not negative, and Y has X's dtype and shape.
void infer_per_channel_norm(InferContext& ctx, std::initializer_list<const char*> params,
                            bool same_dtype) {
  const int64_t c = ctx.shape(0)[1];
  int i = 1;
  for (const char* name : params) {
    if (same_dtype)
      require_same_dtype(ctx, i, name);
    else
      require_float(ctx, i, name);
    ctx.check(ctx.shape(i) == Shape{c}, name, " ", shape_str(ctx.shape(i)), " must have shape [", c,
              "]");
    ++i;
  }
  const float eps = ctx.node().attr_float("epsilon", 1e-5f);
  ctx.check(eps >= 0, "epsilon ", eps, " must not be negative");
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

void infer_batch_norm(InferContext& ctx) {
  if (ctx.node().attr_int("training_mode", 0) != 0)
    unsupported(ctx, "training_mode=1 is not supported (inference only)");
  if (ctx.num_outputs() > 1)
    for (int i = 1; i < ctx.num_outputs(); ++i)
      if (!ctx.node().outputs[static_cast<size_t>(i)].empty())
        unsupported(ctx, "outputs beyond Y (running or saved statistics) exist only in training");
  ctx.check(ctx.rank(0) >= 2, "X ", shape_str(ctx.shape(0)), " must have rank >= 2 (N, C, ...)");
  require_float(ctx, 0, "X");
  infer_per_channel_norm(ctx, {"scale", "B", "mean", "var"}, /*same_dtype=*/false);
}

// ---------------------------------------------------------------------------
// InstanceNormalization, LayerNormalization, MeanVarianceNormalization
// ---------------------------------------------------------------------------

void infer_instance_norm(InferContext& ctx) {
  ctx.check(ctx.rank(0) >= 3, "input ", shape_str(ctx.shape(0)),
            " must have rank >= 3 (N, C and spatial dims)");
  require_float(ctx, 0, "input");
  infer_per_channel_norm(ctx, {"scale", "B"}, /*same_dtype=*/true);
}

// Opset 17: normalises over axes [axis, rank); Scale and B broadcast to those dims. The
// optional Mean and InvStdDev outputs (stash_type 1: f32) keep the normalised dims as 1.
void infer_layer_norm(InferContext& ctx) {
  require_float(ctx, 0, "X");
  const Shape& x = ctx.shape(0);
  const int r = ctx.rank(0);
  ctx.check(r >= 1, "X must have rank >= 1, got a scalar");
  const int axis = ctx.normalize_axis(ctx.node().attr_int("axis", -1), r);
  const int64_t stash = ctx.node().attr_int("stash_type", 1);
  if (stash != 1) unsupported(ctx, str("stash_type ", stash, " is not supported (only 1, f32)"));
  const float eps = ctx.node().attr_float("epsilon", 1e-5f);
  ctx.check(eps >= 0, "epsilon ", eps, " must not be negative");
  const Shape normalized(x.begin() + axis, x.end());
  const char* names[] = {"", "Scale", "B"};
  for (int i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) {
      ctx.check(i == 2, "Scale (input 1) is required");
      continue;
    }
    require_same_dtype(ctx, i, names[i]);
    const auto b = shape_math::broadcast_shapes(normalized, ctx.shape(i));
    ctx.check(b && *b == normalized, names[i], " ", shape_str(ctx.shape(i)),
              " does not broadcast to the normalised shape ", shape_str(normalized));
  }
  ctx.set_output(0, ctx.dtype(0), x);
  Shape stats(x.begin(), x.begin() + axis);
  stats.resize(x.size(), 1);
  ctx.set_output(1, DType::kF32, stats);
  ctx.set_output(2, DType::kF32, stats);
}

void infer_mvn(InferContext& ctx) {
  require_float(ctx, 0, "X");
  const int r = ctx.rank(0);
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (int64_t a : ctx.node().attr_ints("axes", {0, 2, 3})) {
    const int ax = ctx.normalize_axis(a, r);
    ctx.check(!seen[static_cast<size_t>(ax)], "axis ", a, " is repeated");
    seen[static_cast<size_t>(ax)] = true;
  }
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

// ---------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------

void infer_pool(InferContext& ctx, bool is_max) {
  check_spatial_rank(ctx, 0, "X");
  const DType t = ctx.dtype(0);
  if (!(is_float(t) || (is_max && (t == DType::kS8 || t == DType::kU8))))
    unsupported(ctx, str("X has dtype ", dtype_name(t), "; supported: f32, f16, bf16",
                         is_max ? ", s8, u8" : ""));
  const Shape& x = ctx.shape(0);
  const size_t n = x.size() - 2;
  ctx.check(ctx.node().has_attr("kernel_shape"), "attribute 'kernel_shape' is required");
  const auto kernel = ctx.node().attr_ints("kernel_shape", {});
  ctx.check(kernel.size() == n, "kernel_shape has ", kernel.size(), " values but X ", shape_str(x),
            " has ", n, " spatial dims");
  const Window win = read_window(ctx, kernel);
  const int64_t ceil_mode = ctx.node().attr_int("ceil_mode", 0);
  ctx.check(ceil_mode == 0 || ceil_mode == 1, "ceil_mode must be 0 or 1");
  if (is_max) {
    const int64_t so = ctx.node().attr_int("storage_order", 0);
    ctx.check(so == 0 || so == 1, "storage_order must be 0 or 1");
  } else {
    const int64_t cip = ctx.node().attr_int("count_include_pad", 0);
    ctx.check(cip == 0 || cip == 1, "count_include_pad must be 0 or 1");
  }
  for (size_t i = 0; i < n; ++i)
    ctx.check(win.pads[i] < (kernel[i] - 1) * win.dilations[i] + 1 &&
                  win.pads[i + n] < (kernel[i] - 1) * win.dilations[i] + 1,
              "pads must be smaller than the pooling window");
  Shape y = {x[0], x[1]};
  for (int64_t d : window_output(ctx, win, spatial_of(x), ceil_mode != 0)) y.push_back(d);
  ctx.set_output(0, t, y);
  if (is_max) ctx.set_output(1, DType::kS64, y);  // Indices, when requested
}

void infer_max_pool(InferContext& ctx) { infer_pool(ctx, true); }
void infer_average_pool(InferContext& ctx) { infer_pool(ctx, false); }

void infer_global_pool(InferContext& ctx) {
  check_spatial_rank(ctx, 0, "X");
  require_float(ctx, 0, "X");
  Shape y = ctx.shape(0);
  for (size_t i = 2; i < y.size(); ++i) y[i] = 1;
  ctx.set_output(0, ctx.dtype(0), y);
}

void infer_lrn(InferContext& ctx) {
  ctx.check(ctx.rank(0) >= 2, "X ", shape_str(ctx.shape(0)), " must have rank >= 2 (N, C, ...)");
  require_float(ctx, 0, "X");
  ctx.check(ctx.node().has_attr("size"), "attribute 'size' is required");
  const int64_t size = ctx.node().attr_int("size", 0);
  ctx.check(size >= 1, "size ", size, " must be positive");
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

// ---------------------------------------------------------------------------
// Gemm, MatMul
// ---------------------------------------------------------------------------

void infer_gemm(InferContext& ctx) {
  require_float(ctx, 0, "A");
  require_same_dtype(ctx, 1, "B");
  ctx.check(ctx.rank(0) == 2, "A ", shape_str(ctx.shape(0)), " must be a matrix");
  ctx.check(ctx.rank(1) == 2, "B ", shape_str(ctx.shape(1)), " must be a matrix");
  const bool ta = ctx.node().attr_int("transA", 0) != 0;
  const bool tb = ctx.node().attr_int("transB", 0) != 0;
  const Shape& a = ctx.shape(0);
  const Shape& b = ctx.shape(1);
  const int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  const int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  ctx.check(k == kb, "inner dimensions differ: A", ta ? "^T " : " ", shape_str(a), " and B",
            tb ? "^T " : " ", shape_str(b));
  if (ctx.has_input(2)) {
    require_same_dtype(ctx, 2, "C");
    const Shape& c = ctx.shape(2);
    ctx.check(c.size() <= 2, "C ", shape_str(c), " must have rank <= 2");
    const Shape want = {m, n};
    for (size_t i = 0; i < c.size(); ++i) {
      const int64_t cd = c[c.size() - 1 - i], wd = want[1 - i];
      ctx.check(cd == wd || cd == 1, "C ", shape_str(c), " cannot be broadcast to ",
                shape_str(want));
    }
  }
  ctx.set_output(0, ctx.dtype(0), {m, n});
}

int64_t gemm_macs(const Graph& g, const Node& nd) {
  const Shape& a = g.value(nd.inputs[0]).shape;
  const Shape& y = g.value(nd.outputs[0]).shape;
  const int64_t k = nd.attr_int("transA", 0) ? a[0] : a[1];
  return y[0] * y[1] * k;
}

// Output shape of MatMul(input ai, input bi) (NumPy matmul broadcasting).
Shape matmul_shape(const InferContext& ctx, int ai = 0, int bi = 1) {
  Shape a = ctx.shape(ai), b = ctx.shape(bi);
  ctx.check(!a.empty() && !b.empty(), "MatMul inputs must have rank >= 1, got ", shape_str(a),
            " and ", shape_str(b));
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  ctx.check(a.back() == b[b.size() - 2], "inner dimensions differ: A ", shape_str(ctx.shape(ai)),
            " and B ", shape_str(ctx.shape(bi)));
  const size_t ba = a.size() - 2, bb = b.size() - 2, nb = std::max(ba, bb);
  Shape y(nb);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t da = i + ba >= nb ? a[i + ba - nb] : 1;
    const int64_t db = i + bb >= nb ? b[i + bb - nb] : 1;
    ctx.check(da == db || da == 1 || db == 1, "batch dimensions of A ", shape_str(ctx.shape(ai)),
              " and B ", shape_str(ctx.shape(bi)), " do not broadcast");
    y[i] = da == 1 ? db : da;
  }
  if (!a_vec) y.push_back(a[a.size() - 2]);
  if (!b_vec) y.push_back(b.back());
  return y;
}

void infer_matmul(InferContext& ctx) {
  require_float(ctx, 0, "A");
  require_same_dtype(ctx, 1, "B");
  ctx.set_output(0, ctx.dtype(0), matmul_shape(ctx));
}

int64_t matmul_macs(const Graph& g, const Node& nd) {
  const Shape& a = g.value(nd.inputs[0]).shape;
  if (a.empty()) return 0;
  // numel(Y) counts batch * M * N; each output element takes K MACs.
  return shape_numel(g.value(nd.outputs[0]).shape) * a.back();
}

// Einsum (opset 12): float operands of one type; the output's shape from the equation's
// subscripts (dlas/model/shape_math.h). MACs: the product of every letter's size, per
// operand beyond the first.
void infer_einsum(InferContext& ctx) {
  std::vector<Shape> shapes;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    require_float(ctx, i, "an operand");
    if (i > 0) require_same_dtype(ctx, i, "an operand");
    shapes.push_back(ctx.shape(i));
  }
  const shape_math::EinsumSpec s = shape_math::parse_einsum(ctx.node(), shapes);
  Shape y;
  for (char c : s.output) y.push_back(s.size_of(c));
  ctx.set_output(0, ctx.dtype(0), y);
}

int64_t einsum_macs(const Graph& g, const Node& nd) {
  std::vector<Shape> shapes;
  for (const std::string& in : nd.inputs) shapes.push_back(g.value(in).shape);
  const shape_math::EinsumSpec s = shape_math::parse_einsum(nd, shapes);
  int64_t all = 1;
  for (const auto& [c, d] : s.sizes) all *= d;
  return shapes.size() > 1 ? all * static_cast<int64_t>(shapes.size() - 1) : 0;
}

// FusedMatMul(X, W, [B], [R]) (dlas-internal, made by fuse_linear): a Linear layer with its
// epilogue, Y = act(X W + B + R) in that order. X [..., K] float, W [K, N] and B [N] of X's
// type, R shaped like Y [..., N]; `activation` and `activation_params` as FusedConv's, or
// gelu.
void infer_fused_matmul(InferContext& ctx) {
  require_float(ctx, 0, "X");
  require_same_dtype(ctx, 1, "W");
  const Shape& x = ctx.shape(0);
  const Shape& w = ctx.shape(1);
  ctx.check(x.size() >= 2, "X ", shape_str(x), " must have rank >= 2");
  ctx.check(w.size() == 2, "W ", shape_str(w), " must have rank 2");
  ctx.check(x.back() == w[0], "X ", shape_str(x), " and W ", shape_str(w),
            " disagree on the reduction length");
  Shape y = x;
  y.back() = w[1];
  if (ctx.has_input(2)) {
    require_same_dtype(ctx, 2, "B");
    ctx.check(shape_numel(ctx.shape(2)) == w[1], "B ", shape_str(ctx.shape(2)), " must have ", w[1],
              " elements");
  }
  if (ctx.has_input(3)) {
    require_same_dtype(ctx, 3, "R");
    ctx.check(ctx.shape(3) == y, "residual R ", shape_str(ctx.shape(3)),
              " must have the output shape ", shape_str(y));
  }
  check_fused_activation(ctx, /*gelu_ok=*/true);
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---------------------------------------------------------------------------
// Softmax, LogSoftmax (opset 13: one axis)
// ---------------------------------------------------------------------------

void infer_softmax(InferContext& ctx) {
  require_float(ctx, 0, "input");
  ctx.normalize_axis(ctx.node().attr_int("axis", -1), ctx.rank(0));
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

// ---------------------------------------------------------------------------
// Pad
// ---------------------------------------------------------------------------

void infer_pad(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  const int r = ctx.rank(0);
  const std::string mode = ctx.node().attr_string("mode", "constant");
  ctx.check(mode == "constant" || mode == "reflect" || mode == "edge" || mode == "wrap",
            "unknown mode '", mode, "'");
  std::vector<int64_t> pads;
  if (ctx.has_input(1)) {
    const Tensor& p = ctx.require_constant(1, "pads");
    ctx.check(p.dtype() == DType::kS64 || p.dtype() == DType::kS32, "pads must be int64, got ",
              dtype_name(p.dtype()));
    ctx.check(p.rank() == 1, "pads must be 1-D, got ", p.describe());
    pads = p.to_int64_vector();
  } else {
    ctx.check(ctx.node().has_attr("pads"), "pads (input 1 or attribute) is required");
    pads = ctx.node().attr_ints("pads", {});
  }
  if (ctx.has_input(2)) {
    ctx.check(ctx.dtype(2) == ctx.dtype(0), "constant_value has dtype ", dtype_name(ctx.dtype(2)),
              " but data has ", dtype_name(ctx.dtype(0)));
    ctx.check(shape_numel(ctx.shape(2)) == 1, "constant_value must hold one value, got ",
              shape_str(ctx.shape(2)));
  }
  // Optional axes (opset 18): pads then has 2 * len(axes) values.
  std::vector<int> axes;
  if (ctx.has_input(3)) {
    const Tensor& a = ctx.require_constant(3, "axes");
    for (int64_t v : a.to_int64_vector()) axes.push_back(ctx.normalize_axis(v, r));
  } else {
    for (int i = 0; i < r; ++i) axes.push_back(i);
  }
  const size_t na = axes.size();
  ctx.check(pads.size() == 2 * na, "pads has ", pads.size(), " values, expected ", 2 * na,
            " for data ", shape_str(x));
  std::vector<int64_t> begin(static_cast<size_t>(r), 0), end(static_cast<size_t>(r), 0);
  std::set<int> seen;
  for (size_t i = 0; i < na; ++i) {
    ctx.check(seen.insert(axes[i]).second, "axis ", axes[i], " is repeated");
    begin[static_cast<size_t>(axes[i])] = pads[i];
    end[static_cast<size_t>(axes[i])] = pads[i + na];
  }
  Shape y(x);
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] = x[i] + begin[i] + end[i];
    ctx.check(y[i] >= 0, "pads ", begin[i], ", ", end[i], " make dimension ", i, " negative");
    if (mode != "constant" && y[i] > 0 && (begin[i] > 0 || end[i] > 0))
      ctx.check(x[i] > 0, "mode '", mode, "' cannot pad empty dimension ", i);
  }
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------

void infer_reduce(InferContext& ctx) {
  require_float(ctx, 0, "data");
  const int r = ctx.rank(0);
  std::vector<int64_t> axes;
  const bool attr_axes = ctx.node().has_attr("axes");
  if (ctx.has_input(1)) {
    ctx.check(!attr_axes, "axes are given both as attribute and as input");
    const Tensor& a = ctx.require_constant(1, "axes");
    ctx.check(!is_float(a.dtype()), "axes must be integers, got ", dtype_name(a.dtype()));
    axes = a.to_int64_vector();
  } else if (attr_axes) {
    axes = ctx.node().attr_ints("axes", {});
  }
  const bool keepdims = ctx.node().attr_int("keepdims", 1) != 0;
  const bool noop = ctx.node().attr_int("noop_with_empty_axes", 0) != 0;
  std::vector<bool> reduced(static_cast<size_t>(r), false);
  if (axes.empty()) {
    if (!noop) reduced.assign(static_cast<size_t>(r), true);
  } else {
    for (int64_t a : axes) {
      const int ax = ctx.normalize_axis(a, r);
      ctx.check(!reduced[static_cast<size_t>(ax)], "axis ", a, " is repeated");
      reduced[static_cast<size_t>(ax)] = true;
    }
  }
  Shape y;
  for (int i = 0; i < r; ++i) {
    if (!reduced[static_cast<size_t>(i)])
      y.push_back(ctx.shape(0)[static_cast<size_t>(i)]);
    else if (keepdims)
      y.push_back(1);
  }
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---------------------------------------------------------------------------
// ArgMax, ArgMin, TopK (any dtype dlas has; indices are s64)
// ---------------------------------------------------------------------------

void check_flag(const InferContext& ctx, const char* key, int64_t fallback) {
  const int64_t v = ctx.node().attr_int(key, fallback);
  ctx.check(v == 0 || v == 1, key, " must be 0 or 1, got ", v);
}

void infer_arg(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  const int r = ctx.rank(0);
  ctx.check(r >= 1, "input must have rank >= 1, got a scalar");
  const int axis = ctx.normalize_axis(ctx.node().attr_int("axis", 0), r);
  check_flag(ctx, "keepdims", 1);
  check_flag(ctx, "select_last_index", 0);
  ctx.check(x[static_cast<size_t>(axis)] > 0, "axis ", axis, " of ", shape_str(x), " is empty; ",
            ctx.node().op, " needs at least one element");
  Shape y;
  for (int d = 0; d < r; ++d) {
    if (d != axis)
      y.push_back(x[static_cast<size_t>(d)]);
    else if (ctx.node().attr_int("keepdims", 1) != 0)
      y.push_back(1);
  }
  ctx.set_output(0, DType::kS64, y);
}

void infer_topk(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  const int r = ctx.rank(0);
  ctx.check(r >= 1, "input must have rank >= 1, got a scalar");
  const int axis = ctx.normalize_axis(ctx.node().attr_int("axis", -1), r);
  check_flag(ctx, "largest", 1);
  check_flag(ctx, "sorted", 1);
  const Tensor& kt = ctx.require_constant(1, "K");
  ctx.check(kt.dtype() == DType::kS64 || kt.dtype() == DType::kS32, "K must be s64, got ",
            dtype_name(kt.dtype()));
  ctx.check(kt.rank() <= 1 && kt.numel() == 1, "K must hold one value, got ", kt.describe());
  const int64_t k = kt.get_as_int64(0);
  const int64_t dim = x[static_cast<size_t>(axis)];
  ctx.check(k >= 0 && k <= dim, "K = ", k, " is out of range for axis ", axis, " of size ", dim);
  Shape y = x;
  y[static_cast<size_t>(axis)] = k;
  ctx.set_output(0, ctx.dtype(0), y);
  ctx.set_output(1, DType::kS64, y);
}

// ---------------------------------------------------------------------------
// Resize (opset 11-18 form; the importer rewrites opset-10 Resize and Upsample)
// ---------------------------------------------------------------------------

bool one_of(const std::string& v, std::initializer_list<const char*> options) {
  for (const char* o : options)
    if (v == o) return true;
  return false;
}

void check_choice(const InferContext& ctx, const char* key, const char* fallback,
                  std::initializer_list<const char*> options) {
  const std::string v = ctx.node().attr_string(key, fallback);
  ctx.check(one_of(v, options), "unknown ", key, " '", v, "'");
}

// The constant 1-D input i, or nullptr when absent or empty (opsets 11-12 pass an empty
// tensor for the unused one of scales and sizes).
const Tensor* optional_list(const InferContext& ctx, int i, const char* what) {
  if (!ctx.has_input(i)) return nullptr;
  const Tensor& t = ctx.require_constant(i, what);
  ctx.check(t.rank() == 1, what, " must be 1-D, got ", shape_str(t.shape()));
  return t.numel() == 0 ? nullptr : &t;
}

void infer_resize(InferContext& ctx) {
  require_float(ctx, 0, "X");
  const Shape& x = ctx.shape(0);
  const int r = ctx.rank(0);
  ctx.check(r >= 1, "X must have rank >= 1, got a scalar");
  const Node& n = ctx.node();
  check_choice(ctx, "mode", "nearest", {"nearest", "linear", "cubic"});
  check_choice(ctx, "coordinate_transformation_mode", "half_pixel",
               {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_half_pixel_for_nn", "tf_crop_and_resize"});
  check_choice(ctx, "nearest_mode", "round_prefer_floor",
               {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  check_flag(ctx, "exclude_outside", 0);
  if (n.attr_int("antialias", 0) != 0) unsupported(ctx, "antialias=1 is not supported");
  const std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch")
    unsupported(ctx, str("keep_aspect_ratio_policy '", policy, "' is not supported"));
  // Opset 18: scales, sizes and roi may cover a subset of the axes.
  std::vector<int> axes;
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (int64_t a : n.attr_ints("axes", {})) {
    const int ax = ctx.normalize_axis(a, r);
    ctx.check(!seen[static_cast<size_t>(ax)], "axis ", a, " is repeated");
    seen[static_cast<size_t>(ax)] = true;
    axes.push_back(ax);
  }
  if (!n.has_attr("axes"))
    for (int d = 0; d < r; ++d) axes.push_back(d);
  const size_t na = axes.size();
  const Tensor* scales = optional_list(ctx, 2, "scales");
  const Tensor* sizes = optional_list(ctx, 3, "sizes");
  ctx.check((scales != nullptr) != (sizes != nullptr),
            "exactly one of scales (input 2) and sizes (input 3) must be given");
  Shape y = x;
  if (scales) {
    ctx.check(scales->dtype() == DType::kF32, "scales must be f32, got ",
              dtype_name(scales->dtype()));
    ctx.check(static_cast<size_t>(scales->numel()) == na, "scales has ", scales->numel(),
              " values for ", na, " axes");
    for (size_t i = 0; i < na; ++i) {
      const double s = scales->get_as_double(static_cast<int64_t>(i));
      ctx.check(s > 0, "scale ", s, " must be positive");
      const size_t d = static_cast<size_t>(axes[i]);
      y[d] = static_cast<int64_t>(std::floor(static_cast<double>(x[d]) * s));
    }
  } else {
    ctx.check(sizes->dtype() == DType::kS64, "sizes must be s64, got ", dtype_name(sizes->dtype()));
    ctx.check(static_cast<size_t>(sizes->numel()) == na, "sizes has ", sizes->numel(),
              " values for ", na, " axes");
    for (size_t i = 0; i < na; ++i) {
      const int64_t s = sizes->get_as_int64(static_cast<int64_t>(i));
      ctx.check(s >= 0, "size ", s, " must not be negative");
      const size_t d = static_cast<size_t>(axes[i]);
      ctx.check(x[d] > 0 || s == 0, "cannot resize empty axis ", d, " to ", s);
      y[d] = s;
    }
  }
  if (n.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") {
    const Tensor* roi = optional_list(ctx, 1, "roi");
    ctx.check(roi != nullptr, "roi (input 1) is required by tf_crop_and_resize");
    ctx.check(is_float(roi->dtype()), "roi must be a float tensor, got ", dtype_name(roi->dtype()));
    ctx.check(static_cast<size_t>(roi->numel()) == 2 * na, "roi has ", roi->numel(),
              " values, expected ", 2 * na);
  }
  ctx.set_output(0, ctx.dtype(0), y);
}

// ---------------------------------------------------------------------------
// Dropout (inference: identity)
// ---------------------------------------------------------------------------

void infer_dropout(InferContext& ctx) {
  if (ctx.has_input(2)) {
    // training_mode=true drops values unless the ratio is 0 (exporters emit that form for a
    // dropout that runs with p = 0).
    const Tensor* t = ctx.constant(2);
    if (!t) unsupported(ctx, "training_mode must be a constant");
    const Tensor* ratio = ctx.has_input(1) ? ctx.constant(1) : nullptr;
    const bool no_drop = ratio && ratio->numel() == 1 && ratio->get_as_double(0) == 0;
    if (t->numel() > 0 && t->get_as_double(0) != 0 && !no_drop)
      unsupported(ctx, "training_mode=true is not supported (inference only)");
  }
  if (ctx.node().attr_int("is_test", 1) == 0)
    unsupported(ctx, "is_test=0 (training) is not supported");
  if (ctx.has_input(1)) ctx.check(is_float(ctx.dtype(1)), "ratio must be a float");
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
  // Inference keeps every value: the mask, where asked for, is all true.
  if (ctx.num_outputs() > 1) ctx.set_output(1, DType::kBool, ctx.shape(0));
}

// ---------------------------------------------------------------------------
// Quantized ops (ONNX opset 10/13 forms): QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger, and the
// dlas-internal QFusedConv (made by fuse_quantized_conv: an int8 conv with the
// requantization, ReLU/Clip and residual add of include/dlas/algo/qconv.h fused) and QFc
// (made by fuse_quantized_fc: an int8 Linear layer with an f32 output).
// ---------------------------------------------------------------------------

bool is_8bit(DType t) { return t == DType::kU8 || t == DType::kS8; }

void require_8bit(const InferContext& ctx, int i, const char* what) {
  if (!is_8bit(ctx.dtype(i)))
    unsupported(ctx, str(what, " has dtype ", dtype_name(ctx.dtype(i)), "; only u8 and s8"));
}

// A scale (and zero point) of QuantizeLinear / DequantizeLinear: a scalar or a 1-element
// tensor (per tensor), or a 1-D tensor of x.shape[axis] elements (per axis, opset 13).
void check_quant_param(const InferContext& ctx, int i, int xi, const char* what) {
  if (!ctx.has_input(i)) return;
  const Shape& s = ctx.shape(i);
  if (s.empty() || shape_numel(s) == 1) return;
  ctx.check(s.size() == 1, what, " ", shape_str(s), " must be a scalar or 1-D");
  const int axis = ctx.normalize_axis(ctx.node().attr_int("axis", 1), ctx.rank(xi));
  ctx.check(s[0] == ctx.shape(xi)[static_cast<size_t>(axis)], what, " ", shape_str(s),
            " must have x.shape[axis] = ", ctx.shape(xi)[static_cast<size_t>(axis)], " elements");
}

void infer_quantize_linear(InferContext& ctx) {
  require_float(ctx, 0, "x");
  require_float(ctx, 1, "y_scale");
  check_quant_param(ctx, 1, 0, "y_scale");
  DType out = DType::kU8;
  if (ctx.has_input(2)) {
    require_8bit(ctx, 2, "y_zero_point");
    ctx.check(ctx.shape(2) == ctx.shape(1), "y_zero_point ", shape_str(ctx.shape(2)),
              " must have the shape of y_scale ", shape_str(ctx.shape(1)));
    out = ctx.dtype(2);
  }
  ctx.set_output(0, out, ctx.shape(0));
}

void infer_dequantize_linear(InferContext& ctx) {
  const DType t = ctx.dtype(0);
  if (!is_8bit(t) && t != DType::kS32)
    unsupported(ctx, str("x has dtype ", dtype_name(t), "; only u8, s8 and s32"));
  if (ctx.dtype(1) != DType::kF32)
    unsupported(ctx, str("x_scale has dtype ", dtype_name(ctx.dtype(1)), "; only f32"));
  check_quant_param(ctx, 1, 0, "x_scale");
  if (ctx.has_input(2)) {
    ctx.check(ctx.dtype(2) == t, "x_zero_point has dtype ", dtype_name(ctx.dtype(2)), " but x has ",
              dtype_name(t));
    ctx.check(ctx.shape(2) == ctx.shape(1), "x_zero_point ", shape_str(ctx.shape(2)),
              " must have the shape of x_scale ", shape_str(ctx.shape(1)));
  }
  ctx.set_output(0, ctx.dtype(1), ctx.shape(0));
}

void infer_dynamic_quantize_linear(InferContext& ctx) {
  ctx.check(ctx.dtype(0) == DType::kF32, "x must be f32");
  ctx.set_output(0, DType::kU8, ctx.shape(0));
  ctx.set_output(1, DType::kF32, {});
  ctx.set_output(2, DType::kU8, {});
}

// A per-tensor quantization parameter (scalar or 1 element) of the given dtype class.
void require_scalar_param(const InferContext& ctx, int i, const char* what) {
  ctx.check(shape_numel(ctx.shape(i)) == 1, what, " ", shape_str(ctx.shape(i)),
            " must have one element");
}

void infer_qlinear_conv(InferContext& ctx) {
  require_8bit(ctx, 0, "x");
  require_8bit(ctx, 3, "w");
  require_8bit(ctx, 7, "y_zero_point");
  require_scalar_param(ctx, 1, "x_scale");
  require_scalar_param(ctx, 2, "x_zero_point");
  require_scalar_param(ctx, 6, "y_scale");
  require_scalar_param(ctx, 7, "y_zero_point");
  const int64_t m = ctx.shape(3).empty() ? 0 : ctx.shape(3)[0];
  for (int i : {4, 5}) {
    const int64_t e = shape_numel(ctx.shape(i));
    ctx.check(ctx.rank(i) <= 1 && (e == 1 || e == m), i == 4 ? "w_scale " : "w_zero_point ",
              shape_str(ctx.shape(i)), " must have 1 or ", m, " elements");
  }
  if (ctx.has_input(8))
    ctx.check(ctx.dtype(8) == DType::kS32, "B must be s32, got ", dtype_name(ctx.dtype(8)));
  ctx.set_output(0, ctx.dtype(7), conv_output_shape(ctx, 0, 3, 8));
}

void infer_conv_integer(InferContext& ctx) {
  require_8bit(ctx, 0, "x");
  require_8bit(ctx, 1, "w");
  if (ctx.has_input(2)) require_scalar_param(ctx, 2, "x_zero_point");
  if (ctx.has_input(3)) {
    const int64_t e = shape_numel(ctx.shape(3));
    ctx.check(ctx.rank(3) <= 1 && (e == 1 || e == ctx.shape(1)[0]), "w_zero_point ",
              shape_str(ctx.shape(3)), " must have 1 or M elements");
  }
  ctx.set_output(0, DType::kS32, conv_output_shape(ctx, 0, 1, -1));
}

// Zero point / scale of a quantized matmul operand: per tensor, or (for B) per column.
void check_matmul_param(const InferContext& ctx, int i, int64_t per_column, const char* what) {
  const int64_t e = shape_numel(ctx.shape(i));
  ctx.check(ctx.rank(i) <= 1 && (e == 1 || e == per_column), what, " ", shape_str(ctx.shape(i)),
            " must have 1", per_column > 1 ? str(" or ", per_column) : std::string(), " elements");
}

void infer_qlinear_matmul(InferContext& ctx) {
  require_8bit(ctx, 0, "a");
  require_8bit(ctx, 3, "b");
  require_8bit(ctx, 7, "y_zero_point");
  const int64_t cols = ctx.shape(3).empty() ? 1 : ctx.shape(3).back();
  check_matmul_param(ctx, 1, 1, "a_scale");
  check_matmul_param(ctx, 2, 1, "a_zero_point");
  check_matmul_param(ctx, 4, cols, "b_scale");
  check_matmul_param(ctx, 5, cols, "b_zero_point");
  check_matmul_param(ctx, 6, 1, "y_scale");
  check_matmul_param(ctx, 7, 1, "y_zero_point");
  ctx.set_output(0, ctx.dtype(7), matmul_shape(ctx, 0, 3));
}

void infer_matmul_integer(InferContext& ctx) {
  require_8bit(ctx, 0, "A");
  require_8bit(ctx, 1, "B");
  const int64_t cols = ctx.shape(1).empty() ? 1 : ctx.shape(1).back();
  if (ctx.has_input(2)) check_matmul_param(ctx, 2, 1, "a_zero_point");
  if (ctx.has_input(3)) check_matmul_param(ctx, 3, cols, "b_zero_point");
  ctx.set_output(0, DType::kS32, matmul_shape(ctx, 0, 1));
}

int64_t qlinear_conv_macs(const Graph& g, const Node& n) {
  const Shape& w = g.value(n.inputs[3]).shape;
  return shape_numel(g.value(n.outputs[0]).shape) * (shape_numel(w) / std::max<int64_t>(w[0], 1));
}

int64_t qlinear_matmul_macs(const Graph& g, const Node& nd) {
  const Shape& a = g.value(nd.inputs[0]).shape;
  return a.empty() ? 0 : shape_numel(g.value(nd.outputs[0]).shape) * a.back();
}

// The attributes an int8 layer (QFusedConv, QFc) shares: a none / relu / clip activation
// (or gelu, on an f32 output) with its parameters, and one weight scale or one per output
// channel.
void check_int8_layer_attrs(const InferContext& ctx, int64_t channels, bool gelu_ok = false) {
  const std::string act = ctx.node().attr_string("activation", "none");
  ctx.check(act == "none" || act == "relu" || act == "clip" || (gelu_ok && act == "gelu"),
            "activation '", act, "' is not none, relu, clip", gelu_ok ? " or gelu" : "");
  ctx.check(ctx.node().attr_floats("activation_params", {}).size() == (act == "clip" ? 2u : 0u),
            "activation '", act, "' has the wrong number of activation_params");
  const size_t ws = ctx.node().attr_floats("w_scale", {}).size();
  ctx.check(ws == 1 || static_cast<int64_t>(ws) == channels, "w_scale has ", ws,
            " values, expected 1 or ", channels);
}

// QFusedConv(x, w, [B], [R]): x u8/s8, w s8 [K][C/g][KH][KW] (symmetric), B s32 [K] at scale
// x_scale * w_scale[k], R like Y (u8/s8). Attributes: Conv's, `activation` none / relu /
// clip with `activation_params`, x_scale, x_zero_point, w_scale (floats, K or 1), y_scale,
// y_zero_point, y_type ("u8" or "s8"), r_scale, r_zero_point. Y = the qconv.h arithmetic.
void infer_qfused_conv(InferContext& ctx) {
  require_8bit(ctx, 0, "x");
  ctx.check(ctx.dtype(1) == DType::kS8, "w must be s8, got ", dtype_name(ctx.dtype(1)));
  if (ctx.has_input(2))
    ctx.check(ctx.dtype(2) == DType::kS32, "B must be s32, got ", dtype_name(ctx.dtype(2)));
  const Shape y = conv_output_shape(ctx, 0, 1, 2);
  check_int8_layer_attrs(ctx, y[1]);
  const auto yt = dtype_from_name(ctx.node().attr_string("y_type", "u8"));
  ctx.check(yt && is_8bit(*yt), "y_type must be u8 or s8");
  if (ctx.has_input(3)) {
    require_8bit(ctx, 3, "R");
    ctx.check(ctx.shape(3) == y, "residual R ", shape_str(ctx.shape(3)),
              " must have the output shape ", shape_str(y));
  }
  ctx.set_output(0, *yt, y);
}

// QFc(x, w, [B]): dlas-internal (made by fuse_quantized_fc: a QDQ-quantized Linear layer).
// x u8/s8 [..., K] (per tensor: x_scale, x_zero_point), w s8 [K][N] ([N][K] with trans_b = 1),
// symmetric with w_scale (floats, N or 1), B f32 [N]; Y f32 [..., N] =
// act(fmaf(acc, x_scale * w_scale[n], B[n])), acc the exact int32 sum of
// (x - x_zero_point) * w; `activation` none / relu / clip (with `activation_params`) / gelu.
void infer_qfc(InferContext& ctx) {
  require_8bit(ctx, 0, "x");
  ctx.check(ctx.dtype(1) == DType::kS8, "w must be s8, got ", dtype_name(ctx.dtype(1)));
  const Shape& x = ctx.shape(0);
  const Shape& w = ctx.shape(1);
  ctx.check(x.size() >= 1, "x must have rank >= 1");
  ctx.check(w.size() == 2, "w ", shape_str(w), " must have rank 2");
  const bool tb = ctx.node().attr_int("trans_b", 0) != 0;
  const int64_t k = tb ? w[1] : w[0], n = tb ? w[0] : w[1];
  ctx.check(x.back() == k, "x ", shape_str(x), " and w ", shape_str(w),
            " disagree on the reduction length");
  if (ctx.has_input(2)) {
    ctx.check(ctx.dtype(2) == DType::kF32, "B must be f32, got ", dtype_name(ctx.dtype(2)));
    ctx.check(shape_numel(ctx.shape(2)) == n, "B ", shape_str(ctx.shape(2)), " must have ", n,
              " elements");
  }
  check_int8_layer_attrs(ctx, n, /*gelu_ok=*/true);
  Shape y = x;
  y.back() = n;
  ctx.set_output(0, DType::kF32, y);
}

// ChannelAffine(X0, ..., Xn-1, scale, shift): dlas-internal (made by fuse_channel_affine from
// Concat -> BatchNormalization -> activation): Y = act(concat(X0, ..., Xn-1 along axis 1) *
// scale[c] + shift[c]), X of one float type (f32, f16 or bf16; Y has it) and rank >= 2,
// equal outside axis 1, scale and shift f32 [C] with C the summed channels; `activation` and
// `activation_params` as FusedConv's.
void infer_channel_affine(InferContext& ctx) {
  const int xs = ctx.num_inputs() - 2;
  const int r = ctx.rank(0);
  ctx.check(r >= 2, "X0 ", shape_str(ctx.shape(0)), " must have rank >= 2 (N, C, ...)");
  Shape y = ctx.shape(0);
  for (int i = 0; i < xs; ++i) {
    ctx.check(is_float(ctx.dtype(i)), "X", i, " must be f32, f16 or bf16, got ",
              dtype_name(ctx.dtype(i)));
    ctx.check(ctx.dtype(i) == ctx.dtype(0), "X", i, " is ", dtype_name(ctx.dtype(i)), " but X0 is ",
              dtype_name(ctx.dtype(0)));
    const Shape& s = ctx.shape(i);
    ctx.check(ctx.rank(i) == r, "X", i, " has shape ", shape_str(s), " but X0 has ",
              shape_str(ctx.shape(0)), "; ranks differ");
    for (int d = 0; d < r; ++d)
      ctx.check(d == 1 || s[static_cast<size_t>(d)] == y[static_cast<size_t>(d)], "X", i,
                " has shape ", shape_str(s), " but X0 has ", shape_str(ctx.shape(0)),
                "; they differ outside axis 1");
    if (i > 0) y[1] += s[1];
  }
  for (int i : {xs, xs + 1}) {
    ctx.check(ctx.dtype(i) == DType::kF32, i == xs ? "scale" : "shift", " must be f32, got ",
              dtype_name(ctx.dtype(i)));
    ctx.check(ctx.shape(i) == Shape{y[1]}, i == xs ? "scale" : "shift", " must have shape [", y[1],
              "], got ", shape_str(ctx.shape(i)));
  }
  check_fused_activation(ctx);
  ctx.set_output(0, ctx.dtype(0), y);
}

// QLookup(x, table): dlas-internal (made by fuse_quantized_lookup): y[i] = table[x[i] as an
// unsigned byte], x u8/s8, table u8/s8/f32 [256]; y has x's shape and the table's type.
void infer_qlookup(InferContext& ctx) {
  require_8bit(ctx, 0, "x");
  ctx.check(is_8bit(ctx.dtype(1)) || ctx.dtype(1) == DType::kF32,
            "table must be u8, s8 or f32, got ", dtype_name(ctx.dtype(1)));
  ctx.check(ctx.shape(1) == Shape{256}, "table must have shape [256], got ",
            shape_str(ctx.shape(1)));
  ctx.set_output(0, ctx.dtype(1), ctx.shape(0));
}

// QChannelScale(x, g, y_scale[, y_zero_point]): dlas-internal (made by
// fuse_channel_scale_quantize): QuantizeLinear(x * g), x f32 [N, C, H, W], g f32
// [N, C, 1, 1], a per-tensor scale and zero point; y has x's shape and the zero point's type
// (u8 without one).
void infer_qchannel_scale(InferContext& ctx) {
  ctx.check(
      ctx.dtype(0) == DType::kF32 && ctx.dtype(1) == DType::kF32 && ctx.dtype(2) == DType::kF32,
      "x, g and y_scale must be f32");
  const Shape& x = ctx.shape(0);
  const Shape& g = ctx.shape(1);
  ctx.check(
      x.size() == 4 && g.size() == 4 && g[0] == x[0] && g[1] == x[1] && g[2] == 1 && g[3] == 1,
      "g ", shape_str(g), " must be [N, C, 1, 1] of x ", shape_str(x));
  ctx.check(shape_numel(ctx.shape(2)) == 1, "y_scale must be a scalar");
  DType out = DType::kU8;
  if (ctx.has_input(3)) {
    require_8bit(ctx, 3, "y_zero_point");
    ctx.check(shape_numel(ctx.shape(3)) == 1, "y_zero_point must be a scalar");
    out = ctx.dtype(3);
  }
  ctx.set_output(0, out, x);
}

}  // namespace

void append_nn_ops(std::vector<OpSchema>& table) {
  table.push_back({"Conv", 2, 3, 1, 1, infer_conv, conv_macs});
  table.push_back({"FusedConv", 2, 4, 1, 1, infer_fused_conv, conv_macs});
  table.push_back({"QuantizeLinear", 2, 3, 1, 1, infer_quantize_linear});
  table.push_back({"DequantizeLinear", 2, 3, 1, 1, infer_dequantize_linear});
  table.push_back({"DynamicQuantizeLinear", 1, 1, 3, 3, infer_dynamic_quantize_linear});
  table.push_back({"QLinearConv", 8, 9, 1, 1, infer_qlinear_conv, qlinear_conv_macs});
  table.push_back({"ConvInteger", 2, 4, 1, 1, infer_conv_integer, conv_macs});
  table.push_back({"QLinearMatMul", 8, 8, 1, 1, infer_qlinear_matmul, qlinear_matmul_macs});
  table.push_back({"MatMulInteger", 2, 4, 1, 1, infer_matmul_integer, matmul_macs});
  table.push_back({"QFusedConv", 2, 4, 1, 1, infer_qfused_conv, conv_macs});
  table.push_back({"QFc", 2, 3, 1, 1, infer_qfc, matmul_macs});
  table.push_back({"FusedMatMul", 2, 4, 1, 1, infer_fused_matmul, matmul_macs});
  table.push_back({"QLookup", 2, 2, 1, 1, infer_qlookup});
  table.push_back({"QChannelScale", 3, 4, 1, 1, infer_qchannel_scale});
  table.push_back(
      {"ChannelAffine", 3, std::numeric_limits<int>::max(), 1, 1, infer_channel_affine});
  table.push_back({"ConvTranspose", 2, 3, 1, 1, infer_conv_transpose, conv_transpose_macs});
  table.push_back({"BatchNormalization", 5, 5, 1, 3, infer_batch_norm, nullptr, {3, 4}});
  table.push_back({"InstanceNormalization", 3, 3, 1, 1, infer_instance_norm});
  table.push_back({"LayerNormalization", 2, 3, 1, 3, infer_layer_norm});
  table.push_back({"MeanVarianceNormalization", 1, 1, 1, 1, infer_mvn});
  table.push_back({"MaxPool", 1, 1, 1, 2, infer_max_pool});
  table.push_back({"AveragePool", 1, 1, 1, 1, infer_average_pool});
  table.push_back({"GlobalAveragePool", 1, 1, 1, 1, infer_global_pool});
  table.push_back({"GlobalMaxPool", 1, 1, 1, 1, infer_global_pool});
  table.push_back({"LRN", 1, 1, 1, 1, infer_lrn});
  table.push_back({"Gemm", 2, 3, 1, 1, infer_gemm, gemm_macs});
  table.push_back({"MatMul", 2, 2, 1, 1, infer_matmul, matmul_macs});
  table.push_back({"Einsum", 1, std::numeric_limits<int>::max(), 1, 1, infer_einsum, einsum_macs});
  table.push_back({"Softmax", 1, 1, 1, 1, infer_softmax});
  table.push_back({"LogSoftmax", 1, 1, 1, 1, infer_softmax});
  table.push_back({"Hardmax", 1, 1, 1, 1, infer_softmax});
  table.push_back({"Pad", 1, 4, 1, 1, infer_pad});
  for (const char* op :
       {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    table.push_back({op, 1, 2, 1, 1, infer_reduce});
  table.push_back({"ArgMax", 1, 1, 1, 1, infer_arg});
  table.push_back({"ArgMin", 1, 1, 1, 1, infer_arg});
  table.push_back({"TopK", 2, 2, 2, 2, infer_topk, nullptr, {1}});
  table.push_back({"Dropout", 1, 3, 1, 2, infer_dropout});
  table.push_back({"Resize", 1, 4, 1, 1, infer_resize, nullptr, {1, 2, 3}});
}

}  // namespace dlas::ops
