// The libtorch peer: interprets a dlas Graph with ATen CPU operators. Each ONNX op
// is mapped to the ATen call(s) with the same semantics; nothing here calls the
// dlas reference kernels, so agreement between the two is evidence, not tautology.
// This is one of the only translation units that include torch headers; ATen/ATen.h
// is enough (the torch/torch.h front end adds autograd and nn modules we never use).
#include "dlas/torch/torch_peer.h"

#include "dlas/system/make_executor.h"
#include "torch/peer/torch_ops.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace dlas {
namespace {

// ---- dtype and tensor conversion -------------------------------------------------------

at::ScalarType to_scalar_type(DType t) {
  switch (t) {
    case DType::kF32:
      return at::kFloat;
    case DType::kF16:
      return at::kHalf;
    case DType::kBF16:
      return at::kBFloat16;
    case DType::kS8:
      return at::kChar;
    case DType::kU8:
      return at::kByte;
    case DType::kS32:
      return at::kInt;
    case DType::kS64:
      return at::kLong;
    case DType::kBool:
      return at::kBool;
  }
  fail(ErrorKind::kInternal, "torch peer: unknown dtype");
}

// The dlas dtype a torch result is stored as when the graph does not say (f64 -> f32, as
// NumPy files are read).
DType dtype_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return DType::kF32;
    case at::kDouble:
      return DType::kF32;
    case at::kHalf:
      return DType::kF16;
    case at::kBFloat16:
      return DType::kBF16;
    case at::kChar:
      return DType::kS8;
    case at::kByte:
      return DType::kU8;
    case at::kBool:
      return DType::kBool;
    case at::kInt:
      return DType::kS32;
    case at::kLong:
      return DType::kS64;
    default:
      fail(ErrorKind::kUnsupported, "torch peer: no dlas dtype for ", c10::toString(t));
  }
}

at::Tensor to_torch(const Tensor& t) {
  std::vector<int64_t> sizes(t.shape().begin(), t.shape().end());
  auto options = at::TensorOptions().dtype(to_scalar_type(t.dtype()));
  if (t.numel() == 0) return at::empty(sizes, options);
  // from_blob does not own the memory; clone() makes the torch tensor independent.
  return at::from_blob(const_cast<void*>(t.raw()), sizes, options).clone();
}

Tensor from_torch(const at::Tensor& value, DType dtype) {
  at::Tensor c = value.to(to_scalar_type(dtype)).contiguous();
  Shape shape(c.sizes().begin(), c.sizes().end());
  Tensor out(dtype, shape);
  if (out.numel() > 0) std::memcpy(out.raw(), c.data_ptr(), out.nbytes());
  return out;
}

std::vector<int64_t> to_int64s(const at::Tensor& t) {
  at::Tensor c = t.to(at::kLong).contiguous().reshape({-1});
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

// ---- per-node context ------------------------------------------------------------------

class NodeCall {
 public:
  NodeCall(const Node& node, std::vector<at::Tensor> inputs)
      : node_(node), inputs_(std::move(inputs)) {}
  const Node& node() const { return node_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(node_.outputs.size()); }
  bool has(int i) const { return i < num_inputs() && inputs_[i].defined(); }
  bool wants_output(int i) const { return i < num_outputs() && !node_.outputs[i].empty(); }
  const at::Tensor& in(int i) const {
    if (!has(i)) fail(ErrorKind::kInvalidInput, node_.label(), ": input ", i, " is required");
    return inputs_[i];
  }
  const std::vector<at::Tensor>& inputs() const { return inputs_; }

  int64_t attr_int(const char* key, int64_t fallback) const {
    return node_.attr_int(key, fallback);
  }
  float attr_float(const char* key, float fallback) const {
    return node_.attr_float(key, fallback);
  }
  std::vector<int64_t> attr_ints(const char* key, std::vector<int64_t> fallback = {}) const {
    return node_.attr_ints(key, fallback);
  }
  std::string attr_string(const char* key, const std::string& fallback) const {
    return node_.attr_string(key, fallback);
  }
  // A list argument given either as an attribute (older opsets) or as input i (opset 13
  // forms); nullopt when neither is present.
  std::optional<std::vector<int64_t>> ints_arg(int i, const char* attr) const {
    if (node_.has_attr(attr)) return node_.attr_ints(attr, {});
    if (has(i)) return to_int64s(inputs_[i]);
    return std::nullopt;
  }
  int64_t axis(int64_t a, int64_t rank) const {
    int64_t r = a < 0 ? a + rank : a;
    if (r < 0 || r >= std::max<int64_t>(rank, 1)) {
      fail(ErrorKind::kInvalidInput, node_.label(), ": axis ", a, " out of range for rank ", rank);
    }
    return r;
  }
  template <class... Args>
  [[noreturn]] void unsupported(Args&&... args) const {
    fail(ErrorKind::kUnsupported, node_.label(), ": ", std::forward<Args>(args)...);
  }

 private:
  const Node& node_;
  std::vector<at::Tensor> inputs_;
};

using Outputs = std::vector<at::Tensor>;
using OpFn = Outputs (*)(const NodeCall& c);

// ---- helpers shared by conv and pooling ------------------------------------------------

// ONNX pads [b_1..b_n, e_1..e_n] over the last n dims -> torch pad list, last dim first.
std::vector<int64_t> torch_pad_list(const std::vector<int64_t>& pads) {
  size_t n = pads.size() / 2;
  std::vector<int64_t> out;
  for (size_t i = n; i-- > 0;) {
    out.push_back(pads[i]);
    out.push_back(pads[n + i]);
  }
  return out;
}

// Explicit begin/end pads of a windowed op, resolving auto_pad.
std::vector<int64_t> window_pads(const NodeCall& c, const at::Tensor& x,
                                 const std::vector<int64_t>& kernel,
                                 const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& dilations) {
  size_t n = kernel.size();
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
    if (pads.size() != 2 * n) c.unsupported("pads has ", pads.size(), " values for ", n, " dims");
    return pads;
  }
  std::vector<int64_t> pads(2 * n, 0);
  if (auto_pad == "VALID") return pads;
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") c.unsupported("auto_pad ", auto_pad);
  for (size_t i = 0; i < n; ++i) {
    int64_t in = x.size(static_cast<int64_t>(x.dim() - n + i));
    int64_t out = (in + strides[i] - 1) / strides[i];
    int64_t total =
        std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in);
    int64_t small = total / 2;
    pads[i] = auto_pad == "SAME_UPPER" ? small : total - small;
    pads[n + i] = total - pads[i];
  }
  return pads;
}

bool symmetric(const std::vector<int64_t>& pads) {
  size_t n = pads.size() / 2;
  for (size_t i = 0; i < n; ++i) {
    if (pads[i] != pads[n + i]) return false;
  }
  return true;
}

std::vector<int64_t> begins(const std::vector<int64_t>& pads) {
  return std::vector<int64_t>(pads.begin(), pads.begin() + pads.size() / 2);
}

// ---- nn ops ----------------------------------------------------------------------------

Outputs op_conv(const NodeCall& c) {
  at::Tensor x = c.in(0);
  const at::Tensor& w = c.in(1);
  at::Tensor bias = c.has(2) ? c.in(2) : at::Tensor();
  size_t n = static_cast<size_t>(w.dim() - 2);
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {});
  if (kernel.empty()) kernel.assign(w.sizes().begin() + 2, w.sizes().end());
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dilations = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = window_pads(c, x, kernel, strides, dilations);
  std::vector<int64_t> padding = begins(pads);
  if (!symmetric(pads)) {
    x = at::constant_pad_nd(x, torch_pad_list(pads), 0);
    padding.assign(n, 0);
  }
  return {at::convolution(x, w, bias, strides, padding, dilations, /*transposed=*/false,
                          std::vector<int64_t>(n, 0), c.attr_int("group", 1))};
}

