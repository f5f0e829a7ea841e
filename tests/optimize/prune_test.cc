// Pruning (dlas/optimize/prune.h): spec parsing, exact sparsity globally and per layer,
// first conv / classifier kept dense, whole blocks only, masks, outputs equal to the
// engine on the masked weights, and the `dlas prune` / `--compress` command line.
#include "dlas/optimize/prune.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "dlas/algo/conv.h"
#include "dlas/core/error.h"
#include "dlas/model/zoo.h"
#include "dlas/system/executor.h"
#include "dlas/system/loader.h"
#include "dlas/system/plan.h"
#include "optimize/cli_test_util.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

// The error a call throws (kind and message); fails the test when it throws none.
template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error thrown";
  return Error(ErrorKind::kInternal, "none");
}

int64_t zeros_of(const Tensor& t) {
  int64_t z = 0;
  for (int64_t i = 0; i < t.numel(); ++i) z += t.data<float>()[i] == 0.f;
  return z;
}

TEST(PruneSpec, ParsesGoodSpecs) {
  PruneSpec s = parse_prune_spec("wp:0.9");
  EXPECT_EQ(s.method, PruneMethod::kWeight);
  EXPECT_DOUBLE_EQ(s.sparsity, 0.9);
  EXPECT_EQ(s.scope, PruneScope::kGlobal);
  EXPECT_EQ(s.str(), "wp:0.9");
  s = parse_prune_spec("bp:4x1:0.95");
  EXPECT_EQ(s.method, PruneMethod::kBlock);
  EXPECT_EQ(s.block, (SparseBlock{4, 1}));
  EXPECT_DOUBLE_EQ(s.sparsity, 0.95);
  EXPECT_EQ(s.str(), "bp:4x1:0.95");
  s = parse_prune_spec("bp:1x8:0:layer");
  EXPECT_EQ(s.block, (SparseBlock{1, 8}));
  EXPECT_EQ(s.scope, PruneScope::kLayer);
  EXPECT_EQ(s.str(), "bp:1x8:0:layer");
  EXPECT_EQ(parse_prune_spec("wp:0.5:global").str(), "wp:0.5");
  EXPECT_EQ(parse_prune_spec("wp:.25:layer").str(), "wp:0.25:layer");
}

TEST(PruneSpec, RejectsBadSpecsNamingThePart) {
  Error e = error_of([] { parse_prune_spec("bp:4x1:1.5"); });
  EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
  EXPECT_STREQ(e.what(), "bp:4x1:1.5: sparsity must be in [0, 1)");
  e = error_of([] { parse_prune_spec("wp:abc"); });
  EXPECT_STREQ(e.what(), "wp:abc: sparsity 'abc' is not a number");
  e = error_of([] { parse_prune_spec("bp:4:0.9"); });
  EXPECT_NE(std::string(e.what()).find("block '4'"), std::string::npos) << e.what();
  e = error_of([] { parse_prune_spec("wp:0.5:sideways"); });
  EXPECT_NE(std::string(e.what()).find("scope 'sideways'"), std::string::npos) << e.what();
  e = error_of([] { parse_prune_spec("xp:0.5"); });
  EXPECT_NE(std::string(e.what()).find("unknown pruning method 'xp'"), std::string::npos);
  for (const char* bad : {"", "wp", "wp:", "wp:1", "wp:-0.1", "wp:nan", "wp:0.5:layer:x",
                          "bp:0x1:0.5", "bp:4x:0.5", "bp:4x1", "bp:4x1x2:0.5", "wp:0.5 "}) {
    e = error_of([&] { parse_prune_spec(bad); });
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << bad << ": " << e.what();
  }
  const PruneSpec s = parse_prune_spec("cp:0.8:layer");
  EXPECT_EQ(s.method, PruneMethod::kChannel);
  EXPECT_EQ(s.scope, PruneScope::kLayer);
  EXPECT_EQ(s.str(), "cp:0.8:layer");
  EXPECT_EQ(parse_prune_spec("cp:0.5:global").str(), "cp:0.5");
  for (const char* bad : {"cp", "cp:", "cp:1", "cp:0.5:rows", "cp:4x1:0.5"})
    EXPECT_EQ(error_of([&] { parse_prune_spec(bad); }).kind(), ErrorKind::kInvalidInput) << bad;
}

