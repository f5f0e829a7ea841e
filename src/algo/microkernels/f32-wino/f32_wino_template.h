// Winograd transforms written once over a "vector" type V with W lanes (a GCC
// vector-extension type, or float with W = 1); each ISA TU instantiates them.
// Everything is in an anonymous namespace so each TU keeps its own copy (an
// AVX-512 instantiation must never be picked by the linker for the AVX2 path).
//
// F(m, 3) computes m outputs of a 1D correlation y_i = sum_k g_k d_{i+k} from
// alpha = m + 2 inputs as y = A^T [(G g) . (B^T d)]; in 2D Y = A^T [U . V] A with
// U = G g G^T, V = B^T d B. Toom-Cook construction at alpha - 1 finite points p_j
// and infinity:
//   A^T[i][j] = p_j^i (j < alpha-1),  A^T[i][alpha-1] = [i == m-1]
//   G[j][k]   = p_j^k / f_j, f_j = prod_{l != j} (p_j - p_l);  G[alpha-1] = (0, 0, 1)
//   B^T       = the unique solution of the bilinear identity given A^T and G (solved
//               exactly over the rationals); a row of B^T may be scaled by s_j when the
//               same row of G is scaled by 1/s_j.
// F(2,3), points 0, 1, -1, inf (Lavin & Gray):
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]
// F(4,3), points 0, 1, -1, 1/2, -1/2, inf. The +-1/2 pair (instead of +-2) keeps every
// entry of A^T within [-1, 1] (powers of 1/2, exact in binary), so the output transform
// does not amplify the GEMM's rounding error by 8 as the +-2 choice does. With row
// scales s = (4, 4, 4, 2, 2, 4):
//   B^T = [1  0 -5  0  4  0]      G = [  1     0     0 ]     A^T = [1 1  1   1     1   0]
//         [0 -1 -1  4  4  0]          [ 1/6   1/6   1/6]           [0 1 -1  1/2  -1/2  0]
//         [0  1 -1 -4  4  0]          [ 1/6  -1/6   1/6]           [0 1  1  1/4   1/4  0]
//         [0 -1 -2  1  2  0]          [-4/3  -2/3  -1/3]           [0 1 -1  1/8  -1/8  1]
//         [0  1 -2 -1  2  0]          [-4/3   2/3  -1/3]
//         [0  1  0 -5  0  4]          [  0     0    1/4]
// (verified exactly over the rationals; the tests check the composition against the
// reference convolution). G lives in winograd_conv.cc (prepare-time, double).
#pragma once

#include <cstddef>

namespace {

template <class V>
inline V wino_load(const float* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof(V));
  return v;
}

template <class V>
inline void wino_store(float* p, V v) {
  __builtin_memcpy(p, &v, sizeof(V));
}

// 1D input transforms t = B^T d (stride-free: arrays of V).
template <class V>
inline void wino_in1d_f2(const V* d, V* t) {
  t[0] = d[0] - d[2];
  t[1] = d[1] + d[2];
  t[2] = d[2] - d[1];
  t[3] = d[1] - d[3];
}

template <class V>
inline void wino_in1d_f4(const V* d, V* t) {
  const V four = V{} + 4.f, two = V{} + 2.f, five = V{} + 5.f;
  t[0] = d[0] - five * d[2] + four * d[4];
  const V a = four * (d[3] + d[4]), b = d[1] + d[2];
  t[1] = a - b;
  const V c = four * (d[4] - d[3]), e = d[1] - d[2];
  t[2] = c + e;
  const V f = two * (d[4] - d[2]), g = d[3] - d[1];
  t[3] = f + g;
  t[4] = f - g;
  t[5] = d[1] - five * d[3] + four * d[5];
}

// 1D output transforms y = A^T m.
template <class V>
inline void wino_out1d_f2(const V* m, V* y) {
  y[0] = m[0] + m[1] + m[2];
  y[1] = m[1] - m[2] - m[3];
}

template <class V>
inline void wino_out1d_f4(const V* m, V* y) {
  const V half = V{} + 0.5f, quarter = V{} + 0.25f, eighth = V{} + 0.125f;
  const V s12 = m[1] + m[2], d12 = m[1] - m[2];
  const V s34 = m[3] + m[4], d34 = m[3] - m[4];
  y[0] = m[0] + s12 + s34;
  y[1] = d12 + half * d34;
  y[2] = s12 + quarter * s34;
  y[3] = d12 + eighth * d34 + m[5];
}

