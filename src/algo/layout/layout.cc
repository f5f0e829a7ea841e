// Activation layouts and the reorders between them (dlas/algo/layout.h).
#include "dlas/algo/layout.h"

#include <algorithm>
#include <cstring>

#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kNchw:
      return "nchw";
    case Layout::kNchw8c:
      return "nchw8c";
    case Layout::kNchw16c:
      return "nchw16c";
  }
  return "?";
}

Layout parse_layout(std::string_view name) {
  for (Layout l : {Layout::kNchw, Layout::kNchw8c, Layout::kNchw16c})
    if (name == layout_name(l)) return l;
  fail(ErrorKind::kInvalidInput, "unknown layout '", name, "' (expected nchw|nchw8c|nchw16c)");
}

Layout native_blocked_layout(Isa isa) {
  if (isa >= Isa::kAvx512) return Layout::kNchw16c;
  if (isa >= Isa::kAvx2) return Layout::kNchw8c;
  return Layout::kNchw;
}

namespace {

// One block of B channels (c0 .. c0+real) of one image: NCHW planes -> [hw][B].
template <int B, class T>
void pack_block(const T* src, int64_t hw, int64_t real, T* dst) {
  constexpr int64_t kTile = 64;  // pixels per pass: B planes' rows stay in L1
  for (int64_t p0 = 0; p0 < hw; p0 += kTile) {
    const int64_t pe = std::min(hw, p0 + kTile);
    for (int64_t p = p0; p < pe; ++p) {
      T* d = dst + p * B;
      for (int64_t i = 0; i < real; ++i) d[i] = src[i * hw + p];
      for (int64_t i = real; i < B; ++i) d[i] = T(0);
    }
  }
}

// [hw][B] -> B NCHW planes, in tiles of pixels so each tile's blocks are read from L1 by
// every channel (one pass per channel over the whole plane re-read it B times from L2:
// 0.1 ms for a 56x56x128 tensor on an AMD EPYC Zen 3, a fifth of the conv after it).
template <int B, class T>
void unpack_block(const T* src, int64_t hw, int64_t real, T* dst) {
  constexpr int64_t kTile = 64;
  for (int64_t p0 = 0; p0 < hw; p0 += kTile) {
    const int64_t pe = std::min(hw, p0 + kTile);
    for (int64_t i = 0; i < real; ++i) {
      T* d = dst + i * hw;
      for (int64_t p = p0; p < pe; ++p) d[p] = src[p * B + i];
    }
  }
}

// 8-bit 16-channel blocks move 16 x 16 bytes at a time: 16 channel rows of 16 pixels
// transposed into 16 pixel blocks of 16 channels (and back) by four rounds of byte, word,
// dword and qword interleaves (punpck on any x86-64), instead of one byte per step.
typedef uint8_t Bytes16 __attribute__((vector_size(16)));

// out[j] = column j of the 16 x 16 bytes in[0..15] (in[i] row i).
void transpose16x16(const Bytes16* in, Bytes16* out) {
  Bytes16 a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = __builtin_shufflevector(in[i], in[i + 8], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21,
                                       6, 22, 7, 23);
    a[2 * i + 1] = __builtin_shufflevector(in[i], in[i + 8], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28,
                                           13, 29, 14, 30, 15, 31);
  }
  for (int i = 0; i < 8; ++i) {
    b[2 * i] = __builtin_shufflevector(a[i], a[i + 8], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6,
                                       22, 7, 23);
    b[2 * i + 1] = __builtin_shufflevector(a[i], a[i + 8], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13,
                                           29, 14, 30, 15, 31);
  }
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = __builtin_shufflevector(b[i], b[i + 8], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6,
                                       22, 7, 23);
    a[2 * i + 1] = __builtin_shufflevector(b[i], b[i + 8], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13,
                                           29, 14, 30, 15, 31);
  }
  for (int i = 0; i < 8; ++i) {
    out[2 * i] = __builtin_shufflevector(a[i], a[i + 8], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21,
                                         6, 22, 7, 23);
    out[2 * i + 1] = __builtin_shufflevector(a[i], a[i + 8], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28,
                                             13, 29, 14, 30, 15, 31);
  }
}

// One 16-channel block of 8-bit planes -> [hw][16], 16 pixels a step (the rest as
// pack_block).
void pack_block16_u8(const uint8_t* src, int64_t hw, int64_t real, uint8_t* dst) {
  const int64_t whole = hw / 16 * 16;
  for (int64_t p = 0; p < whole; p += 16) {
    Bytes16 rows[16], cols[16];
    for (int64_t i = 0; i < 16; ++i) {
      if (i < real)
        std::memcpy(&rows[i], src + i * hw + p, 16);
      else
        rows[i] = Bytes16{};
    }
    transpose16x16(rows, cols);
    std::memcpy(dst + p * 16, cols, sizeof cols);
  }
  for (int64_t p = whole; p < hw; ++p)
    for (int64_t i = 0; i < 16; ++i) dst[p * 16 + i] = i < real ? src[i * hw + p] : 0;
}

// [hw][16] -> the block's `real` 8-bit planes.
void unpack_block16_u8(const uint8_t* src, int64_t hw, int64_t real, uint8_t* dst) {
  const int64_t whole = hw / 16 * 16;
  for (int64_t p = 0; p < whole; p += 16) {
    Bytes16 px[16], rows[16];
    std::memcpy(px, src + p * 16, sizeof px);
    transpose16x16(px, rows);
    for (int64_t i = 0; i < real; ++i) std::memcpy(dst + i * hw + p, &rows[i], 16);
  }
  for (int64_t i = 0; i < real; ++i)
    for (int64_t p = whole; p < hw; ++p) dst[i * hw + p] = src[p * 16 + i];
}