TEST(PruneSpec, CompressSpecs) {
  EXPECT_FALSE(parse_compress_spec("dense").has_value());
  ASSERT_TRUE(parse_compress_spec("bp:4x1:0.9").has_value());
  EXPECT_EQ(parse_compress_spec("wp:0.9")->str(), "wp:0.9");
  // Quantization parts are validated and left to parse_compress (dlas/optimize/quantize.h).
  EXPECT_EQ(parse_compress_spec("wp:0.9+int8")->str(), "wp:0.9");
  EXPECT_FALSE(parse_compress_spec("fp16").has_value());
  EXPECT_EQ(error_of([] { parse_compress_spec("int8:kl"); }).kind(), ErrorKind::kInvalidInput);
  for (const char* bad : {"", "sparse", "wp:0.9+", "wp:0.9+bp:4x1:0.5", "wp:2"})
    EXPECT_EQ(error_of([&] { parse_compress_spec(bad); }).kind(), ErrorKind::kInvalidInput) << bad;
}

TEST(Prune, GlobalScopeHitsTheRequestedCountExactly) {
  for (double s : {0.0, 0.5, 0.9, 0.95}) {
    Graph g = build_zoo_model("resnet18-cifar");
    const PruneReport r = prune(g, parse_prune_spec("wp:" + std::to_string(s)));
    int64_t params = 0, zeros = 0;
    for (const PruneLayer& l : r.layers) {
      if (!l.pruned) continue;
      params += l.params;
      zeros += zeros_of(g.initializers.at(l.weight));
    }
    EXPECT_EQ(params, r.prunable_params);
    EXPECT_EQ(zeros, std::llround(s * static_cast<double>(params))) << s;
    EXPECT_EQ(zeros, r.prunable_zeros);
  }
}

TEST(Prune, GlobalScopeLeavesLayersUneven) {
  // One threshold over all layers: layers with small weights lose more (not S each).
  Graph g = build_zoo_model("resnet18-cifar");
  const PruneReport r = prune(g, parse_prune_spec("wp:0.9"));
  double lo = 1, hi = 0;
  for (const PruneLayer& l : r.layers)
    if (l.pruned) lo = std::min(lo, l.sparsity()), hi = std::max(hi, l.sparsity());
  EXPECT_GT(hi - lo, 0.05) << lo << " .. " << hi;
}

TEST(Prune, TiesAtTheThresholdStillHitTheCount) {
  Graph g = build_zoo_model("mobilenetv1-cifar");
  for (auto& [name, t] : g.initializers) {  // every weight the same magnitude
    Tensor c = t.clone();
    if (c.dtype() == DType::kF32)
      for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = i % 2 ? 0.5f : -0.5f;
    t = c;
  }
  const PruneReport r = prune(g, parse_prune_spec("wp:0.37"));
  EXPECT_EQ(r.prunable_zeros, std::llround(0.37 * static_cast<double>(r.prunable_params)));
  const PruneReport b = prune(g, parse_prune_spec("bp:4x1:0.6:layer"));
  EXPECT_GE(b.prunable_zeros, r.prunable_zeros);
}

TEST(Prune, LayerScopeHitsEveryLayer) {
  Graph g = build_zoo_model("mobilenetv2-cifar");
  const PruneReport r = prune(g, parse_prune_spec("wp:0.8:layer"));
  int pruned = 0;
  for (const PruneLayer& l : r.layers) {
    if (!l.pruned) continue;
    ++pruned;
    EXPECT_EQ(zeros_of(g.initializers.at(l.weight)),
              std::llround(0.8 * static_cast<double>(l.params)))
        << l.node;
  }
  EXPECT_GT(pruned, 40);
}

