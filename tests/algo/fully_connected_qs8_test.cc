// The int8 fully-connected layer (PreparedFullyConnectedQs8) and its microkernels (qs8-fc)
// bit for bit against a plain scalar evaluation of the documented contract:
//   acc = sum_kk (x - x_zp) * w (int32), y = clamp(fmaf((float)acc, x_scale * w_scale, bias))
// Every kernel of the list this CPU runs, driven over whole layers by a small tiler; and the
// layer on every supported path: u8 x (zero points 0 and 131, read in place or packed) and
// s8 x, both weight layouts, bias or none, no clamp or Relu, one and two threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "algo/microkernels/f32-vepilogue/f32_vepilogue.h"
#include "algo/microkernels/qs8-fc/qs8_fc.h"
#include "dlas/algo/fully_connected.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct XCase {
  bool x_signed;
  int32_t zp;
};
constexpr XCase kXCases[] = {{false, 0}, {false, 131}, {true, -5}};

// A layer's operands: x [m][k] (bytes of u8 or s8), w [k][n] logically (kept in both
// layouts), per-column scales and bias.
struct Layer {
  int64_t m, k, n;
  XCase xc;
  float x_scale = 0.0173f;
  std::vector<uint8_t> x;
  std::vector<int8_t> w_nk, w_kn;
  std::vector<float> w_scale, bias;
  std::vector<int32_t> acc;  // [m][n], the contract's exact sums

  Layer(int64_t m_, int64_t k_, int64_t n_, XCase xc_) : m(m_), k(k_), n(n_), xc(xc_) {
    std::mt19937 rng(static_cast<uint32_t>(m * 1009 + k * 31 + n * 7 + xc.zp + 300));
    std::uniform_int_distribution<int> xb(0, 255), wb(-127, 127);
    std::uniform_real_distribution<float> sd(0.001f, 0.05f), bd(-20.f, 20.f);
    x.resize(m * k);
    for (uint8_t& v : x) v = static_cast<uint8_t>(xb(rng));
    w_nk.resize(n * k);
    w_kn.resize(k * n);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk) w_kn[kk * n + j] = w_nk[j * k + kk] = wb(rng);
    w_scale.resize(n);
    bias.resize(n);
    for (float& s : w_scale) s = sd(rng);
    for (float& b : bias) b = bd(rng);
    acc.assign(m * n, 0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int32_t s = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const uint8_t b = x[i * k + kk];
          const int32_t xv = xc.x_signed ? int32_t{static_cast<int8_t>(b)} : int32_t{b};
          s += (xv - xc.zp) * w_nk[j * k + kk];
        }
        acc[i * n + j] = s;
      }
  }

  // The contract's y[i][j].
  float want(int64_t i, int64_t j, bool with_bias, float lo, float hi) const {
    const float mult = x_scale * w_scale[j];
    float v = __builtin_fmaf(static_cast<float>(acc[i * n + j]), mult, with_bias ? bias[j] : 0.f);
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
  }
};

// y (m * n values and one guard) against the contract; reports the first mismatches.
void expect_exact(const Layer& l, const std::vector<float>& y, bool with_bias, float lo, float hi,
                  const std::string& what) {
  EXPECT_EQ(y[l.m * l.n], 42.f) << what << ": wrote past y";
  int bad = 0;
  for (int64_t i = 0; i < l.m; ++i)
    for (int64_t j = 0; j < l.n; ++j) {
      const float want = l.want(i, j, with_bias, lo, hi), got = y[i * l.n + j];
      if (std::memcmp(&want, &got, sizeof(float)) != 0 && bad++ < 3)
        ADD_FAILURE() << what << " m=" << l.m << " k=" << l.k << " n=" << l.n
                      << (l.xc.x_signed ? " s8" : " u8") << " zp=" << l.xc.zp
                      << (with_bias ? " bias" : "") << " lo=" << lo << ": y[" << i << "][" << j
                      << "] = " << got << ", want " << want;
    }
}

