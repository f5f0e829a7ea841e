// Tuning records: JSON Lines (one measured candidate per line, like TVM's logs), the best
// per task, and their application to a model as per-layer choices (transfer by task key).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dlas/core/error.h"
#include "dlas/core/file.h"
#include "dlas/core/version.h"
#include "dlas/hw/cpu.h"
#include "dlas/system/tune.h"

namespace dlas::tune {

double Record::cost() const {
  if (!ok()) return INFINITY;
  std::vector<double> c = costs;
  std::nth_element(c.begin(), c.begin() + c.size() / 2, c.end());
  return c[c.size() / 2];
}

std::string record_to_json(const Record& r) {
  nlohmann::ordered_json j;
  j["task"] = r.task;
  j["algo"] = r.algo;
  j["knobs"] = nlohmann::json::parse(knobs_to_json(r.knobs));
  j["costs"] = r.costs;
  j["error"] = r.error;
  j["timestamp"] = r.timestamp;
  j["version"] = r.version;
  j["hardware"] = r.hardware;
  if (r.chosen) j["chosen"] = true;
  return j.dump();
}

Record record_from_json(std::string_view line, std::string_view where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const std::exception& e) {
    fail(ErrorKind::kInvalidInput, where, ": not JSON: ", e.what());
  }
  DLAS_CHECK(j.is_object(), ErrorKind::kInvalidInput, where, ": expected a JSON object");
  auto text = [&](const char* field, bool required) -> std::string {
    if (!j.contains(field)) {
      DLAS_CHECK(!required, ErrorKind::kInvalidInput, where, ": missing field '", field, "'");
      return {};
    }
    DLAS_CHECK(j[field].is_string(), ErrorKind::kInvalidInput, where, ": field '", field,
               "' must be a string");
    return j[field].get<std::string>();
  };
  Record r;
  r.task = text("task", true);
  r.algo = text("algo", true);
  r.error = text("error", false);
  r.timestamp = text("timestamp", false);
  r.version = text("version", false);
  r.hardware = text("hardware", false);
  if (j.contains("chosen")) {
    DLAS_CHECK(j["chosen"].is_boolean(), ErrorKind::kInvalidInput, where,
               ": field 'chosen' must be true or false");
    r.chosen = j["chosen"].get<bool>();
  }
  if (j.contains("knobs")) {
    try {
      r.knobs = knobs_from_json(j["knobs"].dump());
    } catch (const Error& e) {
      fail(ErrorKind::kInvalidInput, where, ": field 'knobs': ", e.what());
    }
  }
  if (j.contains("costs")) {
    DLAS_CHECK(j["costs"].is_array(), ErrorKind::kInvalidInput, where,
               ": field 'costs' must be an array of seconds");
    for (const auto& c : j["costs"]) {
      DLAS_CHECK(c.is_number() && c.get<double>() >= 0, ErrorKind::kInvalidInput, where,
                 ": field 'costs' must hold non-negative numbers");
      r.costs.push_back(c.get<double>());
    }
  }
  return r;
}

std::vector<Record> read_records(const std::string& path) {
  std::ifstream f(path);
  DLAS_CHECK(f, ErrorKind::kInvalidInput, path, ": cannot open records file");
  std::vector<Record> out;
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out.push_back(record_from_json(line, str(path, ":", n)));
  }
  return out;
}

void write_records(const std::string& path, const std::vector<Record>& records) {
  write_file_atomic(path, [&](std::ostream& out) {
    for (const Record& r : records) out << record_to_json(r) << "\n";
  });
}

void append_record(const std::string& path, const Record& r) {
  std::ofstream f(path, std::ios::app);
  DLAS_CHECK(f, ErrorKind::kRuntime, path, ": cannot append");
  f << record_to_json(r) << "\n";
  f.flush();
}