TEST(Prune, FirstConvAndClassifierStayDenseByDefault) {
  const Graph original = build_zoo_model("resnet18-cifar");
  Graph g = original;
  const PruneReport r = prune(g, parse_prune_spec("wp:0.95"));
  ASSERT_GE(r.layers.size(), 3u);
  const PruneLayer& first = r.layers.front();
  const PruneLayer& last = r.layers.back();
  EXPECT_TRUE(first.op == "Conv" || first.op == "FusedConv");
  EXPECT_EQ(last.op, "Gemm");
  for (const PruneLayer* l : {&first, &last}) {
    EXPECT_FALSE(l->pruned) << l->node;
    EXPECT_TRUE(l->mask.empty());
    EXPECT_EQ(g.initializers.at(l->weight).to_float_vector(),
              original.initializers.at(l->weight).to_float_vector())
        << l->node;
  }
  for (size_t i = 1; i + 1 < r.layers.size(); ++i) EXPECT_TRUE(r.layers[i].pruned);
  // The copy's tensors share storage with the original's: pruning must not reach them.
  EXPECT_EQ(zeros_of(original.initializers.at(r.layers[1].weight)), 0);

  PruneSpec all = parse_prune_spec("wp:0.95");
  all.prune_first = all.prune_classifier = true;
  Graph h = original;
  const PruneReport ra = prune(h, all);
  EXPECT_TRUE(ra.layers.front().pruned);
  EXPECT_TRUE(ra.layers.back().pruned);
  EXPECT_EQ(ra.prunable_params, ra.total_params);
  EXPECT_EQ(ra.prunable_zeros, std::llround(0.95 * static_cast<double>(ra.total_params)));
}

// Every BRxBC block of every group's [rows][cols] matrix is either all zero or (random
// initial weights having no zeros) all nonzero; returns the zero blocks and counts blocks.
int64_t zero_blocks(const Graph& g, const PruneLayer& l, SparseBlock b, int64_t& blocks) {
  int64_t zero = 0;
  const int64_t kg = l.rows / l.groups;
  for (int64_t grp = 0; grp < l.groups; ++grp) {
    const std::vector<float> m = layer_matrix(g, l, grp);
    for (int64_t r0 = 0; r0 < kg; r0 += b.rows)
      for (int64_t c0 = 0; c0 < l.cols; c0 += b.cols) {
        int64_t n = 0, z = 0;
        for (int64_t r = r0; r < std::min(kg, r0 + b.rows); ++r)
          for (int64_t c = c0; c < std::min(l.cols, c0 + b.cols); ++c, ++n)
            z += m[static_cast<size_t>(r * l.cols + c)] == 0.f;
        EXPECT_TRUE(z == 0 || z == n) << l.node << " block " << r0 << "," << c0;
        zero += z == n;
        ++blocks;
      }
  }
  return zero;
}

TEST(Prune, BlockPruningZerosWholeBlocksAndOnlyThem) {
  for (const char* spec : {"bp:4x1:0.9", "bp:1x4:0.75", "bp:2x3:0.6:layer"}) {
    for (const char* model : {"resnet18-cifar", "mobilenetv1-cifar"}) {
      Graph g = build_zoo_model(model);
      const PruneSpec s = parse_prune_spec(spec);
      const PruneReport r = prune(g, s);
      int64_t zero = 0, blocks = 0;
      for (const PruneLayer& l : r.layers) {
        if (!l.pruned) {
          EXPECT_EQ(zeros_of(g.initializers.at(l.weight)), 0) << l.node;
          continue;
        }
        int64_t layer_blocks = 0;
        const int64_t z = zero_blocks(g, l, s.block, layer_blocks);
        if (s.scope == PruneScope::kLayer) {
          EXPECT_EQ(z, std::llround(s.sparsity * static_cast<double>(layer_blocks))) << l.node;
        }
        zero += z;
        blocks += layer_blocks;
        // The mask says exactly which elements are zero.
        const Tensor& w = g.initializers.at(l.weight);
        for (int64_t i = 0; i < w.numel(); ++i)
          ASSERT_EQ(l.mask[static_cast<size_t>(i)] == 0, w.data<float>()[i] == 0.f) << l.node;
      }
      if (s.scope == PruneScope::kGlobal) {
        EXPECT_EQ(zero, std::llround(s.sparsity * static_cast<double>(blocks)))
            << spec << " " << model;
      }
    }
  }
}

