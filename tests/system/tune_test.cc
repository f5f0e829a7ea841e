// The auto-tuner: search on synthetic knob landscapes (planted optimum, determinism, the
// cost model's ranking), failure capture, the early-stop rule, and records that
// round-trip, distill and apply to a Plan.
#include <gtest/gtest.h>
#include <map>

#include <unistd.h>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "dlas/algo/layout.h"
#include "dlas/core/error.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/quantize.h"
#include "dlas/system/compress.h"
#include "dlas/system/measure.h"
#include "dlas/system/plan.h"
#include "dlas/system/tune.h"
#include "dlas/system/tune_model.h"

namespace dlas::tune {
namespace {

// A zoo model at a quarter of its width (quick to tune and time).
Graph quarter_width(const std::string& name) {
  ZooOptions zo;
  zo.width_mult = 0.25;
  return build_zoo_model(name, zo);
}

// A task with `knobs` knobs of 6 values each, standing for a 3x3 conv.
Task synthetic_task(const std::string& name, int knobs, int weight = 1) {
  Task t;
  t.key = "synthetic|";
  t.key += name;
  t.layer = name;
  t.algo = "gemm";
  t.problem.c = 32;
  t.problem.k = 32;
  t.problem.h = t.problem.w = 16;
  t.problem.kh = t.problem.kw = 3;
  t.problem.pad_t = t.problem.pad_l = t.problem.pad_b = t.problem.pad_r = 1;
  t.isa = Isa::kScalar;
  t.threads = 1;
  for (int i = 0; i < knobs; ++i)
    t.space.knobs.push_back(
        {std::string("k").append(std::to_string(i)), {1, 2, 4, 8, 16, 32}, "synthetic"});
  t.defaults = t.space.point(0);
  t.nodes = {name};
  t.weight = weight;
  return t;
}

// cost = scale x prod_i (1 + 0.4 (index_i - optimum_i)^2): one planted optimum.
struct Landscape : Measurer {
  std::vector<int> optimum;
  double scale = 1e-6;  // the worst point stays well under the 1 s timeout
  MeasureResult measure(const Task& t, const Knobs& k) override {
    double c = scale * (1 + 0.1 * static_cast<double>(t.key.size() % 3));
    for (size_t i = 0; i < t.space.knobs.size(); ++i) {
      const KnobSpec& s = t.space.knobs[i];
      const int64_t v = k.at(s.name);
      const int idx =
          static_cast<int>(std::find(s.values.begin(), s.values.end(), v) - s.values.begin());
      const double d = idx - optimum[i % optimum.size()];
      c *= 1 + 0.4 * d * d;
    }
    MeasureResult r;
    r.costs = {c, c * 1.01, c * 0.99};
    return r;
  }
  Knobs best_knobs(const Task& t) const {
    Knobs k;
    for (size_t i = 0; i < t.space.knobs.size(); ++i)
      k[t.space.knobs[i].name] = t.space.knobs[i].values[optimum[i % optimum.size()]];
    return k;
  }
};

// The first point of a task's space (among its first 50) that is not its default.
Knobs first_non_default(const Task& t) {
  for (int64_t i = 0; i < t.space.size() && i < 50; ++i)
    if (t.space.point(i) != t.defaults) return t.space.point(i);
  return t.defaults;
}

const Record* best_of(const std::vector<Record>& records, const std::string& task) {
  const Record* b = nullptr;
  for (const Record& r : records)
    if (r.task == task && r.ok() && (!b || r.cost() < b->cost())) b = &r;
  return b;
}

TEST(TuneSearch, EveryStrategyFindsThePlantedOptimum) {
  Landscape land;
  land.optimum = {4, 1, 3};
  for (Strategy s : {Strategy::kGrid, Strategy::kRandom, Strategy::kEvolutionary}) {
    const std::vector<Task> tasks = {synthetic_task("a", 3)};  // 216 points
    TuneOptions o;
    o.strategy = s;
    o.phi = 0;
    o.seed = 3;
    // Grid needs the whole space; random and evolutionary get less than half of it.
    o.budget_trials = s == Strategy::kGrid ? 216 : 100;
    const TuneReport r = tune(tasks, land, o);
    const Record* b = best_of(r.records, tasks[0].key);
    ASSERT_TRUE(b) << strategy_name(s);
    if (s != Strategy::kRandom) {
      EXPECT_EQ(b->knobs, land.best_knobs(tasks[0])) << strategy_name(s);
    }
    EXPECT_LT(b->cost(), 1.5 * land.measure(tasks[0], land.best_knobs(tasks[0])).cost())
        << strategy_name(s);
    EXPECT_LE(r.trials, o.budget_trials);
    EXPECT_EQ(r.choices.at("a").knobs, b->knobs);
  }
}

TEST(TuneSearch, EvolutionaryBeatsRandomAtEqualTrials) {
  Landscape land;
  land.optimum = {5, 2, 4, 1, 3};
  const std::vector<Task> tasks = {synthetic_task("a", 5), synthetic_task("b", 5, 3)};
  double sum[2] = {0, 0};
  for (uint64_t seed = 1; seed <= 3; ++seed)
    for (int e = 0; e < 2; ++e) {
      TuneOptions o;
      o.strategy = e ? Strategy::kEvolutionary : Strategy::kRandom;
      o.phi = 0;
      o.seed = seed;
      o.budget_trials = 120;
      const TuneReport r = tune(tasks, land, o);
      sum[e] += r.tuned_latency_s;
    }
  EXPECT_LT(sum[1], sum[0]);
}

// A whole-model timing that throws (a plan that does not compile with a round's choices)
// is left off the curve and counted; the search goes on. The untuned model's throws.
TEST(TuneSearch, AFailedWholeModelTimingIsSkippedNotFatal) {
  Landscape land;
  land.optimum = {2, 3, 1, 4};
  const std::vector<Task> tasks = {synthetic_task("a", 4), synthetic_task("b", 4, 2)};
  TuneOptions o;
  o.phi = 0;
  o.budget_trials = 60;
  o.confirm_rounds = 0;
  int calls = 0;
  o.model_latency = [&](const LayerChoices&) {
    ++calls;
    if (calls == 2 || calls == 4) fail(ErrorKind::kInvalidInput, "plan failed on call ", calls);
    return 1.0 / (1.0 + 0.01 * calls);
  };
  const TuneReport r = tune(tasks, land, o);
  EXPECT_EQ(r.trials, 60);
  EXPECT_EQ(r.retime_failures, 2);
  EXPECT_NE(r.retime_error.find("plan failed on call 2"), std::string::npos) << r.retime_error;
  EXPECT_EQ(static_cast<int>(r.curve.size()), calls - 2);  // every timing that succeeded
  for (const CurvePoint& p : r.curve) EXPECT_TRUE(std::isfinite(p.latency_s));
  EXPECT_GT(r.curve.size(), 2u);
  o.model_latency = [](const LayerChoices&) -> double {
    fail(ErrorKind::kInvalidInput, "the untuned model does not compile");
  };
  EXPECT_THROW(tune(tasks, land, o), Error);
}

TEST(TuneSearch, DeterministicWithASeed) {
  Landscape land;
  land.optimum = {2, 3, 1, 4};
  const std::vector<Task> tasks = {synthetic_task("a", 4), synthetic_task("b", 4, 2)};
  auto run = [&](uint64_t seed) {
    TuneOptions o;
    o.seed = seed;
    o.phi = 0;
    o.budget_trials = 60;
    o.confirm_rounds = 0;  // records = trials
    std::vector<std::string> seq;
    for (const Record& r : tune(tasks, land, o).records)
      seq.push_back(r.task + " " + knobs_to_string(r.knobs));
    return seq;
  };
  const auto a = run(11), b = run(11), c = run(12);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 60u);
  EXPECT_NE(a, c);
}

TEST(TuneSearch, SchedulerFavoursTheHeavyLayer) {
  Landscape land;
  land.optimum = {5, 5, 5};
  // Same landscape; "heavy" occurs 8 times in the model, so gains there count 8x.
  const std::vector<Task> tasks = {synthetic_task("light", 3, 1), synthetic_task("heavy", 3, 8)};
  TuneOptions o;
  o.phi = 0;
  o.budget_trials = 40;
  o.round_trials = 8;
  const TuneReport r = tune(tasks, land, o);
  int heavy = 0, light = 0;
  for (const Record& rec : r.records) {
    if (rec.task == tasks[1].key)
      ++heavy;
    else
      ++light;
  }
  EXPECT_GT(heavy, light);
  EXPECT_LT(r.tuned_latency_s, r.untuned_latency_s);
  ASSERT_GE(r.curve.size(), 2u);
  for (size_t i = 1; i < r.curve.size(); ++i)
    EXPECT_LE(r.curve[i].latency_s, r.curve[i - 1].latency_s + 1e-15);
}

TEST(TuneMeasure, ThrowingAndTimedOutCandidatesAreRecordedNotFatal) {
  struct Flaky : Landscape {
    MeasureResult measure(const Task& t, const Knobs& k) override {
      if (k.at("k0") == 2) throw Error(ErrorKind::kRuntime, "kernel exploded");
      if (k.at("k0") == 4) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      if (k.at("k0") == 4) {
        MeasureResult r;
        r.costs = {0.03};  // 30 ms per run: over the 10 ms timeout
        return r;
      }
      return Landscape::measure(t, k);
    }
  } flaky;
  flaky.optimum = {0, 3};                                    // k0 = 1: neither throws nor times out
  const std::vector<Task> tasks = {synthetic_task("a", 2)};  // 36 points
  TuneOptions o;
  o.strategy = Strategy::kGrid;
  o.phi = 0;
  o.timeout_seconds = 0.01;
  o.budget_trials = 36;
  const TuneReport r = tune(tasks, flaky, o);
  EXPECT_EQ(r.trials, 36);
  EXPECT_EQ(r.failures, 12);
  int thrown = 0, timed_out = 0;
  for (const Record& rec : r.records) {
    thrown += rec.error.find("kernel exploded") != std::string::npos;
    timed_out += rec.error.find("timeout") != std::string::npos;
    EXPECT_EQ(rec.ok(), rec.error.empty());
  }
  EXPECT_EQ(thrown, 6);
  EXPECT_EQ(timed_out, 6);
  EXPECT_EQ(best_of(r.records, tasks[0].key)->knobs, flaky.best_knobs(tasks[0]));
}

TEST(TuneMeasure, RealConvCandidatesRunAndBadKnobsFail) {
  const Graph g = quarter_width("resnet18-cifar");
  PlanOptions po;
  po.threads = 2;
  const std::vector<Task> tasks = extract_tasks(g, po);
  ASSERT_FALSE(tasks.empty());
  MeasureOptions mo;
  mo.repeat = 3;
  auto m = make_conv_measurer(mo);
  const MeasureResult ok = measure_safely(*m, tasks[0], tasks[0].defaults, 1.0);
  EXPECT_TRUE(ok.ok()) << ok.error;
  EXPECT_EQ(ok.costs.size(), 3u);
  EXPECT_GT(ok.cost(), 0);
  Knobs bad = tasks[0].defaults;
  bad["no_such_knob"] = 1;
  const MeasureResult r = measure_safely(*m, tasks[0], bad, 1.0);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("no_such_knob"), std::string::npos) << r.error;
  // Interleaved: one cost per round for each good candidate, the bad one an error; with
  // reuse_bytes the candidates run from rotated copies.
  mo.reuse_bytes = 1e6;
  mo.max_copies = 8;
  auto cold = make_conv_measurer(mo);
  EXPECT_TRUE(measure_safely(*cold, tasks[0], tasks[0].defaults, 1.0).ok());
  const std::vector<MeasureResult> v = cold->measure_interleaved(
      {&tasks[0], &tasks[1], &tasks[0]}, {tasks[0].defaults, tasks[1].defaults, bad}, 4);
  ASSERT_EQ(v.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(v[i].ok()) << v[i].error;
    EXPECT_EQ(v[i].costs.size(), 4u);
  }
  EXPECT_FALSE(v[2].ok());
  EXPECT_NE(v[2].error.find("no_such_knob"), std::string::npos) << v[2].error;
}

