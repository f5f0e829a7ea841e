// The CUDA plan against the CPU engine: every zoo model with the auto rule, with each CUDA
// conv algorithm forced, and through cuDNN; the CUDA graph against launches one by one; the
// device report, the input checks, unsupported ops, and the CLI's --device. Skipped where no
// CUDA device is visible (CI).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "dlas/algo/cuda_conv.h"
#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/compress_spec.h"
#include "dlas/system/compress.h"
#include "dlas/system/cuda_executor.h"
#include "dlas/system/make_executor.h"
#include "dlas/system/measure.h"
#include "dlas/system/plan.h"
#include "gpu/gpu_test_util.h"
#include "optimize/cli_test_util.h"

namespace dlas {
namespace {

using test::relative_error;

std::vector<Tensor> cpu_outputs(const Graph& g, const std::vector<Tensor>& in) {
  Plan plan(g, PlanOptions{});
  return plan.run(in);
}

void expect_matches_cpu(const Graph& g, const CudaPlanOptions& o, double tolerance,
                        const std::string& what) {
  const std::vector<Tensor> in = random_inputs(g, 7);
  const std::vector<Tensor> want = cpu_outputs(g, in);
  CudaExecutor gpu(g, o);
  const std::vector<Tensor> got = gpu.run(in);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_LT(relative_error(got[i], want[i]), tolerance) << what << ", output " << i;
  // A second run on the same inputs gives the same result (no stale state in the arena).
  const std::vector<Tensor> again = gpu.run(in);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(relative_error(again[i], got[i]), 0.0) << what << ", second run";
}

const char* kCifarModels[] = {"resnet18-cifar", "mobilenetv1-cifar", "mobilenetv2-cifar",
                              "vgg16-cifar"};
const char* kImagenetModels[] = {"resnet50", "mobilenetv2", "densenet161", "efficientnetb0"};

TEST(CudaExecutor, EveryZooModelMatchesTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  for (const char* m : kCifarModels) expect_matches_cpu(build_zoo_model(m), {}, 1e-3, m);
  for (const char* m : kImagenetModels) expect_matches_cpu(build_zoo_model(m), {}, 1e-3, m);
}

TEST(CudaExecutor, EachConvAlgorithmForcedMatchesTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  for (const cuda::ConvAlgorithm* a : cuda::conv_algorithms()) {
    CudaPlanOptions o;
    o.conv_algo = a->name;
    for (const char* m : {"resnet18-cifar", "mobilenetv2-cifar"})
      expect_matches_cpu(build_zoo_model(m), o, a->name == std::string("winograd") ? 3e-3 : 1e-3,
                         std::string(m) + " with " + a->name);
  }
}

TEST(CudaExecutor, WeightPrunedModelsRunSparseAndMatchTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  for (const char* m : {"resnet18-cifar", "vgg16-cifar"}) {
    Graph g = build_zoo_model(m);
    apply_compress_spec(g, parse_compress("wp:0.9"));
    expect_matches_cpu(g, {}, 1e-3, std::string(m) + " wp:0.9");
    // The hand-written rule runs sparse on the pruned layers (a measured profile may not).
    CudaPlanOptions rule;
    rule.profile = "none";
    CudaExecutor e(g, rule);
    int sparse = 0;
    for (const CudaStepInfo& s : e.steps()) sparse += s.algo == "sparse";
    EXPECT_GE(sparse, 5) << m;  // global pruning leaves the early layers denser
  }
}

// fp16 and bf16 variants: 16-bit activations and weights, every op but the classifier's GEMM
// on 16-bit data; against the CPU engine on the same 16-bit graph.
TEST(CudaExecutor, SixteenBitVariantsMatchTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  std::vector<std::pair<const char*, const char*>> variants;  // fp16: every zoo model
  for (const char* m : kCifarModels) variants.emplace_back("fp16", m);
  for (const char* m : kImagenetModels) variants.emplace_back("fp16", m);
  for (const char* m : {"resnet18-cifar", "mobilenetv2-cifar", "efficientnetb0", "densenet161"})
    variants.emplace_back("bf16", m);
  for (const auto& [compress, m] : variants) {
    Graph g = build_zoo_model(m);
    apply_compress_spec(g, parse_compress(compress));
    expect_matches_cpu(g, {}, std::string(compress) == "fp16" ? 3e-2 : 8e-2,
                       std::string(m) + " " + compress);
    CudaPlanOptions none;
    none.profile = "none";
    CudaExecutor e(g, none);
    int tc = 0, converts = 0;
    for (const CudaStepInfo& s : e.steps()) {
      tc += (s.op == "FusedConv" || s.op == "Conv") && s.algo == "gemm";
      converts += s.algo == "convert";
    }
    EXPECT_GT(tc, 3) << m << " " << compress;
    // The model's input and output casts and the classifier's widening and narrowing: the
    // elementwise, pooling, affine and concat ops run on 16-bit data.
    EXPECT_LE(converts, 4) << m << " " << compress;
  }
  // Each algorithm forced on 16-bit layers (where it does not run one: the auto rule).
  for (const cuda::ConvAlgorithm* a : cuda::conv_algorithms()) {
    CudaPlanOptions o;
    o.conv_algo = a->name;
    Graph g = build_zoo_model("resnet18-cifar");
    apply_compress_spec(g, parse_compress("fp16"));
    expect_matches_cpu(g, o, 3e-2, std::string("resnet18-cifar fp16 with ") + a->name);
  }
  CudaPlanOptions tc;
  tc.conv_algo = "gemm:tc=1";  // the tensor-core kernel
  Graph g = build_zoo_model("mobilenetv2-cifar");
  apply_compress_spec(g, parse_compress("bf16"));
  expect_matches_cpu(g, tc, 8e-2, "mobilenetv2-cifar bf16 with gemm:tc=1");
}

TEST(CudaExecutor, CudnnBackendRunsSixteenBitVariants) {
  SKIP_WITHOUT_GPU();
  CudaPlanOptions o;
  o.conv_algo = "cudnn";
  o.backend = "cudnn";
  for (const char* compress : {"fp16", "bf16"})
    for (const char* m : {"resnet18-cifar", "mobilenetv2-cifar"}) {
      Graph g = build_zoo_model(m);
      apply_compress_spec(g, parse_compress(compress));
      expect_matches_cpu(g, o, std::string(compress) == "fp16" ? 3e-2 : 8e-2,
                         std::string(m) + " " + compress + " on cuDNN");
    }
}

TEST(CudaExecutor, CudnnBackendMatchesTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  CudaPlanOptions o;
  o.conv_algo = "cudnn";
  o.backend = "cudnn";
  for (const char* m : {"resnet18-cifar", "mobilenetv2-cifar", "efficientnetb0", "densenet161"})
    expect_matches_cpu(build_zoo_model(m), o, 3e-3, std::string(m) + " on cuDNN");
  CudaExecutor e(build_zoo_model("resnet18-cifar"), o);
  EXPECT_EQ(e.name(), "cudnn");
  for (const CudaStepInfo& s : e.steps()) {
    if (s.op == "FusedConv" || s.op == "Conv") {
      EXPECT_EQ(s.algo.rfind("cudnn:", 0), 0u) << s.node;
    }
  }
}

TEST(CudaExecutor, GraphReplayEqualsLaunchesOneByOne) {
  SKIP_WITHOUT_GPU();
  const Graph g = build_zoo_model("mobilenetv2-cifar");
  const std::vector<Tensor> in = random_inputs(g, 3);
  CudaPlanOptions eager;
  eager.cuda_graph = false;
  CudaExecutor a(g, {}), b(g, eager);
  EXPECT_TRUE(a.graph_captured());
  EXPECT_FALSE(b.graph_captured());
  const auto x = a.run(in), y = b.run(in);
  EXPECT_EQ(relative_error(x[0], y[0]), 0.0);
  EXPECT_GE(a.last_device_ms(), 0.0);
}

TEST(CudaExecutor, ReportsDeviceMemoryAndSteps) {
  SKIP_WITHOUT_GPU();
  CudaExecutor e(build_zoo_model("resnet18-cifar"), {});
  const MemoryReport m = e.memory();
  EXPECT_GT(m.arena_bytes, 0);
  EXPECT_GE(m.unplanned_bytes, m.arena_bytes);
  EXPECT_GT(m.packed_weight_bytes, 0);
  EXPECT_EQ(e.threads(), 1);
  EXPECT_NE(e.device_label().find("cuda:0"), std::string::npos);
  int convs = 0;
  for (const CudaStepInfo& s : e.steps()) convs += s.op == "FusedConv" || s.op == "Conv";
  EXPECT_GT(convs, 10);
  const auto times = e.profile_steps(2);
  EXPECT_EQ(times.size(), e.steps().size());
}

TEST(CudaExecutor, RejectsWrongInputsAndUnsupportedOps) {
  SKIP_WITHOUT_GPU();
  CudaExecutor e(build_zoo_model("resnet18-cifar"), {});
  try {
    e.run({Tensor(DType::kF32, {1, 3, 16, 16})});
    FAIL() << "a wrongly shaped input ran";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kInvalidInput);
  }
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {1, 4}});
  Node n;
  n.op = "Tanh";
  n.name = "t";
  n.inputs = {"x"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  g.outputs = {"y"};
  g.infer();
  try {
    CudaExecutor bad(g, {});
    FAIL() << "an op without a CUDA kernel compiled";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(err.what()).find("Tanh"), std::string::npos);
  }
}

