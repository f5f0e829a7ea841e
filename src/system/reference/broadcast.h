// Internal: NumPy-broadcast iteration for the reference kernels. An output shape
// and the shapes of N inputs become one loop over "rows": runs of output elements
// along the innermost (coalesced) dimension, where each input advances by a fixed
// stride of 0 (broadcast) or 1 (contiguous). Kernels write the row loop themselves.
#pragma once

#include <cstdint>
#include <vector>

#include "dlas/core/tensor.h"

namespace dlas::reference {

struct BroadcastPlan {
  Shape dims;                                 // coalesced output dims, at least one
  std::vector<std::vector<int64_t>> strides;  // per input, per dim, in elements
  int64_t numel = 0;                          // output elements

  // Stride of input k along the innermost dim (0 or 1).
  int64_t inner_stride(size_t k) const { return strides[k].back(); }
  int64_t row_length() const { return dims.back(); }
};

// `ins` must broadcast (unidirectionally) to `out`; shape inference guarantees it.
inline BroadcastPlan make_broadcast_plan(const Shape& out, const std::vector<Shape>& ins) {
  const size_t r = out.size();
  const size_t n = ins.size();
  // Element strides of every input aligned to the output rank, 0 on broadcast dims.
  std::vector<std::vector<int64_t>> full(n, std::vector<int64_t>(r, 0));
  for (size_t k = 0; k < n; ++k) {
    const Shape& s = ins[k];
    DLAS_CHECK(s.size() <= r, ErrorKind::kInternal, "broadcast: input ", shape_str(s),
               " has higher rank than output ", shape_str(out));
    int64_t stride = 1;
    for (size_t j = s.size(); j-- > 0;) {
      const size_t o = j + r - s.size();
      DLAS_CHECK(s[j] == out[o] || s[j] == 1, ErrorKind::kInternal, "broadcast: input ",
                 shape_str(s), " does not broadcast to ", shape_str(out));
      full[k][o] = (s[j] == 1 && out[o] != 1) ? 0 : stride;
      stride *= s[j];
    }
  }
  BroadcastPlan p;
  p.numel = shape_numel(out);
  p.strides.assign(n, {});
  // Drop size-1 output dims, then merge a dim into the previous one when every input
  // is either contiguous across both or broadcast across both.
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    bool merge = !p.dims.empty();
    for (size_t k = 0; k < n && merge; ++k) merge = p.strides[k].back() == full[k][i] * out[i];
    if (merge) {
      p.dims.back() *= out[i];
      for (size_t k = 0; k < n; ++k) p.strides[k].back() = full[k][i];
    } else {
      p.dims.push_back(out[i]);
      for (size_t k = 0; k < n; ++k) p.strides[k].push_back(full[k][i]);
    }
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    for (size_t k = 0; k < n; ++k) p.strides[k].push_back(1);
  }
  return p;
}

// Calls row(out_offset, in_offsets, length) for every innermost run of the output.
// in_offsets[k] is the element offset of input k at the start of the run.
template <class Row>
void for_each_broadcast_row(const BroadcastPlan& p, Row&& row) {
  if (p.numel == 0) return;
  const size_t r = p.dims.size();
  const size_t n = p.strides.size();
  const int64_t len = p.dims.back();
  std::vector<int64_t> idx(r, 0);
  std::vector<int64_t> off(n, 0);
  for (int64_t out_off = 0; out_off < p.numel; out_off += len) {
    row(out_off, static_cast<const int64_t*>(off.data()), len);
    // Odometer over the outer dims.
    for (size_t d = r - 1; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < n; ++k) off[k] += p.strides[k][d];
      if (idx[d] < p.dims[d]) break;
      for (size_t k = 0; k < n; ++k) off[k] -= p.strides[k][d] * p.dims[d];
      idx[d] = 0;
    }
  }
}

}  // namespace dlas::reference
