// Reference kernels for tensor and shape ops. Data movement copies whole elements as
// opaque bytes, so one kernel serves every dtype; only Cast, CastLike, Range (and
// EyeLike, which writes ones) deal in values.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "dlas/model/shape_math.h"
#include "system/reference/broadcast.h"
#include "system/reference/kernels_internal.h"

namespace dlas::reference {
namespace {

// An element moved as N opaque bytes (no aliasing or float-signalling concerns).
template <size_t N>
struct Bytes {
  std::byte b[N];
};

// Calls f(Bytes<N>{}) with N the element size of `t`.
template <class F>
void with_element(DType t, F&& f) {
  switch (dtype_size(t)) {
    case 1:
      return f(Bytes<1>{});
    case 2:
      return f(Bytes<2>{});
    case 4:
      return f(Bytes<4>{});
    case 8:
      return f(Bytes<8>{});
    default:
      fail(ErrorKind::kInternal, "unexpected element size of ", dtype_name(t));
  }
}

// Row-major element strides of `s`.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// dst (contiguous, shape `dims`) [i0, i1, ...] = src[offset + sum_k i_k * strides[k]].
// Strides may be negative (Slice with negative steps).
template <class T>
void strided_gather(const T* src, T* dst, const Shape& dims, const std::vector<int64_t>& strides,
                    int64_t offset) {
  const int64_t n = shape_numel(dims);
  if (n == 0) return;
  const size_t r = dims.size();
  if (r == 0) {
    dst[0] = src[offset];
    return;
  }
  const int64_t len = dims[r - 1];
  const int64_t s = strides[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t off = offset;
  for (int64_t o = 0; o < n; o += len) {
    const T* p = src + off;
    T* q = dst + o;
    if (s == 1) {
      std::copy(p, p + len, q);
    } else {
      for (int64_t i = 0; i < len; ++i) q[i] = p[i * s];
    }
    for (size_t d = r - 1; d-- > 0;) {
      ++idx[d];
      off += strides[d];
      if (idx[d] < dims[d]) break;
      off -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

void check_same_bytes(const Node& node, const Tensor& in, const Tensor& out) {
  DLAS_CHECK(in.nbytes() == out.nbytes() && in.dtype() == out.dtype(), ErrorKind::kInternal,
             node.label(), ": input ", in.describe(), " does not fit output ", out.describe());
}

// Identity, Flatten, Reshape, Squeeze, Unsqueeze: same bytes, new shape.
void copy_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  check_same_bytes(node, in[0], out[0]);
  if (out[0].nbytes() > 0) std::memcpy(out[0].raw(), in[0].raw(), out[0].nbytes());
}

void transpose_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const int r = x.rank();
  std::vector<int64_t> perm(static_cast<size_t>(r));
  for (int i = 0; i < r; ++i) perm[static_cast<size_t>(i)] = r - 1 - i;
  perm = node.attr_ints("perm", perm);
  const std::vector<int64_t> in_strides = strides_of(x.shape());
  std::vector<int64_t> strides(static_cast<size_t>(r));
  for (size_t i = 0; i < strides.size(); ++i)
    strides[i] = in_strides.at(static_cast<size_t>(perm[i]));
  with_element(x.dtype(), [&](auto e) {
    using T = decltype(e);
    strided_gather(static_cast<const T*>(x.raw()), static_cast<T*>(out[0].raw()), out[0].shape(),
                   strides, 0);
  });
}

int normalize_axis(const Node& node, int64_t axis, int r) {
  const int64_t a = axis < 0 ? axis + r : axis;
  DLAS_CHECK(a >= 0 && a < r, ErrorKind::kInvalidInput, node.label(), ": axis ", axis,
             " is out of range for rank ", r);
  return static_cast<int>(a);
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

void concat_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  Tensor& y = out[0];
  const int axis = normalize_axis(node, node.attr_int("axis", 0), y.rank());
  const size_t es = dtype_size(y.dtype());
  const int64_t outer = product(y.shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = product(y.shape(), static_cast<size_t>(axis) + 1, y.shape().size());
  std::byte* dst = static_cast<std::byte*>(y.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& x : in) {
      const size_t chunk = static_cast<size_t>(x.dim(axis) * inner) * es;
      if (chunk == 0) continue;
      std::memcpy(dst, static_cast<const std::byte*>(x.raw()) + static_cast<size_t>(o) * chunk,
                  chunk);
      dst += chunk;
    }
  }
}

// Chunk sizes come from the inferred output shapes.
void split_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const int axis = normalize_axis(node, node.attr_int("axis", 0), x.rank());
  const size_t es = dtype_size(x.dtype());
  const int64_t outer = product(x.shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = product(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size());
  const std::byte* src = static_cast<const std::byte*>(x.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (Tensor& y : out) {
      DLAS_CHECK(y.defined(), ErrorKind::kInternal, node.label(), ": an output is missing");
      const size_t chunk = static_cast<size_t>(y.dim(axis) * inner) * es;
      if (chunk > 0)
        std::memcpy(static_cast<std::byte*>(y.raw()) + static_cast<size_t>(o) * chunk, src, chunk);
      src += chunk;
    }
  }
}

std::vector<int64_t> ints_or_empty(const std::vector<Tensor>& in, size_t i) {
  if (in.size() <= i || !in[i].defined()) return {};
  return in[i].to_int64_vector();
}

void slice_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const auto dims =
      shape_math::resolve_slice(node, x.shape(), in[1].to_int64_vector(), in[2].to_int64_vector(),
                                ints_or_empty(in, 3), ints_or_empty(in, 4));
  const std::vector<int64_t> in_strides = strides_of(x.shape());
  std::vector<int64_t> strides(dims.size());
  int64_t offset = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    strides[i] = in_strides[i] * dims[i].step;
    if (dims[i].size > 0) offset += in_strides[i] * dims[i].start;
  }
  with_element(x.dtype(), [&](auto e) {
    using T = decltype(e);
    strided_gather(static_cast<const T*>(x.raw()), static_cast<T*>(out[0].raw()), out[0].shape(),
                   strides, offset);
  });
}

void gather_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const Tensor& indices = in[1];
  DLAS_CHECK(indices.dtype() == DType::kS32 || indices.dtype() == DType::kS64,
             ErrorKind::kInvalidInput, node.label(), ": indices must be s32 or s64, got ",
             dtype_name(indices.dtype()));
  const int axis = normalize_axis(node, node.attr_int("axis", 0), x.rank());
  const size_t es = dtype_size(x.dtype());
  const int64_t outer = product(x.shape(), 0, static_cast<size_t>(axis));
  const int64_t dim = x.dim(axis);
  const size_t chunk =
      static_cast<size_t>(product(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size())) * es;
  const std::vector<int64_t> idx = indices.to_int64_vector();
  const std::byte* src = static_cast<const std::byte*>(x.raw());
  std::byte* dst = static_cast<std::byte*>(out[0].raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t v : idx) {
      DLAS_CHECK(v >= -dim && v < dim, ErrorKind::kInvalidInput, node.label(), ": index ", v,
                 " is out of range for axis ", axis, " of size ", dim);
      const int64_t j = v < 0 ? v + dim : v;
      if (chunk > 0) std::memcpy(dst, src + static_cast<size_t>(o * dim + j) * chunk, chunk);
      dst += chunk;
    }
  }
}

