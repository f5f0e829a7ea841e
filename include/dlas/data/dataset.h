// Datasets (DLAS layer 1): labelled image sets, preprocessing and batching.
//
// The contract shared by the loaders (src/data/), training (src/torch/train/), accuracy
// evaluation (`dlas eval --dataset`) and calibration (`dlas quantize --calib-data`):
//
//   auto train = dlas::data::open_dataset("fashion-mnist", dlas::data::Split::kTrain);
//   dlas::data::Loader loader(*train, preprocess, {.batch = 128, .shuffle = true, .seed = 1});
//   dlas::data::Batch b;
//   while (loader.next(b)) { ... b.images [B,C,H,W] f32, b.labels ... }
//
// A Dataset holds decoded images as u8 (C,H,W per record, the natural form of IDX, CIFAR and
// 8-bit JPEG/PNG) or produces them on demand; preprocessing turns them into f32 in [0,1],
// then resizes/crops/flips and normalizes. Everything is deterministic given the seed: the
// same seed gives the same order and the same random crops and flips, on any thread count.
//
// Errors: a missing or corrupt file is kInvalidInput naming the file (and the record index
// when one record is bad), e.g. "train-images-idx3-ubyte.gz: truncated at image 41213".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/core/tensor.h"

namespace dlas {
class ThreadPool;
}

namespace dlas::data {

enum class Split { kTrain, kTest };
const char* split_name(Split s);

struct DatasetInfo {
  std::string name;      // "fashion-mnist", "cifar10", "folder:/path", "synthetic"
  std::string source;    // where it was read from (directory or file), "" for synthetic
  int64_t channels = 0;  // decoded image shape (before preprocessing)
  int64_t height = 0;
  int64_t width = 0;
  int classes = 0;
  std::vector<std::string> class_names;  // may be empty
};

// A random-access labelled image set. Implementations are immutable after construction and
// safe to read from several threads at once.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual const DatasetInfo& info() const = 0;
  virtual int64_t size() const = 0;
  virtual int label(int64_t i) const = 0;
  // Writes record i as u8 [C][H][W] (info().channels x height x width bytes). Image-folder
  // datasets decode on demand and resize to info()'s shape first.
  virtual void image_u8(int64_t i, uint8_t* out) const = 0;
};

// Opens a dataset by name:
//   "fashion-mnist"            Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist)
//   "mnist:DIR", "fashion-mnist:DIR"   IDX files in DIR (gzip'd or raw, standard file names)
//   "cifar10:DIR", "cifar100:DIR"      CIFAR binary batches in DIR
//   "folder:DIR"               ImageNet-style DIR/<class>/<image>.{jpg,jpeg,png}, or DIR with a
//                              labels.txt ("relative/path label" per line); class names sorted
//   "synthetic[:C,H,W[:classes[:n]]]"  deterministic random images whose class is learnable
// kInvalidInput (naming the file) for missing/corrupt data, or an unknown name.
std::unique_ptr<Dataset> open_dataset(std::string_view spec, Split split);

// The names open_dataset accepts, for --help texts.
std::vector<std::string> dataset_names();

// How a model's inputs are laid out: channels first ([N,C,H,W], PyTorch's) or last
// ([N,H,W,C], Keras/TensorFlow's).
enum class InputLayout { kNchw, kNhwc };
// The order of a 3-channel image's channels as the model takes them (datasets decode RGB).
enum class ChannelOrder { kRgb, kBgr };
const char* input_layout_name(InputLayout l);    // "nchw", "nhwc"
const char* channel_order_name(ChannelOrder c);  // "rgb", "bgr"

// Preprocessing applied to each u8 image, in this order: divide by `scale` (255: to [0,1]);
// resize (bilinear) so the shorter side is `resize` (0 = keep); center crop to crop_h x crop_w
// (0 = keep); when training: random crop of the same size after zero-padding by `pad`, and
// horizontal flip with probability 0.5 when `hflip`; replicate or average channels to
// `channels` (0 = keep); reverse the channels for `channel_order` bgr; (x - mean[c]) / std[c]
// (one value applies to every channel; c counts the model's channels, after the reorder);
// written channels first, or channels last for `layout` nhwc. A crop larger than the image
// pads with zeros; crop_h alone means a square crop.
//
// The test-time part (scale, resize, crop, channel order, layout, mean, std) is what a model
// expects of its inputs: preprocess_to_json() gives its canonical text, which dlas stores in
// the models it writes (dlas/system/preprocess_meta.h).
struct Preprocess {
  float scale = 255.f;
  int resize = 0;
  int crop_h = 0, crop_w = 0;
  int pad = 0;
  bool hflip = false;
  int channels = 0;
  ChannelOrder channel_order = ChannelOrder::kRgb;
  InputLayout layout = InputLayout::kNchw;
  std::vector<float> mean{0.f};
  std::vector<float> std{1.f};
  // Output shape [C,H,W] for a dataset with this info ([H,W,C] with layout nhwc).
  std::vector<int64_t> output_shape(const DatasetInfo& info) const;
  // One line: "x/255, mean 0.286, std 0.353" plus what else is not the identity.
  std::string describe() const;
};

