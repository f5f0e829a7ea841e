// Per-tensor QuantizeLinear (f32 -> u8/s8) and DequantizeLinear (u8/s8 -> f32) with constant
// parameters: the float islands between int8 convs (GlobalAveragePool, Gemm, ...). Same
// arithmetic as the reference kernels: q = sat(nearbyint(x / scale) + zp), x = (q - zp) * scale.
#include <cmath>

#include "dlas/core/error.h"
#include "system/plan/steps.h"

namespace dlas::plan {
namespace {

constexpr size_t kChunk = 16384;  // elements per parallel work item

class QuantizeStep : public Step {
 public:
  QuantizeStep(const Node& n, size_t count, bool dequantize, DType type, float scale, int32_t zp)
      : x_name_(n.inputs[0]),
        y_name_(n.outputs[0]),
        count_(count),
        dequantize_(dequantize),
        type_(type),
        scale_(scale),
        zp_(zp) {}
  void bind(const Binder& b) override {
    x_ = b.value(x_name_);
    y_ = b.value(y_name_);
  }
  void run(ThreadPool& pool) override {
    const size_t chunks = (count_ + kChunk - 1) / kChunk;
    pool.parallel_for(chunks, [&](size_t c) {
      const size_t lo = c * kChunk, hi = std::min(count_, lo + kChunk);
      if (dequantize_) {
        float* y = static_cast<float*>(y_);
        if (type_ == DType::kU8) {
          const uint8_t* x = static_cast<const uint8_t*>(x_);
          for (size_t i = lo; i < hi; ++i) y[i] = static_cast<float>(int32_t{x[i]} - zp_) * scale_;
        } else {
          const int8_t* x = static_cast<const int8_t*>(x_);
          for (size_t i = lo; i < hi; ++i) y[i] = static_cast<float>(int32_t{x[i]} - zp_) * scale_;
        }
        return;
      }
      const float* x = static_cast<const float*>(x_);
      const float lo_q = type_ == DType::kU8 ? 0.f : -128.f,
                  hi_q = type_ == DType::kU8 ? 255.f : 127.f;
      for (size_t i = lo; i < hi; ++i) {
        float v = std::nearbyint(x[i] / scale_) + static_cast<float>(zp_);
        v = v < lo_q ? lo_q : (v > hi_q ? hi_q : v);  // NaN stays NaN: 0 below
        const int32_t q = v == v ? static_cast<int32_t>(v) : zp_;
        if (type_ == DType::kU8) {
          static_cast<uint8_t*>(y_)[i] = static_cast<uint8_t>(q);
        } else {
          static_cast<int8_t*>(y_)[i] = static_cast<int8_t>(q);
        }
      }
    });
  }
  std::string kernel() const override { return "fast"; }

 private:
  std::string x_name_, y_name_;
  size_t count_;
  bool dequantize_;
  DType type_;
  float scale_;
  int32_t zp_;
  const void* x_ = nullptr;
  void* y_ = nullptr;
};

}  // namespace

std::unique_ptr<Step> lower_quantize(const LowerContext& ctx) {
  const Node& n = ctx.node;
  const Graph& g = ctx.graph;
  const bool dq = n.op == "DequantizeLinear";
  if (!dq && n.op != "QuantizeLinear") return nullptr;
  const Tensor* s = g.constant(n.inputs[1]);
  if (!s || s->dtype() != DType::kF32 || s->numel() != 1) return nullptr;
  int32_t zp = 0;
  DType type = dq ? g.value(n.inputs[0]).dtype : DType::kU8;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* z = g.constant(n.inputs[2]);
    if (!z) return nullptr;
    zp = static_cast<int32_t>(z->get_as_int64(0));
    type = z->dtype();
  }
  if (type != DType::kU8 && type != DType::kS8) return nullptr;
  if (g.value(dq ? n.outputs[0] : n.inputs[0]).dtype != DType::kF32) return nullptr;
  const size_t count = static_cast<size_t>(shape_numel(g.value(n.inputs[0]).shape));
  return std::make_unique<QuantizeStep>(n, count, dq, type, s->data<float>()[0], zp);
}

}  // namespace dlas::plan