// Under --layout auto a layer that can run blocked gives blocked tasks and NCHW tasks timed
// between blocked neighbours, all in one layer group; nchwc gives the blocked ones only,
// nchw the plain NCHW ones. Both kinds run in the measurer.
TEST(TuneLayout, BlockedAndBetweenTasksFollowTheLayoutMode) {
  const Layout L = native_blocked_layout(active_isa());
  if (!is_blocked(L)) GTEST_SKIP() << "no blocked layout on this ISA path";
  const Graph g = quarter_width("mobilenetv2-cifar");
  PlanOptions po;
  po.threads = 2;
  auto count = [&](LayoutMode mode) {
    po.layout = mode;
    struct Counts {
      int blocked = 0, between = 0, plain = 0;
      std::map<std::string, std::set<std::string>> formats;  // layer -> formats
      std::vector<Task> tasks;
    } c;
    c.tasks = extract_tasks(g, po);
    for (const Task& t : c.tasks) {
      const std::string format = t.problem.is_blocked()  ? layout_name(L)
                                 : is_blocked(t.between) ? std::string("nchw@") + layout_name(L)
                                                         : "nchw";
      EXPECT_NE(t.key.find("|" + format + "|"), std::string::npos) << t.key;
      EXPECT_EQ(t.layout(), layout_name(t.problem.y_layout));
      c.formats[t.layer].insert(format);
      c.blocked += t.problem.is_blocked();
      c.between += is_blocked(t.between);
      c.plain += !t.problem.is_blocked() && !is_blocked(t.between);
    }
    return c;
  };
  const auto a = count(LayoutMode::kAuto);
  EXPECT_GT(a.blocked, 0);
  // The depthwise layers read blocked input (only the stem reads the NCHW image).
  int blocked_depthwise = 0, blocked_stem = 0;
  for (const Task& t : a.tasks) {
    blocked_depthwise += t.problem.is_blocked() && t.algo == "depthwise";
    if (t.problem.is_blocked() && t.problem.x_layout == Layout::kNchw) {
      EXPECT_TRUE(t.reads_image) << t.key;
      ++blocked_stem;
    }
  }
  EXPECT_GT(blocked_depthwise, 3);
  EXPECT_GT(blocked_stem, 0);
  EXPECT_GT(a.between, 0);
  for (const auto& [layer, formats] : a.formats)  // one group per layer, both layouts in it
    EXPECT_TRUE(formats.size() == 2 || formats == std::set<std::string>{"nchw"}) << layer;
  const auto c = count(LayoutMode::kNchwc);
  EXPECT_EQ(c.blocked, a.blocked);
  EXPECT_EQ(c.between, 0);
  const auto n = count(LayoutMode::kNchw);
  EXPECT_EQ(n.blocked + n.between, 0);
  EXPECT_EQ(n.plain, a.between + a.plain);

  MeasureOptions mo;
  mo.repeat = 2;
  auto m = make_conv_measurer(mo);
  int measured = 0;
  for (const Task& t : a.tasks) {
    if (t.algo != "direct" && t.algo != "depthwise" && t.algo != "gemm") continue;
    const MeasureResult r = measure_safely(*m, t, t.defaults, 2.0);
    EXPECT_TRUE(r.ok()) << t.key << ": " << r.error;
    ++measured;
  }
  EXPECT_GT(measured, 10);
}