// GatherElements: out[i...] = data[i...] with the axis coordinate replaced by index[i...].
void gather_elements_kernel(const Node& node, const std::vector<Tensor>& in,
                            std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const Tensor& indices = in[1];
  Tensor& y = out[0];
  const int r = x.rank();
  const int axis = normalize_axis(node, node.attr_int("axis", 0), r);
  const int64_t dim = x.dim(axis);
  const std::vector<int64_t> xst = strides_of(x.shape());
  const std::vector<int64_t> idx = indices.to_int64_vector();
  std::vector<int64_t> pos(static_cast<size_t>(r), 0);  // multi-index into indices
  with_element(x.dtype(), [&](auto e) {
    using T = decltype(e);
    const T* src = static_cast<const T*>(x.raw());
    T* dst = static_cast<T*>(y.raw());
    for (int64_t i = 0, n = y.numel(); i < n; ++i) {
      const int64_t v = idx[static_cast<size_t>(i)];
      DLAS_CHECK(v >= -dim && v < dim, ErrorKind::kInvalidInput, node.label(), ": index ", v,
                 " is out of range for axis ", axis, " of size ", dim);
      int64_t off = 0;
      for (int d = 0; d < r; ++d)
        off += (d == axis ? (v < 0 ? v + dim : v) : pos[static_cast<size_t>(d)]) *
               xst[static_cast<size_t>(d)];
      dst[i] = src[off];
      for (int d = r; d-- > 0;) {
        if (++pos[static_cast<size_t>(d)] < y.dim(d)) break;
        pos[static_cast<size_t>(d)] = 0;
      }
    }
  });
}