// The `activation` attribute of dlas's fused ops (FusedConv, FusedMatMul, ChannelAffine)
// applied to y.
Outputs fused_activation(const NodeCall& c, const at::Tensor& y) {
  const std::string act = c.attr_string("activation", "none");
  const std::vector<float> p = c.node().attr_floats("activation_params", {});
  if (act == "relu") return {at::relu(y)};
  if (act == "clip") return {at::clamp_max(at::clamp_min(y, p.at(0)), p.at(1))};
  if (act == "sigmoid") return {at::sigmoid(y)};
  if (act == "silu") return {y * at::sigmoid(y)};
  if (act == "hardsigmoid") return {at::clamp(y * p.at(0) + p.at(1), 0.0, 1.0)};
  if (act == "hardswish") return {at::hardswish(y)};
  if (act == "gelu") return {at::gelu(y, "none")};
  return {y};
}

// dlas's FusedConv: act(conv(x, w) + b + residual).
Outputs op_fused_conv(const NodeCall& c) {
  at::Tensor y = op_conv(c)[0];
  if (c.has(3)) y = y + c.in(3);
  return fused_activation(c, y);
}

// dlas's ChannelAffine(x0, ..., scale, shift): act(cat(x, 1) * scale[c] + shift[c]).
Outputs op_channel_affine(const NodeCall& c) {
  const int xs = c.num_inputs() - 2;
  std::vector<at::Tensor> parts;
  for (int i = 0; i < xs; ++i) parts.push_back(c.in(i));
  const at::Tensor x = xs == 1 ? parts[0] : at::cat(parts, 1);
  std::vector<int64_t> per_channel(static_cast<size_t>(x.dim()), 1);
  per_channel[1] = x.size(1);
  return fused_activation(c, x * c.in(xs).reshape(per_channel) + c.in(xs + 1).reshape(per_channel));
}

Outputs op_conv_transpose(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  const at::Tensor& w = c.in(1);
  size_t n = static_cast<size_t>(w.dim() - 2);
  std::vector<int64_t> kernel(w.sizes().begin() + 2, w.sizes().end());
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dilations = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> out_pad = c.attr_ints("output_padding", std::vector<int64_t>(n, 0));
  std::vector<int64_t> output_shape = c.attr_ints("output_shape", {});
  std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> pads(2 * n, 0);
  if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t in = x.size(static_cast<int64_t>(2 + i));
      int64_t want =
          output_shape.empty() ? in * strides[i] : output_shape[output_shape.size() - n + i];
      int64_t total =
          strides[i] * (in - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - want;
      int64_t half = total / 2;
      pads[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[n + i] = total - pads[i];
    }
  } else if (auto_pad == "NOTSET") {
    pads = c.attr_ints("pads", pads);
  }
  // The full transposed convolution (no padding), then crop `pads` and extend by
  // output_padding; this covers asymmetric and negative totals uniformly.
  at::Tensor y =
      at::convolution(x, w, at::Tensor(), strides, std::vector<int64_t>(n, 0), dilations,
                      /*transposed=*/true, std::vector<int64_t>(n, 0), c.attr_int("group", 1));
  std::vector<int64_t> crop(2 * n);
  for (size_t i = 0; i < n; ++i) {
    crop[i] = -pads[i];
    crop[n + i] = out_pad[i] - pads[n + i];
  }
  y = at::constant_pad_nd(y, torch_pad_list(crop), 0);
  if (c.has(2)) {
    std::vector<int64_t> bshape(static_cast<size_t>(y.dim()), 1);
    bshape[1] = -1;
    y = y + c.in(2).reshape(bshape);
  }
  return {y};
}

Outputs op_batch_norm(const NodeCall& c) {
  if (c.wants_output(1) || c.wants_output(2)) c.unsupported("training-mode outputs");
  return {at::batch_norm(c.in(0), c.in(1), c.in(2), c.in(3), c.in(4), /*training=*/false,
                         /*momentum=*/0.0, c.attr_float("epsilon", 1e-5f),
                         /*cudnn_enabled=*/false)};
}

Outputs op_instance_norm(const NodeCall& c) {
  return {at::instance_norm(c.in(0), c.in(1), c.in(2), at::Tensor(), at::Tensor(),
                            /*use_input_stats=*/true, 0.0, c.attr_float("epsilon", 1e-5f),
                            /*cudnn_enabled=*/false)};
}

Outputs op_layer_norm(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", -1), x.dim());
  std::vector<int64_t> shape(x.sizes().begin() + axis, x.sizes().end());
  at::Tensor w = c.in(1).expand(shape);
  at::Tensor b = c.has(2) ? c.in(2).expand(shape) : at::Tensor();
  double eps = c.attr_float("epsilon", 1e-5f);
  if (!c.wants_output(1) && !c.wants_output(2)) return {at::layer_norm(x, shape, w, b, eps)};
  // native_layer_norm also returns the statistics (mean, 1 / std); ONNX shapes them as X
  // with the normalised dims 1.
  auto [y, mean, rstd] = at::native_layer_norm(x, shape, w, b, eps);
  std::vector<int64_t> stats(x.sizes().begin(), x.sizes().begin() + axis);
  stats.resize(static_cast<size_t>(x.dim()), 1);
  return {y, mean.reshape(stats), rstd.reshape(stats)};
}

Outputs op_mvn(const NodeCall& c) {
  // ONNX's function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9).
  const at::Tensor& x = c.in(0);
  std::vector<int64_t> axes;
  for (int64_t a : c.attr_ints("axes", {0, 2, 3})) axes.push_back(c.axis(a, x.dim()));
  at::Tensor mean = at::mean(x, axes, /*keepdim=*/true);
  at::Tensor var = at::mean(x * x, axes, /*keepdim=*/true) - mean * mean;
  return {(x - mean) / (at::sqrt(var) + 1e-9)};
}

Outputs op_max_pool(const NodeCall& c) {
  if (c.wants_output(1)) c.unsupported("the Indices output is not mapped");
  if (c.attr_int("storage_order", 0) != 0) c.unsupported("storage_order 1");
  at::Tensor x = c.in(0);
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape");
  size_t n = kernel.size();
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dilations = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = window_pads(c, x, kernel, strides, dilations);
  bool ceil = c.attr_int("ceil_mode", 0) != 0;
  std::vector<int64_t> padding = begins(pads);
  bool fits = symmetric(pads);
  for (size_t i = 0; i < n && fits; ++i) fits = padding[i] * 2 <= kernel[i];
  if (!fits) {  // torch needs symmetric pads of at most half the window: pad with -inf.
    x = at::constant_pad_nd(x, torch_pad_list(pads), -std::numeric_limits<double>::infinity());
    padding.assign(n, 0);
  }
  switch (n) {
    case 1:
      return {at::max_pool1d(x, kernel, strides, padding, dilations, ceil)};
    case 2:
      return {at::max_pool2d(x, kernel, strides, padding, dilations, ceil)};
    case 3:
      return {at::max_pool3d(x, kernel, strides, padding, dilations, ceil)};
    default:
      c.unsupported(n, "-d pooling");
  }
}

at::Tensor avg_pool_nd(const NodeCall& c, const at::Tensor& x, const std::vector<int64_t>& k,
                       const std::vector<int64_t>& s, const std::vector<int64_t>& p, bool ceil,
                       bool include_pad) {
  switch (k.size()) {
    case 1:
      return at::avg_pool1d(x, k, s, p, ceil, include_pad);
    case 2:
      return at::avg_pool2d(x, k, s, p, ceil, include_pad);
    case 3:
      return at::avg_pool3d(x, k, s, p, ceil, include_pad);
    default:
      c.unsupported(k.size(), "-d pooling");
  }
}

Outputs op_avg_pool(const NodeCall& c) {
  at::Tensor x = c.in(0);
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape");
  size_t n = kernel.size();
  std::vector<int64_t> ones(n, 1);
  if (c.attr_ints("dilations", ones) != ones) c.unsupported("dilated average pooling");
  std::vector<int64_t> strides = c.attr_ints("strides", ones);
  std::vector<int64_t> pads = window_pads(c, x, kernel, strides, ones);
  bool ceil = c.attr_int("ceil_mode", 0) != 0;
  bool include_pad = c.attr_int("count_include_pad", 0) != 0;
  std::vector<int64_t> padding = begins(pads);
  bool fits = symmetric(pads);
  for (size_t i = 0; i < n && fits; ++i) fits = padding[i] * 2 <= kernel[i];
  if (fits) return {avg_pool_nd(c, x, kernel, strides, padding, ceil, include_pad)};
  // Pad explicitly; when padding is not counted, divide by the pooled count of ones.
  std::vector<int64_t> zero(n, 0);
  std::vector<int64_t> plist = torch_pad_list(pads);
  at::Tensor sum =
      avg_pool_nd(c, at::constant_pad_nd(x, plist, 0), kernel, strides, zero, ceil, true);
  if (include_pad) return {sum};
  std::vector<int64_t> ones_shape(x.sizes().begin(), x.sizes().end());
  for (size_t i = 0; i + n < ones_shape.size(); ++i) ones_shape[i] = 1;
  at::Tensor padded = at::constant_pad_nd(at::ones(ones_shape, x.options()), plist, 0);
  at::Tensor count = avg_pool_nd(c, padded, kernel, strides, zero, ceil, true);
  return {sum / count};
}