// The records' fastest task per layer decides its algorithm, knobs and layout; the plan
// runs each layer on the layout its choice was made on.
TEST(TuneLayout, AppliedRecordsRunEachLayerOnItsChosenLayout) {
  const Layout L = native_blocked_layout(active_isa());
  if (!is_blocked(L)) GTEST_SKIP() << "no blocked layout on this ISA path";
  const Graph g = quarter_width("resnet18-cifar");
  PlanOptions po;
  po.threads = 2;
  const std::vector<Task> tasks = extract_tasks(g, po);
  // Alternate layers: the blocked direct task fastest, or the NCHW gemm task.
  std::map<std::string, bool> want_blocked;
  for (const Task& t : tasks)
    if (!want_blocked.count(t.layer)) want_blocked[t.layer] = want_blocked.size() % 2 == 0;
  std::vector<Record> records;
  for (const Task& t : tasks) {
    const bool chosen = want_blocked[t.layer] ? t.problem.is_blocked() && t.algo == "direct"
                                              : !t.problem.is_blocked() && t.algo == "gemm";
    Record r;
    r.task = t.key;
    r.algo = t.algo;
    r.knobs = t.defaults;
    r.costs = {chosen ? 1e-4 : 1e-3};
    records.push_back(r);
  }
  const AppliedRecords a = apply_records(g, po, records);
  EXPECT_EQ(a.matched_nodes, a.conv_nodes);
  po.layers = a.layers;
  const Plan plan(g, po);
  int blocked = 0, nchw = 0;
  for (const StepInfo& s : plan.steps()) {
    auto it = a.layers.find(s.node);
    if (it == a.layers.end()) continue;
    EXPECT_EQ(s.kernel, it->second.algo) << s.node;
    EXPECT_EQ(layout_name(s.layout), it->second.layout) << s.node;
    (is_blocked(s.layout) ? blocked : nchw)++;
  }
  EXPECT_GT(blocked, 2);
  EXPECT_GT(nchw, 2);
  const auto in = random_inputs(g, 3);
  Plan& p = const_cast<Plan&>(plan);
  const std::vector<Tensor> got = p.run(in);
  PlanOptions ref;
  ref.layout = LayoutMode::kNchw;
  Plan base(g, ref);
  const std::vector<Tensor> want = base.run(in);
  ASSERT_EQ(got.size(), want.size());
  for (int64_t i = 0; i < want[0].numel(); ++i)
    ASSERT_NEAR(got[0].data<float>()[i], want[0].data<float>()[i], 1e-3) << i;
}

