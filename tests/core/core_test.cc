#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "dlas/core/dtype.h"
#include "dlas/core/npy.h"
#include "dlas/core/tensor.h"

namespace dlas {
namespace {

TEST(CoreTensor, AlignedZeroedStorage) {
  for (DType t : kAllDTypes) {
    Tensor x(t, {3, 5, 7});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(x.raw()) % kTensorAlignment, 0u) << dtype_name(t);
    EXPECT_EQ(x.numel(), 105);
    EXPECT_EQ(x.nbytes(), 105 * dtype_size(t));
    for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(x.get_as_double(i), 0.0);
  }
}

TEST(CoreTensor, ShallowCopyDeepClone) {
  Tensor a = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor b = a;
  Tensor c = a.clone();
  b.data<float>()[0] = 9;
  EXPECT_EQ(a.data<float>()[0], 9);
  EXPECT_EQ(c.data<float>()[0], 1);
  Tensor r = a.reshaped({4});
  EXPECT_EQ(r.shape(), Shape({4}));
  EXPECT_EQ(r.data<float>()[3], 4);
  EXPECT_THROW(a.reshaped({3}), Error);
}

TEST(CoreTensor, TypedAccessChecksDType) {
  Tensor a(DType::kS64, {2});
  EXPECT_THROW(a.data<float>(), Error);
  EXPECT_NO_THROW(a.data<int64_t>());
  Tensor u;
  EXPECT_FALSE(u.defined());
  EXPECT_THROW(u.data<float>(), Error);
}

TEST(CoreTensor, RejectsNegativeAndOverflowingShapes) {
  EXPECT_THROW(Tensor(DType::kF32, {2, -1}), Error);
  EXPECT_THROW(Tensor(DType::kF32, {int64_t{1} << 40, int64_t{1} << 40}), Error);
  EXPECT_EQ(Tensor(DType::kF32, {}).numel(), 1);
  EXPECT_EQ(Tensor(DType::kF32, {0, 3}).numel(), 0);
}

TEST(CoreTensor, CastRoundTrips) {
  Tensor a = Tensor::from_vector<float>({5}, {-2.75f, -0.5f, 0.f, 1.5f, 100.25f});
  Tensor s = a.cast(DType::kS32);
  EXPECT_EQ(s.to_int64_vector(), (std::vector<int64_t>{-2, 0, 0, 1, 100}));
  Tensor h = a.cast(DType::kF16).cast(DType::kF32);
  EXPECT_EQ(h.to_float_vector(), a.to_float_vector());  // all exactly representable in f16
  Tensor big = Tensor::from_vector<int64_t>({2}, {int64_t{1} << 40, -3});
  EXPECT_EQ(big.cast(DType::kS64).to_int64_vector(), big.to_int64_vector());
  EXPECT_EQ(big.cast(DType::kS8).to_int64_vector(), (std::vector<int64_t>{0, -3}));
}

TEST(CoreDType, Float16RoundToNearestEven) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.f), 0x7c00);  // rounds up to infinity
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::nanf("")))));
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (zero)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Every f16 value round-trips exactly.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
  }
}

TEST(CoreDType, BFloat16) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
}

TEST(CoreDType, NamesAndOnnxCodes) {
  for (DType t : kAllDTypes) {
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
    EXPECT_EQ(dtype_from_onnx(dtype_to_onnx(t)), t);
  }
  EXPECT_FALSE(dtype_from_onnx(11).has_value());  // DOUBLE
  EXPECT_FALSE(dtype_from_name("f64").has_value());
}

class CoreNpy : public ::testing::Test {
 protected:
  std::filesystem::path dir_ = std::filesystem::temp_directory_path() /
                               ("dlas_npy_test_" + std::to_string(::getpid()) + "_" +
                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
};

TEST_F(CoreNpy, RoundTripsEveryDType) {
  for (DType t : kAllDTypes) {
    Tensor a(t, {2, 3, 4});
    for (int64_t i = 0; i < a.numel(); ++i)
      std::memcpy(static_cast<char*>(a.raw()) + i * dtype_size(t), &i, dtype_size(t));
    if (t == DType::kBF16) a = Tensor::from_vector<float>({2}, {1.5f, -2.f}).cast(DType::kBF16);
    const std::string path = (dir_ / "a.npy").string();
    write_npy(path, a);
    Tensor b = read_npy(path);
    if (t == DType::kBF16) {
      EXPECT_EQ(b.dtype(), DType::kF32);  // NumPy has no bfloat16
      EXPECT_EQ(b.to_float_vector(), a.to_float_vector());
      continue;
    }
    ASSERT_EQ(b.dtype(), t);
    ASSERT_EQ(b.shape(), a.shape());
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << dtype_name(t);
  }
}

TEST_F(CoreNpy, ScalarAndOneDimShapes) {
  for (Shape s : {Shape{}, Shape{5}, Shape{0, 3}}) {
    const std::string bytes = serialize_npy(Tensor(DType::kF32, s));
    EXPECT_EQ(bytes.find('\n') + 1, bytes.size() - static_cast<size_t>(shape_numel(s)) * 4);
    EXPECT_EQ((bytes.size() - static_cast<size_t>(shape_numel(s)) * 4) % 64, 0u);
    EXPECT_EQ(parse_npy(bytes, "x").shape(), s);
  }
}

TEST_F(CoreNpy, ReadsFloat64AndBoolAsSupportedTypes) {
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
  std::string bytes =
      std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  double v[2] = {1.25, -3.5};
  bytes.append(reinterpret_cast<const char*>(v), sizeof v);
  Tensor t = parse_npy(bytes, "f8");
  EXPECT_EQ(t.dtype(), DType::kF32);
  EXPECT_EQ(t.to_float_vector(), (std::vector<float>{1.25f, -3.5f}));
}

TEST_F(CoreNpy, BadFilesGiveInvalidInput) {
  const std::string good = serialize_npy(Tensor(DType::kF32, {4, 4}));
  auto expect_kind = [](const std::string& bytes, ErrorKind kind) {
    try {
      parse_npy(bytes, "bad.npy");
      ADD_FAILURE() << "no error for " << bytes.size() << " bytes";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.npy"), std::string::npos) << e.what();
    }
  };
  for (size_t cut : {0ul, 5ul, 9ul, 30ul, good.size() - 1})
    expect_kind(good.substr(0, cut), ErrorKind::kInvalidInput);
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  expect_kind(fortran, ErrorKind::kUnsupported);
  std::string complex = good;
  complex.replace(complex.find("<f4"), 3, "<c8");
  expect_kind(complex, ErrorKind::kUnsupported);
  std::string bad_shape = good;
  bad_shape.replace(bad_shape.find("(4, 4)"), 6, "(4, -4)");
  expect_kind(bad_shape, ErrorKind::kInvalidInput);
  try {
    read_npy((dir_ / "missing.npy").string());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
  }
}

TEST_F(CoreNpy, AtomicWriteLeavesNoPartialFile) {
  const auto target = dir_ / "no_such_dir" / "x.npy";
  EXPECT_THROW(write_npy(target.string(), Tensor(DType::kF32, {2})), Error);
  EXPECT_FALSE(std::filesystem::exists(target));
  write_npy((dir_ / "ok.npy").string(), Tensor(DType::kF32, {2}));
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);  // no temporary left behind
}

}  // namespace
}  // namespace dlas
