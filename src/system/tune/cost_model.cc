// The tuner's cost model: candidate features and a learned predictor of log(cost).
// XGBoost (Debian's libxgboost-dev, C API) when the build found it; a k-nearest-neighbours
// regressor otherwise (and in tests that want no XGBoost).
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "dlas/core/error.h"
#include "dlas/system/tune.h"

#ifdef DLAS_WITH_XGBOOST
#include <xgboost/c_api.h>
#endif

namespace dlas::tune {

namespace {

// Problem features, then one column per algorithm, then knob slots.
constexpr size_t kProblemFeatures = 16;
constexpr size_t kAlgoSlots = 16;
constexpr size_t kKnobSlots = 32;

// Knob names get a column in first-seen order (process-wide: one cost model sees all
// tasks of a run); beyond kKnobSlots they share columns.
size_t knob_slot(const std::string& algo, const std::string& knob) {
  static std::mutex mu;
  static std::map<std::string, size_t> slots;
  std::lock_guard<std::mutex> lock(mu);
  const std::string name = algo + "." + knob;
  auto it = slots.find(name);
  if (it == slots.end()) it = slots.emplace(name, slots.size()).first;
  return it->second % kKnobSlots;
}

size_t algo_slot(const std::string& algo) {
  size_t i = 0;
  for (const ConvAlgorithm* a : conv_algorithms()) {
    if (a->name() == algo) return i % kAlgoSlots;
    ++i;
  }
  for (const ConvAlgorithm* a : sparse_conv_algorithms()) {
    if (a->name() == algo) return i % kAlgoSlots;
    ++i;
  }
  return (std::hash<std::string>{}(algo)) % kAlgoSlots;
}

float lg(double v) { return static_cast<float>(std::log2(std::max(v, 1.0))); }

}  // namespace

size_t feature_count() { return kProblemFeatures + kAlgoSlots + kKnobSlots; }

std::vector<float> candidate_features(const Task& t, const Knobs& knobs) {
  std::vector<float> f(feature_count(), NAN);
  const ConvProblem& p = t.problem;
  size_t i = 0;
  f[i++] = lg(p.c);
  f[i++] = lg(p.k);
  f[i++] = lg(p.h);
  f[i++] = lg(p.w);
  f[i++] = static_cast<float>(p.kh);
  f[i++] = static_cast<float>(p.kw);
  f[i++] = static_cast<float>(p.stride_h);
  f[i++] = lg(p.groups);
  f[i++] = lg(static_cast<double>(p.macs()));
  f[i++] = static_cast<float>(t.density);
  f[i++] = static_cast<float>(t.threads);
  f[i++] = lg(p.oh() * p.ow());
  f[i++] = t.int8() ? 1.f : 0.f;  // int8 kernels run ~4x the MACs per cycle
  f[i++] = t.half() ? 1.f : 0.f;  // 16-bit: half the bytes; emulated or native arithmetic
  f[i++] = t.problem.is_blocked() ? 1.f : 0.f;  // the blocked kernels: other loops
  f[i++] = is_blocked(t.between) ? 1.f : 0.f;   // NCHW plus the reorders around it
  for (size_t a = 0; a < kAlgoSlots; ++a) f[kProblemFeatures + a] = 0.f;
  f[kProblemFeatures + algo_slot(t.algo)] = 1.f;
  // An int8 or 16-bit algorithm's knobs are its own (same algorithm name, other loops).
  const std::string dtype = t.dtype();
  const std::string knob_algo = dtype == "f32" ? t.algo : dtype + ":" + t.algo;
  for (const auto& [name, v] : knobs)
    f[kProblemFeatures + kAlgoSlots + knob_slot(knob_algo, name)] = static_cast<float>(v);
  return f;
}

double ranking_accuracy(const std::vector<double>& predicted, const std::vector<double>& actual,
                        const std::vector<int>& group) {
  DLAS_CHECK(predicted.size() == actual.size() && actual.size() == group.size(),
             ErrorKind::kInternal, "ranking_accuracy: size mismatch");
  int64_t pairs = 0, right = 0;
  for (size_t i = 0; i < actual.size(); ++i)
    for (size_t j = i + 1; j < actual.size(); ++j) {
      if (group[i] != group[j] || actual[i] == actual[j]) continue;
      ++pairs;
      right +=
          (predicted[i] < predicted[j]) == (actual[i] < actual[j]) && predicted[i] != predicted[j];
    }
  return pairs ? static_cast<double>(right) / static_cast<double>(pairs) : 0.5;
}

namespace {

class KnnModel : public CostModel {
 public:
  void fit(const std::vector<std::vector<float>>& x, const std::vector<double>& y) override {
    x_ = x;
    y_ = y;
  }
  std::vector<double> predict(const std::vector<std::vector<float>>& x) const override {
    std::vector<double> out(x.size(), 0.0);
    if (x_.empty()) return out;
    const size_t k = std::min<size_t>(5, x_.size());
    std::vector<std::pair<double, double>> d(x_.size());
    for (size_t q = 0; q < x.size(); ++q) {
      for (size_t i = 0; i < x_.size(); ++i) {
        double s = 0;
        for (size_t c = 0; c < x[q].size(); ++c) {
          const float a = std::isnan(x[q][c]) ? -1.f : x[q][c];
          const float b = std::isnan(x_[i][c]) ? -1.f : x_[i][c];
          // Algorithm columns weigh heavily: different algorithms are far apart.
          const double w = (c >= kProblemFeatures && c < kProblemFeatures + kAlgoSlots) ? 100 : 1;
          s += w * (a - b) * (a - b);
        }
        d[i] = {s, y_[i]};
      }
      std::partial_sort(d.begin(), d.begin() + k, d.end());
      double num = 0, den = 0;
      for (size_t i = 0; i < k; ++i) {
        const double w = 1.0 / (1e-3 + d[i].first);
        num += w * d[i].second;
        den += w;
      }
      out[q] = num / den;
    }
    return out;
  }
  std::string name() const override { return "knn"; }

