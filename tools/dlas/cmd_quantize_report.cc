// The report of `dlas quantize`: a JSON object, or a table and a summary line on stdout.
#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "cli.h"
#include "cmd_compress.h"

namespace dlas::cli {

nlohmann::ordered_json quant_report_json(const QuantReport& r) {
  nlohmann::ordered_json j;
  j["spec"] = r.spec.str();
  j["dtype"] = r.spec.type == QuantType::kInt8  ? "int8"
               : r.spec.type == QuantType::kF16 ? "fp16"
                                                : "bf16";
  if (r.spec.type != QuantType::kInt8) {
    j["converted_initializers"] = r.converted_initializers;
    return j;
  }
  j["calibrator"] = calibrator_name(r.spec.calibrator);
  if (r.spec.calibrator == Calibrator::kPercentile) j["percentile"] = r.spec.percentile;
  j["activations"] = dtype_name(r.spec.activations);
  j["calib_data"] = r.spec.calib_data;
  j["calib_samples"] = r.samples;
  j["tensors"] = nlohmann::ordered_json::array();
  for (const QuantTensor& t : r.tensors) {
    nlohmann::ordered_json o = {{"name", t.name},
                                {"min", t.min},
                                {"max", t.max},
                                {"lo", t.lo},
                                {"hi", t.hi},
                                {"scale", t.q.scale},
                                {"zero_point", t.q.zero_point},
                                {"type", dtype_name(t.q.type)},
                                {"calibrator", calibrator_name(t.calibrator)},
                                {"feeds", t.feeds}};
    if (!t.shares.empty()) o["shares"] = t.shares;
    if (t.error >= 0) o["error"] = t.error;
    if (t.best_error() >= 0) o["best_error"] = t.best_error();
    if (!t.candidates.empty()) {
      o["candidates"] = nlohmann::ordered_json::array();
      for (const RangeCandidate& c : t.candidates)
        o["candidates"].push_back({{"calibrator", calibrator_name(c.calibrator)},
                                   {"lo", c.lo},
                                   {"hi", c.hi},
                                   {"error", c.error}});
    }
    j["tensors"].push_back(o);
  }
  j["worst"] = quant_worst_json(r, 3);
  j["layers"] = nlohmann::ordered_json::array();
  std::map<std::string, const QuantTensor*> by_name;
  for (const QuantTensor& t : r.tensors) by_name[t.name] = &t;
  for (const QuantLayer& l : r.layers) {
    const QuantTensor* x = by_name.count(l.input) ? by_name[l.input] : nullptr;
    j["layers"].push_back({{"node", l.node},
                           {"op", l.op},
                           {"input", l.input},
                           {"input_scale", x ? x->q.scale : 0.f},
                           {"input_zero_point", x ? x->q.zero_point : 0},
                           {"channels", l.channels},
                           {"weight_scale_min", l.w_scale_min},
                           {"weight_scale_max", l.w_scale_max}});
  }
  return j;
}

namespace {

// The calibrated tensors with a measured error, largest first.
std::vector<const QuantTensor*> by_error(const QuantReport& r) {
  std::vector<const QuantTensor*> v;
  for (const QuantTensor& t : r.tensors)
    if (t.error >= 0) v.push_back(&t);
  std::stable_sort(v.begin(), v.end(),
                   [](const QuantTensor* a, const QuantTensor* b) { return a->error > b->error; });
  return v;
}

const char* best_calibrator(const QuantTensor& t) {
  const RangeCandidate* best = nullptr;
  for (const RangeCandidate& c : t.candidates)
    if (c.error >= 0 && (!best || c.error < best->error)) best = &c;
  return best ? calibrator_name(best->calibrator) : "";
}

}  // namespace

nlohmann::ordered_json quant_worst_json(const QuantReport& r, size_t n) {
  nlohmann::ordered_json w = nlohmann::ordered_json::array();
  for (const QuantTensor* t : by_error(r)) {
    if (w.size() == n) break;
    w.push_back({{"name", t->name},
                 {"calibrator", calibrator_name(t->calibrator)},
                 {"error", t->error},
                 {"best_calibrator", best_calibrator(*t)},
                 {"best_error", t->best_error()}});
  }
  return w;
}

void print_quant_report(const QuantReport& r) {
  if (r.spec.type == QuantType::kInt8) {
    // ERROR: the relative error of the outputs of the layers the tensor feeds on the
    // calibration set, with the tensor's range; BEST: the smallest any calibrator gave.
    const std::vector<const QuantTensor*> ranked = by_error(r);
    std::map<const QuantTensor*, size_t> rank;
    for (size_t i = 0; i < ranked.size(); ++i) rank[ranked[i]] = i;
    std::printf("%-40s %-10s %10s %10s %8s %8s %-10s %-28s\n", "TENSOR", "CALIBRATOR", "RANGE LO",
                "RANGE HI", "ERROR", "BEST", "BY", "FEEDS");
    for (const QuantTensor& t : r.tensors) {
      const std::string feeds = t.feeds.empty() ? "-" : short_name(t.feeds[0], 28);
      if (!t.shares.empty()) {
        std::printf("%-40s %-10s %10.4g %10.4g %8s %8s %-10s %-28s\n",
                    short_name(t.name, 40).c_str(), "shared", t.lo, t.hi, "-", "-", "",
                    feeds.c_str());
        continue;
      }
      char err[16] = "-", best[16] = "-";
      if (t.error >= 0) std::snprintf(err, sizeof err, "%.2f%%", 100 * t.error);
      if (t.best_error() >= 0) std::snprintf(best, sizeof best, "%.2f%%", 100 * t.best_error());
      const auto it = rank.find(&t);
      const char* mark = it == rank.end()                       ? ""
                         : t.error >= kHighQuantError           ? "  << high"
                         : it->second == 0 && ranked.size() > 1 ? "  < worst"
                                                                : "";
      std::printf("%-40s %-10s %10.4g %10.4g %8s %8s %-10s %-28s%s\n",
                  short_name(t.name, 40).c_str(), calibrator_name(t.calibrator), t.lo, t.hi, err,
                  best, best_calibrator(t), feeds.c_str(), mark);
    }
    std::printf(
        "\n%s: %zu activations, %zu Conv/Gemm/MatMul layers (s8 per-channel weights), "
        "%d calibration samples\n",
        r.spec.str().c_str(), r.tensors.size(), r.layers.size(), r.samples);
    if (!ranked.empty()) {
      std::printf("largest errors (relative error of the layer outputs each tensor feeds):");
      for (size_t i = 0; i < std::min<size_t>(3, ranked.size()); ++i)
        std::printf("%s %s %.2f%%", i ? "," : "", short_name(ranked[i]->name, 40).c_str(),
                    100 * ranked[i]->error);
      std::printf("\n");
    }
  } else {
    std::printf("%s: %lld initializers converted\n", r.spec.str().c_str(),
                static_cast<long long>(r.converted_initializers));
  }
}

}  // namespace dlas::cli
