// The byte table lookup dispatch, derived from u8_lut.inc: the row for the path, its byte kernel
// by the CPU's VBMI, its float kernel by a measurement at first use.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <vector>

#include "algo/microkernels/isa_dispatch.h"
#include "algo/microkernels/u8-lut/u8_lut.h"
#include "dlas/hw/cpu.h"

namespace dlas::ukernel {
namespace {

struct Row {
  const char* name;
  Isa isa;
  U8LutFn bytes, vbmi_bytes;
  U8LutF32Fn floats, alt_floats;
};

// The faster of two float lookups on 16 Ki bytes (L1/L2-resident), best of 5 timings each,
// alternated; a tie keeps `a`.
U8LutF32Fn faster(U8LutF32Fn a, U8LutF32Fn b) {
  if (a == b) return a;
  constexpr size_t kN = 16384;
  std::vector<uint8_t> x(kN);
  std::vector<float> table(256), y(kN);
  for (size_t i = 0; i < kN; ++i) x[i] = static_cast<uint8_t>(i * 37 + (i >> 7));
  for (int i = 0; i < 256; ++i) table[static_cast<size_t>(i)] = static_cast<float>(i);
  auto time = [&](U8LutF32Fn f) {
    const auto t0 = std::chrono::steady_clock::now();
    f(kN, x.data(), table.data(), y.data());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  time(a), time(b);  // warm-up
  double ta = 1e9, tb = 1e9;
  for (int r = 0; r < 5; ++r) ta = std::min(ta, time(a)), tb = std::min(tb, time(b));
  return tb < ta ? b : a;
}

}  // namespace

const U8Lut& u8_lut_for(Isa isa) {
  static const bool vbmi = cpu_info().features.avx512vbmi && cpu_info().features.avx512bw;
  static const Row kRows[] = {
#define X(name, isa, bytes, vbmi_bytes, floats, alt_floats) \
  {#name, Isa::isa, &bytes, &vbmi_bytes, &floats, &alt_floats},
#include "algo/microkernels/u8-lut/u8_lut.inc"
#undef X
  };
  enum : int {
#define X(name, isa, bytes, vbmi_bytes, floats, alt_floats) k_##name,
#include "algo/microkernels/u8-lut/u8_lut.inc"
#undef X
    kCount
  };
  static constexpr IsaEntry<int> kList[] = {
#define X(name, isa, bytes, vbmi_bytes, floats, alt_floats) {k_##name, Isa::isa},
#include "algo/microkernels/u8-lut/u8_lut.inc"
#undef X
  };
  static U8Lut chosen[kCount];
  static std::once_flag once[kCount];
  const int i = best_for_isa(kList, isa, "u8 lut");
  std::call_once(once[i], [&] {
    const Row& r = kRows[i];
    chosen[i] = {r.name, r.isa, vbmi ? r.vbmi_bytes : r.bytes, faster(r.floats, r.alt_floats)};
  });
  return chosen[i];
}

}  // namespace dlas::ukernel