 private:
  std::vector<std::vector<float>> x_;
  std::vector<double> y_;
};

#ifdef DLAS_WITH_XGBOOST
#define XGB_CHECK(call)                                                                       \
  do {                                                                                        \
    if ((call) != 0)                                                                          \
      ::dlas::fail(::dlas::ErrorKind::kRuntime, "xgboost: ", #call, ": ", XGBGetLastError()); \
  } while (0)

class XgbModel : public CostModel {
 public:
  explicit XgbModel(uint64_t seed) : seed_(seed) {}
  ~XgbModel() override {
    if (booster_) XGBoosterFree(booster_);
  }
  void fit(const std::vector<std::vector<float>>& x, const std::vector<double>& y) override {
    if (booster_) {
      XGBoosterFree(booster_);
      booster_ = nullptr;
    }
    if (x.size() < 2) return;
    const std::vector<float> flat = flatten(x);
    DMatrixHandle d = nullptr;
    XGB_CHECK(XGDMatrixCreateFromMat(flat.data(), x.size(), feature_count(), NAN, &d));
    std::vector<float> label(y.begin(), y.end());
    XGB_CHECK(XGDMatrixSetFloatInfo(d, "label", label.data(), label.size()));
    BoosterHandle b = nullptr;
    XGB_CHECK(XGBoosterCreate(&d, 1, &b));
    const std::string seed = std::to_string(seed_ % 2147483647);
    const std::pair<const char*, const char*> params[] = {{"objective", "reg:squarederror"},
                                                          {"max_depth", "6"},
                                                          {"eta", "0.3"},
                                                          {"min_child_weight", "1"},
                                                          {"subsample", "1"},
                                                          {"nthread", "1"},
                                                          {"verbosity", "0"},
                                                          {"seed", seed.c_str()}};
    for (const auto& [k, v] : params) XGB_CHECK(XGBoosterSetParam(b, k, v));
    for (int it = 0; it < kRounds; ++it) XGB_CHECK(XGBoosterUpdateOneIter(b, it, d));
    XGDMatrixFree(d);
    booster_ = b;
  }
  std::vector<double> predict(const std::vector<std::vector<float>>& x) const override {
    std::vector<double> out(x.size(), 0.0);
    if (!booster_ || x.empty()) return out;
    const std::vector<float> flat = flatten(x);
    DMatrixHandle d = nullptr;
    XGB_CHECK(XGDMatrixCreateFromMat(flat.data(), x.size(), feature_count(), NAN, &d));
    bst_ulong n = 0;
    const float* r = nullptr;
    XGB_CHECK(XGBoosterPredict(booster_, d, 0, 0, 0, &n, &r));
    for (size_t i = 0; i < out.size() && i < n; ++i) out[i] = r[i];
    XGDMatrixFree(d);
    return out;
  }
  std::string name() const override { return "xgboost"; }

 private:
  static constexpr int kRounds = 40;
  static std::vector<float> flatten(const std::vector<std::vector<float>>& x) {
    std::vector<float> flat;
    flat.reserve(x.size() * feature_count());
    for (const auto& row : x) flat.insert(flat.end(), row.begin(), row.end());
    return flat;
  }
  uint64_t seed_;
  BoosterHandle booster_ = nullptr;
};
#endif

}  // namespace

bool have_xgboost() {
#ifdef DLAS_WITH_XGBOOST
  return true;
#else
  return false;
#endif
}

std::unique_ptr<CostModel> make_cost_model(const std::string& kind, uint64_t seed) {
  if (kind == "knn") return std::make_unique<KnnModel>();
  DLAS_CHECK(kind == "xgboost", ErrorKind::kUsage, "unknown cost model '", kind,
             "' (expected xgboost|knn)");
#ifdef DLAS_WITH_XGBOOST
  return std::make_unique<XgbModel>(seed);
#else
  return std::make_unique<KnnModel>();  // built without libxgboost-dev
#endif
}

}  // namespace dlas::tune