std::vector<int64_t> spatial_dims(const at::Tensor& x) {
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

Outputs op_global_avg_pool(const NodeCall& c) {
  return {at::mean(c.in(0), spatial_dims(c.in(0)), /*keepdim=*/true)};
}
Outputs op_global_max_pool(const NodeCall& c) {
  return {at::amax(c.in(0), spatial_dims(c.in(0)), /*keepdim=*/true)};
}

Outputs op_lrn(const NodeCall& c) {
  // y = x / (bias + alpha / size * sum of x^2 over a window of `size` channels)^beta
  const at::Tensor& x = c.in(0);
  int64_t size = c.attr_int("size", 1);
  double alpha = c.attr_float("alpha", 1e-4f), beta = c.attr_float("beta", 0.75f);
  double bias = c.attr_float("bias", 1.0f);
  at::Tensor sq = x * x;
  // Pad the channel axis by floor((size-1)/2) before and ceil((size-1)/2) after.
  std::vector<int64_t> plist(static_cast<size_t>(2 * (x.dim() - 1)), 0);
  plist[plist.size() - 2] = (size - 1) / 2;
  plist[plist.size() - 1] = size - 1 - (size - 1) / 2;
  at::Tensor window = at::constant_pad_nd(sq, plist, 0).unfold(1, size, 1).sum(-1);
  return {x / at::pow(window * (alpha / static_cast<double>(size)) + bias, beta)};
}

Outputs op_gemm(const NodeCall& c) {
  at::Tensor a = c.in(0), b = c.in(1);
  if (c.attr_int("transA", 0)) a = a.t();
  if (c.attr_int("transB", 0)) b = b.t();
  double alpha = c.attr_float("alpha", 1.0f), beta = c.attr_float("beta", 1.0f);
  if (c.has(2) && beta != 0.0) return {at::addmm(c.in(2), a, b, beta, alpha)};
  at::Tensor y = at::mm(a, b);
  return {alpha == 1.0 ? y : y * alpha};
}

Outputs op_matmul(const NodeCall& c) { return {at::matmul(c.in(0), c.in(1))}; }

Outputs op_einsum(const NodeCall& c) {
  std::string eq;
  for (char ch : c.attr_string("equation", ""))
    if (ch != ' ') eq += ch;
  std::vector<at::Tensor> ops;
  for (int i = 0; i < c.num_inputs(); ++i) ops.push_back(c.in(i));
  return {at::einsum(eq, ops)};
}

// dlas's FusedMatMul: act(x w + b + residual).
Outputs op_fused_matmul(const NodeCall& c) {
  at::Tensor y = at::matmul(c.in(0), c.in(1));
  if (c.has(2)) y = y + c.in(2).reshape({-1});
  if (c.has(3)) y = y + c.in(3);
  return fused_activation(c, y);
}

Outputs op_softmax(const NodeCall& c) {
  return {at::softmax(c.in(0), c.axis(c.attr_int("axis", -1), c.in(0).dim()))};
}
Outputs op_log_softmax(const NodeCall& c) {
  return {at::log_softmax(c.in(0), c.axis(c.attr_int("axis", -1), c.in(0).dim()))};
}

Outputs op_dropout(const NodeCall& c) {
  // Inference: identity; the optional mask is all true.
  Outputs out{c.in(0)};
  if (c.wants_output(1)) out.push_back(at::ones(c.in(0).sizes(), at::kBool));
  return out;
}

Outputs op_pad(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  std::optional<std::vector<int64_t>> given = c.ints_arg(1, "pads");
  if (!given) c.unsupported("pads missing");
  std::vector<int64_t> pads = *given;
  int64_t r = x.dim();
  if (c.has(3)) {  // opset 18 axes: expand to all dims
    std::vector<int64_t> axes = to_int64s(c.in(3));
    std::vector<int64_t> full(static_cast<size_t>(2 * r), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = c.axis(axes[i], r);
      full[a] = pads[i];
      full[r + a] = pads[axes.size() + i];
    }
    pads = full;
  }
  if (static_cast<int64_t>(pads.size()) != 2 * r) c.unsupported("pads length ", pads.size());
  std::vector<int64_t> plist = torch_pad_list(pads);
  std::string mode = c.attr_string("mode", "constant");
  if (mode == "constant") {
    double value = c.has(2) ? c.in(2).item<double>() : c.attr_float("value", 0.0f);
    return {at::constant_pad_nd(x, plist, value)};
  }
  // reflect / replicate pad only trailing dims: drop the all-zero pairs of leading dims.
  while (plist.size() >= 2 && plist[plist.size() - 1] == 0 && plist[plist.size() - 2] == 0) {
    plist.resize(plist.size() - 2);
  }
  if (plist.empty()) return {x};
  if (mode == "reflect") return {at::pad(x, plist, "reflect")};
  if (mode == "edge") return {at::pad(x, plist, "replicate")};
  c.unsupported("pad mode ", mode);
}

// ---- reductions ------------------------------------------------------------------------

enum class Reduce { kMean, kSum, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

template <Reduce kind>
Outputs op_reduce(const NodeCall& c) {
  at::Tensor x = c.in(0);
  bool keep = c.attr_int("keepdims", 1) != 0;
  std::optional<std::vector<int64_t>> axes = c.ints_arg(1, "axes");
  std::vector<int64_t> dims;
  if (!axes || axes->empty()) {
    if (c.attr_int("noop_with_empty_axes", 0) != 0) return {x};
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  } else {
    for (int64_t a : *axes) dims.push_back(c.axis(a, x.dim()));
  }
  if (x.dim() == 0) return {x};
  switch (kind) {
    case Reduce::kMean:
      return {at::mean(x, dims, keep)};
    case Reduce::kSum:
      return {at::sum(x, dims, keep)};
    case Reduce::kMax:
      return {at::amax(x, dims, keep)};
    case Reduce::kMin:
      return {at::amin(x, dims, keep)};
    case Reduce::kL1:
      return {at::sum(at::abs(x), dims, keep)};
    case Reduce::kL2:
      return {at::sqrt(at::sum(x * x, dims, keep))};
    case Reduce::kLogSum:
      return {at::log(at::sum(x, dims, keep))};
    case Reduce::kLogSumExp:
      return {at::logsumexp(x, dims, keep)};
    case Reduce::kSumSquare:
      return {at::sum(x * x, dims, keep)};
    case Reduce::kProd: {
      std::sort(dims.rbegin(), dims.rend());
      for (int64_t d : dims) x = at::prod(x, d, keep);
      return {x};
    }
  }
  return {x};
}

template <bool kMax>
Outputs op_arg(const NodeCall& c) {
  at::Tensor x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", 0), x.dim());
  bool keep = c.attr_int("keepdims", 1) != 0;
  if (c.attr_int("select_last_index", 0) != 0) {
    int64_t last = x.size(axis) - 1;
    at::Tensor flipped = at::flip(x, {axis});
    at::Tensor i = kMax ? at::argmax(flipped, axis, keep) : at::argmin(flipped, axis, keep);
    return {last - i};
  }
  return {kMax ? at::argmax(x, axis, keep) : at::argmin(x, axis, keep)};
}

Outputs op_hardmax(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", -1), x.dim());
  return {at::zeros_like(x).scatter_(axis, at::argmax(x, axis, /*keepdim=*/true), 1.0)};
}

Outputs op_topk(const NodeCall& c) {
  // A stable sort keeps equal values in index order, which ONNX requires (at::topk does
  // not promise it); NaN sorts as the largest value.
  const at::Tensor& x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", -1), x.dim());
  int64_t k = to_int64s(c.in(1)).at(0);
  bool largest = c.attr_int("largest", 1) != 0;
  auto [values, indices] = at::sort(x, /*stable=*/true, axis, /*descending=*/largest);
  return {values.narrow(axis, 0, k), indices.narrow(axis, 0, k)};
}

// ---- Resize ------------------------------------------------------------------------------
// Where ATen has the ONNX mode (upsample_nearest: asymmetric + floor; the "exact" variant:
// half_pixel + round_prefer_ceil; bilinear/bicubic with and without align_corners) the
// mapping calls it; other combinations are computed axis by axis with index_select.

struct ResizeSpec {
  std::vector<int64_t> out;
  std::vector<double> scale;    // output / input per axis
  std::vector<double> resized;  // the spec's length_resized: scale * in, or the given size
  std::vector<double> roi;      // [starts..., ends...] over all axes
};

ResizeSpec resize_spec(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  int64_t r = x.dim();
  std::vector<int64_t> axes = c.attr_ints("axes", {});
  if (axes.empty())
    for (int64_t d = 0; d < r; ++d) axes.push_back(d);
  for (int64_t& a : axes) a = c.axis(a, r);
  ResizeSpec s;
  for (int64_t d = 0; d < r; ++d) {
    s.out.push_back(x.size(d));
    s.scale.push_back(1.0);
    s.resized.push_back(static_cast<double>(x.size(d)));
  }
  s.roi.assign(static_cast<size_t>(2 * r), 0.0);
  for (int64_t d = 0; d < r; ++d) s.roi[static_cast<size_t>(r + d)] = 1.0;
  bool has_scales = c.has(2) && c.in(2).numel() > 0;
  at::Tensor scales = has_scales ? c.in(2).to(at::kDouble).contiguous() : at::Tensor();
  std::vector<int64_t> sizes = has_scales ? std::vector<int64_t>{} : to_int64s(c.in(3));
  at::Tensor roi =
      c.has(1) && c.in(1).numel() > 0 ? c.in(1).to(at::kDouble).contiguous() : at::Tensor();
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t d = static_cast<size_t>(axes[i]);
    double in = static_cast<double>(x.size(static_cast<int64_t>(d)));
    if (has_scales) {
      s.scale[d] = scales[static_cast<int64_t>(i)].item<double>();
      s.resized[d] = s.scale[d] * in;
      s.out[d] = static_cast<int64_t>(std::floor(s.resized[d]));
    } else {
      s.out[d] = sizes[i];
      s.resized[d] = static_cast<double>(sizes[i]);
      s.scale[d] = s.resized[d] / in;
    }
    if (roi.defined()) {
      s.roi[d] = roi[static_cast<int64_t>(i)].item<double>();
      s.roi[static_cast<size_t>(r) + d] = roi[static_cast<int64_t>(i + axes.size())].item<double>();
    }
  }
  return s;
}

// Source coordinates of the outputs along axis d (float64).
at::Tensor resize_source(const std::string& mode, const ResizeSpec& s, int64_t d, int64_t in) {
  at::Tensor o = at::arange(s.out[d], at::kDouble);
  double scale = s.scale[d], len = s.resized[d], n = static_cast<double>(in);
  if (mode == "half_pixel") return (o + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return len > 1 ? (o + 0.5) / scale - 0.5 : o * 0.0;
  if (mode == "align_corners") return len == 1 ? o * 0.0 : o * ((n - 1) / (len - 1));
  if (mode == "asymmetric") return o / scale;
  if (mode == "tf_half_pixel_for_nn") return (o + 0.5) / scale;
  double start = s.roi[d], end = s.roi[s.scale.size() + d];
  if (len > 1) return o * ((end - start) * (n - 1) / (len - 1)) + start * (n - 1);
  return o * 0.0 + 0.5 * (start + end) * (n - 1);
}

at::Tensor resize_generic(const NodeCall& c, const ResizeSpec& s) {
  std::string mode = c.attr_string("mode", "nearest");
  std::string transform = c.attr_string("coordinate_transformation_mode", "half_pixel");
  std::string nearest = c.attr_string("nearest_mode", "round_prefer_floor");
  double a = c.attr_float("cubic_coeff_a", -0.75f);
  bool exclude = c.attr_int("exclude_outside", 0) != 0;
  at::Tensor y = c.in(0).to(at::kDouble);
  at::Tensor outside = at::zeros(s.out, at::kBool);
  for (int64_t d = 0; d < y.dim(); ++d) {
    int64_t in = y.size(d);
    bool tf = transform == "tf_crop_and_resize" || transform == "tf_half_pixel_for_nn";
    if (s.out[d] == in && s.scale[d] == 1.0 && !tf) continue;  // the identity
    at::Tensor src = resize_source(transform, s, d, in);
    std::vector<int64_t> view(static_cast<size_t>(y.dim()), 1);
    view[static_cast<size_t>(d)] = s.out[d];
    if (transform == "tf_crop_and_resize")
      outside = outside | ((src < 0) | (src > in - 1)).reshape(view);
    at::Tensor base = at::floor(src), frac = src - base;
    std::vector<std::pair<at::Tensor, at::Tensor>> taps;  // (index, weight)
    if (mode == "nearest") {
      at::Tensor up;
      if (nearest == "floor")
        up = at::zeros_like(frac, at::kBool);
      else if (nearest == "ceil")
        up = frac > 0;
      else if (nearest == "round_prefer_ceil")
        up = frac >= 0.5;
      else
        up = frac > 0.5;
      taps.push_back({base + up.to(at::kDouble), at::ones_like(frac)});
    } else if (mode == "linear") {
      taps = {{base, 1 - frac}, {base + 1, frac}};
    } else {
      auto w = [&](const at::Tensor& t0) {
        at::Tensor t = at::abs(t0);
        at::Tensor near = ((a + 2) * t - (a + 3)) * t * t + 1;
        at::Tensor far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
        return at::where(t <= 1, near, at::where(t < 2, far, at::zeros_like(t)));
      };
      for (int k = -1; k <= 2; ++k) taps.push_back({base + k, w(src - (base + k))});
    }
    if (exclude) {
      at::Tensor total = at::zeros_like(frac);
      for (auto& [idx, wt] : taps) {
        wt = at::where((idx < 0) | (idx > in - 1), at::zeros_like(wt), wt);
        total = total + wt;
      }
      for (auto& [idx, wt] : taps) wt = wt / total;
    }
    at::Tensor acc;
    for (auto& [idx, wt] : taps) {
      at::Tensor i = at::clamp(idx, 0, in - 1).to(at::kLong);
      at::Tensor term = y.index_select(d, i) * wt.reshape(view);
      acc = acc.defined() ? acc + term : term;
    }
    y = acc;
  }
  if (transform == "tf_crop_and_resize")
    y = at::where(outside, at::full({}, c.attr_float("extrapolation_value", 0.0f), at::kDouble), y);
  return y.to(c.in(0).scalar_type());
}

Outputs op_resize(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  if (c.attr_int("antialias", 0) != 0) c.unsupported("antialias");
  if (c.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    c.unsupported("keep_aspect_ratio_policy");
  ResizeSpec s = resize_spec(c);
  std::string mode = c.attr_string("mode", "nearest");
  std::string transform = c.attr_string("coordinate_transformation_mode", "half_pixel");
  std::string nearest = c.attr_string("nearest_mode", "round_prefer_floor");
  int64_t r = x.dim();
  // ATen's upsample kernels take [N, C, spatial...] and leave N and C alone.
  bool nchw = r >= 3 && r <= 5 && s.out[0] == x.size(0) && s.out[1] == x.size(1) &&
              s.scale[0] == 1.0 && s.scale[1] == 1.0;
  std::vector<int64_t> out(s.out.begin() + std::min<int64_t>(r, 2), s.out.end());
  std::vector<c10::optional<double>> sc;
  for (int64_t d = 2; d < r; ++d) sc.push_back(s.scale[d]);
  bool integral = true;  // align_corners in ATen uses the integer output length
  for (int64_t d = 0; d < r; ++d)
    integral = integral && s.resized[d] == static_cast<double>(s.out[d]);
  if (nchw && mode == "nearest" && transform == "asymmetric" && nearest == "floor") {
    if (r == 3) return {at::upsample_nearest1d(x, out, sc[0])};
    if (r == 4) return {at::upsample_nearest2d(x, out, sc[0], sc[1])};
    return {at::upsample_nearest3d(x, out, sc[0], sc[1], sc[2])};
  }
  if (nchw && mode == "nearest" && transform == "half_pixel" && nearest == "round_prefer_ceil") {
    if (r == 3) return {at::_upsample_nearest_exact1d(x, out, sc[0])};
    if (r == 4) return {at::_upsample_nearest_exact2d(x, out, sc[0], sc[1])};
    return {at::_upsample_nearest_exact3d(x, out, sc[0], sc[1], sc[2])};
  }
  // pytorch_half_pixel is half_pixel unless a spatial output length is 1 (then it samples 0).
  bool half =
      transform == "half_pixel" || (transform == "pytorch_half_pixel" &&
                                    std::all_of(s.resized.begin() + std::min<int64_t>(r, 2),
                                                s.resized.end(), [](double v) { return v > 1; }));
  bool corners = transform == "align_corners" && integral;
  if (nchw && mode == "linear" && (half || corners)) {
    if (r == 3) return {at::upsample_linear1d(x, out, corners, sc[0])};
    if (r == 4) return {at::upsample_bilinear2d(x, out, corners, sc[0], sc[1])};
    return {at::upsample_trilinear3d(x, out, corners, sc[0], sc[1], sc[2])};
  }
  if (nchw && r == 4 && mode == "cubic" && (half || corners) &&
      c.attr_float("cubic_coeff_a", -0.75f) == -0.75f && c.attr_int("exclude_outside", 0) == 0)
    return {at::upsample_bicubic2d(x, out, corners, sc[0], sc[1])};
  return {resize_generic(c, s)};
}

Outputs op_depth_to_space(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  int64_t b = c.attr_int("blocksize", 1);
  if (c.attr_string("mode", "DCR") == "CRD") return {at::pixel_shuffle(x, b)};
  // DCR, the spec's formula.
  int64_t n = x.size(0), ch = x.size(1), h = x.size(2), w = x.size(3);
  return {x.reshape({n, b, b, ch / (b * b), h, w})
              .permute({0, 3, 4, 1, 5, 2})
              .reshape({n, ch / (b * b), h * b, w * b})};
}

Outputs op_space_to_depth(const NodeCall& c) {
  // pixel_unshuffle orders the new channels c * b^2 + offset; ONNX orders them
  // offset * C + c.
  const at::Tensor& x = c.in(0);
  int64_t b = c.attr_int("blocksize", 1);
  at::Tensor y = at::pixel_unshuffle(x, b);
  int64_t n = y.size(0), ch = x.size(1), h = y.size(2), w = y.size(3);
  return {y.reshape({n, ch, b * b, h, w}).transpose(1, 2).reshape({n, ch * b * b, h, w})};
}

Outputs op_shrink(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  double lambd = c.attr_float("lambd", 0.5f), bias = c.attr_float("bias", 0.0f);
  if (bias == 0.0) return {at::hardshrink(x, lambd)};
  if (bias == lambd) return {at::softshrink(x, lambd)};
  return {at::where(x < -lambd, x + bias, at::where(x > lambd, x - bias, at::zeros_like(x)))};
}

Outputs op_eye_like(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  at::Tensor y = at::zeros(x.sizes(), x.options());
  int64_t k = c.attr_int("k", 0);
  if (k < x.size(1) && -k < x.size(0)) y.diagonal(k).fill_(1);
  return {y};
}

Outputs op_cast_like(const NodeCall& c) { return {c.in(0).to(c.in(1).scalar_type())}; }

// ---- elementwise -----------------------------------------------------------------------

template <at::Tensor (*fn)(const at::Tensor&)>
Outputs unary(const NodeCall& c) {
  return {fn(c.in(0))};
}

Outputs op_relu(const NodeCall& c) { return {at::relu(c.in(0))}; }
Outputs op_leaky_relu(const NodeCall& c) {
  return {at::leaky_relu(c.in(0), c.attr_float("alpha", 0.01f))};
}
Outputs op_elu(const NodeCall& c) { return {at::elu(c.in(0), c.attr_float("alpha", 1.0f))}; }
Outputs op_selu(const NodeCall& c) {
  double alpha = c.attr_float("alpha", 1.67326319217681884765625f);
  double gamma = c.attr_float("gamma", 1.05070102214813232421875f);
  return {at::elu(c.in(0), alpha, gamma)};
}
Outputs op_celu(const NodeCall& c) { return {at::celu(c.in(0), c.attr_float("alpha", 1.0f))}; }
Outputs op_thresholded_relu(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  return {at::where(x > c.attr_float("alpha", 1.0f), x, at::zeros_like(x))};
}
Outputs op_prelu(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  return {at::where(x >= 0, x, x * c.in(1))};
}
Outputs op_softplus(const NodeCall& c) { return {at::softplus(c.in(0))}; }
Outputs op_softsign(const NodeCall& c) { return {c.in(0) / (at::abs(c.in(0)) + 1)}; }
Outputs op_mish(const NodeCall& c) { return {at::mish(c.in(0))}; }
Outputs op_gelu(const NodeCall& c) {
  return {at::gelu(c.in(0), c.attr_string("approximate", "none"))};
}
Outputs op_hard_sigmoid(const NodeCall& c) {
  double alpha = c.attr_float("alpha", 0.2f), beta = c.attr_float("beta", 0.5f);
  return {at::clamp(c.in(0) * alpha + beta, 0.0, 1.0)};
}
Outputs op_hard_swish(const NodeCall& c) { return {at::hardswish(c.in(0))}; }

Outputs op_clip(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  c10::optional<at::Scalar> lo, hi;
  if (c.has(1))
    lo = c.in(1).item();
  else if (c.node().has_attr("min"))
    lo = c.attr_float("min", 0.0f);
  if (c.has(2))
    hi = c.in(2).item();
  else if (c.node().has_attr("max"))
    hi = c.attr_float("max", 0.0f);
  if (!lo && !hi) return {x};
  return {at::clamp(x, lo, hi)};
}

at::Tensor div_onnx(const at::Tensor& a, const at::Tensor& b) {
  if (at::isIntegralType(a.scalar_type(), /*includeBool=*/false) &&
      at::isIntegralType(b.scalar_type(), false)) {
    return at::div(a, b, "trunc");
  }
  return at::div(a, b);
}

template <int kOp>
Outputs binary(const NodeCall& c) {
  const at::Tensor& a = c.in(0);
  const at::Tensor& b = c.in(1);
  if constexpr (kOp == 0) return {at::add(a, b)};
  if constexpr (kOp == 1) return {at::sub(a, b)};
  if constexpr (kOp == 2) return {at::mul(a, b)};
  if constexpr (kOp == 3) return {div_onnx(a, b)};
  if constexpr (kOp == 4) return {at::pow(a, b).to(a.scalar_type())};
  if constexpr (kOp == 5) return {at::eq(a, b)};
  if constexpr (kOp == 6) return {at::lt(a, b)};
  if constexpr (kOp == 7) return {at::gt(a, b)};
  if constexpr (kOp == 8) return {at::le(a, b)};
  if constexpr (kOp == 9) return {at::ge(a, b)};
  if constexpr (kOp == 10) return {at::logical_and(a, b)};
  if constexpr (kOp == 11) return {at::logical_or(a, b)};
  if constexpr (kOp == 12) return {at::logical_xor(a, b)};
  return {};
}

Outputs op_mod(const NodeCall& c) {
  if (c.attr_int("fmod", 0) != 0) return {at::fmod(c.in(0), c.in(1))};
  return {at::remainder(c.in(0), c.in(1))};
}

template <int kOp>  // 0 Max, 1 Min, 2 Sum, 3 Mean
Outputs variadic(const NodeCall& c) {
  at::Tensor acc = c.in(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    const at::Tensor& t = c.in(i);
    if constexpr (kOp == 0) acc = at::maximum(acc, t);
    if constexpr (kOp == 1) acc = at::minimum(acc, t);
    if constexpr (kOp >= 2) acc = acc + t;
  }
  if constexpr (kOp == 3) acc = acc / static_cast<double>(c.num_inputs());
  return {acc};
}

Outputs op_not(const NodeCall& c) { return {at::logical_not(c.in(0))}; }
Outputs op_where(const NodeCall& c) { return {at::where(c.in(0).to(at::kBool), c.in(1), c.in(2))}; }

Outputs op_cast(const NodeCall& c) {
  int64_t to = c.attr_int("to", 1);
  if (to == 9) return {c.in(0).to(at::kBool)};
  if (to == 11) return {c.in(0).to(at::kFloat)};  // f64 is stored as f32
  std::optional<DType> t = dtype_from_onnx(static_cast<int>(to));
  if (!t) c.unsupported("cast to ONNX type ", to);
  return {c.in(0).to(to_scalar_type(*t))};
}

// ---- tensor ops ------------------------------------------------------------------------

Outputs op_identity(const NodeCall& c) { return {c.in(0)}; }

Outputs op_reshape(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  std::optional<std::vector<int64_t>> shape = c.ints_arg(1, "shape");
  if (!shape) c.unsupported("shape missing");
  bool allow_zero = c.attr_int("allowzero", 0) != 0;
  std::vector<int64_t> s = *shape;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0 && !allow_zero) s[i] = x.size(static_cast<int64_t>(i));
  }
  return {x.reshape(s)};
}

Outputs op_flatten(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += x.dim();
  if (axis < 0 || axis > x.dim()) c.unsupported("axis ", axis);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  int64_t inner = 1;
  for (int64_t d = axis; d < x.dim(); ++d) inner *= x.size(d);
  return {x.reshape({outer, inner})};
}

Outputs op_transpose(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty()) {
    for (int64_t d = x.dim(); d-- > 0;) perm.push_back(d);
  }
  return {x.permute(perm)};
}

