// Reference kernels for unary/binary/variadic elementwise ops (ONNX opset 13 semantics,
// NumPy broadcasting). Transcendentals are evaluated in double and rounded once to f32,
// so these are at least as accurate as any fast kernel they check.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "system/reference/broadcast.h"
#include "system/reference/kernels_internal.h"

namespace dlas::reference {
namespace {

[[noreturn]] void unsupported_dtype(const Node& node, DType t) {
  fail(ErrorKind::kUnsupported, node.label(), ": dtype ", dtype_name(t), " is not supported");
}

// ---------------------------------------------------------------- unary, f32 only ----

// Each op is a functor built from the node (to read its attributes) and applied per element.
struct Relu {
  explicit Relu(const Node&) {}
  float operator()(float x) const { return x < 0.0f ? 0.0f : x; }  // keeps NaN
};
struct LeakyRelu {
  float alpha;
  explicit LeakyRelu(const Node& n) : alpha(n.attr_float("alpha", 0.01f)) {}
  float operator()(float x) const { return x < 0.0f ? alpha * x : x; }
};
struct ThresholdedRelu {
  float alpha;
  explicit ThresholdedRelu(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  float operator()(float x) const { return x > alpha ? x : 0.0f; }
};
struct Elu {
  double alpha;
  explicit Elu(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  float operator()(float x) const {
    return x < 0.0f ? static_cast<float>(alpha * std::expm1(static_cast<double>(x))) : x;
  }
};
struct Selu {
  double alpha, gamma;
  explicit Selu(const Node& n)
      : alpha(n.attr_float("alpha", 1.67326319217681884765625f)),
        gamma(n.attr_float("gamma", 1.05070102214813232421875f)) {}
  float operator()(float x) const {
    const double v = x;
    return static_cast<float>(x <= 0.0f ? gamma * alpha * std::expm1(v) : gamma * v);
  }
};
struct Celu {
  double alpha;
  explicit Celu(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  float operator()(float x) const {
    const double v = x;
    return static_cast<float>(std::max(0.0, v) + std::min(0.0, alpha * std::expm1(v / alpha)));
  }
};
struct Sigmoid {
  explicit Sigmoid(const Node&) {}
  float operator()(float x) const {
    const double v = x;
    // Two branches so exp never overflows.
    return static_cast<float>(v >= 0 ? 1.0 / (1.0 + std::exp(-v))
                                     : std::exp(v) / (1.0 + std::exp(v)));
  }
};
struct HardSigmoid {
  float alpha, beta;
  explicit HardSigmoid(const Node& n)
      : alpha(n.attr_float("alpha", 0.2f)), beta(n.attr_float("beta", 0.5f)) {}
  float operator()(float x) const { return std::max(0.0f, std::min(1.0f, alpha * x + beta)); }
};
struct HardSwish {
  explicit HardSwish(const Node&) {}
  float operator()(float x) const { return x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f)); }
};
struct Softplus {
  explicit Softplus(const Node&) {}
  static double eval(double v) {
    return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
  }
  float operator()(float x) const { return static_cast<float>(eval(x)); }
};
struct Mish {
  explicit Mish(const Node&) {}
  float operator()(float x) const { return static_cast<float>(x * std::tanh(Softplus::eval(x))); }
};
// ONNX Gelu (approximate "none"; the loader rejects "tanh"): 0.5 x (1 + erf(x / sqrt 2)).
struct Gelu {
  explicit Gelu(const Node&) {}
  float operator()(float x) const {
    return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
  }
};
struct Softsign {
  explicit Softsign(const Node&) {}
  float operator()(float x) const { return x / (1.0f + std::fabs(x)); }
};
struct Sign {
  explicit Sign(const Node&) {}
  float operator()(float x) const {
    return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x);
  }  // 0, -0, NaN
};
struct Reciprocal {
  explicit Reciprocal(const Node&) {}
  float operator()(float x) const { return 1.0f / x; }
};
struct Round {  // half to even
  explicit Round(const Node&) {}
  float operator()(float x) const {
    const float r = std::round(x);  // half away from zero
    if (std::fabs(x - std::trunc(x)) == 0.5f) return 2.0f * std::round(x / 2.0f);
    return r;
  }
};

// Plain math functions, evaluated in double.
template <double (*F)(double)>
struct MathFn {
  explicit MathFn(const Node&) {}
  float operator()(float x) const { return static_cast<float>(F(static_cast<double>(x))); }
};
double exp_d(double v) { return std::exp(v); }
double log_d(double v) { return std::log(v); }
double sqrt_d(double v) { return std::sqrt(v); }
double tanh_d(double v) { return std::tanh(v); }
double erf_d(double v) { return std::erf(v); }
double floor_d(double v) { return std::floor(v); }
double ceil_d(double v) { return std::ceil(v); }
double sin_d(double v) { return std::sin(v); }
double cos_d(double v) { return std::cos(v); }
double tan_d(double v) { return std::tan(v); }
double atan_d(double v) { return std::atan(v); }
double sinh_d(double v) { return std::sinh(v); }
double cosh_d(double v) { return std::cosh(v); }
double asin_d(double v) { return std::asin(v); }
double acos_d(double v) { return std::acos(v); }
double asinh_d(double v) { return std::asinh(v); }
double acosh_d(double v) { return std::acosh(v); }
double atanh_d(double v) { return std::atanh(v); }

// Shrink: x + bias below -lambd, x - bias above lambd, 0 between (and for NaN).
struct Shrink {
  double lambd, bias;
  explicit Shrink(const Node& n)
      : lambd(n.attr_float("lambd", 0.5f)), bias(n.attr_float("bias", 0.0f)) {}
  float operator()(float x) const {
    const double v = x;
    if (v < -lambd) return static_cast<float>(v + bias);
    if (v > lambd) return static_cast<float>(v - bias);
    return 0.0f;
  }
};

template <class Op>
void unary_f32(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  if (in[0].dtype() != DType::kF32) unsupported_dtype(node, in[0].dtype());
  const Op op(node);
  const float* x = in[0].data<float>();
  float* y = out[0].data<float>();
  const int64_t n = in[0].numel();
  for (int64_t i = 0; i < n; ++i) y[i] = op(x[i]);
}

// ------------------------------------------------------ unary, f32 / s32 / s64 -------

// Integer arithmetic wraps (two's complement) instead of being undefined on overflow.
template <class T>
T wrap_neg(T a) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U{0} - static_cast<U>(a));
}