// The tuner's whole-model pick, pinned by chosen records, wins over per-layer faster
// records: --records then runs what the tuner timed best, layouts included.
TEST(TuneLayout, ChosenRecordsReproduceTheWholeModelPick) {
  const Graph g = quarter_width("resnet18-cifar");
  PlanOptions po;
  po.threads = 2;
  const std::vector<Task> tasks = extract_tasks(g, po);
  // The search's records: every task's default point, the direct ones fastest. The pick:
  // every layer on gemm (NCHW), its default point; layers without gemm left to auto.
  TuneReport rep;
  for (const Task& t : tasks) {
    Record r;
    r.task = t.key;
    r.algo = t.algo;
    r.knobs = t.defaults;
    r.costs = {t.algo == "direct" ? 1e-5 : 1e-3};
    rep.records.push_back(r);
    if (t.algo == "gemm" && !t.problem.is_blocked())
      for (const std::string& n : t.nodes) rep.choices[n] = {"gemm", t.defaults, "nchw"};
  }
  ASSERT_FALSE(rep.choices.empty());
  MeasureOptions mo;
  mo.repeat = 2;
  auto m = make_conv_measurer(mo);
  const std::vector<Record> chosen = chosen_records(g, po, tasks, rep, *m, 2.0);
  EXPECT_FALSE(chosen.empty());
  for (const Record& r : chosen) {
    EXPECT_TRUE(r.chosen && r.ok()) << r.task;
    const Record back = record_from_json(record_to_json(r));
    EXPECT_TRUE(back.chosen);
  }
  std::vector<Record> all = rep.records;
  all.insert(all.end(), chosen.begin(), chosen.end());
  const LayerChoices applied = apply_records(g, po, all).layers;
  po.layers = rep.choices;
  const Plan picked(g, po);
  po.layers = applied;
  const Plan replayed(g, po);
  ASSERT_EQ(picked.steps().size(), replayed.steps().size());
  for (size_t i = 0; i < picked.steps().size(); ++i) {
    const StepInfo &a = picked.steps()[i], &b = replayed.steps()[i];
    EXPECT_EQ(a.kernel, b.kernel) << a.node;
    EXPECT_EQ(a.knobs, b.knobs) << a.node;
    EXPECT_EQ(a.layout, b.layout) << a.node;
  }
  // Without the chosen records the per-layer fastest (direct) would run instead.
  for (const auto& [node, c] : apply_records(g, po, rep.records).layers)
    EXPECT_EQ(c.algo, "direct") << node;
  // Distilled (dlas records best), the pick survives.
  const LayerChoices distilled = apply_records(g, po, best_records(all)).layers;
  for (const auto& [node, c] : applied) EXPECT_EQ(distilled.at(node).algo, c.algo) << node;
}

// The confirmation re-times each layer's finalists: a candidate whose first timing was
// lucky (0.5 ms, really 1.2 ms) loses to the truly fastest (1.0 ms) once re-timed.
TEST(TuneConfirm, ALuckyFirstTimingLosesAfterConfirmation) {
  struct Lucky : Measurer {
    std::map<int64_t, int> calls;
    MeasureResult measure(const Task&, const Knobs& k) override {
      const int64_t v = k.at("k0");
      const int n = calls[v]++;
      double c = 2e-3;
      if (v == 4) c = 1.0e-3;
      if (v == 8) c = n == 0 ? 0.5e-3 : 1.2e-3;
      MeasureResult r;
      r.costs = {c, c, c};
      return r;
    }
  };
  const std::vector<Task> tasks = {synthetic_task("a", 1)};
  auto choice = [&](int rounds, TuneReport* out) {
    Lucky m;
    TuneOptions o;
    o.strategy = Strategy::kGrid;
    o.phi = 0;
    o.budget_trials = 6;
    o.confirm_rounds = rounds;
    *out = tune(tasks, m, o);
    return out->choices.at("a").knobs.at("k0");
  };
  TuneReport r;
  EXPECT_EQ(choice(0, &r), 8);  // without: the lucky one
  EXPECT_EQ(r.confirmed, 0);
  EXPECT_EQ(choice(5, &r), 4);
  EXPECT_EQ(r.confirmed, 3);  // the 3 fastest (no auto rule on a synthetic task)
  EXPECT_EQ(r.trials, 6);     // re-timings are not trials
  EXPECT_EQ(r.records.size(), 9u);
  EXPECT_EQ(r.curve.back().trials, 6);
  // The lucky candidate's pooled cost is the slower of its two timings.
  for (const Record& b : best_records(r.records)) EXPECT_DOUBLE_EQ(b.cost(), 1.0e-3);
}