TEST(Prune, GemmWithoutTransposeBlocksRunAlongOutputs) {
  // y = x W, W stored [K=6][N=8] (transB = 0): a 4x1 block is 4 consecutive outputs of one
  // input row, i.e. 4 consecutive elements of a storage row.
  Graph g;
  g.inputs = {{"x", DType::kF32, {1, 6}}};
  std::vector<float> w(48);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) + 1.f;
  g.initializers["w"] = Tensor::from_vector<float>({6, 8}, w);
  Node n;
  n.name = "fc";
  n.op = "Gemm";
  n.inputs = {"x", "w"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  g.outputs = {"y"};
  g.infer();
  PruneSpec s = parse_prune_spec("bp:4x1:0.5");
  s.prune_classifier = true;
  const PruneReport r = prune(g, s);
  ASSERT_EQ(r.layers.size(), 1u);
  EXPECT_EQ(r.layers[0].rows, 8);
  EXPECT_EQ(r.layers[0].cols, 6);
  const std::vector<float> p = g.initializers.at("w").to_float_vector();
  int64_t zero_blocks = 0;
  for (int k = 0; k < 6; ++k)
    for (int n0 = 0; n0 < 8; n0 += 4) {
      int z = 0;
      for (int j = 0; j < 4; ++j) z += p[static_cast<size_t>(k * 8 + n0 + j)] == 0.f;
      EXPECT_TRUE(z == 0 || z == 4);
      zero_blocks += z == 4;
    }
  EXPECT_EQ(zero_blocks, 6);
}

TEST(Prune, MasksReapplyAfterWeightsChange) {
  Graph g = build_zoo_model("mobilenetv1-cifar");
  const PruneReport r = prune(g, parse_prune_spec("wp:0.7"));
  for (const PruneLayer& l : r.layers) {  // a "training step": every weight moves
    Tensor t = g.initializers.at(l.weight).clone();
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] += 0.25f;
    g.initializers[l.weight] = t;
  }
  EXPECT_EQ(describe_weights(g).total_zeros, 0);
  apply_prune_masks(g, r);
  const PruneReport again = describe_weights(g);
  EXPECT_EQ(again.prunable_zeros, r.prunable_zeros);
  EXPECT_EQ(again.total_zeros, r.total_zeros);
  g.initializers.erase(r.layers[1].weight);
  EXPECT_EQ(error_of([&] { apply_prune_masks(g, r); }).kind(), ErrorKind::kInvalidInput);
}

// Whole-model tolerance as in tests/system/plan_test.cc: L layers x 4 eps sqrt(R_max).
double tolerance(const Graph& g, double scale) {
  int64_t layers = 0, r_max = 1;
  for (const PruneLayer& l : describe_weights(g).layers) ++layers, r_max = std::max(r_max, l.cols);
  return static_cast<double>(layers) * 4 * 1.19209290e-7 * std::sqrt(double(r_max)) *
         std::max(1.0, scale);
}

TEST(Prune, PrunedModelEqualsTheEngineOnMaskedWeights) {
  const Graph dense = build_zoo_model("resnet18-cifar");
  Graph pruned = dense;
  const PruneReport r = prune(pruned, parse_prune_spec("wp:0.9"));
  // The masked model made here independently: the r.mask bytes zero a copy of the weights.
  Graph masked = dense;
  for (const PruneLayer& l : r.layers) {
    if (l.mask.empty()) continue;
    Tensor t = masked.initializers.at(l.weight).clone();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (!l.mask[static_cast<size_t>(i)]) t.data<float>()[i] = 0.f;
    masked.initializers[l.weight] = t;
  }
  Tensor x(DType::kF32, dense.inputs[0].shape);
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng);
  const std::vector<Tensor> want = ReferenceExecutor(masked).run({x});
  const std::vector<Tensor> unpruned = Plan(dense, {}).run({x});
  for (const char* algo : {"auto", "gemm", "sparse-gemm", "sparse-direct"}) {
    PlanOptions o;
    o.conv_algo = algo;
    const std::vector<Tensor> got = Plan(pruned, o).run({x});
    double scale = 0, worst = 0, moved = 0;
    for (int64_t i = 0; i < want[0].numel(); ++i) {
      scale = std::max(scale, std::fabs(want[0].get_as_double(i)));
      worst = std::max(worst, std::fabs(got[0].get_as_double(i) - want[0].get_as_double(i)));
      moved = std::max(moved, std::fabs(unpruned[0].get_as_double(i) - want[0].get_as_double(i)));
    }
    EXPECT_LE(worst, tolerance(dense, scale)) << algo;
    EXPECT_GT(moved, tolerance(dense, scale)) << "pruning changed nothing?";
  }
}

