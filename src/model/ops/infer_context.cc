#include "dlas/model/op_schema.h"

namespace dlas {

bool InferContext::has_input(int i) const {
  return i >= 0 && i < num_inputs() && !node_.inputs[static_cast<size_t>(i)].empty();
}

const ValueInfo& InferContext::input(int i) const {
  if (!has_input(i)) fail("input ", i, " is missing");
  return graph_.value(node_.inputs[static_cast<size_t>(i)]);
}

const Tensor* InferContext::constant(int i) const {
  if (!has_input(i)) return nullptr;
  return graph_.constant(node_.inputs[static_cast<size_t>(i)]);
}

const Tensor& InferContext::require_constant(int i, std::string_view what) const {
  const Tensor* t = constant(i);
  // A valid model, but dlas compiles static shapes: unsupported, not invalid.
  if (!t)
    ::dlas::fail(ErrorKind::kUnsupported, node_.label(), ": ", what, " (input ", i,
                 ") must be a constant; dlas needs static shapes");
  return *t;
}

void InferContext::set_output(int i, DType dtype, Shape shape) {
  if (i >= num_outputs()) return;  // optional output not requested
  for (int64_t d : shape) check(d >= 0, "inferred a negative dimension in ", shape_str(shape));
  if (static_cast<int>(outputs_.size()) <= i) outputs_.resize(static_cast<size_t>(i) + 1);
  outputs_[static_cast<size_t>(i)] = {node_.outputs[static_cast<size_t>(i)], dtype,
                                      std::move(shape)};
}

int InferContext::normalize_axis(int64_t axis, int r) const {
  const int64_t a = axis < 0 ? axis + r : axis;
  check(a >= 0 && a < r, "axis ", axis, " is out of range for rank ", r);
  return static_cast<int>(a);
}

}  // namespace dlas
