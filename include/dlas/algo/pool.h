// Fast pooling (DLAS layer 4): MaxPool, AveragePool and GlobalAveragePool on f32 NCHW,
// parallel over the n*c planes with the ThreadPool, with per-ISA kernels
// (src/algo/pool/f32_pool__<isa>.cc, one template). Plain functions: nothing to
// prepare, no allocation, no scratch. The caller decides the output size (ONNX
// ceil_mode, auto_pad) and passes it in the problem; windows are clipped to the input
// exactly as the reference kernels do.
#pragma once

#include <cstdint>

#include "dlas/algo/layout.h"
#include "dlas/core/dtype.h"
#include "dlas/hw/isa.h"

namespace dlas {

class ThreadPool;

struct PoolProblem {
  int64_t n = 1, c = 0, h = 0, w = 0;  // input NCHW
  int64_t kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int64_t dil_h = 1, dil_w = 1;
  int64_t oh = 0, ow = 0;  // output size, given by the caller (ceil_mode decides it)

  // Throws kInvalidInput when a size, kernel, stride or dilation is non-positive or a pad
  // is negative.
  void validate() const;
  // oh/ow from the other fields with ONNX's floor or ceil rule (ceil_mode: the last window
  // must start inside the input or the left/top padding).
  void set_output_size(bool ceil_mode);
};

// y[n][c][oy][ox] = max over the window taps inside the input (-inf when none; a NaN
// tap makes the result NaN).
void max_pool(Isa isa, const PoolProblem& p, const float* x, float* y, ThreadPool& pool);
// Mean over the window taps inside the input, or (count_include_pad) divided by the number
// of taps inside the padded input [-pad, size + pad); 0 for a window with no taps.
void average_pool(Isa isa, const PoolProblem& p, bool count_include_pad, const float* x, float* y,
                  ThreadPool& pool);
// y[i] = mean of x[i*hw .. (i+1)*hw) for i < planes (N*C).
void global_average_pool(Isa isa, int64_t planes, int64_t hw, const float* x, float* y,
                         ThreadPool& pool);

// The same three on a blocked layout l (nchw8c / nchw16c, dlas/algo/layout.h): x is
// [n][ceil(c/B)][h][w][B], y [n][ceil(c/B)][oh][ow][B] (global: [n][ceil(c/B)][1][1][B]),
// every channel lane with the NCHW semantics above, vectorized across the block's lanes
// (src/algo/microkernels/f32-poolnchwc). Padding lanes stay apart from real ones. Throws
// kUnsupported when the ISA path lacks vectors of B floats.
void max_pool(Isa isa, Layout l, const PoolProblem& p, const float* x, float* y, ThreadPool& pool);
void average_pool(Isa isa, Layout l, const PoolProblem& p, bool count_include_pad, const float* x,
                  float* y, ThreadPool& pool);
void global_average_pool(Isa isa, Layout l, int64_t n, int64_t c, int64_t hw, const float* x,
                         float* y, ThreadPool& pool);

// The three NCHW pools on 16-bit values (type kF16 / kBF16, bit patterns in uint16_t): each
// thread widens its planes exactly into its own f32 scratch, runs the f32 plane kernels and
// rounds each result once to the type, so the results are the f32 pools' on the widened
// input, rounded once (max pooling is exact), with one 16-bit trip through memory.
void max_pool_h16(DType type, Isa isa, const PoolProblem& p, const uint16_t* x, uint16_t* y,
                  ThreadPool& pool);
void average_pool_h16(DType type, Isa isa, const PoolProblem& p, bool count_include_pad,
                      const uint16_t* x, uint16_t* y, ThreadPool& pool);
void global_average_pool_h16(DType type, Isa isa, int64_t planes, int64_t hw, const uint16_t* x,
                             uint16_t* y, ThreadPool& pool);
// The global average on 16-bit blocks (blocked layout l, as the f32 blocked pools above):
// the blocked f32 pool on each block plane widened, each mean rounded once to the type.
void global_average_pool_h16(DType type, Isa isa, Layout l, int64_t n, int64_t c, int64_t hw,
                             const uint16_t* x, uint16_t* y, ThreadPool& pool);

// MaxPool on 8-bit (u8 / s8) NCHW values, for int8 graphs (the max of quantized values is
// the quantized max: scale > 0). Every window must hold a tap inside the input (pads smaller
// than the kernel's extent; the caller checks).
void max_pool_8bit(const PoolProblem& p, bool is_signed, const void* x, void* y, ThreadPool& pool);

}  // namespace dlas