Outputs op_concat(const NodeCall& c) {
  std::vector<at::Tensor> parts;
  for (int i = 0; i < c.num_inputs(); ++i) parts.push_back(c.in(i));
  return {at::cat(parts, c.axis(c.attr_int("axis", 0), parts.at(0).dim()))};
}

Outputs op_split(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", 0), x.dim());
  std::optional<std::vector<int64_t>> sizes = c.ints_arg(1, "split");
  if (!sizes) {
    int64_t parts = c.attr_int("num_outputs", c.num_outputs());
    int64_t chunk = (x.size(axis) + parts - 1) / parts;
    sizes.emplace();
    for (int64_t left = x.size(axis); left > 0; left -= chunk) {
      sizes->push_back(std::min(chunk, left));
    }
    while (static_cast<int64_t>(sizes->size()) < parts) sizes->push_back(0);
  }
  std::vector<at::Tensor> pieces = at::split_with_sizes(x, *sizes, axis);
  return Outputs(pieces.begin(), pieces.end());
}

Outputs op_slice(const NodeCall& c) {
  at::Tensor x = c.in(0);
  std::optional<std::vector<int64_t>> starts = c.ints_arg(1, "starts");
  std::optional<std::vector<int64_t>> ends = c.ints_arg(2, "ends");
  if (!starts || !ends || starts->size() != ends->size()) c.unsupported("starts/ends");
  std::vector<int64_t> axes = c.ints_arg(3, "axes").value_or(std::vector<int64_t>{});
  if (axes.empty()) {
    for (size_t i = 0; i < starts->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> steps =
      c.ints_arg(4, "steps").value_or(std::vector<int64_t>(starts->size(), 1));
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = c.axis(axes[i], x.dim());
    int64_t dim = x.size(axis);
    int64_t start = (*starts)[i], end = (*ends)[i], step = steps[i];
    if (step == 0) c.unsupported("slice step 0");
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      x = end > start ? at::slice(x, axis, start, end, step) : at::slice(x, axis, 0, 0, 1);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      at::Tensor idx =
          start > end ? at::arange(start, end, step, at::kLong) : at::empty({0}, at::kLong);
      x = at::index_select(x, axis, idx);
    }
  }
  return {x};
}

