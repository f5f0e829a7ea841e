// Fast elementwise ops (DLAS layer 4) on f32: binary Add/Sub/Mul/Div with the broadcasts
// CNNs use, and unary activations through the shared epilogue kernels. Parallel over
// the ThreadPool, ISA-dispatched (src/algo/eltwise/f32_vbinary__<isa>.cc). For any other
// broadcast the binary entry point returns false and the caller runs the reference kernel.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dlas/algo/conv.h"
#include "dlas/core/tensor.h"
#include "dlas/hw/isa.h"

namespace dlas {

class ThreadPool;

enum class BinaryOp : int { kAdd, kSub, kMul, kDiv };

// Whether y = a op b (NumPy broadcasting) has a fast path: one operand has the full
// output shape and the other, right-aligned to it, equals it on one contiguous run of
// dimensions and is 1 elsewhere. That covers same shape, scalar, per-channel [1,C,1,1] or
// [C,1,1] against [N,C,H,W], and [N,C,1,1] x [N,C,H,W] (squeeze-and-excitation). Any
// other broadcast runs too where both operands have the last dimension in full (rows of the
// trailing dimensions they share; a window-attention mask against its scores).
bool binary_supported(const Shape& a, const Shape& b);
// Computes y = a op b (y shaped like the broadcast output) and returns true, or returns
// false without touching y when !binary_supported(a, b). y may alias the full operand.
bool binary(Isa isa, BinaryOp op, const float* a, const Shape& as, const float* b, const Shape& bs,
            float* y, ThreadPool& pool);

// y[i] = act(x[i]) for i < n through apply_epilogue's kernels (Relu, Clip, Sigmoid,
// HardSigmoid, HardSwish, Silu; p0/p1 as in Epilogue). y may equal x.
void unary_activation(Isa isa, Activation act, float p0, float p1, size_t n, const float* x,
                      float* y, ThreadPool& pool);

// y[p * lanes + l] = act(x[p * lanes + l] * scale[l] + shift[l]) for p < pixels, l < lanes:
// one channel's plane (lanes 1) or one channel block of a blocked layout (lanes: the block) of
// a per-channel affine (inference BatchNorm, ChannelAffine). Serial (the caller splits the
// planes over its pool); y may equal x. microkernels/f32-vaffine.
void channel_affine(Isa isa, Activation act, float p0, float p1, size_t pixels, size_t lanes,
                    const float* x, const float* scale, const float* shift, float* y);

// LayerNormalization over the last axis: each of `rows` rows of c values at x normalized by
// its own mean and variance, y = (x - mean) / sqrt(var + eps) * gamma + beta (gamma, beta: c
// values; y may equal x). Rows split between the pool's threads.
void layer_norm(Isa isa, size_t rows, size_t c, const float* x, const float* gamma,
                const float* beta, float eps, float* y, ThreadPool& pool);

// Softmax over the last axis: each of `rows` rows of c values at x to exp(x - max) / sum
// (y may equal x). Rows split between the pool's threads.
void softmax(Isa isa, size_t rows, size_t c, const float* x, float* y, ThreadPool& pool);

// 16-bit float rows (type kF16 or kBF16, as uint16_t bit patterns) to and from f32, split
// over the pool in whole 16-element blocks: widening is exact, narrowing rounds to nearest
// even (NaN stays NaN). The ISA's vector conversions (F16C on x86 for f16). y must not
// overlap x.
void widen_h16(DType type, Isa isa, size_t n, const uint16_t* x, float* y, ThreadPool& pool);
void narrow_h16(DType type, Isa isa, size_t n, const float* x, uint16_t* y, ThreadPool& pool);

// y = a op b on 16-bit float tensors (type kF16 or kBF16) of `planes` planes of hw elements:
// both operands full (per_channel false), or one full and the other one value per plane
// (per_channel: an [N,C,1,1] scale of an [N,C,H,W] tensor; scale_first: it is a). Streamed
// through per-thread f32 chunks: widened, the f32 op, narrowed once -- the f32 op's value
// rounded once to the type. Parallel over the pool. y may alias the full operand. lanes > 1
// (per_channel only, at most 2048): each plane's scale is a vector of `lanes` values, element
// j of plane p taking scale[p * lanes + j % lanes], hw a multiple of lanes -- blocked planes
// (a channel block's pixels, the scale blocked too), or one plane and a constant along the
// trailing axes (a bias of channels-last activations).
void binary_h16(DType type, Isa isa, BinaryOp op, bool per_channel, bool scale_first,
                int64_t planes, int64_t hw, const uint16_t* a, const uint16_t* b, uint16_t* y,
                ThreadPool& pool, int64_t lanes = 1);

// y[i] = act(x[i]) for i < n on 16-bit floats (type kF16 or kBF16): per-thread f32 chunks on
// the stack, widened, apply_epilogue's kernels, narrowed -- the f32 activation's value
// rounded once, each element crossing memory once at 16 bits. y may equal x.
void unary_h16(DType type, Isa isa, Activation act, float p0, float p1, size_t n, const uint16_t* x,
               uint16_t* y, ThreadPool& pool);

// Per-tensor 8-bit quantization (type kU8 or kS8) of rows, split over the pool, bit-exact
// with ONNX QuantizeLinear / DequantizeLinear as the reference kernels compute them:
// quantize q = sat(nearbyint(x / scale) + zero_point) (NaN -> zero_point); dequantize
// x = (float)(q - zero_point) * scale. The ISA's vector kernels (microkernels/qs8-vcvt).
void quantize_8bit(DType type, float scale, int32_t zero_point, Isa isa, size_t n, const float* x,
                   void* y, ThreadPool& pool);
void dequantize_8bit(DType type, float scale, int32_t zero_point, Isa isa, size_t n, const void* x,
                     float* y, ThreadPool& pool);
// quantize_8bit of x * gate[p] over `planes` planes of `plane` floats (QChannelScale: a
// squeeze-and-excitation gate applied and quantized in one pass): each product is the f32 a
// Mul stores, then quantized as above. lanes > 1: blocked activations (a plane is one
// channel block's pixels of `lanes` channels each, plane a multiple of lanes), element j of
// plane p scaled by gate[p * lanes + j % lanes] (the gate blocked too).
void scale_quantize_8bit(DType type, float scale, int32_t zero_point, Isa isa, size_t planes,
                         size_t plane, const float* x, const float* gate, void* y, ThreadPool& pool,
                         size_t lanes = 1);
// y[i] = table[x[i]] over n bytes (a 256-byte table; QLookup), on microkernels/u8-lut.
void lookup_8bit(const uint8_t* table, Isa isa, size_t n, const void* x, void* y, ThreadPool& pool);
// y[i] = table[x[i]] over n bytes into floats (a 256-float table; QLookup).
void lookup_8bit_f32(const float* table, Isa isa, size_t n, const void* x, float* y,
                     ThreadPool& pool);

}  // namespace dlas
