// The --compress value: pruning and quantization parts, parsed and printed canonically
// (include/dlas/optimize/compress_spec.h).
#include "dlas/optimize/compress_spec.h"

#include <cstdio>
#include <cstdlib>

#include "dlas/core/error.h"

namespace dlas {

namespace {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? text.npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

}  // namespace

const char* calibrator_name(Calibrator c) {
  switch (c) {
    case Calibrator::kMinMax:
      return "minmax";
    case Calibrator::kPercentile:
      return "percentile";
    case Calibrator::kEntropy:
      return "entropy";
    case Calibrator::kMse:
      return "mse";
    case Calibrator::kNone:
      return "none";
    case Calibrator::kAuto:
      return "auto";
  }
  return "?";
}

std::optional<Calibrator> calibrator_from_name(std::string_view name) {
  for (Calibrator c : {Calibrator::kMinMax, Calibrator::kPercentile, Calibrator::kEntropy,
                       Calibrator::kMse, Calibrator::kNone, Calibrator::kAuto})
    if (name == calibrator_name(c)) return c;
  return std::nullopt;
}

std::string QuantSpec::str() const {
  if (type == QuantType::kF16) return "fp16";
  if (type == QuantType::kBF16) return "bf16";
  std::string s = "int8";
  if (calibrator != Calibrator::kAuto) s += std::string(":") + calibrator_name(calibrator);
  if (calibrator == Calibrator::kPercentile && percentile != 99.99) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "=%g", percentile);
    s += buf;
  }
  if (activations == DType::kS8) s += ":s8";
  return s;
}

QuantSpec parse_quant_spec(std::string_view part) {
  const std::vector<std::string> f = split(part, ':');
  QuantSpec q;
  if (f[0] == "fp16" || f[0] == "bf16") {
    DLAS_CHECK(f.size() == 1, ErrorKind::kInvalidInput, part, ": ", f[0], " takes no options");
    q.type = f[0] == "fp16" ? QuantType::kF16 : QuantType::kBF16;
    return q;
  }
  DLAS_CHECK(f[0] == "int8", ErrorKind::kInvalidInput, part,
             ": not a quantization spec (int8[:calibrator][:u8|s8], fp16, bf16)");
  bool have_cal = false, have_act = false;
  for (size_t i = 1; i < f.size(); ++i) {
    const std::string& o = f[i];
    if (o == "u8" || o == "s8") {
      DLAS_CHECK(!have_act, ErrorKind::kInvalidInput, part, ": activation type given twice");
      q.activations = o == "u8" ? DType::kU8 : DType::kS8;
      have_act = true;
      continue;
    }
    const std::string name = o.substr(0, o.find('='));
    const std::optional<Calibrator> c = calibrator_from_name(name);
    DLAS_CHECK(c, ErrorKind::kInvalidInput, part, ": unknown option '", o,
               "' (auto, minmax, percentile[=P], entropy, mse, none, u8, s8)");
    DLAS_CHECK(!have_cal, ErrorKind::kInvalidInput, part, ": calibrator given twice");
    q.calibrator = *c;
    have_cal = true;
    if (o.find('=') != std::string::npos) {
      DLAS_CHECK(*c == Calibrator::kPercentile, ErrorKind::kInvalidInput, part,
                 ": only percentile ", "takes a value");
      const std::string v = o.substr(o.find('=') + 1);
      char* end = nullptr;
      const double p = std::strtod(v.c_str(), &end);
      DLAS_CHECK(!v.empty() && end && *end == '\0' && p > 0 && p <= 100, ErrorKind::kInvalidInput,
                 part, ": percentile must be in (0, 100], got '", v, "'");
      q.percentile = p;
    }
  }
  return q;
}

std::string CompressSpec::str() const {
  std::string s;
  if (prune) s = prune->str();
  if (quant) s += (s.empty() ? "" : "+") + quant->str();
  return s.empty() ? "dense" : s;
}

CompressSpec parse_compress(std::string_view text) {
  DLAS_CHECK(!text.empty(), ErrorKind::kInvalidInput, "compress spec is empty (dense, wp:S, ...)");
  CompressSpec c;
  if (text == "dense") return c;
  for (const std::string& part : split(text, '+')) {
    DLAS_CHECK(!part.empty(), ErrorKind::kInvalidInput, text, ": empty part");
    const std::string head = part.substr(0, part.find(':'));
    if (head == "fp16" || head == "bf16" || head == "int8") {
      DLAS_CHECK(!c.quant, ErrorKind::kInvalidInput, text, ": more than one quantization part");
      c.quant = parse_quant_spec(part);
      continue;
    }
    DLAS_CHECK(head == "wp" || head == "bp" || head == "cp", ErrorKind::kInvalidInput, text,
               ": unknown part '", part, "' (dense, wp:S, bp:BxC:S, cp:S, fp16, bf16, int8)");
    DLAS_CHECK(!c.prune, ErrorKind::kInvalidInput, text, ": more than one pruning part");
    c.prune = parse_prune_spec(part);
  }
  return c;
}

}  // namespace dlas