TEST(TuneStop, EarlyStopRuleOnSyntheticCurves) {
  auto curve = [](std::vector<double> lat) {
    std::vector<CurvePoint> c;
    for (size_t i = 0; i < lat.size(); ++i) c.push_back({double(i), int64_t(i * 10), lat[i]});
    return c;
  };
  // 10% of the first latency per second: far above phi = 1e-3.
  EXPECT_FALSE(should_stop_early(curve({10, 9, 8, 7}), 1e-3));
  // Flat: no improvement.
  EXPECT_TRUE(should_stop_early(curve({10, 8, 8, 8}), 1e-3));
  // Too few rounds to judge.
  EXPECT_FALSE(should_stop_early(curve({10, 10, 10}), 1e-3));
  // The survey of defaults (point 1) being slower than untuned does not stop it ...
  EXPECT_FALSE(should_stop_early(curve({10, 12, 11, 10}), 1e-3));
  // ... nor count as progress.
  EXPECT_TRUE(should_stop_early(curve({10, 7, 7, 7}), 1e-3));
  // A noisy re-timing that looks slower does not count as progress afterwards.
  EXPECT_TRUE(should_stop_early(curve({10, 8, 9, 8}), 1e-3));
  // Slow improvement: 0.05% per second < 0.1%.
  EXPECT_TRUE(should_stop_early(curve({10, 9.995, 9.99, 9.985}), 1e-3));
  EXPECT_FALSE(should_stop_early(curve({10, 9.995, 9.99, 9.985}), 1e-4));
  EXPECT_FALSE(should_stop_early(curve({10, 8, 8, 8}), 0));  // phi 0: off
  // The tuner's defaults (TuneOptions): a 3-round window, judged from round 4 on.
  const TuneOptions d;
  EXPECT_FALSE(should_stop_early(curve({10, 8, 8, 8, 8}), 1e-3, d.stop_window, d.stop_min_rounds));
  EXPECT_TRUE(
      should_stop_early(curve({10, 8, 8, 8, 8, 8}), 1e-3, d.stop_window, d.stop_min_rounds));
  // A jump 3 rounds back still counts: 10% in 3 s.
  EXPECT_FALSE(
      should_stop_early(curve({10, 10, 10, 9, 9, 9}), 1e-3, d.stop_window, d.stop_min_rounds));
  // And the tuner stops on it: a landscape with nothing to gain.
  struct Flat : Measurer {
    MeasureResult measure(const Task&, const Knobs&) override {
      MeasureResult r;
      r.costs = {1e-3};
      r.seconds = 0.01;
      return r;
    }
  } flat;
  TuneOptions o;
  o.budget_trials = 1000;
  const TuneReport r = tune({synthetic_task("a", 4)}, flat, o);
  EXPECT_EQ(r.stop_reason, "phi");
  EXPECT_LT(r.trials, 1000);
}

// Sequential per-layer tuning (the AutoTVM baseline): defaults first, then one task after
// another, each to its own stop; a curve checkpoint per layer.
TEST(TuneSequential, TasksInGraphOrderEachToItsOwnStop) {
  Landscape land;
  land.optimum = {4, 1, 3};
  const std::vector<Task> tasks = {synthetic_task("a", 3), synthetic_task("b", 3, 2),
                                   synthetic_task("c", 3)};
  TuneOptions o;
  o.mode = Mode::kSequential;
  o.phi = 0;
  o.seed = 7;
  o.patience = 16;
  o.task_trials = 90;
  o.confirm_rounds = 0;  // records = trials, curve = checkpoints
  const TuneReport r = tune(tasks, land, o);
  EXPECT_EQ(r.stop_reason, "done");
  ASSERT_GE(r.records.size(), 3u);
  // Round 1: every default point, in task order.
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.records[i].task, tasks[i].key);
    EXPECT_EQ(r.records[i].knobs, tasks[i].defaults);
  }
  // Then the tasks in order, never interleaved.
  size_t prev = 0;
  std::vector<int> per_task(3, 0);
  for (size_t i = 0; i < r.records.size(); ++i) {
    size_t t = 0;
    while (tasks[t].key != r.records[i].task) ++t;
    ++per_task[t];
    if (i < 3) continue;
    EXPECT_GE(t, prev) << "record " << i;
    prev = t;
  }
  for (size_t t = 0; t < 3; ++t) {
    EXPECT_LE(per_task[t], o.task_trials);
    EXPECT_GT(per_task[t], o.patience);  // at least the patience after the default
    const Record* b = best_of(r.records, tasks[t].key);
    ASSERT_TRUE(b);
    EXPECT_LT(b->cost(), 1.5 * land.measure(tasks[t], land.best_knobs(tasks[t])).cost());
  }
  // Points: untuned, defaults, one checkpoint per layer; the best only improves.
  ASSERT_EQ(r.curve.size(), 5u);
  EXPECT_EQ(r.curve.back().trials, r.trials);
  for (size_t i = 2; i < r.curve.size(); ++i)
    EXPECT_LE(r.curve[i].latency_s, r.curve[i - 1].latency_s + 1e-15);
  EXPECT_LT(r.tuned_latency_s, 0.7 * r.untuned_latency_s);
}

