// The int8 kernels of the paths this machine may lack (AVX-VNNI, AVX-512, AVX512-VNNI,
// AMX), instantiated from the very templates their ISA TUs compile, with exact scalar
// models of vpdpbusd / vpmaddwd / vfmadd and of the AMX tiles (tdpbsud), in an AVX2
// translation unit (qs8_logic__avx2.cc). One entry per such kernel of qs8_gemm.inc, named
// like it; isa = kAvx2 (what they need to run).
#pragma once

#include <vector>

#include "algo/microkernels/qs8-dwchan/qs8_dwchan.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-spack/qs8_spack.h"

namespace dlas::test {

const std::vector<ukernel::QS8GemmUkernel>& qs8_logic_gemm_ukernels();
// The spatial-pack / direct kernel sets of the paths above AVX2 (qs8_spack.inc), named like
// them, isa = kAvx2; to keep this TU's build time down each selects only the tile shapes
// of qs8_logic_spack_shapes() (the others are the same template at other constants).
const std::vector<ukernel::QS8SpackUkernels>& qs8_logic_spack_ukernels();
struct SpackShape {
  int vectors, vh, vw;
};
const std::vector<SpackShape>& qs8_logic_spack_shapes();
// qs8_dwconv_16lane__avx512's template at 16 lanes.
ukernel::QS8DwFn qs8_logic_dwconv_16lane();
// qs8_dwchan_16lane__avx512's template at 16 lanes (vpmaddwd modelled).
const ukernel::QS8DwChanUkernel& qs8_logic_dwchan_16lane();

// Whether path `isa` runs exactly the kernels of the supported path below it, `resolve`
// mapping a path to what the family's dispatcher returns for it. Then a per-path test of
// `isa` repeats that path's, and the per-path int8 tests skip it (avx512-bf16 and
// avx512-fp16 add no int8 instructions; the tiled families have no AMX rows).
template <class Resolve>
bool repeats_path_below(Isa isa, Resolve resolve) {
  bool found = false;
  Isa below = isa;
  for (Isa l : kAllIsas) {
    if (l == isa) break;
    if (isa_supported(l)) below = l, found = true;
  }
  return found && resolve(isa) == resolve(below);
}

}  // namespace dlas::test