struct Neg {
  template <class T>
  T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>)
      return -a;
    else
      return wrap_neg(a);
  }
};
struct Abs {
  template <class T>
  T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>)
      return std::fabs(a);
    else
      return a < 0 ? wrap_neg(a) : a;
  }
};

template <class T, class Op>
void unary_typed(const Tensor& x, Tensor& y, Op op) {
  const T* px = x.data<T>();
  T* py = y.data<T>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) py[i] = op(px[i]);
}

template <class Op>
void unary_arith(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  switch (in[0].dtype()) {
    case DType::kF32:
      return unary_typed<float>(in[0], out[0], Op{});
    case DType::kS8:
      return unary_typed<int8_t>(in[0], out[0], Op{});
    case DType::kU8:
      return unary_typed<uint8_t>(in[0], out[0], Op{});
    case DType::kS32:
      return unary_typed<int32_t>(in[0], out[0], Op{});
    case DType::kS64:
      return unary_typed<int64_t>(in[0], out[0], Op{});
    default:
      unsupported_dtype(node, in[0].dtype());
  }
}

// ------------------------------------------------------------------------- binary -----

// out[i] = op(a[bcast], b[bcast]); `out` may alias `a` when a has out's shape.
template <class TA, class TB, class TO, class Op>
void binary_broadcast(const Tensor& a, const Tensor& b, Tensor& out, Op op) {
  const TA* pa = static_cast<const TA*>(a.raw());
  const TB* pb = static_cast<const TB*>(b.raw());
  TO* po = static_cast<TO*>(out.raw());
  const int64_t n = out.numel();
  if (a.shape() == out.shape() && b.shape() == out.shape()) {  // fast path
    for (int64_t i = 0; i < n; ++i) po[i] = op(pa[i], pb[i]);
    return;
  }
  const BroadcastPlan plan = make_broadcast_plan(out.shape(), {a.shape(), b.shape()});
  const int64_t sa = plan.inner_stride(0);
  const int64_t sb = plan.inner_stride(1);
  for_each_broadcast_row(plan, [&](int64_t o, const int64_t* off, int64_t len) {
    const TA* ra = pa + off[0];
    const TB* rb = pb + off[1];
    TO* ro = po + o;
    for (int64_t i = 0; i < len; ++i) ro[i] = op(ra[i * sa], rb[i * sb]);
  });
}

