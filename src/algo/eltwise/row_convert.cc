// Parallel row conversions over the ISA's vector kernels: 16-bit floats to and from f32
// (h16-vcvt) and 16-bit binary ops streamed through them (f32-vbinary in between), and
// per-tensor 8-bit quantization (qs8-vcvt).
#include <algorithm>
#include <cstring>

#include "algo/microkernels/f32-vbinary/f32_vbinary.h"
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"
#include "algo/microkernels/qs8-vcvt/qs8_vcvt.h"
#include "algo/microkernels/u8-lut/u8_lut.h"
#include "dlas/algo/eltwise.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

// Runs fn(begin, end) over n elements split into whole 16-element blocks, one chunk per
// thread; small rows stay on the calling thread.
template <class Fn>
void split_rows(ThreadPool& pool, size_t n, Fn fn) {
  const size_t t = static_cast<size_t>(pool.threads());
  const size_t blocks = (n + 15) / 16;
  if (t <= 1 || n < 4096) {
    fn(0, n);
    return;
  }
  pool.parallel_for(t, [&](size_t i) {
    const size_t b = blocks * i / t * 16, e = blocks * (i + 1) / t * 16;
    if (b < n) fn(b, e < n ? e : n);
  });
}

}  // namespace

void widen_h16(DType type, Isa isa, size_t n, const uint16_t* x, float* y, ThreadPool& pool) {
  const ukernel::H16WidenFn widen = ukernel::h16_vcvt_for(type, isa).widen;
  split_rows(pool, n, [&](size_t b, size_t e) { widen(e - b, x + b, y + b); });
}

void narrow_h16(DType type, Isa isa, size_t n, const float* x, uint16_t* y, ThreadPool& pool) {
  const ukernel::H16NarrowFn narrow = ukernel::h16_vcvt_for(type, isa).narrow;
  split_rows(pool, n, [&](size_t b, size_t e) { narrow(e - b, x + b, y + b); });
}

void binary_h16(DType type, Isa isa, BinaryOp op, bool per_channel, bool scale_first,
                int64_t planes, int64_t hw, const uint16_t* a, const uint16_t* b, uint16_t* y,
                ThreadPool& pool, int64_t lanes) {
  constexpr int64_t kChunk = 2048;  // f32 elements per operand chunk, on the stack
  DLAS_CHECK(lanes >= 1 && lanes <= kChunk && hw % lanes == 0, ErrorKind::kInternal,
             "binary_h16: ", lanes, " lanes for planes of ", hw);
  const ukernel::H16Vcvt& cvt = ukernel::h16_vcvt_for(type, isa);
  const ukernel::F32VBinaryKernels& k = ukernel::f32_vbinary_for(isa);
  const int o = static_cast<int>(op);
  const int64_t chunk = kChunk / lanes * lanes;  // whole scale vectors
  const int64_t chunks = (hw + chunk - 1) / chunk, tasks = planes * chunks;
  const int64_t threads = std::min<int64_t>(pool.threads(), std::max<int64_t>(1, tasks));
  pool.parallel_for(static_cast<size_t>(threads), [&](size_t t) {
    alignas(64) float fa[kChunk], fb[kChunk];
    int64_t tiled = -1;  // lanes > 1: the plane whose scale vector fb holds, repeated
    const int64_t t0 = tasks * static_cast<int64_t>(t) / threads;
    const int64_t t1 = tasks * (static_cast<int64_t>(t) + 1) / threads;
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t q = task / chunks, i0 = task % chunks * chunk;
      const size_t n = static_cast<size_t>(std::min(chunk, hw - i0));
      const int64_t off = q * hw + i0;
      if (per_channel && lanes > 1) {
        // A plane's elements against its scale vector (a chunk is whole vectors).
        const uint16_t* scale = scale_first ? a : b;
        if (tiled != q) {
          cvt.widen(static_cast<size_t>(lanes), scale + q * lanes, fb);
          const int64_t fill = std::min(chunk, hw);
          for (int64_t i = lanes; i < fill; i += lanes)
            std::memcpy(fb + i, fb, static_cast<size_t>(lanes) * sizeof(float));
          tiled = q;
        }
        cvt.widen(n, (scale_first ? b : a) + off, fa);
        if (scale_first)
          k.vv[o](n, fb, fa, fa);
        else
          k.vv[o](n, fa, fb, fa);
      } else if (!per_channel) {
        cvt.widen(n, a + off, fa);
        cvt.widen(n, b + off, fb);
        k.vv[o](n, fa, fb, fa);
      } else if (scale_first) {
        cvt.widen(n, b + off, fa);
        cvt.widen(1, a + q, fb);
        k.sv[o](n, fb, fa, fa);
      } else {
        cvt.widen(n, a + off, fa);
        cvt.widen(1, b + q, fb);
        k.vs[o](n, fa, fb, fa);
      }
      cvt.narrow(n, fa, y + off);
    }
  });
}

