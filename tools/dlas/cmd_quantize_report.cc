// The report of `dlas quantize`: a JSON object, or a table and a summary line on stdout.
#include <cstdio>
#include <map>

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

void print_quant_report(const QuantReport& r) {
  if (r.spec.type == QuantType::kInt8) {
    std::printf("%-48s %12s %12s %12s %5s\n", "TENSOR", "RANGE LO", "RANGE HI", "SCALE", "ZP");
    for (const QuantTensor& t : r.tensors) {
      std::printf("%-48s %12.5g %12.5g %12.5g %5d\n", short_name(t.name, 48).c_str(), t.lo, t.hi,
                  t.q.scale, t.q.zero_point);
    }
    std::printf(
        "\n%s: %zu activations, %zu Conv/Gemm layers (s8 per-channel weights), "
        "%d calibration samples\n",
        r.spec.str().c_str(), r.tensors.size(), r.layers.size(), r.samples);
  } else {
    std::printf("%s: %lld initializers converted\n", r.spec.str().c_str(),
                static_cast<long long>(r.converted_initializers));
  }
}

}  // namespace dlas::cli