struct Add {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return a + b;
    else
      return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                            static_cast<std::make_unsigned_t<T>>(b));
  }
};
struct Sub {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return a - b;
    else
      return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) -
                            static_cast<std::make_unsigned_t<T>>(b));
  }
};
struct Mul {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return a * b;
    else
      return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) *
                            static_cast<std::make_unsigned_t<T>>(b));
  }
};
struct Div {
  const Node* node;
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return a / b;
    } else {  // truncates toward zero, like C
      if (b == 0) fail(ErrorKind::kInvalidInput, node->label(), ": integer division by zero");
      if constexpr (std::is_signed_v<T>)
        if (b == -1) return wrap_neg(a);  // MIN / -1 overflows
      return static_cast<T>(a / b);
    }
  }
};
// NaN propagates through Max and Min (as in PyTorch and NumPy's maximum/minimum).
struct Max {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    return a < b ? b : a;
  }
};
struct Min {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    return b < a ? b : a;
  }
};

template <class Op>
void binary_arith_typed(const Node& node, const Tensor& a, const Tensor& b, Tensor& out, Op op) {
  if (a.dtype() != b.dtype())
    fail(ErrorKind::kInvalidInput, node.label(), ": input dtypes differ (", dtype_name(a.dtype()),
         " and ", dtype_name(b.dtype()), ")");
  switch (a.dtype()) {
    case DType::kF32:
      return binary_broadcast<float, float, float>(a, b, out, op);
    case DType::kS8:
      return binary_broadcast<int8_t, int8_t, int8_t>(a, b, out, op);
    case DType::kU8:
      return binary_broadcast<uint8_t, uint8_t, uint8_t>(a, b, out, op);
    case DType::kS32:
      return binary_broadcast<int32_t, int32_t, int32_t>(a, b, out, op);
    case DType::kS64:
      return binary_broadcast<int64_t, int64_t, int64_t>(a, b, out, op);
    default:
      unsupported_dtype(node, a.dtype());
  }
}

template <class Op>
void binary_arith(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  binary_arith_typed(node, in[0], in[1], out[0], Op{});
}

void div_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  binary_arith_typed(node, in[0], in[1], out[0], Div{&node});
}

// Mod: the remainder of truncating division (C's % and fmod, the dividend's sign) with
// fmod=1; with fmod=0 (integers only) a non-zero remainder takes the divisor's sign.
struct Mod {
  const Node* node;
  bool fmod;
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(std::fmod(static_cast<double>(a), static_cast<double>(b)));  // exact
    } else {
      if (b == 0) fail(ErrorKind::kInvalidInput, node->label(), ": integer modulus by zero");
      if constexpr (std::is_signed_v<T>)
        if (b == -1) return 0;  // MIN % -1 overflows in C
      T r = static_cast<T>(a % b);
      if constexpr (std::is_signed_v<T>)
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
      return r;
    }
  }
};

void mod_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Mod op{&node, node.attr_int("fmod", 0) != 0};
  const DType t = in[0].dtype();
  if (t != DType::kF16 && t != DType::kBF16)
    return binary_arith_typed(node, in[0], in[1], out[0], op);
  // 16-bit floats: the remainder of two representable values is representable, so
  // computing in f32 and rounding back is exact.
  Tensor y(DType::kF32, out[0].shape());
  binary_arith_typed(node, in[0].cast(DType::kF32), in[1].cast(DType::kF32), y, op);
  const Tensor back = y.cast(t);
  std::memcpy(out[0].raw(), back.raw(), back.nbytes());
}

// Folds the inputs pairwise into the output: out = op(in0, in1), then out = op(out, in_k).
template <class Op>
void variadic(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  if (in.size() == 1) {  // a copy; the single input has the output's shape
    std::memcpy(out[0].raw(), in[0].raw(), out[0].nbytes());
    return;
  }
  binary_arith_typed(node, in[0], in[1], out[0], Op{});
  for (size_t k = 2; k < in.size(); ++k) binary_arith_typed(node, out[0], in[k], out[0], Op{});
}

void mean_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  if (in[0].dtype() != DType::kF32) unsupported_dtype(node, in[0].dtype());
  variadic<Add>(node, in, out);
  float* y = out[0].data<float>();
  const float count = static_cast<float>(in.size());
  for (int64_t i = 0, n = out[0].numel(); i < n; ++i) y[i] /= count;
}

void sum_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  if (in[0].dtype() != DType::kF32) unsupported_dtype(node, in[0].dtype());
  variadic<Add>(node, in, out);
}

