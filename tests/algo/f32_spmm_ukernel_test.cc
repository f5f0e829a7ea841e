// Every f32 SpMM microkernel (f32_spmm.inc, plus the AVX-512 template logic compiled for
// AVX2) against the scalar reference of the contract: random masks with empty rows,
// fully dense rows, all-zero and single-nonzero matrices; pixel counts around the tile
// and its tails; the reduction split in two accumulated chunks; input row strides wider than the
// pixels; the fused clamp; and no store outside the `rows` x `pixels` output window.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "algo/microkernels/f32-spmm/f32_spmm.h"
#include "algo/spmm_avx512_logic.h"

namespace dlas::test {
namespace {

using ukernel::F32SpmmUkernel;

enum class Mask { kRandom50, kRandom90, kEmptyAndDenseRows, kAllZero, kSingle };

std::vector<float> make_weights(int64_t rows, int64_t cols, Mask mask, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (float& v : w) v = dist(rng);
  const double keep = mask == Mask::kRandom50 ? 0.5 : 0.1;
  std::bernoulli_distribution kept(keep);
  for (int64_t k = 0; k < rows; ++k)
    for (int64_t r = 0; r < cols; ++r) {
      float& v = w[static_cast<size_t>(k * cols + r)];
      switch (mask) {
        case Mask::kRandom50:
        case Mask::kRandom90:
          if (!kept(rng)) v = 0.f;
          break;
        case Mask::kEmptyAndDenseRows:  // row k%3: 0 empty, 1 fully dense, 2 random 90%
          if (k % 3 == 0 || (k % 3 == 2 && !kept(rng))) v = 0.f;
          break;
        case Mask::kAllZero:
          v = 0.f;
          break;
        case Mask::kSingle:
          if (k != rows / 2 || r != cols - 1) v = 0.f;
          break;
      }
    }
  return w;
}

void check_kernel(const F32SpmmUkernel& uk) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  const size_t mr = static_cast<size_t>(uk.mr()), lanes = static_cast<size_t>(uk.lanes);
  // Tails: whole-vector remainders of every count (one narrower tile), 4-lane, single pixels.
  const size_t pixel_counts[] = {1,  3,      lanes > 1 ? lanes - 1 : 2, lanes + 5,      3 * lanes,
                                 mr, mr + 1, mr + 3 * lanes + 1,        2 * mr - lanes, 2 * mr + 5,
                                 67};
  const int64_t row_counts[] = {1, 5, 8, 13};
  const int64_t col_counts[] = {4, 7, 33};
  const Mask masks[] = {Mask::kRandom50, Mask::kRandom90, Mask::kEmptyAndDenseRows, Mask::kAllZero,
                        Mask::kSingle};
  const float sentinel = 12345.f;
  int cases = 0;
  for (Mask mask : masks)
    for (int64_t rows : row_counts)
      for (int64_t cols : col_counts)
        for (size_t pixels : pixel_counts) {
          const size_t in_stride = pixels + 3, out_stride = pixels + 2;
          std::vector<float> w = make_weights(rows, cols, mask, rng);
          std::vector<float> bias(static_cast<size_t>(rows)), in(cols * in_stride);
          for (float& v : bias) v = dist(rng);
          for (float& v : in) v = dist(rng);
          // The lanes past `pixels` of each input row are NaN: a kernel that reads them and
          // stores the result is caught (reads past in_stride * cols would be out of bounds).
          for (int64_t r = 0; r < cols; ++r)
            for (size_t p = pixels; p < in_stride; ++p)
              in[r * in_stride + p] = std::numeric_limits<float>::quiet_NaN();
          const float lo =
              mask == Mask::kRandom50 ? -0.5f : -std::numeric_limits<float>::infinity();
          const float hi = mask == Mask::kRandom50 ? 0.75f : std::numeric_limits<float>::infinity();
          const SparseMatrix m = encode_sparse(w.data(), rows, cols, SparseBlock{uk.br, uk.bc});
          const ukernel::F32SpmmPacked pk =
              ukernel::pack_f32_spmm(m, bias.data(), static_cast<int64_t>(in_stride));
          std::vector<float> got((rows + 1) * out_stride, sentinel);
          uk.fn(pixels, static_cast<size_t>(rows), in.data(), in_stride * sizeof(float),
                pk.w.data(), pk.dmap.data(), pk.nnz.data(), got.data(), out_stride, lo, hi, false);
          // The same reduction in two chunks (columns [0, ca) with the bias, then [ca, cols)
          // accumulated onto the stored sums, clamped only at the end).
          std::vector<float> chunked((rows + 1) * out_stride, sentinel);
          const int64_t ca = cols / 2;
          const bool split = ca >= uk.bc && cols - ca >= uk.bc;
          if (split) {
            const float inf = std::numeric_limits<float>::infinity();
            std::vector<float> wa(static_cast<size_t>(rows * ca)),
                wb(static_cast<size_t>(rows * (cols - ca)));
            for (int64_t k = 0; k < rows; ++k)
              for (int64_t r = 0; r < cols; ++r)
                (r < ca ? wa[k * ca + r] : wb[k * (cols - ca) + r - ca]) = w[k * cols + r];
            const auto pa = ukernel::pack_f32_spmm(
                encode_sparse(wa.data(), rows, ca, SparseBlock{uk.br, uk.bc}), bias.data(),
                static_cast<int64_t>(in_stride));
            const auto pb = ukernel::pack_f32_spmm(
                encode_sparse(wb.data(), rows, cols - ca, SparseBlock{uk.br, uk.bc}), nullptr,
                static_cast<int64_t>(in_stride));
            uk.fn(pixels, static_cast<size_t>(rows), in.data(), in_stride * sizeof(float),
                  pa.w.data(), pa.dmap.data(), pa.nnz.data(), chunked.data(), out_stride, -inf, inf,
                  false);
            uk.fn(pixels, static_cast<size_t>(rows), in.data() + ca * in_stride,
                  in_stride * sizeof(float), pb.w.data(), pb.dmap.data(), pb.nnz.data(),
                  chunked.data(), out_stride, lo, hi, true);
          }
          std::vector<float> want((rows + 1) * out_stride, sentinel);
          ukernel::f32_spmm_reference(pixels, static_cast<size_t>(rows), static_cast<size_t>(cols),
                                      in.data(), in_stride, w.data(), bias.data(), want.data(),
                                      out_stride, lo, hi);
          int bad = 0;
          for (int64_t k = 0; k <= rows; ++k)
            for (size_t p = 0; p < out_stride; ++p) {
              const size_t i = k * out_stride + p;
              double mag = k < rows ? std::fabs(bias[k]) : 0.0;
              for (int64_t r = 0; k < rows && r < cols; ++r)
                mag += std::fabs(w[k * cols + r] * (p < pixels ? in[r * in_stride + p] : 0.f));
              const double tol = 4 * 1.19e-7 * std::sqrt((double)cols) * mag + 1e-6;
              const bool inside = k < rows && p < pixels;
              const bool ok = inside ? std::fabs(got[i] - want[i]) <= tol : got[i] == sentinel;
              const bool ok2 = !split || (inside ? std::fabs(chunked[i] - want[i]) <= tol
                                                 : chunked[i] == sentinel);
              if ((!ok || !ok2) && bad++ < 3)
                ADD_FAILURE() << uk.name << " mask " << static_cast<int>(mask) << " rows " << rows
                              << " cols " << cols << " pixels " << pixels << ": out[" << k << "]["
                              << p << "] got " << got[i] << " chunked " << chunked[i] << " want "
                              << want[i];
            }
          ++cases;
        }
  EXPECT_GT(cases, 0);
}

// The rows entry (BC = 1 kernels): out_rows pixel rows of nvr vectors, input and output
// rows at their own pitches; 2-D tiles and their remainders, accumulate and clamp.
void check_rows(const F32SpmmUkernel& uk) {
  if (!uk.rows_fn) {
    EXPECT_NE(uk.bc, 1) << uk.name;
    return;
  }
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  const size_t lanes = static_cast<size_t>(uk.lanes);
  const float sentinel = 777.f, inf = std::numeric_limits<float>::infinity();
  for (Mask mask : {Mask::kRandom50, Mask::kEmptyAndDenseRows, Mask::kSingle})
    for (int64_t rows : {5, 13})
      for (size_t nvr : {1, 2, 3, 4})
        for (size_t out_rows : {1, 3, 5, 9}) {
          const int64_t cols = 11;
          const size_t px = nvr * lanes, in_row = px + 3, out_row = px + 1;
          const size_t plane_in = out_rows * in_row, plane_out = out_rows * out_row;
          std::vector<float> w = make_weights(rows, cols, mask, rng), bias(rows),
                             in(cols * plane_in);
          for (float& v : bias) v = dist(rng);
          for (float& v : in) v = dist(rng);
          const auto pk = ukernel::pack_f32_spmm(encode_sparse(w.data(), rows, cols, {uk.br, 1}),
                                                 bias.data(), static_cast<int64_t>(plane_in));
          std::vector<float> got((rows + 1) * plane_out, sentinel), twice = got;
          const float lo = -0.5f, hi = 0.75f;
          uk.rows_fn(out_rows, nvr, static_cast<size_t>(rows), in.data(), in_row * 4, pk.w.data(),
                     pk.dmap.data(), pk.nnz.data(), got.data(), out_row, plane_out, lo, hi, false);
          // Accumulate onto a stored zero-bias pass of the same product: bias + 2 * sum.
          const auto pz = ukernel::pack_f32_spmm(encode_sparse(w.data(), rows, cols, {uk.br, 1}),
                                                 nullptr, static_cast<int64_t>(plane_in));
          uk.rows_fn(out_rows, nvr, static_cast<size_t>(rows), in.data(), in_row * 4, pz.w.data(),
                     pz.dmap.data(), pz.nnz.data(), twice.data(), out_row, plane_out, -inf, inf,
                     false);
          uk.rows_fn(out_rows, nvr, static_cast<size_t>(rows), in.data(), in_row * 4, pk.w.data(),
                     pk.dmap.data(), pk.nnz.data(), twice.data(), out_row, plane_out, -inf, inf,
                     true);
          int bad = 0;
          for (int64_t k = 0; k <= rows; ++k)
            for (size_t y = 0; y < out_rows; ++y)
              for (size_t x = 0; x < out_row; ++x) {
                const size_t i = k * plane_out + y * out_row + x;
                const bool inside = k < rows && x < px;
                double sum = 0, mag = inside ? std::fabs(bias[k]) : 0;
                for (int64_t r = 0; inside && r < cols; ++r) {
                  const double t = w[k * cols + r] * in[r * plane_in + y * in_row + x];
                  sum += t, mag += std::fabs(t);
                }
                const double b = inside ? bias[k] : 0, one = b + sum, two = b + 2 * sum;
                const double want = one < lo ? lo : one > hi ? hi : one;
                const double tol = 8 * 1.19e-7 * std::sqrt((double)cols) * mag + 1e-6;
                const bool ok =
                    inside ? std::fabs(got[i] - want) <= tol && std::fabs(twice[i] - two) <= 2 * tol
                           : got[i] == sentinel && twice[i] == sentinel;
                if (!ok && bad++ < 3)
                  ADD_FAILURE() << uk.name << " rows: nvr " << nvr << " out_rows " << out_rows
                                << " k " << k << " y " << y << " x " << x << " got " << got[i]
                                << " want " << want << " twice " << twice[i] << " want " << two;
              }
        }
}

TEST(F32SpmmUkernelTest, RowsEntryMatchesTheReference) {
  for (const F32SpmmUkernel& uk : ukernel::f32_spmm_ukernels())
    if (isa_supported(uk.isa)) check_rows(uk);
  if (isa_supported(Isa::kAvx2))
    for (const F32SpmmUkernel& uk : avx512_logic_spmm_ukernels()) check_rows(uk);
}

TEST(F32SpmmUkernelTest, EveryKernelMatchesTheReference) {
  int tested = 0;
  for (const F32SpmmUkernel& uk : ukernel::f32_spmm_ukernels()) {
    if (!isa_supported(uk.isa)) continue;
    SCOPED_TRACE(uk.name);
    check_kernel(uk);
    ++tested;
  }
  EXPECT_GT(tested, 0);
}

TEST(F32SpmmUkernelTest, Avx512LogicUnderAvx2) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  ASSERT_FALSE(avx512_logic_spmm_ukernels().empty());
  for (const F32SpmmUkernel& uk : avx512_logic_spmm_ukernels()) {
    SCOPED_TRACE(uk.name);
    check_kernel(uk);
  }
}