// ScatterND: a copy of data, then each index tuple's slice replaced by its updates, in order
// (a later duplicate index wins).
void scatter_nd_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const Tensor& indices = in[1];
  const Tensor& upd = in[2];
  Tensor& y = out[0];
  if (y.nbytes() > 0 && y.raw() != x.raw()) std::memcpy(y.raw(), x.raw(), y.nbytes());
  const int64_t k = indices.shape().back();
  const std::vector<int64_t> xst = strides_of(x.shape());
  const int64_t slice = k < x.rank() ? xst[static_cast<size_t>(k - 1)] : 1;
  const int64_t tuples = k > 0 ? indices.numel() / k : 0;
  const std::vector<int64_t> idx = indices.to_int64_vector();
  with_element(x.dtype(), [&](auto e) {
    using T = decltype(e);
    const T* src = static_cast<const T*>(upd.raw());
    T* dst = static_cast<T*>(y.raw());
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t d = 0; d < k; ++d) {
        const int64_t dim = x.dim(static_cast<int>(d));
        int64_t v = idx[static_cast<size_t>(t * k + d)];
        DLAS_CHECK(v >= -dim && v < dim, ErrorKind::kInvalidInput, node.label(), ": index ", v,
                   " is out of range for axis ", d, " of size ", dim);
        if (v < 0) v += dim;
        off += v * xst[static_cast<size_t>(d)];
      }
      std::copy(src + t * slice, src + (t + 1) * slice, dst + off);
    }
  });
}

// DepthToSpace and SpaceToDepth are one transpose of a 6-D view each (the reshape /
// transpose / reshape formulas of the ONNX spec); the output is that view, contiguous.
void gather_view(const Tensor& x, Tensor& y, const Shape& dims,
                 const std::vector<int64_t>& strides) {
  with_element(x.dtype(), [&](auto e) {
    using T = decltype(e);
    strided_gather(static_cast<const T*>(x.raw()), static_cast<T*>(y.raw()), dims, strides, 0);
  });
}

void depth_to_space_kernel(const Node& node, const std::vector<Tensor>& in,
                           std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const int64_t b = node.attr_int("blocksize", 1);
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), co = c / (b * b);
  const int64_t hw = h * w;
  // Output [N, C', H, b1, W, b2] reads input channel (b1 * b + b2) * C' + c' (DCR) or
  // c' * b * b + b1 * b + b2 (CRD).
  const bool crd = node.attr_string("mode", "DCR") == "CRD";
  const int64_t s_c = crd ? b * b * hw : hw;
  const int64_t s_b1 = crd ? b * hw : b * co * hw;
  const int64_t s_b2 = crd ? hw : co * hw;
  gather_view(x, out[0], {n, co, h, b, w, b}, {c * hw, s_c, w, s_b1, 1, s_b2});
}

void space_to_depth_kernel(const Node& node, const std::vector<Tensor>& in,
                           std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  const int64_t b = node.attr_int("blocksize", 1);
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  // Output [N, b1, b2, C, H', W'] reads input [n, c, h' * b + b1, w' * b + b2].
  gather_view(x, out[0], {n, b, b, c, h / b, w / b}, {c * h * w, w, 1, h * w, b * w, b});
}

// EyeLike: ones at [i, i + k] of the (zero-filled) output.
void eye_like_kernel(const Node& node, const std::vector<Tensor>&, std::vector<Tensor>& out) {
  Tensor& y = out[0];
  const int64_t k = node.attr_int("k", 0);
  const Tensor one = Tensor::scalar_f32(1.0f).cast(y.dtype());
  const size_t es = dtype_size(y.dtype());
  std::byte* dst = static_cast<std::byte*>(y.raw());
  for (int64_t i = 0; i < y.dim(0); ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < y.dim(1))
      std::memcpy(dst + static_cast<size_t>(i * y.dim(1) + j) * es, one.raw(), es);
  }
}

void shape_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Shape& s = in[0].shape();
  const int64_t r = static_cast<int64_t>(s.size());
  auto clamp_index = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  const int64_t start = clamp_index(node.attr_int("start", 0));
  const int64_t end = clamp_index(node.attr_int("end", r));
  int64_t* y = out[0].data<int64_t>();
  for (int64_t i = start; i < end; ++i) y[i - start] = s[static_cast<size_t>(i)];
}

void size_kernel(const Node&, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  out[0].data<int64_t>()[0] = in[0].numel();
}

