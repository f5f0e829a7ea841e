// Whole-file reading (gzip or raw) and the in-memory dataset shared by the loaders.
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "data/data_internal.h"
#include "dlas/core/error.h"

namespace dlas::data::detail {

namespace {

std::vector<uint8_t> read_raw(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  DLAS_CHECK(f, ErrorKind::kInvalidInput, path, ": cannot open (", std::strerror(errno), ")");
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + n);
  const bool err = std::ferror(f);
  std::fclose(f);
  DLAS_CHECK(!err, ErrorKind::kInvalidInput, path, ": read error");
  return bytes;
}

// Inflates a gzip stream (possibly several members, as gzip allows). zlib's own error text is
// kept: "invalid distance too far back", "unexpected end of file".
std::vector<uint8_t> gunzip(const std::vector<uint8_t>& in, const std::string& path) {
  std::vector<uint8_t> out;
  out.reserve(in.size() * 4);
  z_stream zs{};
  DLAS_CHECK(inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK, ErrorKind::kRuntime, "zlib init failed");
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  uint8_t buf[1 << 16];
  int rc = Z_OK;
  for (;;) {
    zs.next_out = buf;
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.insert(out.end(), buf, buf + (sizeof buf - zs.avail_out));
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // next gzip member
      continue;
    }
    if (rc != Z_OK) break;
    if (zs.avail_in == 0 && zs.avail_out != 0) {
      rc = Z_BUF_ERROR;  // input ended inside the stream
      break;
    }
  }
  const std::string msg = zs.msg ? zs.msg : "";
  inflateEnd(&zs);
  if (rc != Z_STREAM_END)
    fail(ErrorKind::kInvalidInput, path, ": corrupt or truncated gzip data after ", out.size(),
         " decompressed bytes", msg.empty() ? "" : " (" + msg + ")");
  return out;
}

}  // namespace

std::vector<uint8_t> read_file_maybe_gz(const std::string& path) {
  DLAS_CHECK(std::filesystem::is_regular_file(path), ErrorKind::kInvalidInput, path,
             ": no such file");
  std::vector<uint8_t> bytes = read_raw(path);
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) return gunzip(bytes, path);
  return bytes;
}

std::string find_file(const std::string& dir, const std::vector<std::string>& names) {
  for (const std::string& n : names)
    for (const char* ext : {"", ".gz"}) {
      const std::filesystem::path p = std::filesystem::path(dir) / (n + ext);
      if (std::filesystem::is_regular_file(p)) return p.string();
    }
  return "";
}

MemoryDataset::MemoryDataset(DatasetInfo info, std::vector<uint8_t> pixels, std::vector<int> labels)
    : info_(std::move(info)), pixels_(std::move(pixels)), labels_(std::move(labels)) {
  record_ = info_.channels * info_.height * info_.width;
  DLAS_CHECK(static_cast<int64_t>(pixels_.size()) == record_ * size(), ErrorKind::kInternal,
             "MemoryDataset: ", pixels_.size(), " bytes for ", size(), " records");
}

int MemoryDataset::label(int64_t i) const {
  DLAS_CHECK(i >= 0 && i < size(), ErrorKind::kInvalidInput, info_.name, ": record ", i,
             " out of range (", size(), " records)");
  return labels_[static_cast<size_t>(i)];
}

void MemoryDataset::image_u8(int64_t i, uint8_t* out) const {
  DLAS_CHECK(i >= 0 && i < size(), ErrorKind::kInvalidInput, info_.name, ": record ", i,
             " out of range (", size(), " records)");
  std::memcpy(out, pixels_.data() + i * record_, static_cast<size_t>(record_));
}

}  // namespace dlas::data::detail
