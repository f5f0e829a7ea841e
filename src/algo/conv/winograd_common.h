// The Winograd weight transform both f32 winograd implementations share (NCHW:
// winograd_f32.cc; blocked layouts: winograd_nchwc_f32.cc): U = G g G^T in double, with G
// for F(2,3) and F(4,3) scaled as f32_wino_template.h's B^T rows.
#pragma once

#include <cstdint>
#include <vector>

namespace dlas::winograd_detail {

inline constexpr double kG2[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
inline constexpr double kG4[6][3] = {{1, 0, 0},
                                     {1. / 6, 1. / 6, 1. / 6},
                                     {1. / 6, -1. / 6, 1. / 6},
                                     {-4. / 3, -2. / 3, -1. / 3},
                                     {-4. / 3, 2. / 3, -1. / 3},
                                     {0, 0, .25}};

// U[xi][k][c] (xi = r * alpha + s, alpha = m + 2) of F(m x m, 3 x 3) from g[k][c][3][3].
inline std::vector<float> transform_weights(const float* w, int64_t k_count, int64_t c_count,
                                            int64_t m) {
  const int64_t alpha = m + 2;
  const double* g = m == 2 ? &kG2[0][0] : &kG4[0][0];
  std::vector<float> ut(static_cast<size_t>(alpha * alpha * k_count * c_count));
  for (int64_t k = 0; k < k_count; ++k)
    for (int64_t c = 0; c < c_count; ++c) {
      const float* f = w + (k * c_count + c) * 9;
      double t[6][3];  // G g
      for (int64_t i = 0; i < alpha; ++i)
        for (int j = 0; j < 3; ++j) {
          double s = 0;
          for (int r = 0; r < 3; ++r) s += g[i * 3 + r] * f[r * 3 + j];
          t[i][j] = s;
        }
      for (int64_t i = 0; i < alpha; ++i)
        for (int64_t j = 0; j < alpha; ++j) {
          double s = 0;
          for (int r = 0; r < 3; ++r) s += t[i][r] * g[j * 3 + r];
          ut[static_cast<size_t>(((i * alpha + j) * k_count + k) * c_count + c)] =
              static_cast<float>(s);
        }
    }
  return ut;
}

}  // namespace dlas::winograd_detail
