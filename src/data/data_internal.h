// Shared pieces of the dataset loaders (src/data/): whole-file reading (gzip or raw), an
// in-memory u8 dataset, and the deterministic random numbers behind shuffling/augmentation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dlas/data/dataset.h"

namespace dlas::data::detail {

// Reads a whole file; gzip'd files (by magic, not by name) are inflated with zlib.
// kInvalidInput naming the file when it is missing or its gzip stream is corrupt/truncated.
std::vector<uint8_t> read_file_maybe_gz(const std::string& path);

// The first existing file among `names` inside `dir`, each also tried with ".gz" appended;
// "" when none exists.
std::string find_file(const std::string& dir, const std::vector<std::string>& names);

// A dataset whose records are all decoded in memory (IDX, CIFAR, synthetic).
class MemoryDataset : public Dataset {
 public:
  MemoryDataset(DatasetInfo info, std::vector<uint8_t> pixels, std::vector<int> labels);
  const DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  int label(int64_t i) const override;
  void image_u8(int64_t i, uint8_t* out) const override;

 private:
  DatasetInfo info_;
  std::vector<uint8_t> pixels_;
  std::vector<int> labels_;
  int64_t record_ = 0;
};

// Loaders behind open_dataset (one per format).
std::unique_ptr<Dataset> open_idx(const std::string& name, const std::string& dir, Split split);
std::unique_ptr<Dataset> open_cifar(int classes, const std::string& dir, Split split);
std::unique_ptr<Dataset> open_folder(const std::string& dir, Split split);
std::unique_ptr<Dataset> open_synthetic(const std::string& args, Split split);

// splitmix64: a strong 64-bit mix; the stream of numbers behind every random draw here, so
// orders and crops are the same on every platform and standard library.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(mix64(seed)) {}
  uint64_t next() { return state = mix64(state); }
  // Uniform in [0, n) (n > 0); the modulo bias is negligible for the n used here.
  uint64_t below(uint64_t n) { return next() % n; }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

// Decoders for image folders (8-bit): fill rgb/grey pixels as [H][W][C] interleaved.
struct DecodedImage {
  int width = 0, height = 0, channels = 0;  // channels 1 (grey) or 3 (RGB); alpha is dropped
  std::vector<uint8_t> hwc;
};
// Decodes a JPEG or PNG (by magic). kInvalidInput naming `path` when corrupt or unsupported.
DecodedImage decode_image(const std::vector<uint8_t>& bytes, const std::string& path);
// Only width/height/channels (no pixel decode) -- used to pick a folder's common shape.
DecodedImage probe_image(const std::vector<uint8_t>& bytes, const std::string& path);

// Bilinear resize of f32 planes [C][h][w] -> [C][oh][ow] (align_corners = false, like
// torchvision/PIL without antialias).
void resize_bilinear(const float* in, int64_t c, int64_t h, int64_t w, float* out, int64_t oh,
                     int64_t ow);

}  // namespace dlas::data::detail
