// JPEG (libjpeg-turbo) and PNG (libpng's simplified API) decoding to 8-bit grey or RGB.
// libjpeg reports errors through a callback that must not return; it longjmps back to the
// decode frame, which holds no C++ objects with destructors (the output lives in the
// caller's frame). Corrupt-data warnings (a truncated file, bad Huffman codes) are errors here:
// libjpeg would otherwise fill the missing part with grey and carry on.

// jpeglib.h uses FILE and size_t without including their headers.
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include <jpeglib.h>
#include <png.h>

#include "data/data_internal.h"
#include "dlas/core/error.h"

namespace dlas::data::detail {

namespace {

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level < 0) jpeg_on_error(cinfo);  // a warning: corrupt or truncated data
}

// Returns false with err->message set on failure. header_only: stop after the header.
bool jpeg_decode(const uint8_t* data, size_t size, bool header_only, DecodedImage* out,
                 JpegError* err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = jpeg_on_error;
  err->mgr.emit_message = jpeg_on_message;
  if (setjmp(err->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  out->width = static_cast<int>(cinfo.image_width);
  out->height = static_cast<int>(cinfo.image_height);
  out->channels = cinfo.num_components == 1 ? 1 : 3;
  if (header_only) {
    jpeg_destroy_decompress(&cinfo);
    return true;
  }
  jpeg_start_decompress(&cinfo);
  const size_t stride = size_t(cinfo.output_width) * size_t(cinfo.output_components);
  out->channels = cinfo.output_components;
  out->hwc.resize(stride * cinfo.output_height);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->hwc.data() + stride * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

DecodedImage decode(const std::vector<uint8_t>& bytes, const std::string& path, bool header_only) {
  DecodedImage img;
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff) {
    JpegError err;
    std::memset(err.message, 0, sizeof err.message);
    if (!jpeg_decode(bytes.data(), bytes.size(), header_only, &img, &err))
      fail(ErrorKind::kInvalidInput, path, ": corrupt JPEG (", err.message, ")");
  } else if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) {
    png_image png;
    std::memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()))
      fail(ErrorKind::kInvalidInput, path, ": corrupt PNG (", png.message, ")");
    const bool color = (png.format & PNG_FORMAT_FLAG_COLOR) != 0;
    img.width = static_cast<int>(png.width);
    img.height = static_cast<int>(png.height);
    img.channels = color ? 3 : 1;
    if (header_only) {
      png_image_free(&png);
      return img;
    }
    // No alpha in the output format: libpng composites transparent pixels onto black.
    png.format = color ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    img.hwc.resize(PNG_IMAGE_SIZE(png));
    if (!png_image_finish_read(&png, nullptr, img.hwc.data(), 0, nullptr))
      fail(ErrorKind::kInvalidInput, path, ": corrupt PNG (", png.message, ")");
  } else {
    fail(ErrorKind::kInvalidInput, path, ": neither a JPEG nor a PNG file (bad magic)");
  }
  DLAS_CHECK(img.width > 0 && img.height > 0 && img.width <= 65535 && img.height <= 65535,
             ErrorKind::kInvalidInput, path, ": implausible image size ", img.width, "x",
             img.height);
  return img;
}

}  // namespace

DecodedImage decode_image(const std::vector<uint8_t>& bytes, const std::string& path) {
  return decode(bytes, path, false);
}

DecodedImage probe_image(const std::vector<uint8_t>& bytes, const std::string& path) {
  return decode(bytes, path, true);
}

}  // namespace dlas::data::detail