// Pow evaluates in double; integer bases truncate the result toward zero, saturating
// (ONNX: the output has the base's type, the exponent may have another).
template <class T>
T pow_result(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<T>::min()))
      return std::numeric_limits<T>::min();
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

template <class T>
void pow_typed(const Node& node, const std::vector<Tensor>& in, Tensor& out) {
  auto op = [](T a, auto b) {
    return pow_result<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
  };
  switch (in[1].dtype()) {
    case DType::kF32:
      return binary_broadcast<T, float, T>(in[0], in[1], out, op);
    case DType::kS32:
      return binary_broadcast<T, int32_t, T>(in[0], in[1], out, op);
    case DType::kS64:
      return binary_broadcast<T, int64_t, T>(in[0], in[1], out, op);
    default:
      unsupported_dtype(node, in[1].dtype());
  }
}

void pow_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  switch (in[0].dtype()) {
    case DType::kF32:
      return pow_typed<float>(node, in, out[0]);
    case DType::kS32:
      return pow_typed<int32_t>(node, in, out[0]);
    case DType::kS64:
      return pow_typed<int64_t>(node, in, out[0]);
    default:
      unsupported_dtype(node, in[0].dtype());
  }
}

void prelu_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  if (in[0].dtype() != DType::kF32) unsupported_dtype(node, in[0].dtype());
  if (in[1].dtype() != DType::kF32) unsupported_dtype(node, in[1].dtype());
  binary_broadcast<float, float, float>(in[0], in[1], out[0],
                                        [](float x, float s) { return x < 0.0f ? s * x : x; });
}

template <class T>
void clip_typed(const Node& node, const std::vector<Tensor>& in, Tensor& out) {
  T lo = std::numeric_limits<T>::lowest();
  T hi = std::numeric_limits<T>::max();
  if constexpr (std::is_floating_point_v<T>) {
    lo = -std::numeric_limits<T>::infinity();
    hi = std::numeric_limits<T>::infinity();
  }
  auto bound = [&](size_t i, T& v) {
    if (in.size() <= i || !in[i].defined()) return;
    if (in[i].dtype() != in[0].dtype())
      fail(ErrorKind::kInvalidInput, node.label(), ": input ", i, " has dtype ",
           dtype_name(in[i].dtype()), " but input 0 has ", dtype_name(in[0].dtype()));
    if (in[i].numel() != 1)
      fail(ErrorKind::kInvalidInput, node.label(), ": input ", i, " must be a scalar, got ",
           in[i].describe());
    v = in[i].data<T>()[0];
  };
  bound(1, lo);
  bound(2, hi);
  const T* x = in[0].data<T>();
  T* y = out.data<T>();
  // ONNX: min applies first, then max; with min > max every element becomes max.
  for (int64_t i = 0, n = in[0].numel(); i < n; ++i) {
    T v = x[i];
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    y[i] = v;
  }
}

void clip_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  switch (in[0].dtype()) {
    case DType::kF32:
      return clip_typed<float>(node, in, out[0]);
    case DType::kS8:
      return clip_typed<int8_t>(node, in, out[0]);
    case DType::kU8:
      return clip_typed<uint8_t>(node, in, out[0]);
    case DType::kS32:
      return clip_typed<int32_t>(node, in, out[0]);
    case DType::kS64:
      return clip_typed<int64_t>(node, in, out[0]);
    default:
      unsupported_dtype(node, in[0].dtype());
  }
}

// ------------------------------------------------------- comparisons and logic -----

struct Equal {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a == b;
  }
};
struct Less {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a < b;
  }
};
struct Greater {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a > b;
  }
};
struct LessOrEqual {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterOrEqual {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a >= b;
  }
};

// Two operands of one dtype (f16 / bf16 arrive widened), a bool (0 / 1 byte) result.
template <class Op>
void compare_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Tensor &a = in[0], &b = in[1];
  if (a.dtype() != b.dtype())
    fail(ErrorKind::kInvalidInput, node.label(), ": input dtypes differ (", dtype_name(a.dtype()),
         " and ", dtype_name(b.dtype()), ")");
  switch (a.dtype()) {
    case DType::kF32:
      return binary_broadcast<float, float, uint8_t>(a, b, out[0], Op{});
    case DType::kS8:
      return binary_broadcast<int8_t, int8_t, uint8_t>(a, b, out[0], Op{});
    case DType::kU8:
    case DType::kBool:
      return binary_broadcast<uint8_t, uint8_t, uint8_t>(a, b, out[0], Op{});
    case DType::kS32:
      return binary_broadcast<int32_t, int32_t, uint8_t>(a, b, out[0], Op{});
    case DType::kS64:
      return binary_broadcast<int64_t, int64_t, uint8_t>(a, b, out[0], Op{});
    default:
      unsupported_dtype(node, a.dtype());
  }
}