Outputs op_squeeze(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  std::optional<std::vector<int64_t>> axes = c.ints_arg(1, "axes");
  if (!axes || axes->empty()) return {at::squeeze(x)};
  std::vector<bool> drop(static_cast<size_t>(x.dim()), false);
  for (int64_t a : *axes) drop[c.axis(a, x.dim())] = true;
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!drop[d]) shape.push_back(x.size(d));
  }
  return {x.reshape(shape)};
}

Outputs op_unsqueeze(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  std::optional<std::vector<int64_t>> axes = c.ints_arg(1, "axes");
  if (!axes) c.unsupported("axes missing");
  int64_t out_rank = x.dim() + static_cast<int64_t>(axes->size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : *axes) inserted[c.axis(a, out_rank)] = true;
  std::vector<int64_t> shape;
  int64_t src = 0;
  for (int64_t d = 0; d < out_rank; ++d) shape.push_back(inserted[d] ? 1 : x.size(src++));
  return {x.reshape(shape)};
}

at::Tensor normalized_indices(const at::Tensor& idx, int64_t dim) {
  at::Tensor i = idx.to(at::kLong);
  return at::where(i < 0, i + dim, i);
}

Outputs op_gather(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", 0), x.dim());
  at::Tensor idx = normalized_indices(c.in(1), x.size(axis));
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().begin() + axis);
  shape.insert(shape.end(), idx.sizes().begin(), idx.sizes().end());
  shape.insert(shape.end(), x.sizes().begin() + axis + 1, x.sizes().end());
  return {at::index_select(x, axis, idx.reshape({-1})).reshape(shape)};
}

