// Per-tensor 8-bit (de)quantization of f32 rows, ONNX QuantizeLinear / DequantizeLinear
// exactly as the reference kernels compute them:
//   quantize:   q = sat(nearbyint(x / scale) + zero_point), NaN -> zero_point
//   dequantize: x = (float)(q - zero_point) * scale
// The division (not a reciprocal multiply) and ties-to-even keep every path bit-exact with
// the scalar one. One list: qs8-vcvt/qs8_vcvt.inc; each ISA in its own TU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

struct QS8CvtParams {
  float scale = 1.f;
  int32_t zero_point = 0;
  bool is_signed = false;  // s8 (bytes are int8_t bit patterns) or u8
};

using QS8QuantizeFn = void (*)(size_t n, const float* x, const QS8CvtParams& p, uint8_t* y);
using QS8DequantizeFn = void (*)(size_t n, const uint8_t* x, const QS8CvtParams& p, float* y);

#define X(prefix, isa)                                                                  \
  void prefix##_quantize(size_t n, const float* x, const QS8CvtParams& p, uint8_t* y); \
  void prefix##_dequantize(size_t n, const uint8_t* x, const QS8CvtParams& p, float* y);
#include "algo/microkernels/qs8-vcvt/qs8_vcvt.inc"
#undef X

struct QS8Vcvt {
  const char* name;  // "qs8_vcvt__avx2"
  Isa isa;
  QS8QuantizeFn quantize;
  QS8DequantizeFn dequantize;
};

// Every entry, in qs8_vcvt.inc order.
const std::vector<QS8Vcvt>& qs8_vcvt_kernels();
// The entry of the highest listed ISA <= isa that the CPU supports.
const QS8Vcvt& qs8_vcvt_for(Isa isa);

}  // namespace dlas::ukernel
