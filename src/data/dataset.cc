// open_dataset: the registry of dataset names, and each dataset's usual preprocessing.
#include <filesystem>

#include "data/data_internal.h"
#include "dlas/core/error.h"

namespace dlas::data {

const char* split_name(Split s) { return s == Split::kTrain ? "train" : "test"; }

namespace {

constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
constexpr const char* kMnistDir = "/usr/share/datasets/mnist";

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

std::vector<std::string> dataset_names() {
  return {"fashion-mnist",
          "fashion-mnist:DIR",
          "mnist:DIR",
          "cifar10:DIR",
          "cifar100:DIR",
          "folder:DIR",
          "synthetic[:C,H,W[:classes[:n]]]"};
}

std::unique_ptr<Dataset> open_dataset(std::string_view spec_view, Split split) {
  const std::string spec(spec_view);
  const size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  const bool has_arg = colon != std::string::npos;
  if (kind == "synthetic") return detail::open_synthetic(arg, split);
  if (kind == "fashion-mnist" || kind == "mnist") {
    std::string dir = arg;
    if (!has_arg) {
      dir = kind == "mnist" ? kMnistDir : kFashionMnistDir;
      DLAS_CHECK(std::filesystem::is_directory(dir), ErrorKind::kInvalidInput, "dataset '", spec,
                 "': ", dir, " does not exist (",
                 kind == "mnist" ? "give mnist:DIR with the IDX files"
                                 : "install Debian's dataset-fashion-mnist, or give "
                                   "fashion-mnist:DIR",
                 ")");
    }
    return detail::open_idx(kind, dir, split);
  }
  if (kind == "cifar10" || kind == "cifar100") {
    DLAS_CHECK(has_arg && !arg.empty(), ErrorKind::kInvalidInput, "dataset '", spec, "': give ",
               kind, ":DIR (the folder of the binary batches)");
    return detail::open_cifar(kind == "cifar10" ? 10 : 100, arg, split);
  }
  if (kind == "folder") {
    DLAS_CHECK(has_arg && !arg.empty(), ErrorKind::kInvalidInput, "dataset '", spec,
               "': give folder:DIR");
    return detail::open_folder(arg, split);
  }
  std::string names;
  for (const std::string& n : dataset_names()) names += (names.empty() ? "" : ", ") + n;
  fail(ErrorKind::kInvalidInput, "unknown dataset '", spec, "' (known: ", names, ")");
}

Preprocess default_preprocess(const DatasetInfo& info, bool train) {
  Preprocess p;
  const std::string& n = info.name;
  if (n == "fashion-mnist") {
    p.mean = {0.2860f};
    p.std = {0.3530f};
  } else if (n == "mnist") {
    p.mean = {0.1307f};
    p.std = {0.3081f};
  } else if (n == "cifar10") {
    p.mean = {0.4914f, 0.4822f, 0.4465f};
    p.std = {0.2470f, 0.2435f, 0.2616f};
  } else if (n == "cifar100") {
    p.mean = {0.5071f, 0.4865f, 0.4409f};
    p.std = {0.2673f, 0.2564f, 0.2762f};
  } else if (starts_with(n, "folder") && info.channels == 3) {
    p.mean = {0.485f, 0.456f, 0.406f};  // ImageNet's
    p.std = {0.229f, 0.224f, 0.225f};
  } else if (starts_with(n, "synthetic")) {
    p.mean = {0.5f};
    p.std = {0.2f};
  } else {
    p.mean = {0.5f};
    p.std = {0.25f};
  }
  if (train) {
    const bool cifar = starts_with(n, "cifar");
    const bool folder = starts_with(n, "folder");
    p.pad = cifar ? 4 : folder ? 0 : 2;
    p.hflip = cifar || folder;
  }
  return p;
}

}  // namespace dlas::data

namespace dlas::data {

Preprocess preprocess_for_input(const DatasetInfo& info, const Shape& input, bool train) {
  Preprocess p = default_preprocess(info, train);
  check_preprocess_for_input(p, info, input);
  return p;
}

void check_preprocess_for_input(const Preprocess& p, const DatasetInfo& info,
                                const Shape& input) {
  const std::vector<int64_t> out = p.output_shape(info);
  const bool nhwc = p.layout == InputLayout::kNhwc;
  DLAS_CHECK(input.size() == 4 && input[1] == out[0] && input[2] == out[1] && input[3] == out[2],
             ErrorKind::kInvalidInput, "the model's input ", shape_str(input), " does not take ",
             info.name, "'s preprocessed images [N, ", out[0], ", ", out[1], ", ", out[2], "]",
             nhwc ? " (layout nhwc)" : "",
             // A model that takes the other layout: say which flag fixes it.
             input.size() == 4 && input[1] == out[2] && input[2] == out[0] && input[3] == out[1] &&
                     nhwc
                 ? "; the model takes channels first: use --input-layout nchw"
             : input.size() == 4 && input[3] == out[0] && input[1] == out[1] &&
                     input[2] == out[2] && !nhwc
                 ? "; the model takes channels last: use --input-layout nhwc"
                 : "");
}

std::vector<Tensor> calibration_batches(std::string_view dataset, const Shape& input, int count,
                                        uint64_t seed, const Preprocess* pre) {
  const std::unique_ptr<Dataset> ds = open_dataset(dataset, Split::kTrain);
  Preprocess p = pre ? *pre : default_preprocess(ds->info(), false);
  if (pre) {  // test-time preprocessing: no augmentation
    p.pad = 0;
    p.hflip = false;
  }
  check_preprocess_for_input(p, ds->info(), input);
  Loader loader(*ds, p, {.batch = input[0], .shuffle = true, .drop_last = true, .seed = seed});
  std::vector<Tensor> out;
  Batch b;
  while (static_cast<int>(out.size()) < count && loader.next(b)) out.push_back(b.images);
  DLAS_CHECK(!out.empty(), ErrorKind::kInvalidInput, "dataset '", dataset, "' has fewer than ",
             input[0], " training images (one calibration batch)");
  return out;
}

}  // namespace dlas::data
