// "folder:DIR": ImageNet-style image folders. DIR/<class>/<image>.{jpg,jpeg,png} (classes are
// the sorted subfolder names, the union over the splits so train and test agree), or a
// labels.txt in DIR with "relative/path label" per line (labels are class indices when all
// are integers, else names, sorted). When DIR has train/ and test/ (or val/) subfolders, each
// split reads its own; otherwise both splits read DIR. Images are decoded on demand and
// converted to the common shape: the first image's size, grey when it is grey else RGB
// (grey images are replicated, colour ones averaged; alpha is composited onto black).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "data/data_internal.h"
#include "dlas/core/error.h"

namespace dlas::data::detail {

namespace fs = std::filesystem;

namespace {

bool is_image(const fs::path& p) {
  std::string ext = p.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

std::vector<std::string> subdirs(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class FolderDataset : public Dataset {
 public:
  FolderDataset(DatasetInfo info, std::vector<std::string> files, std::vector<int> labels)
      : info_(std::move(info)), files_(std::move(files)), labels_(std::move(labels)) {}
  const DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  int label(int64_t i) const override {
    check(i);
    return labels_[static_cast<size_t>(i)];
  }
  void image_u8(int64_t i, uint8_t* out) const override {
    check(i);
    const std::string& path = files_[static_cast<size_t>(i)];
    const DecodedImage img = decode_image(read_file_maybe_gz(path), path);
    const int64_t C = info_.channels, H = info_.height, W = info_.width;
    const int64_t h = img.height, w = img.width, ci = img.channels;
    // Planar f32 in the target channel count, then bilinear resize when the size differs.
    std::vector<float> planes(static_cast<size_t>(C * h * w));
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const uint8_t* px = img.hwc.data() + (y * w + x) * ci;
        for (int64_t c = 0; c < C; ++c) {
          float v;
          if (ci == C)
            v = px[c];
          else if (ci == 1)
            v = px[0];
          else
            v = (float(px[0]) + float(px[1]) + float(px[2])) / 3.f;
          planes[static_cast<size_t>((c * h + y) * w + x)] = v;
        }
      }
    const float* src = planes.data();
    std::vector<float> resized;
    if (h != H || w != W) {
      resized.resize(static_cast<size_t>(C * H * W));
      resize_bilinear(planes.data(), C, h, w, resized.data(), H, W);
      src = resized.data();
    }
    for (int64_t k = 0; k < C * H * W; ++k)
      out[k] = static_cast<uint8_t>(std::clamp(std::lround(src[k]), 0L, 255L));
  }

 private:
  void check(int64_t i) const {
    DLAS_CHECK(i >= 0 && i < size(), ErrorKind::kInvalidInput, info_.name, ": record ", i,
               " out of range (", size(), " records)");
  }
  DatasetInfo info_;
  std::vector<std::string> files_;
  std::vector<int> labels_;
};

// labels.txt: "relative/path label" per line; '#' comments and blank lines are skipped.
void read_labels_file(const fs::path& root, const fs::path& file, std::vector<std::string>& files,
                      std::vector<int>& labels, std::vector<std::string>& class_names) {
  const std::vector<uint8_t> bytes = read_file_maybe_gz(file.string());
  std::vector<std::pair<std::string, std::string>> rows;
  std::string line;
  int line_no = 0;
  for (size_t i = 0; i <= bytes.size(); ++i) {
    if (i < bytes.size() && bytes[i] != '\n') {
      line += static_cast<char>(bytes[i]);
      continue;
    }
    ++line_no;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    size_t start = 0;
    while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
    line = line.substr(start);
    if (!line.empty() && line[0] != '#') {
      const size_t sp = line.find_last_of(" \t");
      DLAS_CHECK(sp != std::string::npos, ErrorKind::kInvalidInput, file.string(), ":", line_no,
                 ": expected 'relative/path label'");
      std::string path = line.substr(0, sp);
      while (!path.empty() && std::isspace(static_cast<unsigned char>(path.back())))
        path.pop_back();
      rows.emplace_back(path, line.substr(sp + 1));
      const fs::path full = root / path;
      DLAS_CHECK(fs::is_regular_file(full), ErrorKind::kInvalidInput, file.string(), ":", line_no,
                 ": image '", full.string(), "' does not exist");
    }
    line.clear();
  }
  DLAS_CHECK(!rows.empty(), ErrorKind::kInvalidInput, file.string(), ": no images listed");
  bool numeric = true;
  for (const auto& r : rows)
    numeric =
        numeric && !r.second.empty() && r.second.size() < 7 &&
        std::all_of(r.second.begin(), r.second.end(), [](char c) { return c >= '0' && c <= '9'; });
  std::map<std::string, int> index;
  if (numeric) {
    int max_label = 0;
    for (const auto& r : rows) max_label = std::max(max_label, std::stoi(r.second));
    for (int c = 0; c <= max_label; ++c) class_names.push_back(std::to_string(c));
  } else {
    std::set<std::string> names;
    for (const auto& r : rows) names.insert(r.second);
    class_names.assign(names.begin(), names.end());
    for (size_t c = 0; c < class_names.size(); ++c) index[class_names[c]] = static_cast<int>(c);
  }
  for (const auto& r : rows) {
    files.push_back((root / r.first).string());
    labels.push_back(numeric ? std::stoi(r.second) : index[r.second]);
  }
}

}  // namespace

std::unique_ptr<Dataset> open_folder(const std::string& dir, Split split) {
  const fs::path root(dir);
  DLAS_CHECK(fs::is_directory(root), ErrorKind::kInvalidInput, "folder: directory '", dir,
             "' does not exist");
  fs::path train_root = root, test_root = root;
  if (fs::is_directory(root / "train")) train_root = root / "train";
  for (const char* t : {"test", "val"})
    if (fs::is_directory(root / t)) {
      test_root = root / t;
      break;
    }
  const fs::path split_root = split == Split::kTrain ? train_root : test_root;
  std::vector<std::string> files, class_names;
  std::vector<int> labels;
  const fs::path labels_file = split_root / "labels.txt";
  if (fs::is_regular_file(labels_file)) {
    read_labels_file(split_root, labels_file, files, labels, class_names);
  } else {
    std::set<std::string> names;
    for (const fs::path& r : {train_root, test_root})
      for (const std::string& s : subdirs(r)) names.insert(s);
    class_names.assign(names.begin(), names.end());
    for (size_t c = 0; c < class_names.size(); ++c) {
      const fs::path cdir = split_root / class_names[c];
      if (!fs::is_directory(cdir)) continue;
      std::vector<std::string> imgs;
      for (const auto& e : fs::directory_iterator(cdir))
        if (e.is_regular_file() && is_image(e.path())) imgs.push_back(e.path().string());
      std::sort(imgs.begin(), imgs.end());
      for (std::string& f : imgs) {
        files.push_back(std::move(f));
        labels.push_back(static_cast<int>(c));
      }
    }
    DLAS_CHECK(!files.empty(), ErrorKind::kInvalidInput, "folder: no labels.txt and no ",
               "<class>/*.jpg|jpeg|png images in '", split_root.string(), "'");
  }
  // The common shape comes from the first image of the training split, so both splits agree.
  std::string first = files.front();
  if (split != Split::kTrain && train_root != test_root) {
    const std::unique_ptr<Dataset> train = open_folder(dir, Split::kTrain);
    DatasetInfo info = train->info();
    info.source = split_root.string();
    DLAS_CHECK(class_names.size() <= info.class_names.size(), ErrorKind::kInvalidInput,
               split_root.string(), ": more classes than the train split");
    return std::make_unique<FolderDataset>(std::move(info), std::move(files), std::move(labels));
  }
  const DecodedImage probe = probe_image(read_file_maybe_gz(first), first);
  DatasetInfo info;
  info.name = "folder:" + dir;
  info.source = split_root.string();
  info.channels = probe.channels;
  info.height = probe.height;
  info.width = probe.width;
  info.classes = static_cast<int>(class_names.size());
  info.class_names = std::move(class_names);
  return std::make_unique<FolderDataset>(std::move(info), std::move(files), std::move(labels));
}

}  // namespace dlas::data::detail
