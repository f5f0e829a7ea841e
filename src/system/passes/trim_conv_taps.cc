// Drops the kernel taps of a convolution that never touch its input, only its zero padding:
// a 3x3 conv on a 1x1 plane with padding 1 is a 1x1 conv, a 1x3 one on a 1-pixel-wide row a
// 1x1. Every output pixel's sum then skips nothing but zeros, so the result is unchanged,
// and the conv reads a third or a ninth of the weights (Inception-v3's last blocks on small
// inputs streamed all nine taps' 6 MB for one pixel).
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"

namespace dlas {
namespace {

// The taps [lo, hi) of one axis that some output position reads inside the input
// (undilated: tap t of output o reads input o * s + t - pad).
void used_taps(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t out, int64_t& lo,
               int64_t& hi) {
  lo = k, hi = 0;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t t = 0; t < k; ++t) {
      const int64_t i = o * s + t - pad;
      if (i >= 0 && i < in) lo = std::min(lo, t), hi = std::max(hi, t + 1);
    }
}

}  // namespace

int trim_conv_taps(Graph& graph) {
  std::unordered_map<std::string, int> weight_uses;
  for (const Node& n : graph.nodes)
    for (const std::string& in : n.inputs) ++weight_uses[in];
  int trimmed = 0;
  for (Node& n : graph.nodes) {
    if (!passes::is_conv(n) || n.inputs.size() < 2 || n.outputs.empty() ||
        n.attr_string("auto_pad", "NOTSET") != "NOTSET" || !graph.has_value(n.inputs[0]))
      continue;
    const Tensor* w = graph.constant(n.inputs[1]);
    const Shape& x = graph.value(n.inputs[0]).shape;
    if (!w || !is_float(w->dtype()) || w->rank() != 4 || x.size() != 4) continue;
    const auto dil = n.attr_ints("dilations", {1, 1});
    const auto st = n.attr_ints("strides", {1, 1});
    auto pads = n.attr_ints("pads", {0, 0, 0, 0});
    if (dil.size() != 2 || dil[0] != 1 || dil[1] != 1 || st.size() != 2 || pads.size() != 4)
      continue;
    const int64_t kh = w->dim(2), kw = w->dim(3);
    const int64_t oh = (x[2] + pads[0] + pads[2] - kh) / st[0] + 1;
    const int64_t ow = (x[3] + pads[1] + pads[3] - kw) / st[1] + 1;
    if (oh < 1 || ow < 1) continue;
    int64_t h0, h1, w0, w1;
    used_taps(x[2], kh, st[0], pads[0], oh, h0, h1);
    used_taps(x[3], kw, st[1], pads[1], ow, w0, w1);
    if (h0 >= h1 || w0 >= w1 || (h0 == 0 && h1 == kh && w0 == 0 && w1 == kw)) continue;
    // The output size stays: the first pads shrink by the taps dropped before, the last
    // ones by those dropped after.
    const std::vector<int64_t> np = {pads[0] - h0, pads[1] - w0, pads[2] - (kh - h1),
                                     pads[3] - (kw - w1)};
    if (np[0] < 0 || np[1] < 0 || np[2] < 0 || np[3] < 0) continue;
    const int64_t k = w->dim(0), c = w->dim(1), nkh = h1 - h0, nkw = w1 - w0;
    Tensor t(w->dtype(), {k, c, nkh, nkw});
    const size_t es = dtype_size(w->dtype());
    const auto* src = static_cast<const unsigned char*>(w->raw());
    auto* dst = static_cast<unsigned char*>(t.raw());
    for (int64_t kc = 0; kc < k * c; ++kc)
      for (int64_t r = 0; r < nkh; ++r)
        std::memcpy(dst + static_cast<size_t>((kc * nkh + r) * nkw) * es,
                    src + static_cast<size_t>((kc * kh + h0 + r) * kw + w0) * es,
                    static_cast<size_t>(nkw) * es);
    const std::string old = n.inputs[1];
    const std::string name = graph.unique_value_name(old + "_taps");
    graph.initializers.emplace(name, std::move(t));
    n.inputs[1] = name;
    if (--weight_uses[old] == 0) graph.initializers.erase(old);
    n.attrs["pads"] = np;
    if (n.has_attr("kernel_shape")) n.attrs["kernel_shape"] = std::vector<int64_t>{nkh, nkw};
    ++trimmed;
  }
  if (trimmed) graph.infer();
  return trimmed;
}

}  // namespace dlas
