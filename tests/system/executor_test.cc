// The Executor interface and the one latency protocol: measure_latency's statistics against
// a fake executor whose runs advance an injected clock by known amounts (exact, not timing
// dependent), and every backend make_executor builds against the reference runtime.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "dlas/core/error.h"
#include "dlas/system/make_executor.h"
#include "dlas/system/measure.h"
#include "system/plan_test_util.h"

namespace dlas {
namespace {

using std::chrono::steady_clock;

// y = Relu(x), x f32[1, 4]: just enough graph for make_outputs.
Graph relu_graph() {
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {1, 4}});
  Node n;
  n.name = "relu";
  n.op = "Relu";
  n.inputs = {"x"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  g.outputs = {"y"};
  g.infer();
  return g;
}

// Each run advances `now` by the next of `run_ms` (the last one repeats) and counts itself.
class FakeExecutor : public Executor {
 public:
  explicit FakeExecutor(std::vector<double> run_ms) : graph_(relu_graph()), run_ms_(run_ms) {}
  std::string name() const override { return "fake"; }
  const Graph& graph() const override { return graph_; }
  int threads() const override { return 1; }
  MemoryReport memory() const override { return graph_weight_memory(graph_); }
  void run_into(const std::vector<Tensor>&, std::vector<Tensor>& outputs) override {
    ASSERT_EQ(outputs.size(), 1u);
    const double ms = run_ms_[std::min(runs, run_ms_.size() - 1)];
    now += std::chrono::nanoseconds(static_cast<int64_t>(std::llround(ms * 1e6)));
    ++runs;
  }
  Clock clock() {
    return [this] { return now; };
  }

  steady_clock::time_point now{};
  size_t runs = 0;

 private:
  Graph graph_;
  std::vector<double> run_ms_;
};

LatencyOptions protocol(int warmup, int repeat, int number = 1, double min_repeat_ms = 0) {
  LatencyOptions o;
  o.warmup = warmup;
  o.repeat = repeat;
  o.number = number;
  o.min_repeat_ms = min_repeat_ms;
  return o;
}

LatencyStats measure(FakeExecutor& fake, LatencyOptions o) {
  o.clock = fake.clock();
  return measure_latency(fake, {Tensor(DType::kF32, {1, 4})}, o);
}

TEST(MeasureLatency, FirstRunAloneThenWarmupThenRepeats) {
  // first 10 ms, two warm-up runs of 100 ms (discarded), then five repeats.
  FakeExecutor fake({10, 100, 100, 5, 1, 3, 2, 4});
  const LatencyStats s = measure(fake, protocol(2, 5));
  EXPECT_EQ(fake.runs, 8u);
  EXPECT_EQ(s.times_ms, (std::vector<double>{5, 1, 3, 2, 4}));
  EXPECT_DOUBLE_EQ(s.first_ms, 10);
  EXPECT_EQ(s.number, 1);
  EXPECT_DOUBLE_EQ(s.median_ms, 3);
  EXPECT_DOUBLE_EQ(s.mean_ms, 3);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 5);
  EXPECT_DOUBLE_EQ(s.p10_ms, 1.4);  // numpy: sorted [1..5] at 0.4
  EXPECT_DOUBLE_EQ(s.p90_ms, 4.6);
  EXPECT_DOUBLE_EQ(s.std_ms, std::sqrt(10.0 / 4));  // sample std (n - 1)
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(10.0 / 4) / 3);
}

TEST(MeasureLatency, EachRepeatIsTheMeanOfItsNumberRuns) {
  FakeExecutor fake({7, 1, 3, 2, 2, 4, 4, 6, 6});
  const LatencyStats s = measure(fake, protocol(0, 2, 4));
  EXPECT_EQ(fake.runs, 9u);
  EXPECT_EQ(s.times_ms, (std::vector<double>{2, 5}));
  EXPECT_DOUBLE_EQ(s.first_ms, 7);
  EXPECT_EQ(s.number, 4);
  EXPECT_DOUBLE_EQ(s.median_ms, 3.5);
  EXPECT_DOUBLE_EQ(s.std_ms, std::sqrt(4.5));
}

TEST(MeasureLatency, MinRepeatMsGrowsNumberAsTvmDoes) {
  {
    // 4 ms runs, 10 ms per repeat wanted: number 1 (4 ms) -> max(2, 2.75) = 2 (8 ms) ->
    // max(4, 2.75) = 4 (16 ms, long enough).
    FakeExecutor fake({4});
    const LatencyStats s = measure(fake, protocol(1, 3, 1, 10));
    EXPECT_EQ(s.number, 4);
    EXPECT_EQ(fake.runs, 1u + 1 + (1 + 2 + 4) + 3 * 4);
    EXPECT_EQ(s.times_ms, (std::vector<double>{4, 4, 4}));
  }
  {
    // 1 ms runs, 10 ms wanted: number 1 -> max(2, 1 * 10 / 1 * 1.1 = 11) = 11.
    FakeExecutor fake({1});
    const LatencyStats s = measure(fake, protocol(0, 2, 1, 10));
    EXPECT_EQ(s.number, 11);
    EXPECT_EQ(fake.runs, 1u + (1 + 11) + 2 * 11);
  }
  {
    // Without min_repeat_ms, number stays as given.
    FakeExecutor fake({1});
    EXPECT_EQ(measure(fake, protocol(0, 1, 3)).number, 3);
    EXPECT_EQ(fake.runs, 1u + 3);
  }
}