template <int B, class T>
void to_blocked(const T* src, T* dst, int64_t n, int64_t c, int64_t hw, ThreadPool& pool) {
  const int64_t cb = (c + B - 1) / B;
  pool.parallel_for(static_cast<size_t>(n * cb), [&](size_t t) {
    const int64_t img = static_cast<int64_t>(t) / cb, b = static_cast<int64_t>(t) % cb;
    const int64_t real = std::min<int64_t>(B, c - b * B);
    if constexpr (B == 16 && sizeof(T) == 1)
      pack_block16_u8(src + (img * c + b * B) * hw, hw, real, dst + (img * cb + b) * hw * B);
    else
      pack_block<B>(src + (img * c + b * B) * hw, hw, real, dst + (img * cb + b) * hw * B);
  });
}

template <int B, class T>
void from_blocked(const T* src, T* dst, int64_t n, int64_t c, int64_t hw, ThreadPool& pool) {
  const int64_t cb = (c + B - 1) / B;
  pool.parallel_for(static_cast<size_t>(n * cb), [&](size_t t) {
    const int64_t img = static_cast<int64_t>(t) / cb, b = static_cast<int64_t>(t) % cb;
    const int64_t real = std::min<int64_t>(B, c - b * B);
    if constexpr (B == 16 && sizeof(T) == 1)
      unpack_block16_u8(src + (img * cb + b) * hw * B, hw, real, dst + (img * c + b * B) * hw);
    else
      unpack_block<B>(src + (img * cb + b) * hw * B, hw, real, dst + (img * c + b * B) * hw);
  });
}

template <class T>
void reorder_any(const T* src, Layout from, T* dst, Layout to, int64_t n, int64_t c, int64_t hw,
                 ThreadPool& pool) {
  if (from == to) {
    std::memcpy(dst, src, static_cast<size_t>(layout_numel(n, c, hw, from)) * sizeof(T));
    return;
  }
  if (from == Layout::kNchw) {
    if (to == Layout::kNchw8c) return to_blocked<8>(src, dst, n, c, hw, pool);
    return to_blocked<16>(src, dst, n, c, hw, pool);
  }
  if (to == Layout::kNchw) {
    if (from == Layout::kNchw8c) return from_blocked<8>(src, dst, n, c, hw, pool);
    return from_blocked<16>(src, dst, n, c, hw, pool);
  }
  // Between two blocked layouts: element by element (rare: a plan uses one block size).
  pool.parallel_for(static_cast<size_t>(n * c), [&](size_t t) {
    const int64_t img = static_cast<int64_t>(t) / c, ch = static_cast<int64_t>(t) % c;
    for (int64_t p = 0; p < hw; ++p)
      dst[layout_offset(to, c, hw, img, ch, p)] = src[layout_offset(from, c, hw, img, ch, p)];
  });
  // Zero the destination's padding lanes.
  const int64_t b = layout_block(to), cpad = blocked_channels(c, to);
  if (cpad == c) return;
  const int64_t cb = cpad / b;
  for (int64_t img = 0; img < n; ++img)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t ch = c; ch < cpad; ++ch) dst[((img * cb + ch / b) * hw + p) * b + ch % b] = T(0);
}

}  // namespace

void reorder(const float* src, Layout from, float* dst, Layout to, int64_t n, int64_t c, int64_t hw,
             ThreadPool& pool) {
  reorder_any(src, from, dst, to, n, c, hw, pool);
}

namespace {
template <class T>
void transpose_tiles(const T* src, T* dst, int64_t batch, int64_t rows, int64_t cols,
                     ThreadPool& pool) {
  constexpr int64_t kTile = 32;  // 32 x 32 x 4 bytes: 4 KiB read, 4 KiB written per tile
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  pool.parallel_for(static_cast<size_t>(batch * row_tiles), [&](size_t item) {
    const int64_t b = static_cast<int64_t>(item) / row_tiles;
    const int64_t i0 = static_cast<int64_t>(item) % row_tiles * kTile;
    const int64_t i1 = std::min(rows, i0 + kTile);
    const T* s = src + b * rows * cols;
    T* d = dst + b * rows * cols;
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t j1 = std::min(cols, j0 + kTile);
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t i = i0; i < i1; ++i) d[j * rows + i] = s[i * cols + j];
    }
  });
}
}  // namespace

void transpose_2d(const void* src, void* dst, size_t elem_bytes, int64_t batch, int64_t rows,
                  int64_t cols, ThreadPool& pool) {
  DLAS_CHECK(elem_bytes == 2 || elem_bytes == 4, ErrorKind::kInternal,
             "transpose_2d: elements of 2 or 4 bytes, not ", elem_bytes);
  if (elem_bytes == 4)
    transpose_tiles(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), batch, rows,
                    cols, pool);
  else
    transpose_tiles(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), batch, rows,
                    cols, pool);
}

void reorder(const uint16_t* src, Layout from, uint16_t* dst, Layout to, int64_t n, int64_t c,
             int64_t hw, ThreadPool& pool) {
  reorder_any(src, from, dst, to, n, c, hw, pool);
}

void reorder(const uint8_t* src, Layout from, uint8_t* dst, Layout to, int64_t n, int64_t c,
             int64_t hw, ThreadPool& pool) {
  reorder_any(src, from, dst, to, n, c, hw, pool);
}

}  // namespace dlas
