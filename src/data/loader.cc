// Loader (batching, per-epoch shuffle, augmentation draws) and Accuracy.
#include <exception>
#include <mutex>
#include <numeric>

#include "data/data_internal.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::data {

namespace {

// Salts keep the shuffle and the augmentation streams independent for one seed.
constexpr uint64_t kShuffleSalt = 0x5ff1e5ull;
constexpr uint64_t kAugmentSalt = 0xa06e47ull;

uint64_t stream(uint64_t seed, uint64_t salt, uint64_t epoch) {
  return detail::mix64(detail::mix64(seed ^ salt) + epoch);
}

}  // namespace

Loader::Loader(const Dataset& ds, Preprocess pre, LoaderOptions opt)
    : ds_(ds), pre_(std::move(pre)), opt_(opt) {
  DLAS_CHECK(opt_.batch >= 1, ErrorKind::kInvalidInput, "loader: batch must be >= 1");
  DLAS_CHECK(opt_.limit >= 0, ErrorKind::kInvalidInput, "loader: limit must be >= 0");
  DLAS_CHECK(opt_.threads >= 1, ErrorKind::kInvalidInput, "loader: threads must be >= 1");
  n_ = opt_.limit > 0 ? std::min(opt_.limit, ds_.size()) : ds_.size();
  if (!opt_.records.empty()) {
    for (int64_t r : opt_.records)
      DLAS_CHECK(r >= 0 && r < ds_.size(), ErrorKind::kInvalidInput, "loader: record ", r,
                 " outside the split's ", ds_.size());
    n_ = static_cast<int64_t>(opt_.records.size());
  }
  out_shape_ = pre_.output_shape(ds_.info());  // validates the preprocessing up front
  if (opt_.threads > 1) pool_ = std::make_shared<ThreadPool>(opt_.threads);
  start_epoch(0);
}

void Loader::start_epoch(int64_t epoch) {
  epoch_ = epoch;
  pos_ = 0;
  if (!opt_.records.empty()) {
    order_ = opt_.records;
    return;
  }
  order_.resize(static_cast<size_t>(n_));
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (opt_.shuffle) {
    detail::Rng rng(stream(opt_.seed, kShuffleSalt, static_cast<uint64_t>(epoch)));
    for (int64_t i = n_ - 1; i > 0; --i)
      std::swap(order_[i], order_[rng.below(static_cast<uint64_t>(i) + 1)]);
  }
}

int64_t Loader::samples() const { return opt_.drop_last ? (n_ / opt_.batch) * opt_.batch : n_; }

int64_t Loader::batches_per_epoch() const {
  return opt_.drop_last ? n_ / opt_.batch : (n_ + opt_.batch - 1) / opt_.batch;
}

std::vector<int64_t> Loader::batch_shape() const {
  return {opt_.batch, out_shape_[0], out_shape_[1], out_shape_[2]};
}

bool Loader::next(Batch& out) {
  const int64_t b = std::min(opt_.batch, n_ - pos_);
  if (b <= 0 || (opt_.drop_last && b < opt_.batch)) return false;
  const DatasetInfo& info = ds_.info();
  const int64_t in_bytes = info.channels * info.height * info.width;
  const int64_t out_floats = out_shape_[0] * out_shape_[1] * out_shape_[2];
  // A fresh tensor per batch: callers may keep the previous one (copies share storage).
  out.images = Tensor(DType::kF32, {b, out_shape_[0], out_shape_[1], out_shape_[2]});
  out.labels.resize(static_cast<size_t>(b));
  out.indices.assign(order_.begin() + pos_, order_.begin() + pos_ + b);
  float* dst = out.images.data<float>();
  const uint64_t aug = stream(opt_.seed, kAugmentSalt, static_cast<uint64_t>(epoch_));
  const auto one = [&](int64_t i) {
    thread_local std::vector<uint8_t> u8;
    u8.resize(static_cast<size_t>(in_bytes));
    const int64_t rec = out.indices[i];
    ds_.image_u8(rec, u8.data());
    out.labels[i] = ds_.label(rec);
    preprocess_image(pre_, info, u8.data(), dst + i * out_floats, opt_.augment,
                     detail::mix64(aug + static_cast<uint64_t>(rec)));
  };
  if (opt_.threads <= 1 || b == 1) {
    for (int64_t i = 0; i < b; ++i) one(i);
  } else {
    // parallel_for's tasks must not throw: keep the first error and rethrow it here.
    std::mutex mu;
    std::exception_ptr error;
    pool_->parallel_for(static_cast<size_t>(b), [&](size_t i) {
      try {
        one(static_cast<int64_t>(i));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    });
    if (error) std::rethrow_exception(error);
  }
  pos_ += b;
  return true;
}

void Accuracy::add(const Tensor& logits, const std::vector<int>& labels) {
  DLAS_CHECK(logits.dtype() == DType::kF32 && logits.rank() >= 2, ErrorKind::kInvalidInput,
             "accuracy: logits must be f32 [B, classes], got ", logits.describe());
  const int64_t b = logits.dim(0);
  const int64_t classes = logits.numel() / std::max<int64_t>(b, 1);
  DLAS_CHECK(b == static_cast<int64_t>(labels.size()), ErrorKind::kInvalidInput,
             "accuracy: ", labels.size(), " labels for a batch of ", b);
  const float* p = logits.data<float>();
  for (int64_t i = 0; i < b; ++i) {
    const int y = labels[static_cast<size_t>(i)];
    DLAS_CHECK(y >= 0 && y < classes, ErrorKind::kInvalidInput, "accuracy: label ", y,
               " outside the model's ", classes, " classes");
    const float* row = p + i * classes;
    const float v = row[y];
    int64_t beaten_by = 0;
    if (v != v) {
      beaten_by = classes;  // NaN logit: never correct
    } else {
      for (int64_t c = 0; c < classes; ++c)
        if (row[c] > v || (row[c] == v && c < y)) ++beaten_by;
    }
    ++samples;
    top1 += beaten_by < 1;
    top5 += beaten_by < 5;
    if (keep_hits) hits.push_back(static_cast<uint8_t>((beaten_by < 1) | ((beaten_by < 5) << 1)));
  }
}

}  // namespace dlas::data