// The canonical text of the test-time fields, a JSON object with every key:
//   {"scale":255,"mean":[0.286],"std":[0.353],"channel_order":"rgb","layout":"nchw",
//    "resize":0,"crop":[0,0]}
// Numbers are written so that they read back exactly.
std::string preprocess_to_json(const Preprocess& p);
// Reads preprocess_to_json's form onto `base` (keys left out keep base's values; unknown keys
// are ignored). kInvalidInput with a reason ("'std' must be > 0") for malformed text, a
// wrong type, a std <= 0, a scale <= 0 or an unknown layout or channel order.
Preprocess preprocess_from_json(std::string_view text, Preprocess base = {});
// Parsers of the flag values: "0.5" or "0.485,0.456,0.406"; "rgb"|"bgr"; "nchw"|"nhwc".
// kInvalidInput naming the value.
std::vector<float> parse_channel_values(std::string_view text);
ChannelOrder parse_channel_order(std::string_view text);
InputLayout parse_input_layout(std::string_view text);

// The usual preprocessing for a dataset by name (mean/std of its training set, random crop
// with pad 4 (CIFAR) or 2 (MNIST-like) and flip for CIFAR when `train`).
Preprocess default_preprocess(const DatasetInfo& info, bool train);

// Preprocesses one u8 image of `info`'s shape into `out` (numel of output_shape(info) floats).
// With `augment`, the random crop offset and flip come from `draw` (any 64-bit value; the
// Loader derives it from (seed, epoch, record)). kInvalidInput for an impossible channel
// conversion or a mean/std list whose size is neither 1 nor the output channel count.
void preprocess_image(const Preprocess& pre, const DatasetInfo& info, const uint8_t* image,
                      float* out, bool augment = false, uint64_t draw = 0);

// Test-time preprocessing (default_preprocess(info, train)) for a model whose image input is
// [N,C,H,W]: kInvalidInput naming both shapes when the preprocessed C,H,W differ.
Preprocess preprocess_for_input(const DatasetInfo& info, const Shape& input, bool train = false);
// Checks that `pre` turns `info`'s images into the model input `input` ([N,C,H,W], or
// [N,H,W,C] with layout nhwc): kInvalidInput naming both shapes otherwise.
void check_preprocess_for_input(const Preprocess& pre, const DatasetInfo& info,
                                const Shape& input);

// `count` batches shaped like the model input [B,C,H,W] of preprocessed training images of
// `dataset` (test-time preprocessing `pre`, the dataset's default when null; shuffled by
// `seed`): int8 calibration data. Fewer when the training split is smaller than count x B.
std::vector<Tensor> calibration_batches(std::string_view dataset, const Shape& input, int count,
                                        uint64_t seed, const Preprocess* pre = nullptr);

struct LoaderOptions {
  int64_t batch = 64;
  bool shuffle = false;    // a new permutation per epoch, from (seed, epoch)
  bool augment = false;    // apply the random crop / flip (training)
  bool drop_last = false;  // drop a final short batch
  uint64_t seed = 0;
  int64_t limit = 0;  // use only the first `limit` records (0 = all), before shuffling
  int threads = 1;    // decode/preprocess a batch on this many threads (same result; pays
                      // for image folders, not for in-memory IDX/CIFAR records)
  // When not empty: exactly these records, in this order, every epoch (limit and shuffle do
  // not apply). How a subset of a split is scored (dlas explore's growing samples).
  std::vector<int64_t> records{};
};

struct Batch {
  Tensor images;                 // f32 [B,C,H,W] ([B,H,W,C] with layout nhwc)
  std::vector<int> labels;       // B labels
  std::vector<int64_t> indices;  // dataset record of each image
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
};

// Iterates a dataset in batches. Call next() until it returns false; start_epoch(e) begins
// epoch e (its shuffle order and augmentation draws depend only on seed and e, which makes
// resume-from-checkpoint reproduce the same stream).
class Loader {
 public:
  Loader(const Dataset& ds, Preprocess pre, LoaderOptions opt);
  void start_epoch(int64_t epoch);
  bool next(Batch& out);
  int64_t batches_per_epoch() const;
  int64_t samples() const;  // records per epoch (after limit)
  const Preprocess& preprocess() const { return pre_; }
  const Dataset& dataset() const { return ds_; }
  std::vector<int64_t> batch_shape() const;  // [batch, C, H, W] ([batch, H, W, C]: nhwc)

 private:
  const Dataset& ds_;
  Preprocess pre_;
  LoaderOptions opt_;
  std::vector<int64_t> order_;
  int64_t pos_ = 0;
  int64_t epoch_ = 0;
  int64_t n_ = 0;
  std::vector<int64_t> out_shape_;    // [C,H,W] after preprocessing
  std::shared_ptr<ThreadPool> pool_;  // when opt_.threads > 1
};

// Top-k accuracy bookkeeping for classifiers: feed logits [B,classes] (or [B,classes,1,1])
// and labels. A label is counted in the top k when fewer than k logits beat it (ties go to
// the lower class index, as argmax does). kInvalidInput for a label outside [0, classes).
struct Accuracy {
  int64_t samples = 0, top1 = 0, top5 = 0;
  // With keep_hits: one entry per sample scored, in order: bit 0 set when it was in the top
  // 1, bit 1 when in the top 5 (paired comparisons of two models on the same images).
  bool keep_hits = false;
  std::vector<uint8_t> hits;
  void add(const Tensor& logits, const std::vector<int>& labels);
  double top1_rate() const { return samples ? double(top1) / double(samples) : 0.0; }
  double top5_rate() const { return samples ? double(top5) / double(samples) : 0.0; }
};

}  // namespace dlas::data
