// CIFAR-10 / CIFAR-100 binary batches (https://www.cs.toronto.edu/~kriz/cifar.html):
// CIFAR-10 records are <label u8><3072 bytes R,G,B planes of 32x32>, train in
// data_batch_1..5.bin, test in test_batch.bin; CIFAR-100 records carry <coarse><fine> labels
// (the fine one is used), train.bin / test.bin. DIR may also be the folder holding the
// archive's cifar-10-batches-bin / cifar-100-binary.
#include <filesystem>

#include "data/data_internal.h"
#include "dlas/core/error.h"

namespace dlas::data::detail {

namespace {

constexpr int64_t kSide = 32, kChannels = 3, kPixels = kChannels * kSide * kSide;

std::vector<std::string> read_names(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_maybe_gz(path);
  std::vector<std::string> names;
  std::string line;
  for (size_t i = 0; i <= bytes.size(); ++i) {
    if (i < bytes.size() && bytes[i] != '\n') {
      line += static_cast<char>(bytes[i]);
      continue;
    }
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) names.push_back(line);
    line.clear();
  }
  return names;
}

}  // namespace

std::unique_ptr<Dataset> open_cifar(int classes, const std::string& dir_in, Split split) {
  const std::string name = classes == 10 ? "cifar10" : "cifar100";
  std::string dir = dir_in;
  const std::string sub = classes == 10 ? "cifar-10-batches-bin" : "cifar-100-binary";
  if (std::filesystem::is_directory(std::filesystem::path(dir) / sub))
    dir = (std::filesystem::path(dir) / sub).string();
  DLAS_CHECK(std::filesystem::is_directory(dir), ErrorKind::kInvalidInput, name, ": directory '",
             dir, "' does not exist");
  std::vector<std::string> files;
  if (classes == 10) {
    if (split == Split::kTrain)
      for (int i = 1; i <= 5; ++i) files.push_back("data_batch_" + std::to_string(i) + ".bin");
    else
      files.push_back("test_batch.bin");
  } else {
    files.push_back(split == Split::kTrain ? "train.bin" : "test.bin");
  }
  const int64_t label_bytes = classes == 10 ? 1 : 2;
  const int64_t record = label_bytes + kPixels;
  std::vector<uint8_t> pixels;
  std::vector<int> labels;
  for (const std::string& f : files) {
    const std::string path = find_file(dir, {f});
    DLAS_CHECK(!path.empty(), ErrorKind::kInvalidInput, (std::filesystem::path(dir) / f).string(),
               ": no such file (", name, " ", split_name(split), " split)");
    const std::vector<uint8_t> bytes = read_file_maybe_gz(path);
    const int64_t n = static_cast<int64_t>(bytes.size()) / record;
    DLAS_CHECK(n > 0, ErrorKind::kInvalidInput, path, ": empty or truncated (", bytes.size(),
               " bytes, one record is ", record, ")");
    DLAS_CHECK(static_cast<int64_t>(bytes.size()) == n * record, ErrorKind::kInvalidInput, path,
               ": truncated at record ", n, " (", bytes.size(), " bytes is not a multiple of the ",
               record, "-byte record)");
    pixels.reserve(pixels.size() + static_cast<size_t>(n * kPixels));
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* r = bytes.data() + i * record;
      const int y = r[label_bytes - 1];
      DLAS_CHECK(y < classes, ErrorKind::kInvalidInput, path, ": label ", y, " of record ", i,
                 " is not a class 0..", classes - 1);
      labels.push_back(y);
      pixels.insert(pixels.end(), r + label_bytes, r + record);
    }
  }
  DatasetInfo info;
  info.name = name;
  info.source = dir;
  info.channels = kChannels;
  info.height = kSide;
  info.width = kSide;
  info.classes = classes;
  const std::string names_file =
      find_file(dir, {classes == 10 ? "batches.meta.txt" : "fine_label_names.txt"});
  if (!names_file.empty()) {
    info.class_names = read_names(names_file);
    if (static_cast<int>(info.class_names.size()) != classes) info.class_names.clear();
  }
  return std::make_unique<MemoryDataset>(std::move(info), std::move(pixels), std::move(labels));
}

}  // namespace dlas::data::detail
