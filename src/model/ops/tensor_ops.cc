// Tensor and shape op schemas (ONNX opset 13 forms; Shape has opset 15's start/end and
// Split accepts opset 18's uneven last chunk). Data movement is dtype-agnostic. Values
// that determine an output shape (Reshape's shape, Slice's starts, ...) must be constants.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "dlas/model/shape_math.h"
#include "model/ops/ops_internal.h"

namespace dlas::ops {
namespace {

constexpr int kVariadic = std::numeric_limits<int>::max();

bool is_index_dtype(DType t) { return t == DType::kS32 || t == DType::kS64; }

// Values of a constant integer input (s32 or s64), which must be at most 1-D.
std::vector<int64_t> const_ints(const InferContext& ctx, int i, const char* what) {
  const Tensor& t = ctx.require_constant(i, what);
  ctx.check(is_index_dtype(t.dtype()), what, " must be s32 or s64, got ", dtype_name(t.dtype()));
  ctx.check(t.rank() <= 1, what, " must be 1-D, got shape ", shape_str(t.shape()));
  return t.to_int64_vector();
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

void infer_identity(InferContext& ctx) { ctx.set_output(0, ctx.dtype(0), ctx.shape(0)); }

void infer_flatten(InferContext& ctx) {
  const Shape& s = ctx.shape(0);
  const int r = ctx.rank(0);
  const int64_t axis = ctx.node().attr_int("axis", 1);
  const int64_t a = axis < 0 ? axis + r : axis;  // a == r is allowed: [numel, 1]
  ctx.check(a >= 0 && a <= r, "axis ", axis, " is out of range for rank ", r);
  const size_t k = static_cast<size_t>(a);
  ctx.set_output(0, ctx.dtype(0), {product(s, 0, k), product(s, k, s.size())});
}

void infer_reshape(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  const std::vector<int64_t> target = const_ints(ctx, 1, "shape");
  const bool allowzero = ctx.node().attr_int("allowzero", 0) != 0;
  Shape out(target.size());
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == -1) {
      ctx.check(infer_at < 0, "shape ", shape_str(target), " has more than one -1");
      infer_at = static_cast<int>(i);
      continue;
    }
    ctx.check(d >= 0, "shape ", shape_str(target), " has an invalid dimension ", d);
    if (d == 0 && !allowzero) {
      ctx.check(i < in.size(), "shape ", shape_str(target), " copies dimension ", i,
                " (0) but the input ", shape_str(in), " has rank ", in.size());
      d = in[i];
    }
    ctx.check(d == 0 || known <= std::numeric_limits<int64_t>::max() / d, "shape ",
              shape_str(target), " has too many elements");
    out[i] = d;
    known *= d;
  }
  const int64_t numel = shape_numel(in);
  if (infer_at >= 0) {
    ctx.check(!(allowzero && known == 0), "shape ", shape_str(target),
              " has both 0 and -1 with allowzero=1");
    ctx.check(known != 0 && numel % known == 0, "cannot reshape ", shape_str(in), " (", numel,
              " elements) to ", shape_str(target));
    out[static_cast<size_t>(infer_at)] = numel / known;
  }
  ctx.check(shape_numel(out) == numel, "cannot reshape ", shape_str(in), " (", numel,
            " elements) to ", shape_str(target), " (", shape_numel(out), " elements)");
  ctx.set_output(0, ctx.dtype(0), out);
}

void infer_transpose(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  const int r = ctx.rank(0);
  std::vector<int64_t> perm(static_cast<size_t>(r));
  for (int i = 0; i < r; ++i) perm[static_cast<size_t>(i)] = r - 1 - i;
  perm = ctx.node().attr_ints("perm", perm);
  ctx.check(static_cast<int>(perm.size()) == r, "perm ", shape_str(perm), " has ", perm.size(),
            " entries for a rank-", r, " input");
  std::vector<bool> seen(static_cast<size_t>(r), false);
  Shape out(static_cast<size_t>(r));
  for (int i = 0; i < r; ++i) {
    const int64_t p = perm[static_cast<size_t>(i)];
    ctx.check(p >= 0 && p < r && !seen[static_cast<size_t>(p)], "perm ", shape_str(perm),
              " is not a permutation of 0..", r - 1);
    seen[static_cast<size_t>(p)] = true;
    out[static_cast<size_t>(i)] = in[static_cast<size_t>(p)];
  }
  ctx.set_output(0, ctx.dtype(0), out);
}

void infer_concat(InferContext& ctx) {
  ctx.check(ctx.node().has_attr("axis"), "attribute 'axis' is required");
  const int r = ctx.rank(0);
  ctx.check(r > 0, "cannot concatenate scalars");
  const int axis = ctx.normalize_axis(ctx.node().attr_int("axis", 0), r);
  Shape out = ctx.shape(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const Shape& s = ctx.shape(i);
    ctx.check(ctx.dtype(i) == ctx.dtype(0), "input ", i, " has dtype ", dtype_name(ctx.dtype(i)),
              " but input 0 has ", dtype_name(ctx.dtype(0)));
    ctx.check(ctx.rank(i) == r, "input ", i, " has shape ", shape_str(s), " but input 0 has ",
              shape_str(ctx.shape(0)), "; ranks differ");
    for (int d = 0; d < r; ++d) {
      if (d == axis) continue;
      ctx.check(s[static_cast<size_t>(d)] == out[static_cast<size_t>(d)], "input ", i,
                " has shape ", shape_str(s), " but input 0 has ", shape_str(ctx.shape(0)),
                "; they differ outside axis ", axis);
    }
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  ctx.set_output(0, ctx.dtype(0), out);
}

void infer_split(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  const int axis = ctx.normalize_axis(ctx.node().attr_int("axis", 0), ctx.rank(0));
  const int64_t dim = in[static_cast<size_t>(axis)];
  const int n = ctx.num_outputs();
  if (ctx.node().has_attr("num_outputs"))
    ctx.check(ctx.node().attr_int("num_outputs", 0) == n, "num_outputs is ",
              ctx.node().attr_int("num_outputs", 0), " but the node has ", n, " outputs");
  std::vector<int64_t> split;
  if (ctx.has_input(1)) {
    split = const_ints(ctx, 1, "split");
  } else if (ctx.node().has_attr("split")) {  // pre-opset-13 form
    split = ctx.node().attr_ints("split", {});
  }
  if (!split.empty()) {
    ctx.check(static_cast<int>(split.size()) == n, "split has ", split.size(),
              " sizes but the node has ", n, " outputs");
    int64_t total = 0;
    for (int64_t s : split) {
      ctx.check(s >= 0, "split ", shape_str(split), " has a negative size");
      total += s;
    }
    ctx.check(total == dim, "split ", shape_str(split), " sums to ", total, " but axis ", axis,
              " of ", shape_str(in), " has ", dim);
  } else {
    // Equal chunks; when dim is not divisible the last chunk is smaller (opset 18).
    const int64_t chunk = (dim + n - 1) / n;
    const int64_t last = dim - chunk * (n - 1);
    ctx.check(last >= 0, "cannot split axis ", axis, " of size ", dim, " into ", n, " outputs");
    split.assign(static_cast<size_t>(n), chunk);
    split.back() = last;
  }
  for (int i = 0; i < n; ++i) {
    Shape s = in;
    s[static_cast<size_t>(axis)] = split[static_cast<size_t>(i)];
    ctx.set_output(i, ctx.dtype(0), s);
  }
}

void infer_slice(InferContext& ctx) {
  const std::vector<int64_t> starts = const_ints(ctx, 1, "starts");
  const std::vector<int64_t> ends = const_ints(ctx, 2, "ends");
  std::vector<int64_t> axes, steps;
  if (ctx.has_input(3)) axes = const_ints(ctx, 3, "axes");
  if (ctx.has_input(4)) steps = const_ints(ctx, 4, "steps");
  const auto dims = shape_math::resolve_slice(ctx.node(), ctx.shape(0), starts, ends, axes, steps);
  Shape out;
  for (const auto& d : dims) out.push_back(d.size);
  ctx.set_output(0, ctx.dtype(0), out);
}

void infer_gather(InferContext& ctx) {
  const Shape& data = ctx.shape(0);
  ctx.check(ctx.rank(0) > 0, "cannot gather from a scalar");
  const int axis = ctx.normalize_axis(ctx.node().attr_int("axis", 0), ctx.rank(0));
  ctx.check(is_index_dtype(ctx.dtype(1)), "indices must be s32 or s64, got ",
            dtype_name(ctx.dtype(1)));
  const int64_t dim = data[static_cast<size_t>(axis)];
  if (const Tensor* idx = ctx.constant(1)) {
    for (int64_t v : idx->to_int64_vector())
      ctx.check(v >= -dim && v < dim, "index ", v, " is out of range for axis ", axis, " of size ",
                dim);
  }
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), ctx.shape(1).begin(), ctx.shape(1).end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  ctx.set_output(0, ctx.dtype(0), out);
}

void infer_shape(InferContext& ctx) {
  const int64_t r = ctx.rank(0);
  auto clamp_index = [&](int64_t v) {
    if (v < 0) v += r;
    return std::clamp<int64_t>(v, 0, r);
  };
  const int64_t start = clamp_index(ctx.node().attr_int("start", 0));
  const int64_t end = clamp_index(ctx.node().attr_int("end", r));
  ctx.set_output(0, DType::kS64, {std::max<int64_t>(end - start, 0)});
}

void infer_size(InferContext& ctx) { ctx.set_output(0, DType::kS64, {}); }

void infer_constant(InferContext& ctx) {
  const Node& n = ctx.node();
  int given = 0;
  for (const char* key : {"value", "value_float", "value_floats", "value_int", "value_ints",
                          "sparse_value", "value_string", "value_strings"})
    given += n.has_attr(key) ? 1 : 0;
  ctx.check(given == 1, "exactly one value attribute is required, got ", given);
  if (const Tensor* t = n.attr_tensor("value")) {
    ctx.set_output(0, t->dtype(), t->shape());
  } else if (n.has_attr("value_float")) {
    ctx.set_output(0, DType::kF32, {});
  } else if (n.has_attr("value_floats")) {
    ctx.set_output(0, DType::kF32,
                   {static_cast<int64_t>(n.attr_floats("value_floats", {}).size())});
  } else if (n.has_attr("value_int")) {
    ctx.set_output(0, DType::kS64, {});
  } else if (n.has_attr("value_ints")) {
    ctx.set_output(0, DType::kS64, {static_cast<int64_t>(n.attr_ints("value_ints", {}).size())});
  } else {
    fail(ErrorKind::kUnsupported, n.label(),
         ": only tensor, float(s) and int(s) values are "
         "supported (no sparse or string constants)");
  }
}

void infer_constant_of_shape(InferContext& ctx) {
  const Tensor& s = ctx.require_constant(0, "shape");
  ctx.check(s.dtype() == DType::kS64, "shape must be s64, got ", dtype_name(s.dtype()));
  ctx.check(s.rank() == 1, "shape must be 1-D, got ", shape_str(s.shape()));
  const Shape out = s.to_int64_vector();
  for (int64_t d : out) ctx.check(d >= 0, "shape ", shape_str(out), " has a negative dimension");
  DType dtype = DType::kF32;
  if (const Tensor* v = ctx.node().attr_tensor("value")) {
    ctx.check(v->numel() == 1, "value must hold one element, got ", v->describe());
    dtype = v->dtype();
  }
  ctx.set_output(0, dtype, out);
}

// Axes of Squeeze/Unsqueeze: the opset-13 input, else the older attribute.
std::optional<std::vector<int64_t>> axes_arg(const InferContext& ctx) {
  if (ctx.has_input(1)) return const_ints(ctx, 1, "axes");
  if (ctx.node().has_attr("axes")) return ctx.node().attr_ints("axes", {});
  return std::nullopt;
}

void infer_squeeze(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  const int r = ctx.rank(0);
  std::vector<bool> drop(static_cast<size_t>(r), false);
  if (auto axes = axes_arg(ctx)) {
    for (int64_t a : *axes) {
      const size_t k = static_cast<size_t>(ctx.normalize_axis(a, r));
      ctx.check(in[k] == 1, "cannot squeeze axis ", a, " of shape ", shape_str(in),
                ": its size is not 1");
      drop[k] = true;
    }
  } else {
    for (size_t k = 0; k < in.size(); ++k) drop[k] = in[k] == 1;
  }
  Shape out;
  for (size_t k = 0; k < in.size(); ++k)
    if (!drop[k]) out.push_back(in[k]);
  ctx.set_output(0, ctx.dtype(0), out);
}

void infer_unsqueeze(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  auto axes = axes_arg(ctx);
  ctx.check(axes.has_value(), "axes (input 1) is required");
  const int r = ctx.rank(0) + static_cast<int>(axes->size());
  std::vector<bool> inserted(static_cast<size_t>(r), false);
  for (int64_t a : *axes) {
    const size_t k = static_cast<size_t>(ctx.normalize_axis(a, r));
    ctx.check(!inserted[k], "axis ", a, " is repeated in axes ", shape_str(*axes));
    inserted[k] = true;
  }
  Shape out;
  size_t j = 0;
  for (size_t k = 0; k < static_cast<size_t>(r); ++k) out.push_back(inserted[k] ? 1 : in[j++]);
  ctx.set_output(0, ctx.dtype(0), out);
}

void infer_expand(InferContext& ctx) {
  const Tensor& t = ctx.require_constant(1, "shape");
  ctx.check(t.dtype() == DType::kS64, "shape must be s64, got ", dtype_name(t.dtype()));
  ctx.check(t.rank() == 1, "shape must be 1-D, got ", shape_str(t.shape()));
  const Shape target = t.to_int64_vector();
  auto out = shape_math::broadcast_shapes(ctx.shape(0), target);
  ctx.check(out.has_value(), "cannot expand ", shape_str(ctx.shape(0)), " to ", shape_str(target));
  ctx.set_output(0, ctx.dtype(0), *out);
}

void infer_cast(InferContext& ctx) {
  ctx.check(ctx.node().has_attr("to"), "attribute 'to' is required");
  const int64_t code = ctx.node().attr_int("to", 0);
  const auto to = dtype_from_onnx(static_cast<int>(code));
  if (!to)
    fail(ErrorKind::kUnsupported, ctx.node().label(), ": cast to ONNX data type ", code,
         " is not supported");
  ctx.set_output(0, *to, ctx.shape(0));
}

void infer_tile(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  const std::vector<int64_t> reps = const_ints(ctx, 1, "repeats");
  ctx.check(reps.size() == in.size(), "repeats has ", reps.size(), " values for a rank-", in.size(),
            " input");
  Shape out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ctx.check(reps[i] >= 0, "repeats ", shape_str(reps), " has a negative value");
    out[i] = in[i] * reps[i];
  }
  ctx.set_output(0, ctx.dtype(0), out);
}

