// Exported pruned models against libtorch: a zoo model pruned by prune()
// (as `dlas prune` does), written as ONNX and loaded back, computes on dlas (the reference
// runtime and the compiled plan) what the libtorch peer computes on the same loaded graph,
// within 1e-4 of the output scale of libtorch in float64 (the truth), as the zoo peer test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>

#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/prune.h"
#include "dlas/system/executor.h"
#include "dlas/system/loader.h"
#include "dlas/system/plan.h"
#include "dlas/torch/torch_peer.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::abs(t.get_as_double(i)));
  return m;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::abs(a.get_as_double(i) - b.get_as_double(i));
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    m = std::max(m, d);
  }
  return m;
}

// Non-trivial BatchNorm parameters (the zoo's are the identity) so a statistic cut at the
// wrong channels shows; scale near 1 keeps the logits O(1).
void perturb_batch_norms(Graph& g) {
  uint64_t state = 17;
  auto next = [&state] {  // splitmix64 in [0, 1)
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  };
  for (const Node& n : g.nodes) {
    if (n.op != "BatchNormalization") continue;
    for (size_t k = 1; k < 5; ++k) {
      Tensor t = g.initializers.at(n.inputs[k]).clone();
      for (int64_t i = 0; i < t.numel(); ++i)
        t.data<float>()[i] =
            static_cast<float>(k == 1 || k == 4 ? 0.8 + 0.4 * next() : 0.2 * (next() - 0.5));
      g.initializers[n.inputs[k]] = t;
    }
  }
}

class PrunedExportVsLibtorch : public ::testing::TestWithParam<const char*> {};

TEST_P(PrunedExportVsLibtorch, OutputsMatch) {
  const std::string spec = GetParam();
  ZooOptions o;
  o.seed = 7;
  o.batch = 2;
  Graph g = build_zoo_model("resnet18-cifar", o);
  perturb_batch_norms(g);
  const PruneReport r = prune(g, parse_prune_spec(spec));
  if (r.spec.method == PruneMethod::kChannel)
    EXPECT_GT(r.mac_ratio(), 1.5);
  else
    EXPECT_NEAR(r.sparsity(), r.spec.sparsity, 1e-3);
  const fs::path file =
      fs::temp_directory_path() / ("dlas_pruned_peer_" + std::to_string(::getpid()) + ".onnx");
  export_onnx_file(g, file.string());
  const Graph loaded = load_model(file.string());
  fs::remove(file);
  EXPECT_EQ(loaded.param_count(), g.param_count());
  EXPECT_EQ(loaded.macs(), g.macs());

  Tensor x(DType::kF32, loaded.inputs[0].shape);
  uint64_t s = 3;
  for (int64_t i = 0; i < x.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x.data<float>()[i] = static_cast<float>(static_cast<double>(s >> 11) * 0x1.0p-53 * 2 - 1);
  }
  const Tensor ref = ReferenceExecutor(loaded).run({x})[0];
  PlanOptions po;
  po.threads = 2;
  const Tensor plan = Plan(loaded, po).run({x})[0];
  const Tensor peer = run_with_libtorch(loaded, {x})[0];
  TorchPeerOptions exact;
  exact.float64 = true;
  const Tensor truth = run_with_libtorch(loaded, {x}, exact)[0];
  const double scale = max_abs(truth);
  std::printf(
      "[pruned-vs-libtorch] resnet18-cifar %s: scale %.4g, dlas ref %.3g, dlas plan %.3g, "
      "libtorch fp32 %.3g (max abs err vs libtorch float64)\n",
      spec.c_str(), scale, max_abs_diff(ref, truth), max_abs_diff(plan, truth),
      max_abs_diff(peer, truth));
  EXPECT_GT(scale, 1e-3);
  EXPECT_LE(max_abs_diff(ref, truth), 1e-4 * scale);
  EXPECT_LE(max_abs_diff(plan, truth), 1e-4 * scale);
  EXPECT_LE(max_abs_diff(peer, truth), 1e-4 * scale);
  EXPECT_LE(max_abs_diff(ref, peer), 1e-4 * scale);
}

INSTANTIATE_TEST_SUITE_P(Specs, PrunedExportVsLibtorch,
                         ::testing::Values("cp:0.5", "wp:0.9", "cp:0.5:layer:round8"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace dlas
