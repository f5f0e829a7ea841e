// The libtorch runner as an Executor: make_executor builds it once register_torch_executor()
// ran, and it gives the reference runtime's outputs through the interface.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "dlas/model/zoo.h"
#include "dlas/system/executor.h"
#include "dlas/system/make_executor.h"
#include "dlas/system/measure.h"
#include "dlas/torch/torch_peer.h"

namespace dlas {
namespace {

TEST(TorchExecutor, MakeExecutorBuildsTheRegisteredRunner) {
  register_torch_executor();
  register_torch_executor();  // idempotent
  const std::vector<std::string> names = executor_backends();
  ASSERT_NE(std::find(names.begin(), names.end(), "torch"), names.end());

  const Graph g = build_zoo_model("mobilenetv2-cifar");
  const std::vector<Tensor> in = random_inputs(g, 3);
  const std::vector<Tensor> want = ReferenceExecutor(g).run(in);
  Variant v;
  v.backend = "torch";
  v.threads = 1;
  const std::unique_ptr<Executor> exec = make_executor(g, v);
  EXPECT_EQ(exec->name(), "torch");
  EXPECT_EQ(exec->threads(), 1);
  EXPECT_EQ(exec->memory().weight_bytes, g.weight_bytes());
  EXPECT_EQ(exec->memory().arena_bytes, kUnknownBytes);
  std::vector<Tensor> got = exec->make_outputs();
  exec->run_into(in, got);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got[0].shape(), want[0].shape());
  double scale = 1e-6, worst = 0;
  for (int64_t i = 0; i < want[0].numel(); ++i) {
    scale = std::max(scale, std::fabs(want[0].get_as_double(i)));
    worst = std::max(worst, std::fabs(got[0].get_as_double(i) - want[0].get_as_double(i)));
  }
  EXPECT_LE(worst / scale, 1e-4);
}

}  // namespace
}  // namespace dlas