TEST(TuneSequential, PatienceTrialAllotmentAndBudget) {
  struct Flat : Measurer {
    MeasureResult measure(const Task&, const Knobs&) override {
      MeasureResult r;
      r.costs = {1e-3};
      return r;
    }
  } flat;
  const std::vector<Task> tasks = {synthetic_task("a", 4), synthetic_task("b", 4)};
  auto count = [&](const TuneOptions& o) {
    const TuneReport r = tune(tasks, flat, o);
    std::vector<int> n(2, 0);
    for (const Record& rec : r.records) ++n[rec.task == tasks[1].key];
    return std::make_pair(n, r.stop_reason);
  };
  TuneOptions o;
  o.mode = Mode::kSequential;
  o.phi = 0;
  o.patience = 5;
  o.confirm_rounds = 0;  // records = trials
  // Nothing ever improves: the default, then exactly `patience` trials per task.
  EXPECT_EQ(count(o).first, (std::vector<int>{6, 6}));
  // The allotment caps a task (the default point counts).
  o.patience = 100;
  o.task_trials = 4;
  EXPECT_EQ(count(o).first, (std::vector<int>{4, 4}));
  // No allotment: a trial budget is split over the tasks.
  o.task_trials = 0;
  o.budget_trials = 20;
  EXPECT_EQ(count(o).first, (std::vector<int>{10, 10}));
  // A global budget smaller than the allotments stops in the first task.
  o.task_trials = 50;
  o.budget_trials = 20;
  const auto [n, why] = count(o);
  EXPECT_EQ(n, (std::vector<int>{19, 1}));
  EXPECT_EQ(why, "trials");
  EXPECT_EQ(parse_mode("sequential"), Mode::kSequential);
  EXPECT_STREQ(mode_name(parse_mode("survey")), "survey");
  EXPECT_THROW(parse_mode("greedy"), Error);
}

TEST(TuneCostModel, RankingAccuracyImprovesWithData) {
  Landscape land;
  land.optimum = {4, 1, 3, 2};
  const Task t = synthetic_task("a", 4);
  std::mt19937_64 rng(5);
  auto sample = [&](size_t n, std::vector<std::vector<float>>& x, std::vector<double>& y) {
    std::uniform_int_distribution<int64_t> d(0, t.space.size() - 1);
    for (size_t i = 0; i < n; ++i) {
      const Knobs k = t.space.point(d(rng));
      x.push_back(candidate_features(t, k));
      y.push_back(std::log(land.measure(t, k).cost()));
    }
  };
  std::vector<std::vector<float>> xt;
  std::vector<double> yt;
  sample(300, xt, yt);
  const std::vector<int> group(yt.size(), 0);
  for (const std::string kind : {"xgboost", "knn"}) {
    double acc[2];
    size_t sizes[2] = {8, 400};
    for (int i = 0; i < 2; ++i) {
      std::vector<std::vector<float>> x;
      std::vector<double> y;
      sample(sizes[i], x, y);
      auto m = make_cost_model(kind, 1);
      m->fit(x, y);
      acc[i] = ranking_accuracy(m->predict(xt), yt, group);
    }
    EXPECT_GT(acc[1], acc[0] + 0.05) << kind;
    EXPECT_GT(acc[1], 0.85) << kind;
  }
  EXPECT_DOUBLE_EQ(ranking_accuracy({1, 2, 3}, {1, 2, 3}, {0, 0, 0}), 1.0);
  EXPECT_DOUBLE_EQ(ranking_accuracy({3, 2, 1}, {1, 2, 3}, {0, 0, 0}), 0.0);
  EXPECT_DOUBLE_EQ(ranking_accuracy({3, 2}, {1, 2}, {0, 1}), 0.5);  // no pair in a group
}

class TuneRecords : public ::testing::Test {
 protected:
  std::string dir;
  void SetUp() override {
    dir =
        (std::filesystem::temp_directory_path() / ("dlas_tune_test_" + std::to_string(::getpid())))
            .string();
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
};

Record rec(const std::string& task, const std::string& algo, Knobs k, std::vector<double> costs,
           std::string error = "") {
  Record r;
  r.task = task;
  r.algo = algo;
  r.knobs = std::move(k);
  r.costs = std::move(costs);
  r.error = std::move(error);
  r.timestamp = now_iso8601();
  r.version = dlas_version();
  r.hardware = hardware_id(Isa::kScalar, 1);
  return r;
}

TEST_F(TuneRecords, RoundTripAndDistill) {
  const std::vector<Record> all = {
      rec("t1", "gemm", {{"mb", 8}}, {3e-3, 3.1e-3}),
      rec("t1", "gemm", {{"mb", 16}}, {1e-3, 1.2e-3, 0.9e-3}),
      rec("t1", "gemm", {{"mb", 32}}, {}, "timeout: 2 s"),
      rec("t2", "winograd", {{"variant", 4}}, {2e-3}),
      rec("t2", "winograd", {{"variant", 6}}, {2e-3}),  // a tie: the first stays
  };
  const std::string path = dir + "/r.jsonl";
  write_records(path, all);
  const std::vector<Record> back = read_records(path);
  ASSERT_EQ(back.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(record_to_json(back[i]), record_to_json(all[i]));
    EXPECT_EQ(back[i].knobs, all[i].knobs);
    EXPECT_EQ(back[i].costs, all[i].costs);
  }
  EXPECT_FALSE(back[2].ok());
  EXPECT_TRUE(std::isinf(back[2].cost()));
  EXPECT_DOUBLE_EQ(back[1].cost(), 1e-3);  // the median
  const std::vector<Record> best = best_records(back);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].knobs, (Knobs{{"mb", 16}}));
  EXPECT_EQ(best[1].knobs, (Knobs{{"variant", 4}}));
  // Records of one candidate pool their medians: variant 6 timed {2}, {1}, {1} ms: 1 ms.
  append_record(path, rec("t2", "winograd", {{"variant", 6}}, {1e-3, 1e-3}));
  // ... but timed twice, {2} and {1}, it counts the slower: a tie, the first stays.
  EXPECT_EQ(best_records(read_records(path))[1].knobs, (Knobs{{"variant", 4}}));
  append_record(path, rec("t2", "winograd", {{"variant", 6}}, {1e-3}));
  EXPECT_EQ(best_records(read_records(path))[1].knobs, (Knobs{{"variant", 6}}));
  EXPECT_EQ(best_records(read_records(path))[1].costs, (std::vector<double>{2e-3, 1e-3, 1e-3}));
  // A re-measurement corrects a lucky timing: mb 16 pooled with four 5 ms timings has
  // median 5 ms, slower than mb 8.
  append_record(path, rec("t1", "gemm", {{"mb", 16}}, {5e-3, 5e-3, 5e-3, 5e-3}));
  EXPECT_EQ(best_records(read_records(path))[0].knobs, (Knobs{{"mb", 8}}));
  // Bad lines name the file and line.
  std::ofstream(path, std::ios::app) << "\n{\"task\": \"t3\"}\n";
  try {
    read_records(path);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("r.jsonl:10"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("algo"), std::string::npos) << e.what();
    EXPECT_EQ(e.exit_code(), 2);
  }
}