void infer_range(InferContext& ctx) {
  const DType t = ctx.dtype(0);
  ctx.check(t == DType::kF32 || t == DType::kS32 || t == DType::kS64, "dtype ", dtype_name(t),
            " is not supported (f32, s32, s64)");
  double v[3];
  const char* names[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    const Tensor& c = ctx.require_constant(i, names[i]);
    ctx.check(c.dtype() == t, names[i], " has dtype ", dtype_name(c.dtype()), " but start has ",
              dtype_name(t));
    ctx.check(c.numel() == 1, names[i], " must be a scalar, got ", shape_str(c.shape()));
    v[i] = c.get_as_double(0);
  }
  ctx.check(v[2] != 0, "delta is 0");
  const double n = std::ceil((v[1] - v[0]) / v[2]);
  ctx.set_output(0, t, {n > 0 ? static_cast<int64_t>(n) : 0});
}

void infer_gather_elements(InferContext& ctx) {
  const Shape& data = ctx.shape(0);
  const Shape& indices = ctx.shape(1);
  const int r = ctx.rank(0);
  ctx.check(r > 0, "cannot gather from a scalar");
  ctx.check(is_index_dtype(ctx.dtype(1)), "indices must be s32 or s64, got ",
            dtype_name(ctx.dtype(1)));
  ctx.check(ctx.rank(1) == r, "indices ", shape_str(indices), " must have the rank of data ",
            shape_str(data));
  const int axis = ctx.normalize_axis(ctx.node().attr_int("axis", 0), r);
  for (int d = 0; d < r; ++d) {
    const size_t k = static_cast<size_t>(d);
    ctx.check(d == axis || indices[k] <= data[k], "indices ", shape_str(indices), " exceed data ",
              shape_str(data), " along axis ", d);
  }
  const int64_t dim = data[static_cast<size_t>(axis)];
  if (const Tensor* idx = ctx.constant(1)) {
    for (int64_t v : idx->to_int64_vector())
      ctx.check(v >= -dim && v < dim, "index ", v, " is out of range for axis ", axis, " of size ",
                dim);
  }
  ctx.set_output(0, ctx.dtype(0), indices);
}

