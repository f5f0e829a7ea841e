// Test-only: the AVX-512 TU's 16-lane template instantiation compiled with AVX2 flags
// (GCC lowers each 64-byte vector to two ymm), so the exact 16-lane logic is checked on
// machines without AVX-512. Not dispatched (a T entry in f32_dwconv.inc).
// 64-byte vectors passed between internal functions without AVX-512: GCC warns the ABI
// differs from AVX-512 code, which never calls these (internal linkage).
#pragma GCC diagnostic ignored "-Wpsabi"
#include "algo/microkernels/f32-dwconv/f32_dwconv_template.h"

namespace dlas::ukernel {
namespace {
typedef float V16f __attribute__((vector_size(64)));
typedef int32_t V16i __attribute__((vector_size(64)));
}  // namespace

constinit const F32DwconvKernels f32_dwconv_16lane__avx2 = make_dwconv_kernels<V16f, V16i, 16>();

}  // namespace dlas::ukernel
