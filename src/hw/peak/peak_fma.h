// Internal: the FLOP/s probe, written once as a template over the element type (a GCC
// vector type, or float for the scalar path). Each ISA translation unit instantiates it.
// Everything here has internal linkage (anonymous namespace) so an AVX-512 instantiation
// can never be picked by the linker for another path.
#pragma once

#include <cstdint>

#include "hw/peak/peak_probes.h"

namespace {

template <class V>
inline float lane0(V v) {
  if constexpr (sizeof(V) == sizeof(float)) {
    return v;
  } else {
    return v[0];
  }
}

// kChains independent chains acc = step(acc) of one instruction on register type V (f32
// FMAs, vpdpbusd, vdpbf16ps, vfmadd231ph), each pinned in a register, summed with add at
// the end: the body of every FLOP/s probe.
template <class V, class Step, class Add>
V unit_chains(int64_t iters, V init, Step step, Add add) {
  static_assert(dlas::peak_detail::kChains == 12, "the body below names 12 accumulators");
  V a0 = init, a1 = init, a2 = init, a3 = init, a4 = init, a5 = init;
  V a6 = init, a7 = init, a8 = init, a9 = init, a10 = init, a11 = init;
  for (int64_t it = 0; it < iters; ++it) {
    a0 = step(a0);
    a1 = step(a1);
    a2 = step(a2);
    a3 = step(a3);
    a4 = step(a4);
    a5 = step(a5);
    a6 = step(a6);
    a7 = step(a7);
    a8 = step(a8);
    a9 = step(a9);
    a10 = step(a10);
    a11 = step(a11);
    asm volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    asm volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  return add(add(add(add(a0, a1), add(a2, a3)), add(add(a4, a5), add(a6, a7))),
             add(add(a8, a9), add(a10, a11)));
}

// acc = acc * m + c on kChains (12) independent accumulators (unit_chains). The converging
// recurrence (|m| < 1) keeps values finite and normal, so no denormal slow path is hit. The
// accumulators are separate named locals (an array ends up on the stack, adding store /
// load latency to every chain); the empty asm pins each in a register and stops the
// compiler from merging chains (for the scalar path: from SLP-vectorising them into SSE,
// which would no longer be scalar).
template <class V>
float fma_probe(int64_t iters) {
  V m = V{} + 0.999999f, c = V{} + 1e-6f;
  asm volatile("" : "+v"(m), "+v"(c));
  return lane0(unit_chains(
      iters, V{} + 0.001f, [&](V acc) { return acc * m + c; }, [](V x, V y) { return x + y; }));
}

}  // namespace