void unary_h16(DType type, Isa isa, Activation act, float p0, float p1, size_t n, const uint16_t* x,
               uint16_t* y, ThreadPool& pool) {
  constexpr size_t kChunk = 2048;  // f32 elements per chunk, on the stack
  const ukernel::H16Vcvt& cvt = ukernel::h16_vcvt_for(type, isa);
  const Epilogue e{act, p0, p1, false};
  split_rows(pool, n, [&](size_t b, size_t end) {
    alignas(64) float f[kChunk];
    for (size_t i = b; i < end; i += kChunk) {
      const size_t m = std::min(kChunk, end - i);
      cvt.widen(m, x + i, f);
      apply_epilogue(isa, e, m, f, 0.f, nullptr);
      cvt.narrow(m, f, y + i);
    }
  });
}

void quantize_8bit(DType type, float scale, int32_t zero_point, Isa isa, size_t n, const float* x,
                   void* y, ThreadPool& pool) {
  const ukernel::QS8CvtParams p{scale, zero_point, type == DType::kS8};
  const ukernel::QS8QuantizeFn quantize = ukernel::qs8_vcvt_for(isa).quantize;
  uint8_t* out = static_cast<uint8_t*>(y);
  split_rows(pool, n, [&](size_t b, size_t e) { quantize(e - b, x + b, p, out + b); });
}

void scale_quantize_8bit(DType type, float scale, int32_t zero_point, Isa isa, size_t planes,
                         size_t plane, const float* x, const float* gate, void* y, ThreadPool& pool,
                         size_t lanes) {
  constexpr size_t kChunk = 1024;  // products per quantize call, on the stack (L1)
  const ukernel::QS8CvtParams p{scale, zero_point, type == DType::kS8};
  const ukernel::QS8QuantizeFn quantize = ukernel::qs8_vcvt_for(isa).quantize;
  uint8_t* out = static_cast<uint8_t*>(y);
  split_rows(pool, planes * plane, [&](size_t b, size_t e) {
    alignas(64) float prod[kChunk];
    for (size_t i = b; i < e;) {
      const size_t pl = i / plane;
      const size_t end = std::min({e, (pl + 1) * plane, i + kChunk});
      if (lanes > 1) {
        // Whole pixels (a vector of lanes) where the run is aligned to them.
        const float* g = gate + pl * lanes;
        size_t j = i, l = i % lanes;
        for (; j < end && l != 0; ++j, l = l + 1 == lanes ? 0 : l + 1) prod[j - i] = x[j] * g[l];
        if (lanes == 16)
          for (; j + 16 <= end; j += 16)
            for (size_t q = 0; q < 16; ++q) prod[j - i + q] = x[j + q] * g[q];
        else if (lanes == 8)
          for (; j + 8 <= end; j += 8)
            for (size_t q = 0; q < 8; ++q) prod[j - i + q] = x[j + q] * g[q];
        for (; j < end; ++j, l = l + 1 == lanes ? 0 : l + 1) prod[j - i] = x[j] * g[l];
      } else {
        const float g = gate[pl];
        for (size_t j = i; j < end; ++j) prod[j - i] = x[j] * g;
      }
      quantize(end - i, prod, p, out + i);
      i = end;
    }
  });
}

void dequantize_8bit(DType type, float scale, int32_t zero_point, Isa isa, size_t n, const void* x,
                     float* y, ThreadPool& pool) {
  const ukernel::QS8CvtParams p{scale, zero_point, type == DType::kS8};
  const ukernel::QS8DequantizeFn dequantize = ukernel::qs8_vcvt_for(isa).dequantize;
  const uint8_t* in = static_cast<const uint8_t*>(x);
  split_rows(pool, n, [&](size_t b, size_t e) { dequantize(e - b, in + b, p, y + b); });
}

void lookup_8bit(const uint8_t* table, Isa isa, size_t n, const void* x, void* y,
                 ThreadPool& pool) {
  const ukernel::U8LutFn lut = ukernel::u8_lut_for(isa).bytes;
  const uint8_t* in = static_cast<const uint8_t*>(x);
  uint8_t* out = static_cast<uint8_t*>(y);
  split_rows(pool, n, [&](size_t b, size_t e) { lut(e - b, in + b, table, out + b); });
}

void lookup_8bit_f32(const float* table, Isa isa, size_t n, const void* x, float* y,
                     ThreadPool& pool) {
  const ukernel::U8LutF32Fn lut = ukernel::u8_lut_for(isa).floats;
  const uint8_t* in = static_cast<const uint8_t*>(x);
  split_rows(pool, n, [&](size_t b, size_t e) { lut(e - b, in + b, table, y + b); });
}

}  // namespace dlas