Outputs op_gather_elements(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", 0), x.dim());
  return {at::gather(x, axis, normalized_indices(c.in(1), x.size(axis)))};
}

// ScatterND (reduction 'none'): the first k dimensions flattened, each index tuple a row of
// that view replaced by its updates.
Outputs op_scatter_nd(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  const at::Tensor idx = c.in(1).to(at::kLong);
  const int64_t k = idx.size(idx.dim() - 1);
  at::Tensor lin = at::zeros({idx.numel() / k}, at::kLong);
  const at::Tensor tuples = idx.reshape({-1, k});
  int64_t rows = 1;
  for (int64_t d = 0; d < k; ++d) {
    lin = lin * x.size(d) + normalized_indices(tuples.select(1, d), x.size(d));
    rows *= x.size(d);
  }
  at::Tensor out = x.clone().reshape({rows, -1});
  out.index_copy_(0, lin, c.in(2).reshape({lin.numel(), -1}));
  return {out.reshape(x.sizes())};
}

at::Tensor int64_tensor(const std::vector<int64_t>& v) {
  return at::tensor(at::ArrayRef<int64_t>(v), at::kLong);
}

Outputs op_shape(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  int64_t r = x.dim();
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  return {int64_tensor(std::vector<int64_t>(x.sizes().begin() + start, x.sizes().begin() + end))};
}

Outputs op_size(const NodeCall& c) { return {at::scalar_tensor(c.in(0).numel(), at::kLong)}; }

Outputs op_constant(const NodeCall& c) {
  const Node& n = c.node();
  if (const Tensor* t = n.attr_tensor("value")) return {to_torch(*t)};
  if (n.has_attr("value_float")) return {at::scalar_tensor(n.attr_float("value_float", 0))};
  if (n.has_attr("value_int")) {
    return {at::scalar_tensor(n.attr_int("value_int", 0), at::kLong)};
  }
  if (n.has_attr("value_floats")) {
    std::vector<float> v = n.attr_floats("value_floats", {});
    return {at::tensor(at::ArrayRef<float>(v), at::kFloat)};
  }
  if (n.has_attr("value_ints")) return {int64_tensor(n.attr_ints("value_ints", {}))};
  c.unsupported("constant without a supported value attribute");
}

Outputs op_constant_of_shape(const NodeCall& c) {
  std::vector<int64_t> shape = to_int64s(c.in(0));
  if (const Tensor* t = c.node().attr_tensor("value")) {
    return {at::full(shape, 0, to_scalar_type(t->dtype())) + to_torch(*t).reshape({})};
  }
  return {at::zeros(shape, at::kFloat)};
}