// The auto rule sees the weights: a 90%-pruned model runs its groups-1 layers sparse
// (1x1 on sparse-1x1, the others on sparse-direct), the dense one none; stems, the
// classifier and depthwise layers stay dense.
TEST(Prune, AutoRunsPrunedLayersSparse) {
  const Graph dense = build_zoo_model("resnet18-cifar");
  Graph pruned = dense;
  prune(pruned, parse_prune_spec("wp:0.9:layer"));
  auto kernels = [](const Graph& g) {
    std::map<std::string, std::string> k;
    const Plan plan(g, {});
    for (const StepInfo& s : plan.steps()) k[s.node] = s.kernel;
    return k;
  };
  const auto kd = kernels(dense), kp = kernels(pruned);
  int sparse = 0;
  for (const auto& [node, kernel] : kd)
    EXPECT_EQ(kernel.rfind("sparse", 0), std::string::npos) << node;
  for (const auto& [node, kernel] : kp) {
    if (kernel.rfind("sparse", 0) == 0) ++sparse;
    if (node == "conv1") {
      EXPECT_EQ(kernel, "direct");  // the stem stays dense
    }
  }
  EXPECT_GE(sparse, 18);  // every pruned conv but the stem: 16 3x3 + 3 shortcuts
  EXPECT_EQ(kp.at("layer1.0.conv1"), "sparse-direct");
  EXPECT_EQ(kp.at("layer2.0.shortcut.0"), "sparse-1x1");

  // At half density the rule keeps dense algorithms; a winograd layer (16x16) stays dense
  // at density 1/3, a gemm one (8x8) does not.
  ConvProblem p;
  p.c = 64, p.k = 64, p.h = p.w = 16, p.kh = p.kw = 3, p.pad_t = p.pad_l = p.pad_b = p.pad_r = 1;
  std::vector<float> w(static_cast<size_t>(p.weight_count()), 1.f);
  for (size_t i = 0; i < w.size(); i += 2) w[i] = 0.f;
  EXPECT_EQ(auto_conv_algorithm(p, active_isa(), ConvWeights::f32(w.data())).name(),
            auto_conv_algorithm(p, active_isa()).name());
  for (size_t i = 0; i < w.size(); ++i) w[i] = (i + i / 576) % 3 == 0 ? 1.f : 0.f;  // unstructured
  ASSERT_EQ(auto_conv_algorithm(p, active_isa()).name(), "winograd");
  EXPECT_EQ(auto_conv_algorithm(p, active_isa(), ConvWeights::f32(w.data())).name(), "winograd");
  ConvProblem q = p;
  q.h = q.w = 8;
  ASSERT_EQ(auto_conv_algorithm(q, active_isa()).name(), "gemm");
  EXPECT_EQ(auto_conv_algorithm(q, active_isa(), ConvWeights::f32(w.data())).name(),
            "sparse-direct");
  for (size_t i = 0; i < w.size(); ++i) w[i] = i % 10 == 0 ? 1.f : 0.f;
  EXPECT_EQ(auto_conv_algorithm(p, active_isa(), ConvWeights::f32(w.data())).name(),
            "sparse-direct");
  // 8x1 blocks along output channels (block pruning) on <= 16 output pixels: spatial pack.
  const int64_t r = p.c * 9;
  for (int64_t k = 0; k < p.k; ++k)
    for (int64_t j = 0; j < r; ++j) w[static_cast<size_t>(k * r + j)] = (j * 7 + k / 8) % 10 == 0;
  ConvProblem t = p;
  t.h = t.w = 4;
  EXPECT_EQ(auto_conv_algorithm(t, active_isa(), ConvWeights::f32(w.data())).name(),
            "sparse-spatial-pack");
  EXPECT_EQ(auto_conv_algorithm(q, active_isa(), ConvWeights::f32(w.data())).name(),
            "sparse-direct");  // 64 pixels
  p.groups = 64, p.k = 64;     // depthwise: never sparse
  w.resize(static_cast<size_t>(p.weight_count()));
  EXPECT_EQ(auto_conv_algorithm(p, active_isa(), ConvWeights::f32(w.data())).name(), "depthwise");
}

// --- command line ---------------------------------------------------------------

using test::CliResult;
class PruneCli : public test::CliTest {};