// ScatterND (reduction 'none'): data with the slices that indices [..., k] name replaced by
// updates [indices.shape[:-1], data.shape[k:]].
void infer_scatter_nd(InferContext& ctx) {
  const Shape& data = ctx.shape(0);
  const Shape& indices = ctx.shape(1);
  const Shape& updates = ctx.shape(2);
  const std::string reduction = ctx.node().attr_string("reduction", "none");
  if (reduction != "none")
    fail(ErrorKind::kUnsupported, ctx.node().label(), ": ScatterND reduction='", reduction,
         "' is not supported (only 'none')");
  ctx.check(is_index_dtype(ctx.dtype(1)), "indices must be s32 or s64, got ",
            dtype_name(ctx.dtype(1)));
  ctx.check(ctx.dtype(2) == ctx.dtype(0), "updates have dtype ", dtype_name(ctx.dtype(2)),
            " but data has ", dtype_name(ctx.dtype(0)));
  ctx.check(!indices.empty(), "indices must have rank >= 1");
  const int64_t k = indices.back();
  ctx.check(k >= 1 && k <= static_cast<int64_t>(data.size()), "indices ", shape_str(indices),
            " index ", k, " dimensions of data ", shape_str(data));
  Shape want(indices.begin(), indices.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  ctx.check(updates == want, "updates ", shape_str(updates), " must have shape ", shape_str(want),
            " for indices ", shape_str(indices), " and data ", shape_str(data));
  ctx.set_output(0, ctx.dtype(0), data);
}

int64_t required_blocksize(const InferContext& ctx) {
  ctx.check(ctx.node().has_attr("blocksize"), "attribute 'blocksize' is required");
  const int64_t b = ctx.node().attr_int("blocksize", 0);
  ctx.check(b >= 1, "blocksize ", b, " must be positive");
  return b;
}

// [N, C, H, W] -> [N, C / b^2, H * b, W * b]
void infer_depth_to_space(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  ctx.check(ctx.rank(0) == 4, "input must be 4-D (N, C, H, W), got ", shape_str(x));
  const int64_t b = required_blocksize(ctx);
  const std::string mode = ctx.node().attr_string("mode", "DCR");
  ctx.check(mode == "DCR" || mode == "CRD", "mode must be DCR or CRD, got '", mode, "'");
  ctx.check(x[1] % (b * b) == 0, "channels ", x[1], " are not divisible by blocksize^2 ", b * b);
  ctx.set_output(0, ctx.dtype(0), {x[0], x[1] / (b * b), x[2] * b, x[3] * b});
}

// [N, C, H, W] -> [N, C * b^2, H / b, W / b]
void infer_space_to_depth(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  ctx.check(ctx.rank(0) == 4, "input must be 4-D (N, C, H, W), got ", shape_str(x));
  const int64_t b = required_blocksize(ctx);
  ctx.check(x[2] % b == 0 && x[3] % b == 0, "height ", x[2], " and width ", x[3],
            " must be divisible by blocksize ", b);
  ctx.set_output(0, ctx.dtype(0), {x[0], x[1] * b * b, x[2] / b, x[3] / b});
}

void infer_eye_like(InferContext& ctx) {
  ctx.check(ctx.rank(0) == 2, "input must be 2-D, got ", shape_str(ctx.shape(0)));
  DType t = ctx.dtype(0);
  if (ctx.node().has_attr("dtype")) {
    const int64_t code = ctx.node().attr_int("dtype", 0);
    const auto to = dtype_from_onnx(static_cast<int>(code));
    if (!to)
      fail(ErrorKind::kUnsupported, ctx.node().label(), ": dtype ", code,
           " (ONNX data type) is not supported");
    t = *to;
  }
  ctx.set_output(0, t, ctx.shape(0));
}

// CastLike: Cast to the dtype of input 1.
void infer_cast_like(InferContext& ctx) { ctx.set_output(0, ctx.dtype(1), ctx.shape(0)); }

}  // namespace