void constant_kernel(const Node& node, const std::vector<Tensor>&, std::vector<Tensor>& out) {
  Tensor& y = out[0];
  if (const Tensor* t = node.attr_tensor("value")) {
    check_same_bytes(node, *t, y);
    if (y.nbytes() > 0) std::memcpy(y.raw(), t->raw(), y.nbytes());
  } else if (node.has_attr("value_float")) {
    y.data<float>()[0] = node.attr_float("value_float", 0.0f);
  } else if (node.has_attr("value_floats")) {
    const auto v = node.attr_floats("value_floats", {});
    std::copy(v.begin(), v.end(), y.data<float>());
  } else if (node.has_attr("value_int")) {
    y.data<int64_t>()[0] = node.attr_int("value_int", 0);
  } else if (node.has_attr("value_ints")) {
    const auto v = node.attr_ints("value_ints", {});
    std::copy(v.begin(), v.end(), y.data<int64_t>());
  } else {
    fail(ErrorKind::kUnsupported, node.label(), ": no supported value attribute");
  }
}

void constant_of_shape_kernel(const Node& node, const std::vector<Tensor>&,
                              std::vector<Tensor>& out) {
  Tensor& y = out[0];
  const Tensor* v = node.attr_tensor("value");
  if (!v) {  // default: f32 zeros
    std::fill_n(y.data<float>(), y.numel(), 0.0f);
    return;
  }
  DLAS_CHECK(v->numel() == 1 && v->dtype() == y.dtype(), ErrorKind::kInvalidInput, node.label(),
             ": value ", v->describe(), " does not match output ", y.describe());
  with_element(y.dtype(), [&](auto e) {
    using T = decltype(e);
    std::fill_n(static_cast<T*>(y.raw()), y.numel(), *static_cast<const T*>(v->raw()));
  });
}

// Expand: a broadcast copy of the input to the output shape.
void expand_kernel(const Node&, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  const BroadcastPlan plan = make_broadcast_plan(y.shape(), {x.shape()});
  const int64_t s = plan.inner_stride(0);
  with_element(x.dtype(), [&](auto e) {
    using T = decltype(e);
    const T* src = static_cast<const T*>(x.raw());
    T* dst = static_cast<T*>(y.raw());
    for_each_broadcast_row(plan, [&](int64_t o, const int64_t* off, int64_t len) {
      if (s == 0) {
        std::fill_n(dst + o, len, src[off[0]]);
      } else {
        std::copy(src + off[0], src + off[0] + len, dst + o);
      }
    });
  });
}

void tile_kernel(const Node&, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  if (y.numel() == 0) return;
  const size_t r = x.shape().size();
  if (r == 0) {
    std::memcpy(y.raw(), x.raw(), y.nbytes());
    return;
  }
  const Shape& xs = x.shape();
  const Shape& ys = y.shape();
  const std::vector<int64_t> xst = strides_of(xs);
  const size_t row_bytes = static_cast<size_t>(xs[r - 1]) * dtype_size(x.dtype());
  const int64_t reps = ys[r - 1] / xs[r - 1];
  const std::byte* src = static_cast<const std::byte*>(x.raw());
  std::byte* dst = static_cast<std::byte*>(y.raw());
  // Each output row is the matching input row (outer index modulo input dims) repeated.
  std::vector<int64_t> idx(r, 0);
  for (int64_t row = 0, rows = y.numel() / ys[r - 1]; row < rows; ++row) {
    int64_t in_off = 0;
    for (size_t d = 0; d + 1 < r; ++d) in_off += (idx[d] % xs[d]) * xst[d];
    for (int64_t k = 0; k < reps; ++k) {
      std::memcpy(dst, src + static_cast<size_t>(in_off) * dtype_size(x.dtype()), row_bytes);
      dst += row_bytes;
    }
    for (size_t d = r - 1; d-- > 0;) {
      if (++idx[d] < ys[d]) break;
      idx[d] = 0;
    }
  }
}

template <class T>
void range_typed(const std::vector<Tensor>& in, Tensor& y) {
  const T start = in[0].data<T>()[0];
  const T delta = in[2].data<T>()[0];
  T* p = y.data<T>();
  for (int64_t i = 0, n = y.numel(); i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      p[i] = start + static_cast<T>(i) * delta;
    } else {  // wraps rather than overflowing
      using U = std::make_unsigned_t<T>;
      p[i] = static_cast<T>(static_cast<U>(start) + static_cast<U>(i) * static_cast<U>(delta));
    }
  }
}