Outputs op_expand(const NodeCall& c) {
  const at::Tensor& x = c.in(0);
  std::vector<int64_t> shape = to_int64s(c.in(1));
  // Bidirectional (NumPy) broadcast of x's shape and `shape`.
  size_t r = std::max<size_t>(shape.size(), static_cast<size_t>(x.dim()));
  std::vector<int64_t> out(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t a = i + x.dim() >= r ? x.size(static_cast<int64_t>(i + x.dim() - r)) : 1;
    int64_t b = i + shape.size() >= r ? shape[i + shape.size() - r] : 1;
    if (a != b && a != 1 && b != 1) c.unsupported("shapes do not broadcast");
    out[i] = a == 1 ? b : a;
  }
  return {x.expand(out)};
}

Outputs op_tile(const NodeCall& c) { return {c.in(0).repeat(to_int64s(c.in(1)))}; }

Outputs op_range(const NodeCall& c) {
  const at::Tensor& start = c.in(0);
  return {at::arange(start.item(), c.in(1).item(), c.in(2).item(), start.scalar_type())};
}

Outputs op_cumsum(const NodeCall& c) {
  at::Tensor x = c.in(0);
  int64_t axis = c.axis(c.in(1).item<int64_t>(), x.dim());
  bool reverse = c.attr_int("reverse", 0) != 0;
  if (reverse) x = at::flip(x, {axis});
  at::Tensor y = at::cumsum(x, axis, x.scalar_type());
  if (c.attr_int("exclusive", 0) != 0) y = y - x;
  if (reverse) y = at::flip(y, {axis});
  return {y};
}

// ---- the table -------------------------------------------------------------------------

at::Tensor t_sigmoid(const at::Tensor& x) { return at::sigmoid(x); }
at::Tensor t_tanh(const at::Tensor& x) { return at::tanh(x); }
at::Tensor t_exp(const at::Tensor& x) { return at::exp(x); }
at::Tensor t_log(const at::Tensor& x) { return at::log(x); }
at::Tensor t_sqrt(const at::Tensor& x) { return at::sqrt(x); }
at::Tensor t_neg(const at::Tensor& x) { return at::neg(x); }
at::Tensor t_abs(const at::Tensor& x) { return at::abs(x); }
at::Tensor t_reciprocal(const at::Tensor& x) { return at::reciprocal(x); }
at::Tensor t_floor(const at::Tensor& x) { return at::floor(x); }
at::Tensor t_ceil(const at::Tensor& x) { return at::ceil(x); }
at::Tensor t_round(const at::Tensor& x) { return at::round(x); }  // half to even, as ONNX
at::Tensor t_erf(const at::Tensor& x) { return at::erf(x); }
at::Tensor t_sign(const at::Tensor& x) { return at::sign(x); }
at::Tensor t_sin(const at::Tensor& x) { return at::sin(x); }
at::Tensor t_cos(const at::Tensor& x) { return at::cos(x); }
at::Tensor t_tan(const at::Tensor& x) { return at::tan(x); }
at::Tensor t_atan(const at::Tensor& x) { return at::atan(x); }
at::Tensor t_sinh(const at::Tensor& x) { return at::sinh(x); }
at::Tensor t_cosh(const at::Tensor& x) { return at::cosh(x); }
at::Tensor t_asin(const at::Tensor& x) { return at::asin(x); }
at::Tensor t_acos(const at::Tensor& x) { return at::acos(x); }
at::Tensor t_asinh(const at::Tensor& x) { return at::asinh(x); }
at::Tensor t_acosh(const at::Tensor& x) { return at::acosh(x); }
at::Tensor t_atanh(const at::Tensor& x) { return at::atanh(x); }

const std::unordered_map<std::string_view, OpFn>& op_table() {
  static const std::unordered_map<std::string_view, OpFn> table = {
      {"Conv", op_conv},
      {"FusedConv", op_fused_conv},
      {"ConvTranspose", op_conv_transpose},
      {"BatchNormalization", op_batch_norm},
      {"ChannelAffine", op_channel_affine},
      {"InstanceNormalization", op_instance_norm},
      {"LayerNormalization", op_layer_norm},
      {"MeanVarianceNormalization", op_mvn},
      {"MaxPool", op_max_pool},
      {"AveragePool", op_avg_pool},
      {"GlobalAveragePool", op_global_avg_pool},
      {"GlobalMaxPool", op_global_max_pool},
      {"LRN", op_lrn},
      {"Gemm", op_gemm},
      {"MatMul", op_matmul},
      {"Einsum", op_einsum},
      {"FusedMatMul", op_fused_matmul},
      {"Softmax", op_softmax},
      {"LogSoftmax", op_log_softmax},
      {"Hardmax", op_hardmax},
      {"TopK", op_topk},
      {"Resize", op_resize},
      {"Dropout", op_dropout},
      {"Pad", op_pad},
      {"ReduceMean", op_reduce<Reduce::kMean>},
      {"ReduceSum", op_reduce<Reduce::kSum>},
      {"ReduceMax", op_reduce<Reduce::kMax>},
      {"ReduceMin", op_reduce<Reduce::kMin>},
      {"ReduceProd", op_reduce<Reduce::kProd>},
      {"ReduceL1", op_reduce<Reduce::kL1>},
      {"ReduceL2", op_reduce<Reduce::kL2>},
      {"ReduceLogSum", op_reduce<Reduce::kLogSum>},
      {"ReduceLogSumExp", op_reduce<Reduce::kLogSumExp>},
      {"ReduceSumSquare", op_reduce<Reduce::kSumSquare>},
      {"ArgMax", op_arg<true>},
      {"ArgMin", op_arg<false>},
      {"Relu", op_relu},
      {"LeakyRelu", op_leaky_relu},
      {"Elu", op_elu},
      {"Selu", op_selu},
      {"Celu", op_celu},
      {"ThresholdedRelu", op_thresholded_relu},
      {"PRelu", op_prelu},
      {"Softplus", op_softplus},
      {"Softsign", op_softsign},
      {"Mish", op_mish},
      {"Gelu", op_gelu},
      {"HardSigmoid", op_hard_sigmoid},
      {"HardSwish", op_hard_swish},
      {"Clip", op_clip},
      {"Sigmoid", unary<t_sigmoid>},
      {"Tanh", unary<t_tanh>},
      {"Exp", unary<t_exp>},
      {"Log", unary<t_log>},
      {"Sqrt", unary<t_sqrt>},
      {"Neg", unary<t_neg>},
      {"Abs", unary<t_abs>},
      {"Reciprocal", unary<t_reciprocal>},
      {"Floor", unary<t_floor>},
      {"Ceil", unary<t_ceil>},
      {"Round", unary<t_round>},
      {"Erf", unary<t_erf>},
      {"Sign", unary<t_sign>},
      {"Sin", unary<t_sin>},
      {"Cos", unary<t_cos>},
      {"Tan", unary<t_tan>},
      {"Atan", unary<t_atan>},
      {"Sinh", unary<t_sinh>},
      {"Cosh", unary<t_cosh>},
      {"Asin", unary<t_asin>},
      {"Acos", unary<t_acos>},
      {"Asinh", unary<t_asinh>},
      {"Acosh", unary<t_acosh>},
      {"Atanh", unary<t_atanh>},
      {"Shrink", op_shrink},
      {"Add", binary<0>},
      {"Sub", binary<1>},
      {"Mul", binary<2>},
      {"Div", binary<3>},
      {"Pow", binary<4>},
      {"Equal", binary<5>},
      {"Less", binary<6>},
      {"Greater", binary<7>},
      {"LessOrEqual", binary<8>},
      {"GreaterOrEqual", binary<9>},
      {"And", binary<10>},
      {"Or", binary<11>},
      {"Xor", binary<12>},
      {"Mod", op_mod},
      {"Max", variadic<0>},
      {"Min", variadic<1>},
      {"Sum", variadic<2>},
      {"Mean", variadic<3>},
      {"Not", op_not},
      {"Where", op_where},
      {"Cast", op_cast},
      {"CastLike", op_cast_like},
      {"EyeLike", op_eye_like},
      {"Identity", op_identity},
      {"Reshape", op_reshape},
      {"Flatten", op_flatten},
      {"Transpose", op_transpose},
      {"Concat", op_concat},
      {"Split", op_split},
      {"Slice", op_slice},
      {"Squeeze", op_squeeze},
      {"Unsqueeze", op_unsqueeze},
      {"Gather", op_gather},
      {"GatherElements", op_gather_elements},
      {"ScatterND", op_scatter_nd},
      {"DepthToSpace", op_depth_to_space},
      {"SpaceToDepth", op_space_to_depth},
      {"Shape", op_shape},
      {"Size", op_size},
      {"Constant", op_constant},
      {"ConstantOfShape", op_constant_of_shape},
      {"Expand", op_expand},
      {"Tile", op_tile},
      {"Range", op_range},
      {"CumSum", op_cumsum},
  };
  return table;
}

