// The GPU tuner: records of every candidate, keyed by the GPU; the choices they give a model
// run it correctly and are applied again from the records file; the CLI round trip. Skipped
// where no CUDA device is visible (CI).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"
#include "dlas/model/zoo.h"
#include "dlas/system/cuda_executor.h"
#include "dlas/system/cuda_tune.h"
#include "dlas/system/measure.h"
#include "dlas/system/plan.h"
#include "gpu/gpu_test_util.h"
#include "optimize/cli_test_util.h"

namespace dlas {
namespace {

TEST(CudaTune, TunesEveryLayerAndTheChoicesRunTheModelCorrectly) {
  SKIP_WITHOUT_GPU();
  const Graph g = build_zoo_model("mobilenetv2-cifar");
  tune::CudaTuneOptions o;
  o.patience = 4;
  o.repeat = 3;
  int records_seen = 0;
  o.on_record = [&](const tune::Record&) { ++records_seen; };
  const tune::CudaTuneReport r = tune::tune_cuda(g, o);
  EXPECT_GT(r.layers, 5);
  EXPECT_GE(r.convs, r.layers);
  EXPECT_EQ(records_seen, r.trials);
  EXPECT_EQ(static_cast<int64_t>(r.records.size()), r.trials);
  EXPECT_EQ(static_cast<int>(r.choices.size()), r.convs);
  EXPECT_GT(r.untuned_ms, 0);
  EXPECT_GT(r.tuned_ms, 0);
  EXPECT_LE(r.seconds_to_95, r.seconds);
  int won = 0;
  for (const auto& [algo, n] : r.winners) won += n;
  EXPECT_EQ(won, r.layers);
  const std::string hw = tune::cuda_hardware_id(0);
  std::set<std::string> algos;
  for (const tune::Record& rec : r.records) {
    EXPECT_EQ(rec.hardware, hw);
    EXPECT_EQ(rec.task.rfind("cuda-conv2d|", 0), 0u) << rec.task;
    algos.insert(rec.algo);
  }
  EXPECT_TRUE(algos.count("depthwise"));
  EXPECT_TRUE(algos.count("gemm"));
  // The records give back the same choices, and the tuned plan computes the model.
  int matched = 0, convs = 0;
  const LayerChoices again = tune::apply_cuda_records(g, 3, 0, r.records, &matched, &convs);
  EXPECT_EQ(matched, convs);
  EXPECT_EQ(convs, r.convs);
  for (const auto& [node, choice] : again) {
    ASSERT_TRUE(r.choices.count(node)) << node;
    EXPECT_EQ(choice.algo, r.choices.at(node).algo) << node;
  }
  CudaPlanOptions po;
  po.layers = again;
  CudaExecutor tuned(g, po);
  const auto in = random_inputs(g, 5);
  Plan cpu(g, PlanOptions{});
  EXPECT_LT(test::relative_error(tuned.run(in)[0], cpu.run(in)[0]), 3e-3);
}

TEST(CudaTune, RecordsOfAnotherGpuDoNotApply) {
  SKIP_WITHOUT_GPU();
  tune::Record r;
  r.task = "cuda-conv2d|x|gemm|f32|Some Other GPU|sm_80";
  r.algo = "gemm";
  r.costs = {1e-5};
  r.hardware = "Some Other GPU|sm_80";
  int matched = -1, convs = 0;
  tune::apply_cuda_records(build_zoo_model("resnet18-cifar"), 3, 0, {r}, &matched, &convs);
  EXPECT_EQ(matched, 0);
  EXPECT_GT(convs, 0);
}

class CudaTuneCli : public test::CliTest {};

TEST_F(CudaTuneCli, TuneThenBenchWithTheRecords) {
  SKIP_WITHOUT_GPU();
  const auto t = dlas("tune resnet18-cifar --device cuda -o " + path("r.jsonl") +
                      " --budget 200trials --patience 3 --json");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("\"seconds_to_95\""), std::string::npos) << t.out;
  const size_t n = tune::read_records(path("r.jsonl")).size();
  EXPECT_GT(n, 20u);
  EXPECT_LE(n, 200u);
  const auto b = dlas("bench resnet18-cifar --device cuda --repeat 3 --records " + path("r.jsonl"));
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.err.find("conv layers tuned"), std::string::npos) << b.err;
}

// 16-bit variants tune their 16-bit layers (records keyed f16), and the records apply.
TEST_F(CudaTuneCli, TunesSixteenBitLayers) {
  SKIP_WITHOUT_GPU();
  const auto t = dlas("tune mobilenetv2-cifar --device cuda --compress fp16 -o " + path("h.jsonl") +
                      " --budget 150trials --patience 3 --json");
  ASSERT_EQ(t.code, 0) << t.err;
  const std::vector<tune::Record> records = tune::read_records(path("h.jsonl"));
  ASSERT_GT(records.size(), 10u);
  for (const tune::Record& r : records)
    EXPECT_NE(r.task.find("|f16|"), std::string::npos) << r.task;
  const auto b =
      dlas("bench mobilenetv2-cifar --device cuda --compress fp16 --repeat 3 --records " +
           path("h.jsonl"));
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.err.find("conv layers tuned"), std::string::npos) << b.err;
  const auto q = dlas("tune resnet18-cifar --device cuda --compress int8 -o " + path("q.jsonl"));
  EXPECT_EQ(q.code, 2) << q.err;
}

}  // namespace
}  // namespace dlas