struct And {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a & b; }
};
struct Or {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a | b; }
};
struct Xor {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a ^ b; }
};

template <class Op>
void logical_kernel(const Node&, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  binary_broadcast<uint8_t, uint8_t, uint8_t>(in[0], in[1], out[0], Op{});
}

void not_kernel(const Node&, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const uint8_t* x = static_cast<const uint8_t*>(in[0].raw());
  uint8_t* y = static_cast<uint8_t*>(out[0].raw());
  for (int64_t i = 0, n = out[0].numel(); i < n; ++i) y[i] = x[i] ^ 1;
}

// Where(condition, X, Y) over elements of any size (the values are only copied).
template <size_t N>
void where_bytes(const Tensor& c, const Tensor& x, const Tensor& y, Tensor& out) {
  struct E {
    std::byte b[N];
  };
  const uint8_t* pc = static_cast<const uint8_t*>(c.raw());
  const E* px = static_cast<const E*>(x.raw());
  const E* py = static_cast<const E*>(y.raw());
  E* po = static_cast<E*>(out.raw());
  const BroadcastPlan plan = make_broadcast_plan(out.shape(), {c.shape(), x.shape(), y.shape()});
  const int64_t sc = plan.inner_stride(0), sx = plan.inner_stride(1), sy = plan.inner_stride(2);
  for_each_broadcast_row(plan, [&](int64_t o, const int64_t* off, int64_t len) {
    for (int64_t i = 0; i < len; ++i)
      po[o + i] = pc[off[0] + i * sc] ? px[off[1] + i * sx] : py[off[2] + i * sy];
  });
}

void where_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  switch (dtype_size(out[0].dtype())) {
    case 1:
      return where_bytes<1>(in[0], in[1], in[2], out[0]);
    case 2:
      return where_bytes<2>(in[0], in[1], in[2], out[0]);
    case 4:
      return where_bytes<4>(in[0], in[1], in[2], out[0]);
    case 8:
      return where_bytes<8>(in[0], in[1], in[2], out[0]);
    default:
      unsupported_dtype(node, out[0].dtype());
  }
}

// f16 / bf16 tensors: the f32 kernel on widened copies, the outputs rounded back (to nearest
// even). Integer tensors pass through untouched.
template <KernelFn Fn>
void half_as_f32(const Node& node, const std::vector<Tensor>& inputs,
                 std::vector<Tensor>& outputs) {
  auto half = [](const Tensor& t) {
    return t.defined() && (t.dtype() == DType::kF16 || t.dtype() == DType::kBF16);
  };
  bool any = false;
  for (const Tensor& t : inputs) any |= half(t);
  for (const Tensor& t : outputs) any |= half(t);
  if (!any) return Fn(node, inputs, outputs);
  std::vector<Tensor> in(inputs.size()), out(outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    in[i] = half(inputs[i]) ? inputs[i].cast(DType::kF32) : inputs[i];
  for (size_t i = 0; i < outputs.size(); ++i)
    out[i] = half(outputs[i]) ? Tensor(DType::kF32, outputs[i].shape()) : outputs[i];
  Fn(node, in, out);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!half(outputs[i])) continue;
    const Tensor back = out[i].cast(outputs[i].dtype());
    std::memcpy(outputs[i].raw(), back.raw(), back.nbytes());
  }
}

}  // namespace

