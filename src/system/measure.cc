#include "dlas/system/measure.h"

#include <algorithm>
#include <random>

namespace dlas {

Tensor random_input(const ValueInfo& vi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor f(DType::kF32, vi.shape);
  float* p = f.data<float>();
  if (is_float(vi.dtype)) {
    std::normal_distribution<float> dist(0.f, 1.f);
    for (int64_t i = 0; i < f.numel(); ++i) p[i] = dist(rng);
  } else {
    std::uniform_int_distribution<int> dist(0, 9);
    for (int64_t i = 0; i < f.numel(); ++i) p[i] = static_cast<float>(dist(rng));
  }
  return f.cast(vi.dtype);
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace dlas
