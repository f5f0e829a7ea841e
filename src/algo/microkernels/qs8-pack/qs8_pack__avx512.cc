// int8 packing kernels (qs8_pack.h) for the AVX-512 paths (F/BW/VL). The interleaves widen
// 16 bytes of each row to 16 uint32 lanes (vpmovzxbd), shift and merge them, and store one
// 64-byte vector per 16 pixels; the last n % 16 pixels take masked loads and stores, so a
// short row (the 7- and 14-pixel rows of small planes) never runs a scalar tail. The
// strided copies are the shared template's.
#include <immintrin.h>

#include "algo/microkernels/qs8-pack/qs8_pack.h"
#include "algo/microkernels/qs8-pack/qs8_pack_template.h"

namespace dlas::ukernel {
namespace {

typedef uint32_t U32x16 __attribute__((vector_size(64)));

// 16 bytes of row r at j (m: the bytes to read), zero-extended to 16 uint32. (Shifts and
// logic go through GCC vectors: GCC 12's unmasked AVX-512 intrinsics warn on their
// undefined pass-through operand.)
inline U32x16 widen16(const uint8_t* r, size_t j, __mmask16 m) {
  return reinterpret_cast<U32x16>(_mm512_maskz_cvtepu8_epi32(m, _mm_maskz_loadu_epi8(m, r + j)));
}

inline __mmask16 tail_mask(size_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

inline void store16(uint8_t* dst, __mmask16 m, U32x16 v) {
  _mm512_mask_storeu_epi32(dst, m, reinterpret_cast<__m512i>(v));
}

}  // namespace

void qs8_pack__avx512_quads(const uint8_t* const* r, size_t n, uint8_t flip, uint8_t* dst) {
  const U32x16 f = U32x16{} + 0x01010101u * flip;
  for (size_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    const U32x16 a = widen16(r[0], j, m), b = widen16(r[1], j, m);
    const U32x16 c = widen16(r[2], j, m), d = widen16(r[3], j, m);
    store16(dst + 4 * j, m, (a | b << 8 | c << 16 | d << 24) ^ f);
  }
}

void qs8_pack__avx512_pairs(const uint8_t* const* r, size_t n, uint8_t flip, uint8_t* dst) {
  const U32x16 f = U32x16{} + 0x00010001u * flip;
  for (size_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    store16(dst + 4 * j, m, (widen16(r[0], j, m) | widen16(r[1], j, m) << 16) ^ f);
  }
}

void qs8_pack__avx512_copy(const uint8_t* src, size_t stride, size_t n, uint8_t flip,
                           uint8_t* dst) {
  if (stride != 1) {
    qs8_pack_copy(src, stride, n, flip, dst);
    return;
  }
  typedef uint8_t U8x64 __attribute__((vector_size(64)));
  const U8x64 f = U8x64{} + flip;
  for (size_t j = 0; j < n; j += 64) {
    const size_t left = n - j;
    const __mmask64 m = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
    const U8x64 v = reinterpret_cast<U8x64>(_mm512_maskz_loadu_epi8(m, src + j)) ^ f;
    _mm512_mask_storeu_epi8(dst + j, m, reinterpret_cast<__m512i>(v));
  }
}

}  // namespace dlas::ukernel