void append_elementwise_kernels(std::vector<KernelEntry>& t) {
  t.push_back({"Relu", half_as_f32<unary_f32<Relu>>});
  t.push_back({"LeakyRelu", half_as_f32<unary_f32<LeakyRelu>>});
  t.push_back({"ThresholdedRelu", half_as_f32<unary_f32<ThresholdedRelu>>});
  t.push_back({"Elu", half_as_f32<unary_f32<Elu>>});
  t.push_back({"Selu", half_as_f32<unary_f32<Selu>>});
  t.push_back({"Celu", half_as_f32<unary_f32<Celu>>});
  t.push_back({"Sigmoid", half_as_f32<unary_f32<Sigmoid>>});
  t.push_back({"HardSigmoid", half_as_f32<unary_f32<HardSigmoid>>});
  t.push_back({"HardSwish", half_as_f32<unary_f32<HardSwish>>});
  t.push_back({"Softplus", half_as_f32<unary_f32<Softplus>>});
  t.push_back({"Softsign", half_as_f32<unary_f32<Softsign>>});
  t.push_back({"Mish", half_as_f32<unary_f32<Mish>>});
  t.push_back({"Sign", half_as_f32<unary_f32<Sign>>});
  t.push_back({"Reciprocal", half_as_f32<unary_f32<Reciprocal>>});
  t.push_back({"Round", half_as_f32<unary_f32<Round>>});
  t.push_back({"Exp", half_as_f32<unary_f32<MathFn<exp_d>>>});
  t.push_back({"Log", half_as_f32<unary_f32<MathFn<log_d>>>});
  t.push_back({"Sqrt", half_as_f32<unary_f32<MathFn<sqrt_d>>>});
  t.push_back({"Tanh", half_as_f32<unary_f32<MathFn<tanh_d>>>});
  t.push_back({"Erf", half_as_f32<unary_f32<MathFn<erf_d>>>});
  t.push_back({"Gelu", half_as_f32<unary_f32<Gelu>>});
  t.push_back({"Floor", half_as_f32<unary_f32<MathFn<floor_d>>>});
  t.push_back({"Ceil", half_as_f32<unary_f32<MathFn<ceil_d>>>});
  t.push_back({"Sin", half_as_f32<unary_f32<MathFn<sin_d>>>});
  t.push_back({"Cos", half_as_f32<unary_f32<MathFn<cos_d>>>});
  t.push_back({"Tan", half_as_f32<unary_f32<MathFn<tan_d>>>});
  t.push_back({"Atan", half_as_f32<unary_f32<MathFn<atan_d>>>});
  t.push_back({"Sinh", half_as_f32<unary_f32<MathFn<sinh_d>>>});
  t.push_back({"Cosh", half_as_f32<unary_f32<MathFn<cosh_d>>>});
  t.push_back({"Asin", half_as_f32<unary_f32<MathFn<asin_d>>>});
  t.push_back({"Acos", half_as_f32<unary_f32<MathFn<acos_d>>>});
  t.push_back({"Asinh", half_as_f32<unary_f32<MathFn<asinh_d>>>});
  t.push_back({"Acosh", half_as_f32<unary_f32<MathFn<acosh_d>>>});
  t.push_back({"Atanh", half_as_f32<unary_f32<MathFn<atanh_d>>>});
  t.push_back({"Shrink", half_as_f32<unary_f32<Shrink>>});
  t.push_back({"Neg", half_as_f32<unary_arith<Neg>>});
  t.push_back({"Abs", half_as_f32<unary_arith<Abs>>});
  t.push_back({"Clip", half_as_f32<clip_kernel>});
  t.push_back({"PRelu", half_as_f32<prelu_kernel>});
  t.push_back({"Add", half_as_f32<binary_arith<Add>>});
  t.push_back({"Sub", half_as_f32<binary_arith<Sub>>});
  t.push_back({"Mul", half_as_f32<binary_arith<Mul>>});
  t.push_back({"Div", half_as_f32<div_kernel>});
  t.push_back({"Pow", half_as_f32<pow_kernel>});
  t.push_back({"Mod", half_as_f32<mod_kernel>});
  t.push_back({"Max", half_as_f32<variadic<Max>>});
  t.push_back({"Min", half_as_f32<variadic<Min>>});
  t.push_back({"Sum", half_as_f32<sum_kernel>});
  t.push_back({"Mean", half_as_f32<mean_kernel>});
  t.push_back({"Equal", half_as_f32<compare_kernel<Equal>>});
  t.push_back({"Less", half_as_f32<compare_kernel<Less>>});
  t.push_back({"Greater", half_as_f32<compare_kernel<Greater>>});
  t.push_back({"LessOrEqual", half_as_f32<compare_kernel<LessOrEqual>>});
  t.push_back({"GreaterOrEqual", half_as_f32<compare_kernel<GreaterOrEqual>>});
  t.push_back({"Not", not_kernel});
  t.push_back({"And", logical_kernel<And>});
  t.push_back({"Or", logical_kernel<Or>});
  t.push_back({"Xor", logical_kernel<Xor>});
  t.push_back({"Where", where_kernel});  // copies 16-bit values as they are
}

}  // namespace dlas::reference
