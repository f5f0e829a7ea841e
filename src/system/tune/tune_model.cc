#include "dlas/system/tune_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dlas/core/error.h"
#include "dlas/system/measure.h"

namespace dlas::tune {

Budget parse_budget(std::string_view text) {
  Budget b;
  const std::string all(text);
  size_t start = 0;
  while (true) {
    const size_t comma = all.find(',', start);
    const std::string item =
        all.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t used = 0;
    double v = -1;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    const std::string unit = item.substr(used);
    DLAS_CHECK(used > 0 && v > 0, ErrorKind::kUsage, "budget '", all,
               "': expected a positive amount like 120s, 2m or 500trials");
    if (unit == "s")
      b.seconds = v;
    else if (unit == "m" || unit == "min")
      b.seconds = v * 60;
    else if (unit == "trials" || unit == "t")
      b.trials = static_cast<int64_t>(v);
    else
      fail(ErrorKind::kUsage, "budget '", all, "': unknown unit '", unit,
           "' (expected s, m or trials)");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return b;
}

struct ModelTimer::Compiled {
  Plan plan;
  RunTimer timer;
  Compiled(const Graph& graph, PlanOptions options, const LayerChoices& choices)
      : plan(graph,
             [&] {
               options.layers = choices;
               return options;
             }()),
        timer(plan, random_inputs(plan.graph(), 0)) {}
  double once() { return timer.time_ms() / 1e3; }
  // Runs per block: enough to last block_seconds (the first, warm-up run's time decides).
  int runs_per_block(const TimeOptions& t) {
    const double first = once();
    return std::clamp(static_cast<int>(t.block_seconds / std::max(first, 1e-7)), t.min_runs,
                      t.max_runs);
  }
  double block(int runs) {
    std::vector<double> v;
    v.reserve(static_cast<size_t>(runs));
    for (int i = 0; i < runs; ++i) v.push_back(once());
    return percentile(v, 0.5);
  }
};

namespace {

// Combines the block medians: their minimum (TimeOptions::min_over_blocks) or median.
double combine(std::vector<double> v, const TimeOptions& t) {
  return t.min_over_blocks ? *std::min_element(v.begin(), v.end()) : percentile(v, 0.5);
}

double blocked_latency(ModelTimer::Compiled& c, const TimeOptions& t) {
  const int runs = c.runs_per_block(t);
  std::vector<double> v;
  for (int b = 0; b < std::max(1, t.blocks); ++b) v.push_back(c.block(runs));
  return combine(v, t);
}

}  // namespace

double time_model(const Graph& graph, PlanOptions options, const LayerChoices& choices,
                  const TimeOptions& t) {
  ModelTimer::Compiled c(graph, options, choices);
  return blocked_latency(c, t);
}

double time_model_median(const Graph& graph, PlanOptions options, const LayerChoices& choices) {
  ModelTimer::Compiled c(graph, options, choices);
  c.once();  // warm-up
  std::vector<double> t;
  const auto start = std::chrono::steady_clock::now();
  while (t.size() < 30 && (t.size() < 5 || ms_since(start) < 200)) t.push_back(c.once());
  return percentile(t, 0.5);
}

ModelTimer::ModelTimer(const Graph& graph, PlanOptions options, TimeOptions t)
    : graph_(graph), options_(std::move(options)), t_(t) {}
ModelTimer::~ModelTimer() = default;

namespace {

bool same_choices(const LayerChoices& a, const LayerChoices& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
    if (i->first != j->first || i->second.algo != j->second.algo ||
        i->second.knobs != j->second.knobs || i->second.layout != j->second.layout)
      return false;
  return true;
}

}  // namespace

namespace {

// Candidate / reference from alternating blocks (which side goes first alternates, so
// neither always inherits the other's cache state); each side its block medians combined.
double paired_ratio(ModelTimer::Compiled& cand, ModelTimer::Compiled& inc, const TimeOptions& t) {
  const int runs = std::max(cand.runs_per_block(t), inc.runs_per_block(t));
  std::vector<double> a, b;
  for (int k = 0; k < std::max(1, t.blocks); ++k) {
    if (k % 2 == 0) {
      a.push_back(cand.block(runs));
      b.push_back(inc.block(runs));
    } else {
      b.push_back(inc.block(runs));
      a.push_back(cand.block(runs));
    }
  }
  return combine(a, t) / combine(b, t);
}

}  // namespace

double ModelTimer::compare(const LayerChoices& choices) {
  DLAS_CHECK(reference_, ErrorKind::kInternal, "ModelTimer::compare before a first timing");
  Compiled cand(graph_, options_, choices);
  return paired_ratio(cand, *reference_, t_);
}

double ModelTimer::operator()(const LayerChoices& choices) {
  if (!reference_) {
    reference_ = std::make_unique<Compiled>(graph_, options_, choices);
    reference_latency_ = blocked_latency(*reference_, t_);
    last_choices_ = choices;
    return last_latency_ = reference_latency_;
  }
  if (same_choices(choices, last_choices_)) return last_latency_;
  double ratio = compare(choices);
  if (ratio < best_ratio_) {
    // An apparent new best: confirm it with a second paired timing and keep the slower of
    // the two, so one lucky timing cannot set the curve's minimum (the winner's curse).
    ratio = std::max(ratio, compare(choices));
    best_ratio_ = std::min(best_ratio_, ratio);
  }
  last_latency_ = reference_latency_ * ratio;
  last_choices_ = choices;
  return last_latency_;
}

namespace {

// knobs_to_string's "a=1,b=2" back.
Knobs knobs_of_step(const std::string& text) {
  Knobs k;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    const size_t eq = item.find('=');
    if (eq != std::string::npos) k[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
    at = end + 1;
  }
  return k;
}

}  // namespace

std::vector<Record> chosen_records(const Graph& graph, PlanOptions options,
                                   const std::vector<Task>& tasks, const TuneReport& rep,
                                   Measurer& m, double timeout_seconds) {
  options.layers = rep.choices;
  const Plan plan(graph, options);
  std::map<std::string, std::vector<const Task*>> by_node;
  for (const Task& t : tasks)
    for (const std::string& n : t.nodes) by_node[n].push_back(&t);
  std::vector<Record> out;
  std::set<std::string> done;  // task and knobs: the nodes of one layer share a record
  for (const StepInfo& s : plan.steps()) {
    auto it = by_node.find(s.node);
    if (it == by_node.end()) continue;
    const std::string algo = s.kernel.substr(0, s.kernel.find('['));  // "gemm[native]"
    const Knobs knobs = knobs_of_step(s.knobs);
    for (const Task* t : it->second) {
      if (t->algo != algo || t->layout() != layout_name(s.layout)) continue;
      try {
        t->space.validate(knobs, t->key);
      } catch (const Error&) {
        continue;
      }
      if (!done.insert(t->key + "\n" + s.knobs).second) break;
      Record r;
      r.task = t->key;
      r.algo = t->algo;
      r.knobs = knobs;
      r.chosen = true;
      for (const Record& x : rep.records)
        if (x.ok() && x.task == t->key && x.knobs == knobs) r.costs.push_back(x.cost());
      if (r.costs.empty()) {
        const MeasureResult now = measure_safely(m, *t, knobs, timeout_seconds);
        if (!now.ok()) break;
        r.costs = {now.cost()};
      }
      r.timestamp = now_iso8601();
      r.version = dlas_version();
      r.hardware = hardware_id(t->isa, t->threads);
      out.push_back(std::move(r));
      break;
    }
  }
  return out;
}

double model_reuse_bytes(const Graph& graph, const PlanOptions& options) {
  const MemoryReport m = Plan(graph, options).memory();
  return static_cast<double>(m.packed_weight_bytes + m.arena_bytes);
}

std::vector<Task> tasks_for_algorithm(std::vector<Task> tasks, std::string_view algo) {
  if (algo.empty() || algo == "auto") return tasks;
  std::erase_if(tasks, [&](const Task& t) { return t.algo != algo; });
  return tasks;
}

}  // namespace dlas::tune
