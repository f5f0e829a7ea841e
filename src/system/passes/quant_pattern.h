// The QDQ patterns the int8 fusion passes match: per-tensor QuantizeLinear /
// DequantizeLinear parameters and the DequantizeLinear'd 8-bit activation a layer reads.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/model/graph.h"

namespace dlas::passes {

inline bool is_8bit(DType t) { return t == DType::kU8 || t == DType::kS8; }

// Per-tensor parameters of a QuantizeLinear / DequantizeLinear node with constant scale and
// zero point; `type` is the 8-bit type of its quantized side.
inline std::optional<QuantParams> per_tensor(const Graph& g, const Node& n, DType type) {
  if (!is_8bit(type) || n.inputs.size() < 2) return std::nullopt;
  const Tensor* s = g.constant(n.inputs[1]);
  if (!s || s->dtype() != DType::kF32 || s->numel() != 1) return std::nullopt;
  QuantParams q;
  q.type = type;
  q.scale = s->data<float>()[0];
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* z = g.constant(n.inputs[2]);
    if (!z || z->numel() != 1) return std::nullopt;
    q.zero_point = static_cast<int32_t>(z->get_as_int64(0));
  }
  if (!(std::isfinite(q.scale) && q.scale > 0)) return std::nullopt;
  return q;
}

struct Dq {
  const Node* node = nullptr;
  std::string q;  // the 8-bit value
  QuantParams p;
};

// The DequantizeLinear producing `value` when it is per tensor on an 8-bit runtime value.
inline std::optional<Dq> dq_activation(const Graph& g,
                                       const std::unordered_map<std::string, size_t>& prod,
                                       const std::string& value) {
  auto it = prod.find(value);
  if (it == prod.end()) return std::nullopt;
  const Node& n = g.nodes[it->second];
  if (n.op != "DequantizeLinear" || g.constant(n.inputs[0])) return std::nullopt;
  const auto p = per_tensor(g, n, g.value(n.inputs[0]).dtype);
  if (!p) return std::nullopt;
  return Dq{&n, n.inputs[0], *p};
}

// Constant s8 weights of rank `rank` (a conv's [K][C/g][KH][KW]: axis 0; a Linear layer's
// [K][N]: axis 1) with per-channel scales along `axis` (or one per tensor), zero points 0.
inline bool dq_weights(const Graph& g, const std::unordered_map<std::string, size_t>& prod,
                       const std::string& value, int rank, int axis, std::string& wq,
                       std::vector<float>& scales) {
  auto it = prod.find(value);
  if (it == prod.end()) return false;
  const Node& n = g.nodes[it->second];
  if (n.op != "DequantizeLinear") return false;
  const Tensor* w = g.constant(n.inputs[0]);
  const Tensor* s = g.constant(n.inputs[1]);
  if (!w || !s || w->dtype() != DType::kS8 || w->rank() != rank || s->dtype() != DType::kF32)
    return false;
  const int64_t k = w->dim(axis);
  const int64_t dq_axis = n.attr_int("axis", 1);
  if (s->numel() != 1 && (s->numel() != k || (dq_axis != axis && dq_axis != axis - rank)))
    return false;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const Tensor* z = g.constant(n.inputs[2]);
    if (!z) return false;
    for (int64_t i = 0; i < z->numel(); ++i)
      if (z->get_as_int64(i) != 0) return false;
  }
  scales.assign(static_cast<size_t>(k), 0.f);
  for (int64_t i = 0; i < k; ++i) {
    scales[i] = s->data<float>()[s->numel() == 1 ? 0 : i];
    if (!(std::isfinite(scales[i]) && scales[i] > 0)) return false;
  }
  wq = n.inputs[0];
  return true;
}

}  // namespace dlas::passes