TEST(CudaExecutor, MakeExecutorTakesTheDeviceFromTheVariant) {
  SKIP_WITHOUT_GPU();
  Variant v;
  v.model = "resnet18-cifar";
  v.device = "cuda:0";
  const Graph g = build_zoo_model("resnet18-cifar");
  auto e = make_executor(g, v);
  EXPECT_NE(dynamic_cast<CudaExecutor*>(e.get()), nullptr);
  v.backend = "cudnn";
  EXPECT_EQ(make_executor(g, v)->name(), "cudnn");
  v.backend = "onednn";
  EXPECT_THROW(make_executor(g, v), Error);
}

class CudaCli : public test::CliTest {};

TEST_F(CudaCli, BenchReportsKernelTimeAndDeviceMemory) {
  SKIP_WITHOUT_GPU();
  const auto r = dlas("bench resnet18-cifar --device cuda --repeat 5 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"kernel_median_ms\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"device\": \"cuda:0\""), std::string::npos) << r.out;
  const auto c = dlas("bench resnet18-cifar --backend cudnn --repeat 5 --json");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("\"backend\": \"cudnn\""), std::string::npos) << c.out;
  const auto p = dlas("profile mobilenetv2-cifar --device cuda --repeat 3");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("depthwise"), std::string::npos) << p.out;
  const auto q = dlas("bench resnet18-cifar --device cuda --compress int8 --repeat 2");
  EXPECT_EQ(q.code, 2) << q.err;
  const auto h = dlas("bench resnet18-cifar --device cuda --compress fp16 --repeat 2 --json");
  EXPECT_EQ(h.code, 0) << h.err;
  const auto hc = dlas("bench resnet18-cifar --backend cudnn --compress fp16 --repeat 2");
  EXPECT_EQ(hc.code, 0) << hc.err;
  const auto d = dlas("bench resnet18-cifar --device cuda:7 --repeat 2");
  EXPECT_EQ(d.code, 2) << d.err;
}

}  // namespace
}  // namespace dlas