TEST_F(TuneRecords, AppliedRecordsSetThePlansKnobsAndTransfer) {
  const Graph g = quarter_width("resnet18-cifar");
  PlanOptions po;
  po.threads = 2;
  const std::vector<Task> tasks = extract_tasks(g, po);
  // Per layer: the first non-default point of its gemm task (else of its first task),
  // recorded fastest; the other tasks of the layer recorded slower.
  std::vector<Record> records;
  std::map<std::string, std::pair<std::string, Knobs>> want;  // layer -> algo, knobs
  for (const Task& t : tasks) {
    if (t.algo != "gemm" && want.count(t.layer)) continue;
    want[t.layer] = {t.algo, first_non_default(t)};
  }
  for (const Task& t : tasks) {
    const bool chosen = want[t.layer].first == t.algo;
    records.push_back(
        rec(t.key, t.algo, chosen ? want[t.layer].second : t.defaults, {chosen ? 1e-4 : 1e-3}));
    records.push_back(rec(t.key, t.algo, t.defaults, {}, "failed"));  // never applied
  }
  const std::string path = dir + "/best.jsonl";
  write_records(path, best_records(records));
  const AppliedRecords a = apply_records(g, po, read_records(path));
  EXPECT_GT(a.conv_nodes, 10);
  EXPECT_EQ(a.matched_nodes, a.conv_nodes);
  po.layers = a.layers;
  const Plan plan(g, po);
  int checked = 0;
  for (const StepInfo& s : plan.steps()) {
    auto it = a.layers.find(s.node);
    if (it == a.layers.end()) continue;
    EXPECT_EQ(s.kernel, it->second.algo) << s.node;
    EXPECT_EQ(s.knobs, knobs_to_string(it->second.knobs)) << s.node;
    ++checked;
  }
  EXPECT_EQ(checked, a.conv_nodes);
  // Transfer: another model with the same layers (different weights) matches every key;
  // a model at another thread count matches none.
  ZooOptions zo;
  zo.width_mult = 0.25;
  zo.seed = 9;
  const Graph other = build_zoo_model("resnet18-cifar", zo);
  EXPECT_EQ(apply_records(other, po, records).matched_nodes, a.conv_nodes);
  po.threads = 1;
  EXPECT_EQ(apply_records(other, po, records).matched_nodes, 0);
}

// The tuner's whole-model timer: the first timing is the fixed reference; a candidate's
// latency is the reference's x a paired ratio; the same choices twice are not re-timed (no
// timing assertions: the relations hold whatever the times).
TEST(TuneTiming, ModelTimerPairsCandidatesWithTheReference) {
  ZooOptions zo;
  zo.width_mult = 0.125;
  const Graph g = build_zoo_model("resnet18-cifar", zo);
  PlanOptions po;
  po.threads = 1;
  TimeOptions to;
  to.blocks = 2;
  to.block_seconds = 0.002;
  EXPECT_GT(time_model(g, po, {}, to), 0);
  ModelTimer timer(g, po, to);
  const double untuned = timer({});
  EXPECT_GT(untuned, 0);
  EXPECT_EQ(timer({}), untuned);  // the same plan: not re-timed
  EXPECT_EQ(timer.reference_latency(), untuned);
  const double ratio = timer.compare({});
  EXPECT_TRUE(std::isfinite(ratio) && ratio > 0);
  // Every layer on direct: a different plan, timed against the reference.
  LayerChoices direct;
  for (const Task& t : extract_tasks(g, po))
    if (t.algo == "direct")
      for (const std::string& n : t.nodes) direct[n] = {"direct", t.defaults};
  ASSERT_FALSE(direct.empty());
  const double d = timer(direct);
  EXPECT_GT(d, 0);
  EXPECT_EQ(timer(direct), d);
  EXPECT_EQ(timer.reference_latency(), untuned);  // the reference never moves
  const double u2 = timer({});                    // differs from the last call: re-timed
  EXPECT_TRUE(std::isfinite(u2) && u2 > 0);
  EXPECT_THROW(ModelTimer(g, po, to).compare({}), Error);  // no reference yet
}