TEST_F(PruneCli, WritesALoadableModelWithTheRequestedSparsity) {
  const std::string x = path("x.onnx");
  CliResult r = dlas("prune resnet18-cifar --method weight --sparsity 0.9 -o " + x);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(kept dense)"), std::string::npos) << r.out;
  const Graph g = load_model(x);
  const PruneReport d = describe_weights(g);
  EXPECT_EQ(d.prunable_zeros, std::llround(0.9 * static_cast<double>(d.prunable_params)));
  EXPECT_EQ(d.layers.front().zeros, 0);
  EXPECT_EQ(d.layers.back().zeros, 0);

  r = dlas(
      "prune resnet18-cifar --method block --block 4x1 --sparsity 0.5 --scope layer "
      "--prune-classifier --json -o " +
      path("b.onnx"));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["spec"], "bp:4x1:0.5:layer");
  EXPECT_TRUE(j["layers"].back()["pruned"].get<bool>());
  EXPECT_FALSE(j["layers"].front()["pruned"].get<bool>());
  EXPECT_NEAR(j["sparsity"].get<double>(), 0.5, 1e-3);

  // info on the pruned file reports the zeros and the formats' bytes.
  r = dlas("info " + x + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto info = nlohmann::json::parse(r.out);
  ASSERT_TRUE(info.contains("sparse"));
  EXPECT_EQ(info["sparse"]["zeros"].get<int64_t>(), d.total_zeros);
  EXPECT_LT(info["sparse"]["csr_bytes"].get<int64_t>(),
            info["sparse"]["dense_bytes"].get<int64_t>() / 4);
  EXPECT_GT(info["sparse"]["csr_ratio"].get<double>(), 4.0);
}

TEST_F(PruneCli, BadInputExitsTwoWithOneLine) {
  for (const std::string& args :
       {"prune resnet18-cifar --sparsity 1.5 -o " + path("a.onnx"),
        "prune resnet18-cifar --method block --block 4y1 --sparsity 0.5 -o " + path("a.onnx"),
        "prune resnet18-cifar --method channel --sparsity 1 -o " + path("a.onnx"),
        "prune resnet18-cifar --method channel --block 4x1 --sparsity 0.5 -o " + path("a.onnx"),
        "prune resnet18-cifar --sparsity 0.5 --block 4x1 -o " + path("a.onnx"),
        "prune resnet18-cifar --sparsity 0.5 -o " + path("nodir/a.onnx"),
        std::string("bench resnet18-cifar --repeat 1 --compress wp:7"),
        std::string("info resnet18-cifar --compress bp:4x1:0.5+int8:kl")}) {
    const CliResult r = dlas(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("dlas: error: ", 0), 0u) << r.err;
  }
  EXPECT_FALSE(fs::exists(path("a.onnx")));
  const CliResult r = dlas("prune resnet18-cifar --sparsity 1.5 -o " + path("a.onnx"));
  EXPECT_NE(r.err.find("wp:1.5: sparsity must be in [0, 1)"), std::string::npos) << r.err;
}

TEST_F(PruneCli, CompressOnBenchRunAndInfo) {
  CliResult r = dlas("bench resnet18-cifar --repeat 2 --warmup 0 --compress bp:4x1:0.9 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["compress"], "bp:4x1:0.9");
  EXPECT_NE(j["variant"].get<std::string>().find("compress=bp:4x1:0.9"), std::string::npos);

  r = dlas("run mobilenetv1-cifar --compress wp:0.5:layer --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("compress=wp:0.5:layer"), std::string::npos) << r.out;

  r = dlas("info resnet18-cifar --compress wp:0.95 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto info = nlohmann::json::parse(r.out);
  EXPECT_EQ(info["compress"], "wp:0.95");
  const auto& s = info["sparse"];
  int64_t dense = 0, csr = 0;
  for (const auto& l : s["layers"]) {
    dense += l["dense_bytes"].get<int64_t>();
    csr += l["csr_bytes"].get<int64_t>();
  }
  EXPECT_EQ(dense, s["dense_bytes"].get<int64_t>());
  EXPECT_EQ(csr, s["csr_bytes"].get<int64_t>());
  EXPECT_EQ(info["params"].get<int64_t>() >= s["params"].get<int64_t>(), true);

  r = dlas("info resnet18-cifar --json");  // dense zoo weights: no sparse section
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(nlohmann::json::parse(r.out).contains("sparse"));
}

}  // namespace
}  // namespace dlas
