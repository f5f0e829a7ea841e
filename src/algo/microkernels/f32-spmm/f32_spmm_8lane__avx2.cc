// AVX2+FMA SpMM kernels: 8-lane vectors (ymm). Only this ISA's entries of f32_spmm.inc are defined
// here.
#include "algo/microkernels/f32-spmm/f32_spmm.h"
#include "algo/microkernels/f32-spmm/f32_spmm_template.h"

namespace dlas::ukernel {

#undef DLAS_F32_SPMM_kAvx2
#define DLAS_F32_SPMM_kAvx2 DLAS_F32_SPMM_DEFINE
#define X DLAS_F32_SPMM_ROW
#include "algo/microkernels/f32-spmm/f32_spmm.inc"
#undef X

}  // namespace dlas::ukernel
