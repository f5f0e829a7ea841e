// Elementwise op schemas: activations and unary math (same shape out), binary and
// variadic arithmetic, comparisons, logic and Where, with NumPy multidirectional
// broadcasting.
#include <limits>

#include "dlas/model/shape_math.h"
#include "model/ops/ops_internal.h"

namespace dlas::ops {
namespace {

constexpr int kVariadic = std::numeric_limits<int>::max();

// Integer arithmetic covers the index/shape dtypes (s32, s64) and 8-bit image data; f16 and
// bf16 compute in f32 (the reference kernels widen them and round the result back).
bool is_arith_dtype(DType t) {
  return is_float(t) || t == DType::kS8 || t == DType::kU8 || t == DType::kS32 || t == DType::kS64;
}

[[noreturn]] void unsupported_dtype(const InferContext& ctx, int i, const char* allowed) {
  fail(ErrorKind::kUnsupported, ctx.node().label(), ": input ", i, " has dtype ",
       dtype_name(ctx.dtype(i)), "; ", ctx.node().op, " supports ", allowed);
}

// Float ops: f32, and f16 / bf16 computed in f32.
void require_f32(const InferContext& ctx, int i) {
  if (!is_float(ctx.dtype(i))) unsupported_dtype(ctx, i, "f32, f16 and bf16");
}

void require_arith(const InferContext& ctx, int i) {
  if (!is_arith_dtype(ctx.dtype(i)))
    unsupported_dtype(ctx, i, "f32, f16, bf16, s8, u8, s32 and s64");
}

Shape broadcast_inputs(const InferContext& ctx) {
  Shape out = ctx.shape(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    auto b = shape_math::broadcast_shapes(out, ctx.shape(i));
    if (!b)
      ctx.fail("cannot broadcast input shapes ", shape_str(out), " and ", shape_str(ctx.shape(i)),
               " (input ", i, ")");
    out = *b;
  }
  return out;
}

void require_same_dtypes(const InferContext& ctx) {
  for (int i = 1; i < ctx.num_inputs(); ++i)
    ctx.check(ctx.dtype(i) == ctx.dtype(0), "input ", i, " has dtype ", dtype_name(ctx.dtype(i)),
              " but input 0 has ", dtype_name(ctx.dtype(0)), "; inputs must have one dtype");
}

void infer_unary_f32(InferContext& ctx) {
  require_f32(ctx, 0);
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

// Gelu (opset 20): the exact form; a model asking for the tanh approximation is refused
// (kUnsupported, one line) rather than run with the other formula.
void infer_gelu(InferContext& ctx) {
  const std::string approximate = ctx.node().attr_string("approximate", "none");
  if (approximate != "none")
    fail(ErrorKind::kUnsupported, ctx.node().label(), ": Gelu approximate='", approximate,
         "' is not supported (only 'none')");
  infer_unary_f32(ctx);
}

void infer_unary_arith(InferContext& ctx) {
  require_arith(ctx, 0);
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

// Binary and variadic ops over f32 and integers (Add, Sub, Mul, Div, Max, Min).
void infer_broadcast_arith(InferContext& ctx) {
  require_same_dtypes(ctx);
  require_arith(ctx, 0);
  ctx.set_output(0, ctx.dtype(0), broadcast_inputs(ctx));
}

// Sum and Mean: f32 only.
void infer_broadcast_f32(InferContext& ctx) {
  require_same_dtypes(ctx);
  require_f32(ctx, 0);
  ctx.set_output(0, ctx.dtype(0), broadcast_inputs(ctx));
}

// Pow: base and exponent are f32, f16, bf16, s32 or s64, independently; the output has the
// base's type.
void infer_pow(InferContext& ctx) {
  for (int i = 0; i < 2; ++i) {
    const DType t = ctx.dtype(i);
    if (!is_float(t) && t != DType::kS32 && t != DType::kS64)
      unsupported_dtype(ctx, i, "f32, f16, bf16, s32 and s64");
  }
  ctx.set_output(0, ctx.dtype(0), broadcast_inputs(ctx));
}

// PRelu: slope broadcasts unidirectionally to X.
void infer_prelu(InferContext& ctx) {
  require_same_dtypes(ctx);
  require_f32(ctx, 0);
  auto b = shape_math::broadcast_shapes(ctx.shape(0), ctx.shape(1));
  ctx.check(b && *b == ctx.shape(0), "slope shape ", shape_str(ctx.shape(1)),
            " does not broadcast to input shape ", shape_str(ctx.shape(0)));
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

// Clip (opset 11+): optional scalar min and max inputs of X's dtype.
void infer_clip(InferContext& ctx) {
  require_arith(ctx, 0);
  for (int i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    ctx.check(ctx.dtype(i) == ctx.dtype(0), i == 1 ? "min" : "max", " has dtype ",
              dtype_name(ctx.dtype(i)), " but the input has ", dtype_name(ctx.dtype(0)));
    ctx.check(shape_numel(ctx.shape(i)) == 1, i == 1 ? "min" : "max",
              " must be a scalar, got shape ", shape_str(ctx.shape(i)));
  }
  ctx.set_output(0, ctx.dtype(0), ctx.shape(0));
}

// Mod: integer and float operands of one dtype (f16 and bf16 too: fmod is exact in float).
// ONNX requires fmod=1 for floats (C fmod); integers default to the divisor's sign.
void infer_mod(InferContext& ctx) {
  require_same_dtypes(ctx);
  const DType t = ctx.dtype(0);
  if (!is_arith_dtype(t) && !is_float(t))
    unsupported_dtype(ctx, 0, "f32, f16, bf16, s8, u8, s32 and s64");
  const int64_t fmod = ctx.node().attr_int("fmod", 0);
  ctx.check(fmod == 0 || fmod == 1, "fmod must be 0 or 1, got ", fmod);
  ctx.check(fmod == 1 || !is_float(t), "fmod must be 1 for floating-point inputs (", dtype_name(t),
            ")");
  ctx.set_output(0, t, broadcast_inputs(ctx));
}

// Comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual): operands of one dtype,
// a bool result; Equal also compares bools.
void infer_compare(InferContext& ctx) {
  require_same_dtypes(ctx);
  const bool is_equal = ctx.node().op == "Equal";
  if (!is_arith_dtype(ctx.dtype(0)) && !(is_equal && ctx.dtype(0) == DType::kBool))
    unsupported_dtype(ctx, 0,
                      is_equal ? "f32, f16, bf16, s8, u8, s32, s64 and bool"
                               : "f32, f16, bf16, s8, u8, s32 and s64");
  ctx.set_output(0, DType::kBool, broadcast_inputs(ctx));
}

// Not, And, Or, Xor: bool in, bool out.
void infer_logical(InferContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.dtype(i) != DType::kBool) unsupported_dtype(ctx, i, "bool");
  ctx.set_output(0, DType::kBool, broadcast_inputs(ctx));
}

// Where(condition, X, Y): a bool condition, X and Y of one dtype, all three broadcast.
void infer_where(InferContext& ctx) {
  if (ctx.dtype(0) != DType::kBool) unsupported_dtype(ctx, 0, "a bool condition");
  ctx.check(ctx.dtype(1) == ctx.dtype(2), "X has dtype ", dtype_name(ctx.dtype(1)), " but Y has ",
            dtype_name(ctx.dtype(2)), "; they must have one dtype");
  ctx.set_output(0, ctx.dtype(1), broadcast_inputs(ctx));
}

}  // namespace

void append_elementwise_ops(std::vector<OpSchema>& t) {
  for (const char* op :
       {"Relu",    "LeakyRelu",   "ThresholdedRelu", "Elu",      "Selu",     "Celu",
        "Sigmoid", "HardSigmoid", "HardSwish",       "Softplus", "Softsign", "Mish",
        "Sign",    "Reciprocal",  "Round",           "Exp",      "Log",      "Sqrt",
        "Tanh",    "Erf",         "Floor",           "Ceil",     "Sin",      "Cos",
        "Tan",     "Atan"})
    t.push_back({op, 1, 1, 1, 1, infer_unary_f32});
  for (const char* op : {"Sinh", "Cosh", "Asin", "Acos", "Asinh", "Acosh", "Atanh", "Shrink"})
    t.push_back({op, 1, 1, 1, 1, infer_unary_f32});
  t.push_back({"Gelu", 1, 1, 1, 1, infer_gelu});
  t.push_back({"Neg", 1, 1, 1, 1, infer_unary_arith});
  t.push_back({"Abs", 1, 1, 1, 1, infer_unary_arith});
  // Clip bounds and Pow exponents are constants, not trainable parameters (param_count).
  t.push_back({"Clip", 1, 3, 1, 1, infer_clip, nullptr, {1, 2}});
  t.push_back({"PRelu", 2, 2, 1, 1, infer_prelu});
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    t.push_back({op, 2, 2, 1, 1, infer_broadcast_arith});
  t.push_back({"Pow", 2, 2, 1, 1, infer_pow, nullptr, {1}});
  t.push_back({"Mod", 2, 2, 1, 1, infer_mod});
  t.push_back({"Max", 1, kVariadic, 1, 1, infer_broadcast_arith});
  t.push_back({"Min", 1, kVariadic, 1, 1, infer_broadcast_arith});
  t.push_back({"Sum", 1, kVariadic, 1, 1, infer_broadcast_f32});
  t.push_back({"Mean", 1, kVariadic, 1, 1, infer_broadcast_f32});
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    t.push_back({op, 2, 2, 1, 1, infer_compare});
  t.push_back({"Not", 1, 1, 1, 1, infer_logical});
  for (const char* op : {"And", "Or", "Xor"}) t.push_back({op, 2, 2, 1, 1, infer_logical});
  t.push_back({"Where", 3, 3, 1, 1, infer_where});
}

}  // namespace dlas::ops