template <class V, int kM>
inline void wino_in1d(const V* d, V* t) {
  if constexpr (kM == 2)
    wino_in1d_f2(d, t);
  else
    wino_in1d_f4(d, t);
}
template <class V, int kM>
inline void wino_out1d(const V* m, V* y) {
  if constexpr (kM == 2)
    wino_out1d_f2(m, y);
  else
    wino_out1d_f4(m, y);
}

// V = B^T d B for W tiles at once (lanes of V).
template <class V, int kM>
inline void wino_input_tile(const float* d, size_t ld, float* v, size_t vs) {
  constexpr int kA = kM + 2;
  V x[kA][kA], t[kA][kA];
  for (int r = 0; r < kA; ++r)
    for (int s = 0; s < kA; ++s) x[r][s] = wino_load<V>(d + (r * kA + s) * ld);
  // Columns: t[.][s] = B^T x[.][s].
  for (int s = 0; s < kA; ++s) {
    V col[kA], out[kA];
    for (int r = 0; r < kA; ++r) col[r] = x[r][s];
    wino_in1d<V, kM>(col, out);
    for (int r = 0; r < kA; ++r) t[r][s] = out[r];
  }
  // Rows: v[i][.] = t[i][.] B.
  for (int i = 0; i < kA; ++i) {
    V out[kA];
    wino_in1d<V, kM>(t[i], out);
    for (int j = 0; j < kA; ++j) wino_store(v + (i * kA + j) * vs, out[j]);
  }
}

// Y = A^T M A, then clamp(Y + bias) for W tiles at once.
template <class V, int kM>
inline void wino_output_tile(const float* mm, size_t ms, float* o, size_t os, float bias, float lo,
                             float hi) {
  constexpr int kA = kM + 2;
  V t[kM][kA];
  for (int s = 0; s < kA; ++s) {
    V col[kA], out[kM];
    for (int r = 0; r < kA; ++r) col[r] = wino_load<V>(mm + (r * kA + s) * ms);
    wino_out1d<V, kM>(col, out);
    for (int i = 0; i < kM; ++i) t[i][s] = out[i];
  }
  const V vb = V{} + bias, vlo = V{} + lo, vhi = V{} + hi;
  for (int i = 0; i < kM; ++i) {
    V out[kM];
    wino_out1d<V, kM>(t[i], out);
    for (int j = 0; j < kM; ++j) {
      V y = out[j] + vb;
      y = y < vlo ? vlo : y;
      y = y > vhi ? vhi : y;
      wino_store(o + (i * kM + j) * os, y);
    }
  }
}

// Whole panels: W lanes at a time, then one lane at a time for the tail.
template <class V, int kW, int kM>
void wino_input(size_t n, const float* d, size_t ld, float* v, size_t vs) {
  size_t j = 0;
  for (; j + kW <= n; j += kW) wino_input_tile<V, kM>(d + j, ld, v + j, vs);
  for (; j < n; ++j) wino_input_tile<float, kM>(d + j, ld, v + j, vs);
}

template <class V, int kW, int kM>
void wino_output(size_t n, const float* mm, size_t ms, float* o, size_t os, float bias, float lo,
                 float hi) {
  size_t j = 0;
  for (; j + kW <= n; j += kW) wino_output_tile<V, kM>(mm + j, ms, o + j, os, bias, lo, hi);
  for (; j < n; ++j) wino_output_tile<float, kM>(mm + j, ms, o + j, os, bias, lo, hi);
}

}  // namespace

// Defines the four kernels of one list entry (f32_wino.inc) for vector type V of W lanes.
#define DLAS_F32_WINO_DEFINE(name, V, W)                                                       \
  void name##_input_f2(size_t n, const float* d, size_t ld, float* v, size_t vs) {             \
    wino_input<V, W, 2>(n, d, ld, v, vs);                                                      \
  }                                                                                            \
  void name##_input_f4(size_t n, const float* d, size_t ld, float* v, size_t vs) {             \
    wino_input<V, W, 4>(n, d, ld, v, vs);                                                      \
  }                                                                                            \
  void name##_output_f2(size_t n, const float* mm, size_t ms, float* o, size_t os, float bias, \
                        float lo, float hi) {                                                  \
    wino_output<V, W, 2>(n, mm, ms, o, os, bias, lo, hi);                                      \
  }                                                                                            \
  void name##_output_f4(size_t n, const float* mm, size_t ms, float* o, size_t os, float bias, \
                        float lo, float hi) {                                                  \
    wino_output<V, W, 4>(n, mm, ms, o, os, bias, lo, hi);                                      \
  }