std::vector<Record> best_records(const std::vector<Record>& records) {
  // Records of one candidate (task and knobs) are pooled first into one record whose costs
  // are their medians, one per record, so its cost() is the median over its timings: a
  // later re-timing (the tuner's confirmation) outvotes a lucky first one, and a candidate
  // timed twice is judged by the slower of the two (upper median), which favours no one.
  std::vector<Record> pooled;
  std::map<std::string, size_t> candidate;
  for (const Record& r : records) {
    if (!r.ok()) continue;
    const std::string key = r.task + "\n" + knobs_to_string(r.knobs);
    auto it = candidate.find(key);
    if (it == candidate.end()) {
      candidate.emplace(key, pooled.size());
      pooled.push_back(r);
      // A chosen record repeats its candidate's timings (the only ones when it comes first).
      if (!r.chosen) pooled.back().costs = {r.cost()};
    } else if (r.chosen) {
      pooled[it->second].chosen = true;
    } else {
      pooled[it->second].costs.push_back(r.cost());
    }
  }
  std::vector<Record> out;
  std::map<std::string, size_t> at;
  for (const Record& r : pooled) {
    auto it = at.find(r.task);
    if (it == at.end()) {
      at[r.task] = out.size();
      out.push_back(r);
      continue;
    }
    const Record& b = out[it->second];
    if (r.chosen != b.chosen ? r.chosen : r.cost() < b.cost()) out[it->second] = r;
  }
  return out;
}

std::string hardware_id(Isa isa, int threads) {
  std::string model = cpu_info().model_name;
  if (model.empty()) model = "unknown-cpu";
  return str(model, "|", isa_name(isa), "|t", threads);
}

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string dlas_version() { return str(DLAS_VERSION, " (", DLAS_GIT_SHA, ")"); }

LayerChoices choices_from_best(const std::vector<Task>& tasks, const std::vector<Record>& best) {
  std::map<std::string, const Record*> by_key;
  for (const Record& r : best)
    if (r.ok()) {
      auto [it, fresh] = by_key.emplace(r.task, &r);
      const Record& b = *it->second;
      if (!fresh && (r.chosen != b.chosen ? r.chosen : r.cost() < b.cost())) it->second = &r;
    }
  // Per layer: the fastest valid record among its tasks.
  struct Best {
    bool chosen;
    double cost;
    LayerChoice choice;
  };
  std::map<std::string, Best> layer_best;
  std::map<std::string, std::vector<std::string>> layer_nodes;
  for (const Task& t : tasks) {
    for (const std::string& n : t.nodes) {
      auto& v = layer_nodes[t.layer];
      if (std::find(v.begin(), v.end(), n) == v.end()) v.push_back(n);
    }
    auto it = by_key.find(t.key);
    if (it == by_key.end() || it->second->algo != t.algo) continue;
    try {
      t.space.validate(it->second->knobs, t.key);
    } catch (const Error&) {
      continue;  // a record from an older space
    }
    const Record& r = *it->second;
    auto lb = layer_best.find(t.layer);
    if (lb == layer_best.end() ||
        (r.chosen != lb->second.chosen ? r.chosen : r.cost() < lb->second.cost))
      layer_best[t.layer] = {r.chosen, r.cost(), LayerChoice{t.algo, r.knobs, t.layout()}};
  }
  LayerChoices out;
  for (const auto& [layer, best] : layer_best)
    for (const std::string& n : layer_nodes[layer]) out[n] = best.choice;
  return out;
}

AppliedRecords apply_records(const Graph& graph, const PlanOptions& options,
                             const std::vector<Record>& records) {
  // Every algorithm, sparse ones included at any density: a record decides.
  const std::vector<Task> tasks = extract_tasks(graph, options, 1.0);
  AppliedRecords a;
  a.layers = choices_from_best(tasks, best_records(records));
  std::map<std::string, int> nodes;
  for (const Task& t : tasks)
    for (const std::string& n : t.nodes) nodes[n] = 1;
  a.conv_nodes = static_cast<int>(nodes.size());
  a.matched_nodes = static_cast<int>(a.layers.size());
  return a;
}

}  // namespace dlas::tune
