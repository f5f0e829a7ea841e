// Does a layer timed alone predict its time inside the model? For every conv
// node of a model, compiled with the auto rule and with a choices file (`dlas tune
// --choices`), prints the node's time inside the whole model (Plan::run_profiled, median
// over runs) beside the tuner's isolated measurement of the same algorithm and knobs, in
// both cache states of tune::MeasureOptions: warm (one prepared copy) and model (copies
// rotated over the model's reuse distance). Ends with each column's sum and the rank
// correlation of each isolated column with the in-model one over the (auto, chosen) pairs.
//   build/dlas_bench_tune_isolation MODEL THREADS [CHOICES.json] [RUNS]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "dlas/core/error.h"
#include "dlas/model/zoo.h"
#include "dlas/system/measure.h"
#include "dlas/system/plan.h"
#include "dlas/system/tune.h"
#include "dlas/system/tune_model.h"

namespace {

using namespace dlas;

struct Row {
  std::string node, algo, knobs;
  double model_ms = 0, warm_ms = 0, cold_ms = 0;
};

// Median in-model ms per conv node of a plan.
std::map<std::string, Row> profile(const Graph& g, PlanOptions o, const LayerChoices& choices,
                                   int runs) {
  o.layers = choices;
  Plan plan(g, o);
  std::vector<Tensor> in;
  for (size_t i = 0; i < plan.graph().inputs.size(); ++i)
    in.push_back(random_input(plan.graph().inputs[i], i));
  std::vector<Tensor> out = plan.make_outputs();
  std::vector<std::vector<double>> per(plan.steps().size());
  for (int r = 0; r < runs + 2; ++r) {
    std::vector<double> s;
    plan.run_profiled(in, out, s);
    if (r < 2) continue;  // warm-up
    for (size_t i = 0; i < s.size(); ++i) per[i].push_back(s[i]);
  }
  std::map<std::string, Row> rows;
  for (size_t i = 0; i < plan.steps().size(); ++i) {
    const StepInfo& st = plan.steps()[i];
    if (st.op != "FusedConv" && st.op != "Conv") continue;
    Row r;
    r.node = st.node;
    r.algo = st.kernel;
    r.knobs = st.knobs;
    r.model_ms = percentile(per[i], 0.5) * 1e3;
    rows[st.node] = r;
  }
  return rows;
}

// Spearman rank correlation.
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> idx(v.size());
    for (size_t i = 0; i < v.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size(); ++i) r[idx[i]] = static_cast<double>(i);
    return r;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  double d2 = 0;
  for (size_t i = 0; i < a.size(); ++i) d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  return 1 - 6 * d2 / (n * (n * n - 1));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL THREADS [CHOICES.json] [RUNS]\n", argv[0]);
    return 2;
  }
  try {
    const Graph g = build_zoo_model(argv[1]);
    PlanOptions o;
    o.threads = std::atoi(argv[2]);
    const LayerChoices chosen =
        argc > 3 && std::string(argv[3]) != "-" ? read_layer_choices(argv[3]) : LayerChoices{};
    const int runs = argc > 4 ? std::atoi(argv[4]) : 30;
    const std::vector<tune::Task> tasks = tune::extract_tasks(g, o);
    const double reuse = tune::model_reuse_bytes(g, o);
    tune::MeasureOptions warm;
    tune::MeasureOptions cold;
    cold.reuse_bytes = reuse;
    auto mw = tune::make_conv_measurer(warm);
    auto mc = tune::make_conv_measurer(cold);
    auto measure = [&](Row& r) {
      for (const tune::Task& t : tasks) {
        if (t.algo != r.algo || std::find(t.nodes.begin(), t.nodes.end(), r.node) == t.nodes.end())
          continue;
        Knobs k;
        auto it = chosen.find(r.node);
        if (it != chosen.end() && it->second.algo == r.algo && !it->second.knobs.empty())
          k = it->second.knobs;
        else
          k = t.defaults;
        r.warm_ms = tune::measure_safely(*mw, t, k, 1.0).cost() * 1e3;
        r.cold_ms = tune::measure_safely(*mc, t, k, 1.0).cost() * 1e3;
        return;
      }
    };
    std::vector<std::map<std::string, Row>> plans;
    plans.push_back(profile(g, o, {}, runs));
    plans.push_back(profile(g, o, chosen, runs));
    std::printf("reuse distance %.1f MB\n%-22s %-34s %9s %9s %9s | %-34s %9s %9s %9s\n",
                reuse / 1e6, "node", "auto", "model", "warm", "cold", "chosen", "model", "warm",
                "cold");
    std::vector<double> vm, vw, vc;
    double sum[2][3] = {};
    for (auto& [node, a] : plans[0]) {
      Row& c = plans[1][node];
      measure(a);
      measure(c);
      std::printf("%-22s %-34s %9.4f %9.4f %9.4f | %-34s %9.4f %9.4f %9.4f\n", node.c_str(),
                  (a.algo + ":" + a.knobs).substr(0, 34).c_str(), a.model_ms, a.warm_ms, a.cold_ms,
                  (c.algo + ":" + c.knobs).substr(0, 34).c_str(), c.model_ms, c.warm_ms, c.cold_ms);
      for (const Row* r : {&a, &c}) {
        const int s = r == &a ? 0 : 1;
        sum[s][0] += r->model_ms;
        sum[s][1] += r->warm_ms;
        sum[s][2] += r->cold_ms;
      }
      // The chosen / auto ratio per node, in each column: does isolation rank the pair
      // the way the model does?
      vm.push_back(c.model_ms / a.model_ms);
      vw.push_back(c.warm_ms / a.warm_ms);
      vc.push_back(c.cold_ms / a.cold_ms);
    }
    std::printf("%-22s %-34s %9.4f %9.4f %9.4f | %-34s %9.4f %9.4f %9.4f\n", "sum", "", sum[0][0],
                sum[0][1], sum[0][2], "", sum[1][0], sum[1][1], sum[1][2]);
    std::printf("spearman(chosen/auto ratios): warm vs model %.3f, cold vs model %.3f\n",
                spearman(vw, vm), spearman(vc, vm));
    // The whole model, chosen vs auto: the tuner's paired in-process ratio (ModelTimer,
    // both plans alive in one process) and fresh compiles timed one after the other.
    tune::ModelTimer timer(g, o);
    timer({});
    for (int i = 0; i < 5; ++i) {
      const double paired = timer.compare(chosen);
      const double a = tune::time_model(g, o, {});
      const double c = tune::time_model(g, o, chosen);
      std::printf(
          "whole model: paired chosen/auto %.3f; fresh auto %.3f ms, chosen %.3f ms (%.3f)\n",
          paired, a * 1e3, c * 1e3, c / a);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlas_bench_tune_isolation: %s\n", e.what());
    return 2;
  }
  return 0;
}
