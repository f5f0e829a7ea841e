// Tuning a whole model in one call (DLAS layer 5): the pieces `dlas tune` and the study's
// `tuning = ["tuned:120s"]` dimension share -- budget parsing, whole-model re-timing, and
// the task set of a model restricted to one algorithm.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/model/graph.h"
#include "dlas/system/plan.h"
#include "dlas/system/tune.h"

namespace dlas::tune {

struct Budget {
  double seconds = 0;  // 0: unlimited
  int64_t trials = 0;  // 0: unlimited
};
// "120s", "2m", "500trials", or both joined by ',' ("120s,500trials"). Throws kUsage with a
// message that quotes `text` and says what is expected.
Budget parse_budget(std::string_view text);

// Whole-model latency in seconds: `graph` compiled with `options` and these layer choices,
// one warm-up run, then the median of 5 to 30 runs (at most ~200 ms of runs).
double time_model(const Graph& graph, PlanOptions options, const LayerChoices& choices);

// The tasks of extract_tasks, keeping only algorithm `algo` (an algorithm name; "auto" or
// "" keeps all). Layers `algo` cannot run keep no task: the auto rule runs them untuned.
std::vector<Task> tasks_for_algorithm(std::vector<Task> tasks, std::string_view algo);

}  // namespace dlas::tune
