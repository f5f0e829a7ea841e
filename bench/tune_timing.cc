// Stability of the whole-model timing the tuner relies on: the same untuned model
// timed over and over by the old rule (median of 5-30 runs, time_model_median) and the
// new one (blocks of TimeOptions, time_model), and A/A comparisons -- two
// timings of the same model, independent (old) or paired in alternating blocks
// (ModelTimer::compare, new). Prints one JSON object.
//   build/dlas_bench_tune_timing [MODEL] [THREADS] [N] [BLOCKS] [BLOCK_SECONDS] [MIN 1|0]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dlas/core/error.h"
#include "dlas/model/zoo.h"
#include "dlas/system/tune_model.h"

namespace {

struct Stats {
  double mean = 0, cv = 0, max_dev = 0;  // max_dev: max |x / mean - 1|
};
Stats stats(const std::vector<double>& v) {
  Stats s;
  for (double x : v) s.mean += x / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) {
    ss += (x - s.mean) * (x - s.mean);
    s.max_dev = std::max(s.max_dev, std::abs(x / s.mean - 1));
  }
  s.cv = std::sqrt(ss / static_cast<double>(v.size() - 1)) / s.mean;
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dlas;
  const std::string model = argc > 1 ? argv[1] : "resnet18-cifar";
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const int n = argc > 3 ? std::max(3, std::atoi(argv[3])) : 15;
  try {
    const Graph g = build_zoo_model(model);
    PlanOptions o;
    o.threads = threads;
    std::vector<double> old_abs, new_abs, old_aa, new_aa;
    double old_s = 0, new_s = 0, old_aa_s = 0, new_aa_s = 0;
    tune::TimeOptions to;
    if (argc > 4) to.blocks = std::atoi(argv[4]);
    if (argc > 5) to.block_seconds = std::atof(argv[5]);
    if (argc > 6) to.min_over_blocks = std::atoi(argv[6]) != 0;
    tune::ModelTimer timer(g, o, to);
    timer({});
    // Interleave the methods, so a slow stretch of the machine hits all of them.
    for (int i = 0; i < n; ++i) {
      auto t = std::chrono::steady_clock::now();
      old_abs.push_back(tune::time_model_median(g, o, {}) * 1e3);
      old_s += seconds_since(t);
      t = std::chrono::steady_clock::now();
      new_abs.push_back(tune::time_model(g, o, {}, to) * 1e3);
      new_s += seconds_since(t);
      t = std::chrono::steady_clock::now();
      const double a = tune::time_model_median(g, o, {});
      old_aa.push_back(tune::time_model_median(g, o, {}) / a);
      old_aa_s += seconds_since(t);
      t = std::chrono::steady_clock::now();
      new_aa.push_back(timer.compare({}));
      new_aa_s += seconds_since(t);
    }
    const Stats oa = stats(old_abs), na = stats(new_abs), or_ = stats(old_aa), nr = stats(new_aa);
    std::printf(
        "{\"model\": \"%s\", \"threads\": %d, \"n\": %d,\n"
        " \"old_median\": {\"mean_ms\": %.4f, \"cv\": %.4f, \"max_dev\": %.4f, \"s_each\": %.3f},\n"
        " \"new_blocks\": {\"mean_ms\": %.4f, \"cv\": %.4f, \"max_dev\": %.4f, "
        "\"s_each\": %.3f},\n"
        " \"old_aa_ratio\": {\"mean\": %.4f, \"cv\": %.4f, \"max_dev\": %.4f, \"s_each\": %.3f},\n"
        " \"new_paired_aa_ratio\": {\"mean\": %.4f, \"cv\": %.4f, \"max_dev\": %.4f, "
        "\"s_each\": %.3f}}\n",
        model.c_str(), threads, n, oa.mean, oa.cv, oa.max_dev, old_s / n, na.mean, na.cv,
        na.max_dev, new_s / n, or_.mean, or_.cv, or_.max_dev, old_aa_s / n, nr.mean, nr.cv,
        nr.max_dev, new_aa_s / n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlas_bench_tune_timing: %s\n", e.what());
    return 2;
  }
  return 0;
}