// The type a value of dtype `t` is computed in (f32 as f64 in float64 mode).
at::ScalarType compute_type(DType t, bool float64) {
  return float64 && t == DType::kF32 ? at::kDouble : to_scalar_type(t);
}

at::Tensor to_compute(const at::Tensor& t, bool float64) {
  return float64 && t.scalar_type() == at::kFloat ? t.to(at::kDouble) : t;
}

OpFn find_op(const Node& node) {
  auto it = op_table().find(node.op);
  return it == op_table().end() ? nullptr : it->second;
}

}  // namespace

namespace torch_ops {

at::ScalarType scalar_type(DType t) { return to_scalar_type(t); }
at::Tensor to_torch(const Tensor& t) { return dlas::to_torch(t); }
Tensor from_torch(const at::Tensor& value, DType dtype) { return dlas::from_torch(value, dtype); }

bool is_mapped(std::string_view op) { return op_table().count(op) != 0; }

std::vector<at::Tensor> run_node(const Node& node, std::vector<at::Tensor> inputs) {
  OpFn fn = find_op(node);
  if (fn == nullptr) fail(ErrorKind::kUnsupported, node.label(), ": not mapped to libtorch");
  try {
    return fn(NodeCall(node, std::move(inputs)));
  } catch (const c10::Error& e) {
    fail(ErrorKind::kRuntime, node.label(), ": libtorch: ", e.what_without_backtrace());
  }
}

}  // namespace torch_ops

const std::vector<std::string>& libtorch_mapped_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> v;
    for (const auto& [name, fn] : op_table()) v.emplace_back(name);
    std::sort(v.begin(), v.end());
    return v;
  }();
  return ops;
}

bool libtorch_supports(const Graph& graph, std::string* why) {
  for (const Node& node : graph.nodes) {
    if (find_op(node) == nullptr) {
      if (why) *why = str(node.label(), ": not mapped to libtorch");
      return false;
    }
  }
  return true;
}

struct LibtorchRunner::Impl {
  Graph graph;
  bool float64 = false;
  int threads = 1;
  std::vector<OpFn> fns;                               // per node
  std::unordered_map<std::string, at::Tensor> consts;  // initializers as torch tensors
  // Per node: the values whose last reader it is (freed after it runs).
  std::vector<std::vector<std::string>> frees;
};

LibtorchRunner::LibtorchRunner(Graph graph, const TorchPeerOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.graph = std::move(graph);
  m.float64 = options.float64;
  if (options.num_threads > 0) at::set_num_threads(options.num_threads);
  m.threads = at::get_num_threads();
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  for (const Node& node : m.graph.nodes) {
    OpFn fn = find_op(node);
    if (fn == nullptr) fail(ErrorKind::kUnsupported, node.label(), ": not mapped to libtorch");
    m.fns.push_back(fn);
  }
  for (const auto& [name, t] : m.graph.initializers) {
    m.consts.emplace(name, to_compute(to_torch(t), m.float64));
  }
  std::unordered_map<std::string, size_t> last_use;
  for (size_t i = 0; i < m.graph.nodes.size(); ++i) {
    for (const std::string& in : m.graph.nodes[i].inputs) {
      if (!in.empty()) last_use[in] = i;
    }
  }
  for (const std::string& out : m.graph.outputs) last_use.erase(out);  // outputs stay
  m.frees.resize(m.graph.nodes.size());
  for (const auto& [name, i] : last_use) {
    if (m.consts.count(name) == 0) m.frees[i].push_back(name);
  }
}

LibtorchRunner::~LibtorchRunner() = default;
LibtorchRunner::LibtorchRunner(LibtorchRunner&&) noexcept = default;
LibtorchRunner& LibtorchRunner::operator=(LibtorchRunner&&) noexcept = default;

const Graph& LibtorchRunner::graph() const { return impl_->graph; }
int LibtorchRunner::threads() const { return impl_->threads; }
MemoryReport LibtorchRunner::memory() const { return graph_weight_memory(impl_->graph); }
void LibtorchRunner::run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  outputs = run(inputs);
}

std::vector<Tensor> LibtorchRunner::run(const std::vector<Tensor>& inputs) const {
  const Impl& m = *impl_;
  const Graph& g = m.graph;
  DLAS_CHECK(inputs.size() == g.inputs.size(), ErrorKind::kInvalidInput, "graph '", g.name,
             "' takes ", g.inputs.size(), " inputs, got ", inputs.size());
  c10::InferenceMode inference_mode;
  std::unordered_map<std::string, at::Tensor> env;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& info = g.inputs[i];
    DLAS_CHECK(
        inputs[i].defined() && inputs[i].dtype() == info.dtype && inputs[i].shape() == info.shape,
        ErrorKind::kInvalidInput, "input '", info.name, "': expected ", dtype_name(info.dtype),
        shape_str(info.shape), ", got ",
        inputs[i].defined() ? inputs[i].describe() : std::string("undefined"));
    env[info.name] = to_compute(to_torch(inputs[i]), m.float64);
  }
  auto lookup = [&](const Node& node, const std::string& name) -> at::Tensor {
    if (name.empty()) return at::Tensor();
    auto it = env.find(name);
    if (it != env.end()) return it->second;
    auto c = m.consts.find(name);
    if (c != m.consts.end()) return c->second;
    fail(ErrorKind::kInternal, node.label(), ": value '", name, "' is not computed yet");
  };
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    std::vector<at::Tensor> args;
    for (const std::string& in : node.inputs) args.push_back(lookup(node, in));
    Outputs outs;
    try {
      outs = m.fns[n](NodeCall(node, std::move(args)));
    } catch (const c10::Error& e) {
      fail(ErrorKind::kRuntime, node.label(), ": libtorch: ", e.what_without_backtrace());
    }
    DLAS_CHECK(outs.size() >= node.outputs.size(), ErrorKind::kInternal, node.label(),
               ": produced ", outs.size(), " outputs for ", node.outputs.size());
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string& name = node.outputs[i];
      if (name.empty()) continue;
      at::Tensor t = outs[i];
      // Keep every value in the dtype dlas inferred (bool results become u8, as in dlas).
      if (g.has_value(name)) {
        at::ScalarType want = compute_type(g.value(name).dtype, m.float64);
        if (t.scalar_type() != want && !(t.scalar_type() == at::kBool && want == at::kByte)) {
          t = t.to(want);
        }
      }
      env[name] = t;
    }
    for (const std::string& name : m.frees[n]) env.erase(name);
  }
  std::vector<Tensor> results;
  for (const std::string& name : g.outputs) {
    at::Tensor t = lookup(g.nodes.empty() ? Node{} : g.nodes.back(), name);
    DType dtype = g.has_value(name) ? g.value(name).dtype : dtype_of(t.scalar_type());
    results.push_back(from_torch(t, dtype));
  }
  return results;
}

void register_torch_executor() {
  register_executor("torch", [](const Graph& graph, const Variant& v, const ExecutorOptions&) {
    TorchPeerOptions o;
    o.num_threads = v.threads;
    return std::make_unique<LibtorchRunner>(graph, o);
  });
}

std::vector<Tensor> run_with_libtorch(const Graph& graph, const std::vector<Tensor>& inputs,
                                      const TorchPeerOptions& options) {
  return LibtorchRunner(graph, options).run(inputs);
}

}  // namespace dlas
