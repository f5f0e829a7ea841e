// "synthetic[:C,H,W[:classes[:n]]]": deterministic images whose class is learnable. Each class
// has a smooth prototype (a random 4x4 grid per channel, bilinearly upsampled); a record is
// 60% its class prototype + 40% uniform noise, so a small CNN separates the classes, and
// random crops/flips keep most of the signal. Generated on demand (no memory per record);
// train and test draw different noise.
#include <algorithm>
#include <charconv>

#include "data/data_internal.h"
#include "dlas/core/error.h"

namespace dlas::data::detail {

namespace {

constexpr int kGrid = 4;

class SyntheticDataset : public Dataset {
 public:
  SyntheticDataset(DatasetInfo info, int64_t n, Split split)
      : info_(std::move(info)), n_(n), split_(split) {}
  const DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return n_; }
  int label(int64_t i) const override {
    check(i);
    return static_cast<int>(i % info_.classes);
  }
  void image_u8(int64_t i, uint8_t* out) const override {
    check(i);
    const int cls = label(i);
    Rng noise(0x5eed0000ull + (split_ == Split::kTrain ? 0 : 1) * 0x100000000ull +
              static_cast<uint64_t>(i));
    const int64_t H = info_.height, W = info_.width;
    for (int64_t c = 0; c < info_.channels; ++c) {
      float grid[kGrid][kGrid];
      Rng proto(0xc1a55ull * 1000003ull + static_cast<uint64_t>(cls) * 131 +
                static_cast<uint64_t>(c));
      for (auto& row : grid)
        for (float& g : row) g = static_cast<float>(proto.uniform());
      for (int64_t y = 0; y < H; ++y) {
        // Sample the grid at pixel centres (align_corners = false), clamped at the borders.
        const float fy = std::max(0.f, (y + 0.5f) * kGrid / H - 0.5f);
        const int y0 = std::min(static_cast<int>(fy), kGrid - 1), y1 = std::min(y0 + 1, kGrid - 1);
        const float wy = fy - y0;
        for (int64_t x = 0; x < W; ++x) {
          const float fx = std::max(0.f, (x + 0.5f) * kGrid / W - 0.5f);
          const int x0 = std::min(static_cast<int>(fx), kGrid - 1),
                    x1 = std::min(x0 + 1, kGrid - 1);
          const float wx = fx - x0;
          const float p = (1 - wy) * ((1 - wx) * grid[y0][x0] + wx * grid[y0][x1]) +
                          wy * ((1 - wx) * grid[y1][x0] + wx * grid[y1][x1]);
          const float v = 0.6f * p + 0.4f * static_cast<float>(noise.uniform());
          out[(c * H + y) * W + x] = static_cast<uint8_t>(std::min(255.f, v * 256.f));
        }
      }
    }
  }

 private:
  void check(int64_t i) const {
    DLAS_CHECK(i >= 0 && i < n_, ErrorKind::kInvalidInput, info_.name, ": record ", i,
               " out of range (", n_, " records)");
  }
  DatasetInfo info_;
  int64_t n_;
  Split split_;
};

int64_t parse_int(std::string_view s, const std::string& spec, const char* what) {
  int64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  DLAS_CHECK(r.ec == std::errc() && r.ptr == s.data() + s.size() && v > 0, ErrorKind::kInvalidInput,
             "dataset '", spec, "': ", what, " '", s, "' is not a positive integer");
  return v;
}

std::vector<std::string_view> split_on(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return parts;
}

}  // namespace

std::unique_ptr<Dataset> open_synthetic(const std::string& args, Split split) {
  const std::string spec = args.empty() ? "synthetic" : "synthetic:" + args;
  int64_t c = 1, h = 28, w = 28, classes = 10, n = 512;
  if (!args.empty()) {
    const auto parts = split_on(args, ':');
    DLAS_CHECK(parts.size() <= 3, ErrorKind::kInvalidInput, "dataset '", spec,
               "': expected synthetic[:C,H,W[:classes[:n]]]");
    const auto shape = split_on(parts[0], ',');
    DLAS_CHECK(shape.size() == 3, ErrorKind::kInvalidInput, "dataset '", spec,
               "': shape must be C,H,W (e.g. 3,32,32)");
    c = parse_int(shape[0], spec, "channels");
    h = parse_int(shape[1], spec, "height");
    w = parse_int(shape[2], spec, "width");
    if (parts.size() > 1) classes = parse_int(parts[1], spec, "classes");
    if (parts.size() > 2) n = parse_int(parts[2], spec, "record count");
  }
  DLAS_CHECK(c <= 16 && h <= 4096 && w <= 4096 && classes <= 100000, ErrorKind::kInvalidInput,
             "dataset '", spec, "': implausible size");
  DatasetInfo info;
  info.name = spec;
  info.channels = c;
  info.height = h;
  info.width = w;
  info.classes = static_cast<int>(classes);
  return std::make_unique<SyntheticDataset>(std::move(info), n, split);
}

}  // namespace dlas::data::detail
