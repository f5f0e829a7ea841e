// Activation data formats (DLAS layer 4, "data formats"): plain NCHW and the blocked NCHWc
// layouts, where channels are split into blocks of B (8 for AVX2, 16 for AVX-512: one
// vector register) and the block is the innermost dimension:
//
//   nchw:     x[n][c][h][w]
//   nchw8c:   x[n][ceil(c/8)][h][w][8]
//   nchw16c:  x[n][ceil(c/16)][h][w][16]
//
// A blocked tensor holds ceil(c/B)*B channels; the padding lanes of the last block hold
// zeros when a reorder writes them, and finite values when a kernel does (a conv writes
// act(0 + 0) there: its padded weights and bias are zero). No consumer lets a padding lane
// reach a real one: convs multiply them by zero weights, channel-wise ops keep them apart,
// and reorders back to NCHW drop them.
//
// The plan keeps tensors blocked from layer to layer and reorders only where a layer runs
// NCHW (docs/engine.md "Data layouts").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dlas/hw/isa.h"

namespace dlas {

class ThreadPool;

enum class Layout : int {
  kNchw,
  kNchw8c,
  kNchw16c,
};
const char* layout_name(Layout l);  // "nchw", "nchw8c", "nchw16c"
// Inverse of layout_name; throws kInvalidInput.
Layout parse_layout(std::string_view name);

// Channels per block: 1 for NCHW, else 8 or 16.
inline int64_t layout_block(Layout l) {
  return l == Layout::kNchw8c ? 8 : l == Layout::kNchw16c ? 16 : 1;
}
inline bool is_blocked(Layout l) { return l != Layout::kNchw; }
// Channels stored: c rounded up to the block.
inline int64_t blocked_channels(int64_t c, Layout l) {
  const int64_t b = layout_block(l);
  return (c + b - 1) / b * b;
}
// Elements a [n][c][h][w] tensor occupies in layout l.
inline int64_t layout_numel(int64_t n, int64_t c, int64_t hw, Layout l) {
  return n * blocked_channels(c, l) * hw;
}
// The blocked layout of an ISA path's vector width: nchw16c on the AVX-512 paths, nchw8c on
// AVX2, NCHW on scalar (no blocking).
Layout native_blocked_layout(Isa isa);

// Element offset of (n, c, h*w index) in a tensor of c channels and hw pixels in layout l.
inline int64_t layout_offset(Layout l, int64_t c_total, int64_t hw, int64_t n, int64_t c,
                             int64_t pixel) {
  const int64_t b = layout_block(l);
  if (b == 1) return (n * c_total + c) * hw + pixel;
  const int64_t cb = (c_total + b - 1) / b;
  return ((n * cb + c / b) * hw + pixel) * b + c % b;
}

// Copies an f32 [n][c][hw] tensor from layout `from` to layout `to` (any pair; equal layouts
// copy). Padding lanes of a blocked destination are zeroed. Parallel over the pool.
void reorder(const float* src, Layout from, float* dst, Layout to, int64_t n, int64_t c, int64_t hw,
             ThreadPool& pool);
// The same for 16-bit elements (f16 / bf16 bit patterns; padding lanes are +0).
void reorder(const uint16_t* src, Layout from, uint16_t* dst, Layout to, int64_t n, int64_t c,
             int64_t hw, ThreadPool& pool);

// The same for 8-bit elements (u8 / s8; padding lanes are 0).
void reorder(const uint8_t* src, Layout from, uint8_t* dst, Layout to, int64_t n, int64_t c,
             int64_t hw, ThreadPool& pool);

// A batch of 2-D transposes, dst[b][j][i] = src[b][i][j] for i < rows and j < cols, of
// elements of `elem_bytes` bytes (2 or 4): the ONNX Transposes that swap two runs of axes
// (channels first <-> channels last). In tiles that stay in L1, parallel over row tiles.
void transpose_2d(const void* src, void* dst, size_t elem_bytes, int64_t batch, int64_t rows,
                  int64_t cols, ThreadPool& pool);

}  // namespace dlas
