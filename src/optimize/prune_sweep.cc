// sweep.json: the prune-and-fine-tune curve of one model and method, and its elbow.
#include "dlas/optimize/prune_sweep.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dlas/core/error.h"
#include "dlas/core/file.h"

namespace dlas {
namespace {

using nlohmann::json;

json quant_json(const std::vector<SweepQuant>& q) {
  json a = json::array();
  for (const auto& x : q)
    a.push_back({{"compress", x.compress}, {"top1", x.top1}, {"top5", x.top5}});
  return a;
}

json point_json(const SweepPoint& p) {
  return {{"level", p.level},
          {"spec", p.spec},
          {"achieved", p.achieved},
          {"top1", p.top1},
          {"top5", p.top5},
          {"top1_pruned", p.top1_pruned},
          {"params", p.params},
          {"nonzero_params", p.nonzero_params},
          {"macs", p.macs},
          {"finetune_epochs", p.finetune_epochs},
          {"finetune_seconds", p.finetune_seconds},
          {"model", p.model}};
}

// Reads fields with errors that name the file and the JSON path.
struct Reader {
  const std::string& source;

  [[noreturn]] void bad(const std::string& path, const std::string& why) const {
    fail(ErrorKind::kInvalidInput, source, ": ", path, ": ", why);
  }
  const json& at(const json& o, const std::string& path, const char* key) const {
    if (!o.is_object()) bad(path, "expected an object");
    auto it = o.find(key);
    if (it == o.end()) bad(path + "." + key, "missing");
    return *it;
  }
  double number(const json& o, const std::string& path, const char* key) const {
    const json& v = at(o, path, key);
    if (!v.is_number()) bad(path + "." + key, "expected a number");
    double d = v.get<double>();
    if (!std::isfinite(d)) bad(path + "." + key, "not finite");
    return d;
  }
  int64_t integer(const json& o, const std::string& path, const char* key) const {
    const json& v = at(o, path, key);
    if (!v.is_number_integer()) bad(path + "." + key, "expected an integer");
    return v.get<int64_t>();
  }
  std::string text(const json& o, const std::string& path, const char* key) const {
    const json& v = at(o, path, key);
    if (!v.is_string()) bad(path + "." + key, "expected a string");
    return v.get<std::string>();
  }
  SweepPoint point(const json& o, const std::string& path) const {
    SweepPoint p;
    p.level = number(o, path, "level");
    p.spec = text(o, path, "spec");
    p.achieved = number(o, path, "achieved");
    p.top1 = number(o, path, "top1");
    p.top5 = number(o, path, "top5");
    p.top1_pruned = number(o, path, "top1_pruned");
    p.params = integer(o, path, "params");
    p.nonzero_params = integer(o, path, "nonzero_params");
    p.macs = integer(o, path, "macs");
    p.finetune_epochs = number(o, path, "finetune_epochs");
    p.finetune_seconds = number(o, path, "finetune_seconds");
    p.model = text(o, path, "model");
    if (p.level < 0 || p.level >= 1) bad(path + ".level", "must be in [0, 1)");
    return p;
  }
  std::vector<SweepQuant> quant(const json& o, const char* key) const {
    const json& a = at(o, "", key);
    if (!a.is_array()) bad(std::string(".") + key, "expected an array");
    std::vector<SweepQuant> out;
    for (size_t i = 0; i < a.size(); ++i) {
      std::string path = std::string(".") + key + "[" + std::to_string(i) + "]";
      out.push_back(
          {text(a[i], path, "compress"), number(a[i], path, "top1"), number(a[i], path, "top5")});
    }
    return out;
  }
};

}  // namespace

std::vector<double> default_sweep_levels(PruneMethod method) {
  switch (method) {
    case PruneMethod::kWeight:
      return {0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99};
    case PruneMethod::kChannel: {
      std::vector<double> v;
      for (int i = 1; i <= 19; ++i) v.push_back(i * 0.05);
      v.push_back(0.99);
      return v;
    }
    case PruneMethod::kBlock:
      break;
  }
  fail(ErrorKind::kInvalidInput, "prune sweeps take weight or channel pruning, not block pruning");
}

std::vector<double> parse_sweep_levels(std::string_view text, PruneMethod method) {
  if (text.empty()) return default_sweep_levels(method);
  std::vector<double> v;
  std::string prev;
  std::stringstream ss{std::string(text)};
  for (std::string part; std::getline(ss, part, ',');) {
    size_t used = 0;
    double d = 0;
    try {
      d = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    DLAS_CHECK(used == part.size() && !part.empty(), ErrorKind::kInvalidInput, "levels '", text,
               "': '", part, "' is not a number");
    DLAS_CHECK(d > 0 && d < 1, ErrorKind::kInvalidInput, "levels '", text, "': ", part,
               " is outside (0, 1)");
    DLAS_CHECK(v.empty() || d > v.back(), ErrorKind::kInvalidInput, "levels '", text,
               "': levels must be ascending (", prev, " then ", part, ")");
    v.push_back(d);
    prev = part;
  }
  DLAS_CHECK(!v.empty(), ErrorKind::kInvalidInput, "levels is empty");
  return v;
}

int find_elbow(const std::vector<SweepPoint>& points, double baseline_top1, double tolerance) {
  int best = -1;
  for (size_t i = 0; i < points.size(); ++i) {
    const SweepPoint& p = points[i];
    if (p.top1 < 0 || p.top1 < baseline_top1 - tolerance - 1e-12) continue;
    if (best < 0 || p.level > points[best].level) best = static_cast<int>(i);
  }
  return best;
}

const char* sweep_method_name(PruneMethod method) {
  switch (method) {
    case PruneMethod::kWeight:
      return "weight";
    case PruneMethod::kChannel:
      return "channel";
    case PruneMethod::kBlock:
      return "block";
  }
  return "?";
}

PruneMethod parse_sweep_method(std::string_view name) {
  if (name == "weight") return PruneMethod::kWeight;
  if (name == "channel") return PruneMethod::kChannel;
  fail(ErrorKind::kInvalidInput, "method '", name, "': expected weight or channel");
}

std::string sweep_to_json(const SweepResult& r) {
  json points = json::array();
  for (const auto& p : r.points) points.push_back(point_json(p));
  json j = {{"version", r.version},
            {"model", r.model},
            {"dataset", r.dataset},
            {"method", sweep_method_name(r.method)},
            {"tolerance", r.tolerance},
            {"total_finetune_epochs", r.total_finetune_epochs},
            {"test_samples", r.test_samples},
            {"baseline", point_json(r.baseline)},
            {"points", points},
            {"elbow", r.elbow},
            {"baseline_quant", quant_json(r.baseline_quant)},
            {"elbow_quant", quant_json(r.elbow_quant)}};
  if (!r.settings.empty()) j["settings"] = r.settings;
  return j.dump(2) + "\n";
}

SweepResult sweep_from_json(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail(ErrorKind::kInvalidInput, source, ": not valid JSON (", e.what(), ")");
  }
  Reader rd{source};
  SweepResult r;
  r.version = static_cast<int>(rd.integer(j, "", "version"));
  if (r.version != 1) rd.bad(".version", "unsupported version " + std::to_string(r.version));
  r.model = rd.text(j, "", "model");
  r.dataset = rd.text(j, "", "dataset");
  try {
    r.method = parse_sweep_method(rd.text(j, "", "method"));
  } catch (const Error& e) {
    rd.bad(".method", e.what());
  }
  r.tolerance = rd.number(j, "", "tolerance");
  r.total_finetune_epochs = rd.number(j, "", "total_finetune_epochs");
  r.test_samples = rd.integer(j, "", "test_samples");
  r.baseline = rd.point(rd.at(j, "", "baseline"), ".baseline");
  const json& pts = rd.at(j, "", "points");
  if (!pts.is_array()) rd.bad(".points", "expected an array");
  for (size_t i = 0; i < pts.size(); ++i)
    r.points.push_back(rd.point(pts[i], ".points[" + std::to_string(i) + "]"));
  r.elbow = static_cast<int>(rd.integer(j, "", "elbow"));
  if (r.elbow < -1 || r.elbow >= static_cast<int>(r.points.size()))
    rd.bad(".elbow", "not -1 or an index into points");
  r.baseline_quant = rd.quant(j, "baseline_quant");
  r.elbow_quant = rd.quant(j, "elbow_quant");
  if (auto it = j.find("settings"); it != j.end()) {
    if (!it->is_object()) rd.bad(".settings", "expected an object");
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string()) rd.bad(".settings." + k, "expected a string");
      r.settings[k] = v.get<std::string>();
    }
  }
  return r;
}

SweepResult read_sweep(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::kInvalidInput, path.string(), ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  SweepResult r = sweep_from_json(ss.str(), path.string());
  r.dir = path.parent_path();
  return r;
}

void write_sweep(const std::filesystem::path& path, const SweepResult& r) {
  write_file_atomic(path, sweep_to_json(r));
}

}  // namespace dlas
