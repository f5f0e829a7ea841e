// Tiny dataset files written by the tests: IDX (raw or gzip), CIFAR binary batches, PNG and
// JPEG images, each in a fresh temp folder per test.
#pragma once

// jpeglib.h uses FILE and size_t without including their headers.
#include <cstddef>
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>
#include <jpeglib.h>
#include <png.h>
#include <unistd.h>
#include <zlib.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dlas/core/error.h"
#include "dlas/data/dataset.h"

namespace dlas::test {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

class DataTest : public ::testing::Test {
 protected:
  fs::path dir_;
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / (std::string("dlas_data_") + info->test_suite_name() + "_" +
                                        info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string sub(const std::string& name) {
    const fs::path p = dir_ / name;
    fs::create_directories(p);
    return p.string();
  }
};

inline void write_bytes(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

inline Bytes gzip(const Bytes& raw) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  Bytes out(deflateBound(&zs, raw.size()) + 64);
  zs.next_in = const_cast<Bytef*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

inline void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

// Pixel (i, y, x) of the test images: distinct per record, so order checks are exact.
inline uint8_t test_pixel(int64_t i, int64_t y, int64_t x) {
  return static_cast<uint8_t>((i * 37 + y * 11 + x * 3) & 0xff);
}

inline Bytes idx_images(uint32_t n, uint32_t h, uint32_t w) {
  Bytes b = {0, 0, 0x08, 3};
  put_be32(b, n);
  put_be32(b, h);
  put_be32(b, w);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t y = 0; y < h; ++y)
      for (uint32_t x = 0; x < w; ++x) b.push_back(test_pixel(i, y, x));
  return b;
}

inline Bytes idx_labels(uint32_t n) {
  Bytes b = {0, 0, 0x08, 1};
  put_be32(b, n);
  for (uint32_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>((i * 3) % 10));
  return b;
}

// An MNIST-style folder: train (n_train) and t10k (n_test) images of h x w.
inline void write_idx_dir(const std::string& dir, bool gz, uint32_t n_train = 6,
                          uint32_t n_test = 4, uint32_t h = 4, uint32_t w = 3) {
  const std::string ext = gz ? ".gz" : "";
  const auto put = [&](const std::string& name, const Bytes& b) {
    write_bytes(fs::path(dir) / (name + ext), gz ? gzip(b) : b);
  };
  put("train-images-idx3-ubyte", idx_images(n_train, h, w));
  put("train-labels-idx1-ubyte", idx_labels(n_train));
  put("t10k-images-idx3-ubyte", idx_images(n_test, h, w));
  put("t10k-labels-idx1-ubyte", idx_labels(n_test));
}

// CIFAR records: label bytes then 3 planes of 32x32; pixel = test_pixel(record, c*32+y, x).
inline Bytes cifar_records(int n, int label_bytes, int first = 0) {
  Bytes b;
  for (int i = first; i < first + n; ++i) {
    if (label_bytes == 2) b.push_back(static_cast<uint8_t>(i % 20));  // coarse
    b.push_back(static_cast<uint8_t>((i * 7) % (label_bytes == 2 ? 100 : 10)));
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 32; ++x) b.push_back(test_pixel(i, c * 32 + y, x));
  }
  return b;
}

// channels 1 (grey), 3 (RGB) or 4 (RGBA), pixels interleaved.
inline void write_png(const fs::path& p, int w, int h, int channels, const Bytes& hwc) {
  fs::create_directories(p.parent_path());
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = static_cast<png_uint_32>(w);
  img.height = static_cast<png_uint_32>(h);
  img.format = channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  ASSERT_TRUE(png_image_write_to_file(&img, p.c_str(), 0, hwc.data(), 0, nullptr)) << img.message;
}

inline void write_jpeg(const fs::path& p, int w, int h, int channels, const Bytes& hwc) {
  fs::create_directories(p.parent_path());
  std::FILE* f = std::fopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = channels;
  c.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 98, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(hwc.data()) + size_t(c.next_scanline) * w * channels;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::fclose(f);
}

inline Bytes read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

// Expects `fn` to throw kInvalidInput whose message contains every one of `parts`.
template <class Fn>
void expect_invalid(Fn&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning '" << parts.front() << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message '" << e.what() << "' lacks '" << p << "'";
  }
}

}  // namespace dlas::test