// Runs kernel u over a whole layer: W packed per panel (from [n][k] for the quad kernels,
// from [k][n] for the pair kernels: both strides of the packer), x packed per the kernel's
// layout, one call per (row block, panel).
void run_kernel(const ukernel::QS8FcUkernel& u, const Layer& l, bool with_bias, float lo, float hi,
                std::vector<float>& y) {
  const int64_t mr = u.mr, nr = u.nr, kq = (l.k + u.kr - 1) / u.kr;
  const int64_t np = (l.n + nr - 1) / nr, zp_u8 = l.xc.x_signed ? l.xc.zp + 128 : l.xc.zp;
  std::vector<uint8_t> wp(np * kq * nr * 4, 0), xp(l.m * kq * 4);
  std::vector<int32_t> init(np * nr, 0);
  std::vector<float> mult(np * nr, 0.f), bias(np * nr, 0.f);
  for (int64_t p = 0; p < np; ++p) {
    const int64_t c0 = p * nr, cols = std::min(nr, l.n - c0);
    if (u.kr == 4)
      ukernel::qs8_fc_pack_w<4>(nr, cols, l.k, l.w_nk.data() + c0 * l.k, l.k, 1,
                                wp.data() + p * kq * nr * 4);
    else
      ukernel::qs8_fc_pack_w<2>(nr, cols, l.k, l.w_kn.data() + c0, 1, l.n,
                                wp.data() + p * kq * nr * 4);
  }
  for (int64_t j = 0; j < l.n; ++j) {
    int32_t sum = 0;
    for (int64_t kk = 0; kk < l.k; ++kk) sum += l.w_nk[j * l.k + kk];
    init[j] = static_cast<int32_t>(-zp_u8 * sum);
    mult[j] = l.x_scale * l.w_scale[j];
    bias[j] = with_bias ? l.bias[j] : 0.f;
  }
  const uint8_t zp_byte = static_cast<uint8_t>(l.xc.zp);
  if (u.kr == 4)
    ukernel::qs8_fc_pack_x<4>(l.m, l.k, l.x.data(), l.xc.x_signed, zp_byte, xp.data());
  else
    ukernel::qs8_fc_pack_x<2>(l.m, l.k, l.x.data(), l.xc.x_signed, zp_byte, xp.data());
  for (int64_t r0 = 0; r0 < l.m; r0 += mr)
    for (int64_t p = 0; p < np; ++p) {
      const int64_t c0 = p * nr;
      const ukernel::QS8FcParams params{init.data() + c0, mult.data() + c0, bias.data() + c0, lo,
                                        hi};
      u.fn(std::min(mr, l.m - r0), std::min(nr, l.n - c0), kq, xp.data() + r0 * kq * 4, kq * 4,
           wp.data() + p * kq * nr * 4, y.data() + r0 * l.n + c0, l.n, params);
    }
}

std::vector<int64_t> sizes(int64_t tile, std::vector<int64_t> fixed) {
  std::vector<int64_t> out;
  for (int64_t v : fixed)
    if (v >= 1) out.push_back(v);
  for (int64_t v : {tile - 1, tile + 3})
    if (v >= 1) out.push_back(v);
  return out;
}

TEST(FullyConnectedQs8, EveryKernelBitExact) {
  for (const ukernel::QS8FcUkernel& u : ukernel::qs8_fc_ukernels()) {
    if (!isa_supported(u.isa)) continue;
    for (int64_t m : sizes(u.mr, {1, 2, 37}))
      for (int64_t k : {1, 3, 4, 5, 96, 130})
        for (int64_t n : sizes(u.nr, {1, 10, 100}))
          for (const XCase& xc : kXCases) {
            const Layer l(m, k, n, xc);
            for (bool relu : {false, true}) {
              const bool with_bias = relu;
              const float lo = relu ? 0.f : -kInf;
              std::vector<float> y(m * n + 1, -1.f);
              y[m * n] = 42.f;
              run_kernel(u, l, with_bias, lo, kInf, y);
              expect_exact(l, y, with_bias, lo, kInf, u.name);
            }
          }
  }
}