void range_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  switch (out[0].dtype()) {
    case DType::kF32:
      return range_typed<float>(in, out[0]);
    case DType::kS32:
      return range_typed<int32_t>(in, out[0]);
    case DType::kS64:
      return range_typed<int64_t>(in, out[0]);
    default:
      fail(ErrorKind::kUnsupported, node.label(), ": dtype ", dtype_name(out[0].dtype()),
           " is not supported");
  }
}

// Cast: floats to integers truncate toward zero and saturate (NaN becomes 0); integers
// to narrower integers wrap (two's complement); to f16/bf16 rounds to nearest even.
template <class T>
T float_to_int(double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

void store_float(Tensor& y, int64_t i, float v) {
  switch (y.dtype()) {
    case DType::kF32:
      y.data<float>()[i] = v;
      break;
    case DType::kF16:
      y.bits16()[i] = f32_to_f16(v);
      break;
    case DType::kBF16:
      y.bits16()[i] = f32_to_bf16(v);
      break;
    case DType::kS8:
      y.data<int8_t>()[i] = float_to_int<int8_t>(v);
      break;
    case DType::kU8:
      y.data<uint8_t>()[i] = float_to_int<uint8_t>(v);
      break;
    case DType::kS32:
      y.data<int32_t>()[i] = float_to_int<int32_t>(v);
      break;
    case DType::kS64:
      y.data<int64_t>()[i] = float_to_int<int64_t>(v);
      break;
    case DType::kBool:  // nonzero (NaN included) is true
      static_cast<uint8_t*>(y.raw())[i] = v != 0.f ? 1 : 0;
      break;
  }
}

void store_int(Tensor& y, int64_t i, int64_t v) {
  switch (y.dtype()) {
    case DType::kF32:
      y.data<float>()[i] = static_cast<float>(v);
      break;
    case DType::kF16:
      y.bits16()[i] = f32_to_f16(static_cast<float>(v));
      break;
    case DType::kBF16:
      y.bits16()[i] = f32_to_bf16(static_cast<float>(v));
      break;
    case DType::kS8:
      y.data<int8_t>()[i] = static_cast<int8_t>(v);
      break;
    case DType::kU8:
      y.data<uint8_t>()[i] = static_cast<uint8_t>(v);
      break;
    case DType::kS32:
      y.data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    case DType::kS64:
      y.data<int64_t>()[i] = v;
      break;
    case DType::kBool:
      static_cast<uint8_t*>(y.raw())[i] = v != 0 ? 1 : 0;
      break;
  }
}

void cast_kernel(const Node& node, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Tensor& x = in[0];
  Tensor& y = out[0];
  DLAS_CHECK(x.numel() == y.numel(), ErrorKind::kInternal, node.label(), ": input ", x.describe(),
             " does not fit output ", y.describe());
  if (x.dtype() == y.dtype()) {
    if (y.nbytes() > 0) std::memcpy(y.raw(), x.raw(), y.nbytes());
    return;
  }
  const bool from_float = is_float(x.dtype());
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    if (from_float) {
      store_float(y, i, static_cast<float>(x.get_as_double(i)));  // f32/f16/bf16 fit in float
    } else {
      store_int(y, i, x.get_as_int64(i));
    }
  }
}

}  // namespace

void append_tensor_kernels(std::vector<KernelEntry>& t) {
  for (const char* op : {"Identity", "Flatten", "Reshape", "Squeeze", "Unsqueeze"})
    t.push_back({op, copy_kernel});
  t.push_back({"Transpose", transpose_kernel});
  t.push_back({"Concat", concat_kernel});
  t.push_back({"Split", split_kernel});
  t.push_back({"Slice", slice_kernel});
  t.push_back({"Gather", gather_kernel});
  t.push_back({"GatherElements", gather_elements_kernel});
  t.push_back({"ScatterND", scatter_nd_kernel});
  t.push_back({"DepthToSpace", depth_to_space_kernel});
  t.push_back({"SpaceToDepth", space_to_depth_kernel});
  t.push_back({"EyeLike", eye_like_kernel});
  t.push_back({"Shape", shape_kernel});
  t.push_back({"Size", size_kernel});
  t.push_back({"Constant", constant_kernel});
  t.push_back({"ConstantOfShape", constant_of_shape_kernel});
  t.push_back({"Expand", expand_kernel});
  t.push_back({"Tile", tile_kernel});
  t.push_back({"Range", range_kernel});
  t.push_back({"Cast", cast_kernel});
  t.push_back({"CastLike", cast_kernel});  // the output has input 1's dtype
}

}  // namespace dlas::reference
