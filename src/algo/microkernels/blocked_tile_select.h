// The tile dispatch the blocked direct kernel families share (bf16-nchwc, qs8-nchwc): a
// family's TU instantiates its tile template for NV = 1..4 output blocks, P = 1..MaxP pixels
// and stride S = 1 or 2, and looks one up by (blocks, pixels, stride). K::template
// get<NV, P, S>() returns the tile's function, or nullptr where it does not fit the
// registers.
#pragma once

#include <utility>

namespace dlas::ukernel {
namespace blocked_tile_detail {

template <class Fn, class K, int NV, int S, int... Ps>
Fn pick(int pixels, std::integer_sequence<int, Ps...>) {
  constexpr Fn fns[] = {K::template get<NV, Ps + 1, S>()...};
  return pixels >= 1 && pixels <= static_cast<int>(sizeof...(Ps)) ? fns[pixels - 1] : nullptr;
}

template <class Fn, int MaxP, class K, int NV>
Fn by_stride(int pixels, int stride) {
  using Seq = std::make_integer_sequence<int, MaxP>;
  if (stride == 1) return pick<Fn, K, NV, 1>(pixels, Seq{});
  if (stride == 2) return pick<Fn, K, NV, 2>(pixels, Seq{});
  return nullptr;
}

}  // namespace blocked_tile_detail

// The tile of `blocks` (1..4) output blocks x `pixels` (1..MaxP) at `stride` (1 or 2), or
// nullptr.
template <class Fn, int MaxP, class K>
Fn select_blocked_tile(int blocks, int pixels, int stride) {
  using blocked_tile_detail::by_stride;
  switch (blocks) {
    case 1:
      return by_stride<Fn, MaxP, K, 1>(pixels, stride);
    case 2:
      return by_stride<Fn, MaxP, K, 2>(pixels, stride);
    case 3:
      return by_stride<Fn, MaxP, K, 3>(pixels, stride);
    case 4:
      return by_stride<Fn, MaxP, K, 4>(pixels, stride);
  }
  return nullptr;
}

}  // namespace dlas::ukernel