TEST(FullyConnectedQs8, EveryPathBitExact) {
  for (Isa isa : supported_isa_levels()) {
    ASSERT_TRUE(PreparedFullyConnectedQs8::available(isa));
    const ukernel::QS8FcUkernel& u = *ukernel::qs8_fc_ukernels_for(isa).front();
    ThreadPool pool1(1), pool2(2);
    for (int64_t m : sizes(u.mr, {1, 2, 37, 70}))
      for (int64_t k : {1, 3, 4, 5, 96, 130})
        for (int64_t n : sizes(u.nr, {1, 10, 100}))
          for (const XCase& xc : kXCases) {
            const Layer l(m, k, n, xc);
            for (bool nk : {true, false})
              for (bool with_bias : {false, true})
                for (bool relu : {false, true}) {
                  const float lo = relu ? 0.f : -kInf;
                  PreparedFullyConnectedQs8 fc(
                      k, n, nk ? l.w_nk.data() : l.w_kn.data(), nk, l.w_scale.data(),
                      with_bias ? l.bias.data() : nullptr, l.x_scale, xc.zp, xc.x_signed,
                      relu ? Epilogue{Activation::kRelu} : Epilogue{}, isa);
                  for (ThreadPool* pool : {&pool1, &pool2}) {
                    std::vector<uint8_t> ws(fc.workspace_bytes(m, pool->threads()) + 64);
                    void* wsp = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
                    std::vector<float> y(m * n + 1, -1.f);
                    y[m * n] = 42.f;
                    fc.run(m, l.x.data(), y.data(), wsp, *pool);
                    expect_exact(l, y, with_bias, lo, kInf,
                                 std::string(isa_name(isa)) + " " + fc.ukernel_name() +
                                     (nk ? " nk" : " kn") +
                                     " threads=" + std::to_string(pool->threads()));
                  }
                }
          }
  }
}

// A GELU after the layer (ConvNeXt's first Linear layer of a block): the exact sums' f32
// value through the path's vector GELU, against the scalar one within a few ulps.
TEST(FullyConnectedQs8, GeluEpilogue) {
  for (Isa isa : supported_isa_levels()) {
    ThreadPool pool(2);
    for (int64_t m : {1, 3, 37})
      for (int64_t n : {10, 100}) {
        const Layer l(m, 96, n, kXCases[1]);
        PreparedFullyConnectedQs8 fc(96, n, l.w_kn.data(), false, l.w_scale.data(), l.bias.data(),
                                     l.x_scale, l.xc.zp, l.xc.x_signed, Epilogue{Activation::kGelu},
                                     isa);
        std::vector<uint8_t> ws(fc.workspace_bytes(m, pool.threads()) + 64);
        void* wsp = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
        std::vector<float> y(m * n + 1, -1.f);
        y[m * n] = 42.f;
        fc.run(m, l.x.data(), y.data(), wsp, pool);
        EXPECT_EQ(y[m * n], 42.f) << "wrote past y";
        int bad = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            float want = l.want(i, j, true, -kInf, kInf);
            ukernel::f32_vepilogue__scalar(1, &want, 0.f, nullptr, Activation::kGelu, 0.f, 0.f);
            const float got = y[i * n + j];
            if (!(std::fabs(got - want) <= 1e-5f * (1.f + std::fabs(want))) && bad++ < 3)
              ADD_FAILURE() << isa_name(isa) << " m=" << m << " n=" << n << ": y[" << i << "][" << j
                            << "] = " << got << ", want " << want;
          }
      }
  }
}

}  // namespace
}  // namespace dlas::test