void append_tensor_ops(std::vector<OpSchema>& t) {
  t.push_back({"Identity", 1, 1, 1, 1, infer_identity});
  t.push_back({"Flatten", 1, 1, 1, 1, infer_flatten});
  t.push_back({"Reshape", 2, 2, 1, 1, infer_reshape});
  t.push_back({"Transpose", 1, 1, 1, 1, infer_transpose});
  t.push_back({"Concat", 1, kVariadic, 1, 1, infer_concat});
  t.push_back({"Split", 1, 2, 1, kVariadic, infer_split});
  t.push_back({"Slice", 3, 5, 1, 1, infer_slice});
  t.push_back({"Gather", 2, 2, 1, 1, infer_gather});
  t.push_back({"GatherElements", 2, 2, 1, 1, infer_gather_elements});
  t.push_back({"ScatterND", 3, 3, 1, 1, infer_scatter_nd});
  t.push_back({"DepthToSpace", 1, 1, 1, 1, infer_depth_to_space});
  t.push_back({"SpaceToDepth", 1, 1, 1, 1, infer_space_to_depth});
  t.push_back({"Shape", 1, 1, 1, 1, infer_shape});
  t.push_back({"Size", 1, 1, 1, 1, infer_size});
  t.push_back({"Constant", 0, 0, 1, 1, infer_constant});
  t.push_back({"ConstantOfShape", 1, 1, 1, 1, infer_constant_of_shape});
  t.push_back({"Squeeze", 1, 2, 1, 1, infer_squeeze});
  t.push_back({"Unsqueeze", 1, 2, 1, 1, infer_unsqueeze});
  t.push_back({"Expand", 2, 2, 1, 1, infer_expand});
  t.push_back({"Cast", 1, 1, 1, 1, infer_cast});
  t.push_back({"CastLike", 2, 2, 1, 1, infer_cast_like, nullptr, {1}});  // input 1: a type only
  t.push_back({"EyeLike", 1, 1, 1, 1, infer_eye_like});
  t.push_back({"Tile", 2, 2, 1, 1, infer_tile});
  t.push_back({"Range", 3, 3, 1, 1, infer_range, nullptr, {0, 1, 2}});
}

}  // namespace dlas::ops