TEST(MeasureLatency, ReportsProgressAfterEveryRepeat) {
  FakeExecutor fake({1});
  std::vector<std::pair<int, int>> calls;
  LatencyOptions o = protocol(3, 4);
  o.progress = [&](int done, int total) { calls.emplace_back(done, total); };
  measure(fake, o);
  EXPECT_EQ(fake.runs, 1u + 3 + 4);
  EXPECT_EQ(calls, (std::vector<std::pair<int, int>>{{1, 4}, {2, 4}, {3, 4}, {4, 4}}));
}

TEST(MeasureLatency, OneRepeatHasNoSpread) {
  const LatencyStats s = latency_stats({2.5});
  EXPECT_DOUBLE_EQ(s.median_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.p10_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.p90_ms, 2.5);
  EXPECT_EQ(s.std_ms, 0);
  EXPECT_EQ(s.cv, 0);
}

TEST(MeasureLatency, RejectsEmptyProtocols) {
  FakeExecutor fake({1});
  for (const LatencyOptions& o : {protocol(1, 0), protocol(1, 1, 0), protocol(-1, 1)}) {
    try {
      measure(fake, o);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
    }
  }
}

TEST(MeasureLatency, TimesARealExecutor) {
  ReferenceExecutor ref(relu_graph());
  const LatencyStats s = measure_latency(ref, {Tensor(DType::kF32, {1, 4})}, protocol(1, 3));
  EXPECT_EQ(s.times_ms.size(), 3u);
  EXPECT_GE(s.min_ms, 0);
  EXPECT_LE(s.min_ms, s.median_ms);
  EXPECT_LE(s.median_ms, s.max_ms);
}

// Every backend of the core library, made from a Variant, gives the reference's outputs.
TEST(MakeExecutor, EveryBackendMatchesTheReference) {
  const Graph g = small_zoo_model("mobilenetv2-cifar");
  const std::vector<Tensor> in = seeded_inputs(g);
  const std::vector<Tensor> want = ReferenceExecutor(g).run(in);
  for (const std::string backend : {"dlas", "onednn", "reference"}) {
    Variant v;
    v.backend = backend;
    v.threads = backend == "reference" ? 1 : 2;
    const std::unique_ptr<Executor> exec = make_executor(g, v);
    EXPECT_EQ(exec->name(), backend);
    EXPECT_EQ(exec->threads(), v.threads) << backend;
    EXPECT_GT(exec->macs(), 0) << backend;
    const MemoryReport m = exec->memory();
    EXPECT_GT(m.weight_bytes, 0) << backend;
    // Only the dlas plan sees its activation arena.
    EXPECT_EQ(m.arena_bytes == kUnknownBytes, backend != "dlas") << backend;
    expect_close(g, exec->run(in), want, backend);
    // run_into through the interface, twice: buffers are reused.
    std::vector<Tensor> out = exec->make_outputs();
    exec->run_into(in, out);
    exec->run_into(in, out);
    expect_close(g, out, want, backend + " run_into");
  }
}

TEST(MakeExecutor, TheVariantConfiguresThePlan) {
  const std::string path = ::testing::TempDir() + "dlas_make_executor_layers.json";
  {
    std::ofstream f(path);
    f << R"({"layer1.0.conv1": {"algo": "gemm"}})";
  }
  Variant v;
  v.conv_algo = "layers:" + path;
  v.threads = 2;
  v.opt_level = 2;
  v.isa = "scalar";
  const PlanOptions o = plan_options_for(v, {.layers = {{"conv1", {"direct", {}}}}});
  EXPECT_EQ(o.conv_algo, "auto");
  ASSERT_EQ(o.layers.size(), 2u);
  EXPECT_EQ(o.layers.at("layer1.0.conv1").algo, "gemm");
  EXPECT_EQ(o.layers.at("conv1").algo, "direct");
  EXPECT_EQ(o.threads, 2);
  EXPECT_EQ(o.opt_level, 2);
  EXPECT_EQ(o.isa, Isa::kScalar);
  v.conv_algo = "winograd";
  v.isa.clear();
  const PlanOptions p = plan_options_for(v);
  EXPECT_EQ(p.conv_algo, "winograd");
  EXPECT_TRUE(p.layers.empty());
  EXPECT_FALSE(p.isa.has_value());  // the active ISA
}

TEST(MakeExecutor, UnknownBackendNamesTheKnownOnes) {
  Variant v;
  v.backend = "tensorrt";
  try {
    make_executor(relu_graph(), v);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    for (const char* name : {"'tensorrt'", "dlas", "onednn", "reference"})
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

TEST(MakeExecutor, RegisteredBackendsAreMade) {
  register_executor("fake", [](const Graph&, const Variant&, const ExecutorOptions&) {
    return std::make_unique<FakeExecutor>(std::vector<double>{1});
  });
  Variant v;
  v.backend = "fake";
  EXPECT_EQ(make_executor(relu_graph(), v)->name(), "fake");
  const std::vector<std::string> names = executor_backends();
  EXPECT_NE(std::find(names.begin(), names.end(), "fake"), names.end());
}

}  // namespace
}  // namespace dlas