TEST(F32SpmmUkernelTest, KernelLookupByBlockAndVectors) {
  for (Isa isa : supported_isas()) {
    for (SparseBlock b :
         {SparseBlock{1, 1}, SparseBlock{4, 1}, SparseBlock{8, 1}, SparseBlock{1, 4}})
      for (int nv : {1, 2, 4, 8}) {
        const F32SpmmUkernel* uk = ukernel::find_f32_spmm(isa, b, nv);
        ASSERT_NE(uk, nullptr);
        EXPECT_EQ(uk->br, b.rows);
        EXPECT_EQ(uk->bc, b.cols);
        EXPECT_LE(uk->isa, isa);
      }
    EXPECT_EQ(ukernel::find_f32_spmm(isa, SparseBlock{3, 3}, 4), nullptr);
  }
  // Most vectors <= the request; the fewest when none fits.
  EXPECT_EQ(ukernel::find_f32_spmm(Isa::kScalar, {1, 1}, 1)->nv, 4);
  EXPECT_EQ(ukernel::find_f32_spmm(Isa::kAvx2, {1, 1}, 2)->nv, 2);
  EXPECT_EQ(ukernel::find_f32_spmm(Isa::kAvx2, {1, 1}, 1)->nv, 2);
  EXPECT_EQ(ukernel::find_f32_spmm(Isa::kAvx2, {4, 1}, 4)->nv, 2);
}

TEST(F32SpmmUkernelTest, PackMovesEdgeBlocksInside) {
  // 1x4 blocks over 6 input rows: the block of rows 4..7 must start at row 2 instead.
  std::vector<float> w = {0, 0, 0, 0, 3, 5};
  const SparseMatrix m = encode_sparse(w.data(), 1, 6, {1, 4});
  const ukernel::F32SpmmPacked pk = ukernel::pack_f32_spmm(m, nullptr, 10);
  ASSERT_EQ(pk.dmap.size(), 1u);
  EXPECT_EQ(pk.dmap[0], 2 * 10 * 4);
  EXPECT_EQ(pk.w, (std::vector<float>{0, 0, 0, 3, 5}));  // bias, then rows 2..5
}

}  // namespace
}  // namespace dlas::test
