#include "dlas/system/tune_model.h"

#include <algorithm>
#include <chrono>
#include <string>

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

double time_model(const Graph& graph, PlanOptions options, const LayerChoices& choices) {
  options.layers = choices;
  Plan plan(graph, options);
  std::vector<Tensor> in;
  for (size_t i = 0; i < plan.graph().inputs.size(); ++i)
    in.push_back(random_input(plan.graph().inputs[i], i));
  std::vector<Tensor> out = plan.make_outputs();
  plan.run_into(in, out);  // warm-up
  std::vector<double> t;
  const auto start = std::chrono::steady_clock::now();
  while (t.size() < 30 && (t.size() < 5 || ms_since(start) < 200)) {
    const auto t0 = std::chrono::steady_clock::now();
    plan.run_into(in, out);
    t.push_back(ms_since(t0) / 1e3);
  }
  return percentile(t, 0.5);
}

std::vector<Task> tasks_for_algorithm(std::vector<Task> tasks, std::string_view algo) {
  if (algo.empty() || algo == "auto") return tasks;
  std::erase_if(tasks, [&](const Task& t) { return t.algo != algo; });
  return tasks;
}

}  // namespace dlas::tune
