// MNIST / Fashion-MNIST IDX files (http://yann.lecun.com/exdb/mnist/ format), gzip'd or raw.
// Header: 0x00 0x00 <type 0x08 = u8> <ndim>, then ndim big-endian u32 sizes, then the data.
#include <filesystem>

#include "data/data_internal.h"
#include "dlas/core/error.h"

namespace dlas::data::detail {

namespace {

uint32_t be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

struct IdxFile {
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> dims;
  size_t offset = 0;  // start of the data
};

// Reads and validates the header; `ndim` is 3 for images, 1 for labels; `what` names a record.
IdxFile read_idx(const std::string& path, uint8_t ndim, const char* what) {
  IdxFile f;
  f.bytes = read_file_maybe_gz(path);
  const std::vector<uint8_t>& b = f.bytes;
  DLAS_CHECK(b.size() >= 4, ErrorKind::kInvalidInput, path, ": truncated IDX header (", b.size(),
             " bytes)");
  DLAS_CHECK(b[0] == 0 && b[1] == 0, ErrorKind::kInvalidInput, path,
             ": not an IDX file (bad magic)");
  DLAS_CHECK(b[2] == 0x08, ErrorKind::kInvalidInput, path, ": IDX element type 0x", std::hex,
             int(b[2]), " is not u8 (0x08)");
  DLAS_CHECK(b[3] == ndim, ErrorKind::kInvalidInput, path, ": IDX file has ", int(b[3]),
             " dimensions, expected ", int(ndim), " for ", what, "s");
  f.offset = 4 + 4 * size_t(ndim);
  DLAS_CHECK(b.size() >= f.offset, ErrorKind::kInvalidInput, path, ": truncated IDX header (",
             b.size(), " bytes)");
  for (int d = 0; d < ndim; ++d) f.dims.push_back(be32(b.data() + 4 + 4 * d));
  size_t record = 1;
  for (int d = 1; d < ndim; ++d) {
    DLAS_CHECK(f.dims[d] >= 1 && f.dims[d] <= 4096, ErrorKind::kInvalidInput, path,
               ": implausible ", what, " dimension ", f.dims[d]);
    record *= f.dims[d];
  }
  const size_t have = b.size() - f.offset;
  const size_t count = f.dims[0];
  if (have < count * record)
    fail(ErrorKind::kInvalidInput, path, ": truncated at ", what, " ", have / record,
         " (header says ", count, " ", what, "s, data holds ", have, " of ", count * record,
         " bytes)");
  DLAS_CHECK(have == count * record, ErrorKind::kInvalidInput, path, ": ", have - count * record,
             " bytes after the last ", what, " (header says ", count, ")");
  return f;
}

const std::vector<std::string> kFashionClasses = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                  "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                  "Bag",         "Ankle boot"};

}  // namespace

std::unique_ptr<Dataset> open_idx(const std::string& name, const std::string& dir, Split split) {
  DLAS_CHECK(std::filesystem::is_directory(dir), ErrorKind::kInvalidInput, name, ": directory '",
             dir, "' does not exist");
  const std::string pfx = split == Split::kTrain ? "train" : "t10k";
  const std::string img_path =
      find_file(dir, {pfx + "-images-idx3-ubyte", pfx + "-images.idx3-ubyte"});
  const std::string lbl_path =
      find_file(dir, {pfx + "-labels-idx1-ubyte", pfx + "-labels.idx1-ubyte"});
  DLAS_CHECK(!img_path.empty(), ErrorKind::kInvalidInput, dir, "/", pfx,
             "-images-idx3-ubyte[.gz]: no such file (", name, " ", split_name(split), " split)");
  DLAS_CHECK(!lbl_path.empty(), ErrorKind::kInvalidInput, dir, "/", pfx,
             "-labels-idx1-ubyte[.gz]: no such file (", name, " ", split_name(split), " split)");
  IdxFile images = read_idx(img_path, 3, "image");
  IdxFile labels = read_idx(lbl_path, 1, "label");
  DLAS_CHECK(images.dims[0] == labels.dims[0], ErrorKind::kInvalidInput, lbl_path, ": ",
             labels.dims[0], " labels for ", images.dims[0], " images in ", img_path);
  const int classes = 10;
  std::vector<int> lbl(labels.dims[0]);
  for (size_t i = 0; i < lbl.size(); ++i) {
    lbl[i] = labels.bytes[labels.offset + i];
    DLAS_CHECK(lbl[i] < classes, ErrorKind::kInvalidInput, lbl_path, ": label ", lbl[i],
               " of record ", i, " is not a class 0..", classes - 1);
  }
  DatasetInfo info;
  info.name = name;
  info.source = dir;
  info.channels = 1;
  info.height = images.dims[1];
  info.width = images.dims[2];
  info.classes = classes;
  if (name == "fashion-mnist")
    info.class_names = kFashionClasses;
  else
    for (int c = 0; c < classes; ++c) info.class_names.push_back(std::to_string(c));
  std::vector<uint8_t> pixels = std::move(images.bytes);
  pixels.erase(pixels.begin(), pixels.begin() + static_cast<std::ptrdiff_t>(images.offset));
  return std::make_unique<MemoryDataset>(std::move(info), std::move(pixels), std::move(lbl));
}

}  // namespace dlas::data::detail