// A quantized model's tasks of one dtype ("int8", "f16", "bf16"): they cover exactly the
// plan's convs of that type (the steps `is_typed` picks), run on the real weights, tune
// without failures, and records (a non-default point recorded fastest per layer) apply to
// the quantized plan.
void check_typed_tasks(const Graph& g, const std::string& dtype,
                       const std::function<bool(const StepInfo&)>& is_typed,
                       const std::function<void(const Task&)>& check_task) {
  PlanOptions po;
  po.threads = 1;
  const std::vector<Task> tasks = extract_tasks(g, po);
  std::set<std::string> nodes;
  {
    const Plan plan(g, po);
    for (const StepInfo& s : plan.steps())
      if (is_typed(s)) nodes.insert(s.node);
  }
  ASSERT_GT(nodes.size(), 10u);
  std::set<std::string> covered, algos;
  for (const Task& t : tasks) {
    if (t.dtype() != dtype) continue;
    EXPECT_NE(t.key.find("|" + dtype + "|"), std::string::npos) << t.key;
    check_task(t);
    for (const std::string& n : t.nodes) covered.insert(n);
    algos.insert(t.algo);
  }
  EXPECT_EQ(covered, nodes);
  EXPECT_GE(algos.size(), 2u);

  // A short real tune: candidates measure without failures.
  MeasureOptions mo;
  mo.repeat = 2;
  auto m = make_conv_measurer(mo);
  std::vector<Task> some;
  for (const Task& t : tasks)
    if (t.dtype() == dtype && some.size() < 6) some.push_back(t);
  TuneOptions o;
  o.phi = 0;
  o.budget_trials = 24;
  o.cost_model = "knn";
  const TuneReport r = tune(some, *m, o);
  EXPECT_EQ(r.trials, 24);
  EXPECT_EQ(r.failures, 0) << (r.records.empty() ? "" : r.records.back().error);
  // An invalid knob point is a recorded failure, not a crash.
  Knobs bad = some[0].defaults;
  bad.begin()->second = -7;
  EXPECT_FALSE(measure_safely(*m, some[0], bad, 1.0).ok());

  std::vector<Record> records;
  std::map<std::string, std::pair<std::string, Knobs>> want;
  for (const Task& t : tasks) {
    if (t.dtype() != dtype || want.count(t.layer)) continue;
    want[t.layer] = {t.algo, first_non_default(t)};
  }
  for (const Task& t : tasks) {
    if (t.dtype() != dtype) continue;
    const bool chosen = want[t.layer].first == t.algo;
    records.push_back(
        rec(t.key, t.algo, chosen ? want[t.layer].second : t.defaults, {chosen ? 1e-4 : 1e-3}));
  }
  const AppliedRecords a = apply_records(g, po, records);
  EXPECT_EQ(static_cast<size_t>(a.matched_nodes), nodes.size());
  po.layers = a.layers;
  const Plan plan(g, po);
  int checked = 0;
  for (const StepInfo& s : plan.steps()) {
    if (!is_typed(s)) continue;
    auto it = a.layers.find(s.node);
    ASSERT_NE(it, a.layers.end()) << s.node;
    // 16-bit steps are labelled "gemm[emulated]": the algorithm, then the compute path.
    EXPECT_EQ(s.kernel.substr(0, s.kernel.find('[')), it->second.algo) << s.node;
    EXPECT_EQ(s.knobs, knobs_to_string(it->second.knobs)) << s.node;
    ++checked;
  }
  EXPECT_EQ(static_cast<size_t>(checked), nodes.size());
}

// int8 models: every QFusedConv gives int8 tasks (one per int8 algorithm) on its s8 weights
// and per-channel scales.
TEST_F(TuneRecords, Int8ModelGivesInt8TasksThatTuneAndApply) {
  ZooOptions zo;
  zo.width_mult = 0.125;
  Graph g = build_zoo_model("resnet18-cifar", zo);
  QuantSpec qs;
  qs.calib_samples = 2;
  quantize(g, qs);
  check_typed_tasks(
      g, "int8", [](const StepInfo& s) { return s.op == "QFusedConv"; },
      [](const Task& t) {
        EXPECT_TRUE(t.int8()) << t.key;
        EXPECT_TRUE(find_conv_algorithm(t.algo)->supports(t.problem)) << t.key;
        ASSERT_TRUE(t.weights);
        EXPECT_EQ(static_cast<int64_t>(t.weights->w_scale.size()), t.problem.k);
        EXPECT_EQ(static_cast<int64_t>(t.weights->data.size()), t.problem.weight_count());
      });
}

// fp16 / bf16 models: every 16-bit conv gives one task per 16-bit algorithm (hconv.h) on
// its 16-bit weights; candidates run the emulated or native path the ISA gives.
TEST_F(TuneRecords, HalfModelsGiveHalfTasksThatTuneAndApply) {
  for (const QuantType type : {QuantType::kF16, QuantType::kBF16}) {
    SCOPED_TRACE(type == QuantType::kF16 ? "fp16" : "bf16");
    ZooOptions zo;
    zo.width_mult = 0.125;
    Graph g = build_zoo_model("resnet18-cifar", zo);
    QuantSpec qs;
    qs.type = type;
    quantize(g, qs);
    const DType dt = type == QuantType::kF16 ? DType::kF16 : DType::kBF16;
    check_typed_tasks(
        g, dtype_name(dt), [](const StepInfo& s) { return s.op == "Conv" || s.op == "FusedConv"; },
        [&](const Task& t) {
          EXPECT_TRUE(t.half()) << t.key;
          EXPECT_TRUE(find_conv_algorithm(t.algo)->supports(t.problem)) << t.key;
          ASSERT_TRUE(t.weights && !t.weights->bias.empty());
          EXPECT_EQ(t.problem.w_type, dt);
          EXPECT_EQ(
              static_cast<int64_t>(t.weights->data.size()),
              2 * t.problem.k * (t.problem.c / t.problem.groups) * t.problem.kh * t.problem.kw);
          // Each 16-bit layer is tuned on the one layout its plan runs it on.
          ConvProblem nchw = t.problem;
          nchw.set_layouts(Layout::kNchw, Layout::kNchw);
          const bool blocked = half_conv_runs_blocked(nchw, LayoutMode::kAuto, t.isa);
          EXPECT_EQ(t.problem.y_layout, blocked ? Layout::kNchw16c : Layout::kNchw) << t.key;
        });
  }
}

}  // namespace
}  // namespace dlas::tune
