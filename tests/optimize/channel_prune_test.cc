// Channel pruning (cp:S, dlas/optimize/prune.h): the shrunk graph validates and computes what
// the dense model with the pruned channels masked computes, the requested fraction of the
// prunable channels goes, residual/concat producers and the first conv stay, the classifier
// loses input features, scores are normalised per layer, and the command line.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "dlas/core/error.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/prune.h"
#include "dlas/system/executor.h"
#include "dlas/system/plan.h"
#include "optimize/cli_test_util.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

// Random BatchNormalization parameters and statistics (the zoo's are the identity), so a BN
// vector shrunk at the wrong indices shows in the outputs.
void randomise_batch_norms(Graph& g, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.5f, 1.5f), n(-0.5f, 0.5f);
  for (const Node& node : g.nodes) {
    if (node.op != "BatchNormalization") continue;
    for (size_t k = 1; k < 5; ++k) {
      Tensor t = g.initializers.at(node.inputs[k]).clone();
      for (int64_t i = 0; i < t.numel(); ++i)
        t.data<float>()[i] = k == 1 || k == 4 ? u(rng) : n(rng);
      g.initializers[node.inputs[k]] = t;
    }
  }
}

const Node& node_named(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes)
    if (n.name == name) return n;
  throw Error(ErrorKind::kInternal, "no node " + name);
}

// The dense model computing what the pruned one does, made from the report's index lists
// alone: the removed output channels' filters and biases zeroed, and every layer's weights
// for removed input channels (features) zeroed, so nothing a pruned channel carries reaches
// anything that is kept.
Graph masked_dense(const Graph& dense, const PruneReport& r) {
  Graph g = dense;
  for (const PruneLayer& l : r.layers) {
    const Node& n = node_named(g, l.node);
    Tensor w = g.initializers.at(l.weight).clone();
    float* p = w.data<float>();
    std::vector<uint8_t> out_kept(static_cast<size_t>(l.out_channels), 0),
        in_kept(static_cast<size_t>(l.in_channels), 0);
    for (int64_t k : l.kept_outputs) out_kept[static_cast<size_t>(k)] = 1;
    for (int64_t k : l.kept_inputs) in_kept[static_cast<size_t>(k)] = 1;
    if (l.op == "Gemm") {
      const bool trans_b = n.attr_int("transB", 0) != 0;  // [N][K] or [K][N]
      for (int64_t o = 0; o < l.out_channels; ++o)
        for (int64_t i = 0; i < l.in_channels; ++i)
          if (!out_kept[static_cast<size_t>(o)] || !in_kept[static_cast<size_t>(i)])
            p[trans_b ? o * l.in_channels + i : i * l.out_channels + o] = 0.f;
    } else {
      const Shape& s = w.shape();
      const int64_t per_group = s[1], spatial = w.numel() / (s[0] * s[1]);
      const int64_t out_per_group = s[0] / n.attr_int("group", 1);  // the dense groups
      for (int64_t o = 0; o < s[0]; ++o)
        for (int64_t c = 0; c < per_group; ++c) {
          const int64_t in = (o / out_per_group) * per_group + c;  // input tensor channel
          if (out_kept[static_cast<size_t>(o)] && in_kept[static_cast<size_t>(in)]) continue;
          std::fill_n(p + (o * per_group + c) * spatial, spatial, 0.f);
        }
      if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
        Tensor b = g.initializers.at(n.inputs[2]).clone();
        for (int64_t o = 0; o < s[0]; ++o)
          if (!out_kept[static_cast<size_t>(o)]) b.data<float>()[o] = 0.f;
        g.initializers[n.inputs[2]] = b;
      }
    }
    g.initializers[l.weight] = w;
  }
  return g;
}

Tensor random_input(const Graph& g, uint32_t seed) {
  Tensor x(DType::kF32, g.inputs[0].shape);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng);
  return x;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.get_as_double(i)));
  return m;
}

double max_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    m = std::max(m, std::fabs(a.get_as_double(i) - b.get_as_double(i)));
  return m;
}

// Whole-model tolerance as in prune_test.cc: L layers x 4 eps sqrt(R_max) x output scale.
double tolerance(const Graph& g, double scale) {
  int64_t layers = 0, r_max = 1;
  for (const PruneLayer& l : describe_weights(g).layers) ++layers, r_max = std::max(r_max, l.cols);
  return static_cast<double>(layers) * 4 * 1.19209290e-7 * std::sqrt(double(r_max)) *
         std::max(1.0, scale);
}

ErrorKind error_of_prune_spec(const char* text) {
  try {
    parse_prune_spec(text);
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::kInternal;  // accepted
}

const PruneLayer& layer_named(const PruneReport& r, const std::string& node) {
  for (const PruneLayer& l : r.layers)
    if (l.node == node) return l;
  throw Error(ErrorKind::kInternal, "no layer " + node);
}

// The report's groups: every member conv keeps the group's channels, the counts add up
// (one unit per group channel), and the pruned layers are exactly the groups' members.
void expect_consistent_groups(const PruneReport& r) {
  int64_t channels = 0, removed = 0;
  std::set<std::string> members;
  for (const ChannelGroup& g : r.groups) {
    channels += g.channels;
    removed += g.channels - std::ssize(g.kept);
    EXPECT_GE(g.kept.size(), 1u);
    EXPECT_TRUE(std::is_sorted(g.kept.begin(), g.kept.end()));
    for (const std::string& c : g.convs) {
      EXPECT_TRUE(members.insert(c).second) << c << " in two groups";
      const PruneLayer& l = layer_named(r, c);
      EXPECT_TRUE(l.pruned) << c;
      EXPECT_EQ(l.out_channels, g.channels) << c;
      EXPECT_EQ(l.kept_outputs, g.kept) << c;
    }
  }
  EXPECT_EQ(channels, r.prunable_channels);
  EXPECT_EQ(removed, r.pruned_channels);
  for (const PruneLayer& l : r.layers) EXPECT_EQ(l.pruned, members.count(l.node) == 1) << l.node;
}

struct ModelCase {
  const char* name;
  int64_t image_size;  // -1: the model's own
  const char* spec = "cp:0.6";
  bool prune_first = false;
};

class PruneChannelModels : public ::testing::TestWithParam<ModelCase> {};

TEST_P(PruneChannelModels, ShrunkModelValidatesAndEqualsTheMaskedDenseModel) {
  ZooOptions o;
  o.image_size = GetParam().image_size;
  Graph dense = build_zoo_model(GetParam().name, o);
  randomise_batch_norms(dense, 5);
  Graph pruned = dense;
  PruneSpec spec = parse_prune_spec(GetParam().spec);
  spec.prune_first = GetParam().prune_first;
  const PruneReport r = prune(pruned, spec);
  EXPECT_NO_THROW(pruned.infer());  // prune() inferred it too; the shrunk graph is valid
  ASSERT_GT(r.pruned_channels, 0);
  EXPECT_LT(r.macs_after, r.macs_before);
  EXPECT_EQ(r.macs_after, pruned.macs());
  EXPECT_EQ(r.params_after, pruned.param_count());
  for (const PruneLayer& l : r.layers) {  // the weights are the index lists' size
    const Tensor& w = pruned.initializers.at(l.weight);
    EXPECT_TRUE(l.mask.empty());
    EXPECT_TRUE(std::is_sorted(l.kept_outputs.begin(), l.kept_outputs.end()));
    EXPECT_GE(l.kept_outputs.size(), 1u) << l.node;
    if (l.op == "Gemm") {
      EXPECT_EQ(l.rows * l.cols, w.numel());
      EXPECT_EQ(std::ssize(l.kept_inputs), l.cols) << l.node;
    } else {
      EXPECT_EQ(std::ssize(l.kept_outputs), w.dim(0)) << l.node;
      EXPECT_EQ(std::ssize(l.kept_inputs), w.dim(1) * l.groups) << l.node;
    }
  }

  expect_consistent_groups(r);

  const Tensor x = random_input(dense, 3);
  const Tensor want = ReferenceExecutor(masked_dense(dense, r)).run({x})[0];
  const Tensor unpruned = ReferenceExecutor(dense).run({x})[0];
  const Tensor got_ref = ReferenceExecutor(pruned).run({x})[0];
  const Tensor got_plan = Plan(pruned, {}).run({x})[0];
  ASSERT_EQ(want.shape(), got_ref.shape());
  const double tol = tolerance(dense, max_abs(want));
  EXPECT_LE(max_diff(got_ref, want), tol);
  EXPECT_LE(max_diff(got_plan, want), tol);
  EXPECT_GT(max_diff(unpruned, want), tol) << "pruning changed nothing?";
}

INSTANTIATE_TEST_SUITE_P(
    PruneChannelZoo, PruneChannelModels,
    ::testing::Values(ModelCase{"resnet18-cifar", -1}, ModelCase{"vgg16-cifar", -1},
                      ModelCase{"mobilenetv1-cifar", -1}, ModelCase{"mobilenetv2-cifar", -1},
                      ModelCase{"resnet50", 64}, ModelCase{"mobilenetv2", 64},
                      ModelCase{"efficientnetb0", 64}, ModelCase{"densenet161", 64},
                      ModelCase{"resnet18-cifar", -1, "cp:0.5:layer:round8", true},
                      ModelCase{"efficientnetb0", 64, "cp:0.7:round4", true}),
    [](const auto& info) {
      std::string s = std::string(info.param.name) + (info.param.prune_first ? "_first" : "");
      std::replace(s.begin(), s.end(), '-', '_');
      return s;
    });

TEST(PruneChannel, RoundingSpecSyntax) {
  PruneSpec s = parse_prune_spec("cp:0.8:round8");
  EXPECT_EQ(s.channel_multiple, 8);
  EXPECT_EQ(s.scope, PruneScope::kGlobal);
  s = parse_prune_spec("cp:0.5:layer:round4");
  EXPECT_EQ(s.channel_multiple, 4);
  EXPECT_EQ(s.scope, PruneScope::kLayer);
  EXPECT_EQ(s.str(), "cp:0.5:layer:round4");
  EXPECT_EQ(parse_prune_spec("cp:0.5:global:round1").str(), "cp:0.5");
  for (const char* bad : {"cp:0.5:round0", "cp:0.5:roundx", "cp:0.5:round", "wp:0.5:round8",
                          "cp:0.5:round8:layer", "cp:0.5:round8:x", "bp:4x1:0.5:round8"})
    EXPECT_EQ(error_of_prune_spec(bad), ErrorKind::kInvalidInput) << bad;
}

TEST(PruneChannel, GlobalScopeRemovesTheRequestedCount) {
  for (double s : {0.0, 0.3, 0.8}) {
    Graph g = build_zoo_model("vgg16-cifar");
    const PruneReport r = prune(g, parse_prune_spec("cp:" + std::to_string(s)));
    int64_t prunable = 0, removed = 0;
    for (const PruneLayer& l : r.layers) {
      if (!l.pruned) {
        if (l.op == "Conv") {
          EXPECT_EQ(std::ssize(l.kept_outputs), l.out_channels) << l.node;
        }
        continue;
      }
      prunable += l.out_channels;
      removed += l.out_channels - g.initializers.at(l.weight).dim(0);
    }
    EXPECT_EQ(prunable, r.prunable_channels);
    EXPECT_EQ(removed, std::llround(s * static_cast<double>(prunable))) << s;
    EXPECT_EQ(removed, r.pruned_channels);
    EXPECT_NEAR(r.sparsity(), s, 1e-3);
  }
}

TEST(PruneChannel, LayerScopeHitsEveryLayerAndKeepsOneChannel) {
  Graph g = build_zoo_model("mobilenetv1-cifar");
  const PruneReport r = prune(g, parse_prune_spec("cp:0.7:layer"));
  int pruned = 0;
  for (const PruneLayer& l : r.layers) {
    if (!l.pruned) continue;
    ++pruned;
    EXPECT_EQ(l.out_channels - std::ssize(l.kept_outputs),
              std::llround(0.7 * static_cast<double>(l.out_channels)))
        << l.node;
  }
  EXPECT_GT(pruned, 10);
  // At 0.999 the one-channel floor binds: every prunable layer keeps exactly one, and a
  // residual group (several convs) counts once.
  Graph h = build_zoo_model("resnet18-cifar");
  const PruneReport t = prune(h, parse_prune_spec("cp:0.999"));
  int64_t layers = 0;
  for (const PruneLayer& l : t.layers)
    if (l.pruned) {
      ++layers;
      EXPECT_EQ(l.kept_outputs.size(), 1u) << l.node;
    }
  EXPECT_LT(std::ssize(t.groups), layers);
  EXPECT_EQ(t.pruned_channels, t.prunable_channels - std::ssize(t.groups));
  EXPECT_NO_THROW(h.infer());
}

TEST(PruneChannel, ResidualAddsGroupTheirProducers) {
  Graph g = build_zoo_model("resnet18-cifar");
  const PruneReport r = prune(g, parse_prune_spec("cp:0.5"));
  EXPECT_FALSE(r.layers.front().pruned);
  EXPECT_EQ(r.layers.front().note, "first conv");
  EXPECT_EQ(r.layers.back().op, "Gemm");
  EXPECT_EQ(r.layers.back().note, "classifier");
  EXPECT_EQ(std::ssize(r.layers.back().kept_outputs), r.layers.back().out_channels);
  // Stage 1 adds the stem's output (the first conv, not pruned): its second convs stay whole.
  for (const char* n : {"layer1.0.conv2", "layer1.1.conv2"}) {
    const PruneLayer& l = layer_named(r, n);
    EXPECT_FALSE(l.pruned) << n;
    EXPECT_NE(l.note.find("tied to the first conv 'conv1'"), std::string::npos) << l.note;
    EXPECT_EQ(std::ssize(l.kept_outputs), l.out_channels) << n;
  }
  EXPECT_TRUE(layer_named(r, "layer1.0.conv1").pruned);
  // Stages 2-4: each stage's second convs and its shortcut are one group sharing one kept set,
  // and the next stage's first convs (and shortcut) read exactly those channels.
  for (int stage = 2; stage <= 4; ++stage) {
    const std::string p = "layer" + std::to_string(stage);
    const PruneLayer& a = layer_named(r, p + ".0.conv2");
    ASSERT_TRUE(a.pruned) << a.note;
    const std::vector<int64_t> kept = a.kept_outputs;
    EXPECT_EQ(layer_named(r, p + ".0.shortcut.0").kept_outputs, kept);
    EXPECT_EQ(layer_named(r, p + ".1.conv2").kept_outputs, kept);
    EXPECT_EQ(layer_named(r, p + ".1.conv1").kept_inputs, kept);
    const ChannelGroup* grp = nullptr;
    for (const ChannelGroup& c : r.groups)
      if (c.convs.front() == p + ".0.conv2") grp = &c;
    ASSERT_NE(grp, nullptr);
    EXPECT_EQ(grp->convs,
              (std::vector<std::string>{p + ".0.conv2", p + ".0.shortcut.0", p + ".1.conv2"}));
    if (stage < 4) {
      const std::string q = "layer" + std::to_string(stage + 1);
      EXPECT_EQ(layer_named(r, q + ".0.conv1").kept_inputs, kept);
      EXPECT_EQ(layer_named(r, q + ".0.shortcut.0").kept_inputs, kept);
    } else {
      EXPECT_EQ(r.layers.back().kept_inputs, kept);  // the classifier, through pool + Flatten
    }
  }
  // With the first conv pruned, stage 1 joins the stem's group.
  PruneSpec first = parse_prune_spec("cp:0.5");
  first.prune_first = true;
  Graph f = build_zoo_model("resnet18-cifar");
  const PruneReport fr = prune(f, first);
  const PruneLayer& stem = layer_named(fr, "conv1");
  EXPECT_TRUE(stem.pruned);
  EXPECT_LT(std::ssize(stem.kept_outputs), stem.out_channels);
  EXPECT_EQ(layer_named(fr, "layer1.1.conv2").kept_outputs, stem.kept_outputs);
  EXPECT_EQ(layer_named(fr, "layer1.0.conv1").kept_inputs, stem.kept_outputs);
  EXPECT_NE(layer_named(fr, "layer1.0.conv2").note.find("group of 3 convs led by 'conv1'"),
            std::string::npos)
      << layer_named(fr, "layer1.0.conv2").note;
}

TEST(PruneChannel, ConcatProducersShrinkTheirRanges) {
  ZooOptions small;
  small.image_size = 64;
  Graph d = build_zoo_model("densenet161", small);
  const PruneReport r = prune(d, parse_prune_spec("cp:0.5"));
  const std::string b = "features.denseblock1.denselayer";
  // Layer j's conv1 reads concat(pool0 output [96, the first conv's: whole], conv2 of
  // layers 1..j-1): its kept inputs are the 96 and each producer's kept channels, shifted.
  std::vector<int64_t> want;
  for (int64_t c = 0; c < 96; ++c) want.push_back(c);
  int64_t offset = 96;
  for (int j = 1; j <= 6; ++j) {
    const PruneLayer& conv1 = layer_named(r, b + std::to_string(j) + ".conv1");
    EXPECT_EQ(conv1.in_channels, offset);
    EXPECT_EQ(conv1.kept_inputs, want) << j;
    const PruneLayer& conv2 = layer_named(r, b + std::to_string(j) + ".conv2");
    EXPECT_TRUE(conv2.pruned) << conv2.note;
    for (int64_t k : conv2.kept_outputs) want.push_back(offset + k);
    offset += conv2.out_channels;
  }
  // The block's concat feeds the transition conv (through its BN).
  EXPECT_EQ(layer_named(r, "features.transition1.conv").kept_inputs, want);
  int removed_in_block = 0;
  for (int j = 1; j <= 6; ++j)
    removed_in_block += layer_named(r, b + std::to_string(j) + ".conv2").kept_outputs.size() < 48;
  EXPECT_GT(removed_in_block, 0);
}

TEST(PruneChannel, SqueezeExciteExpandJoinsTheMainBranch) {
  ZooOptions small;
  small.image_size = 64;
  Graph g = build_zoo_model("efficientnetb0", small);
  const PruneReport r = prune(g, parse_prune_spec("cp:0.5"));
  // features.2.0: expand conv -> BN -> SiLU -> depthwise -> BN -> SiLU -> SE (fc2 scales the
  // expanded channels through Mul) -> project: expand and fc2 share one kept set.
  const std::string p = "features.2.0.block.";
  const PruneLayer& expand = layer_named(r, p + "0.0");
  ASSERT_TRUE(expand.pruned) << expand.note;
  EXPECT_LT(std::ssize(expand.kept_outputs), expand.out_channels);
  EXPECT_EQ(layer_named(r, p + "2.fc2").kept_outputs, expand.kept_outputs);
  EXPECT_EQ(layer_named(r, p + "1.0").kept_outputs, expand.kept_outputs);  // depthwise
  EXPECT_EQ(layer_named(r, p + "2.fc1").kept_inputs, expand.kept_outputs);
  EXPECT_EQ(layer_named(r, p + "3.0").kept_inputs, expand.kept_outputs);
  EXPECT_EQ(layer_named(r, p + "2.fc1").kept_outputs, layer_named(r, p + "2.fc2").kept_inputs);
  // features.1.0 has no expand conv: its SE scales the first conv's channels, kept whole.
  const PruneLayer& fc2 = layer_named(r, "features.1.0.block.1.fc2");
  EXPECT_FALSE(fc2.pruned);
  EXPECT_NE(fc2.note.find("first conv"), std::string::npos) << fc2.note;
}

TEST(PruneChannel, GroupChannelsCountOnceAndLayerScopeHitsEveryGroup) {
  for (const char* spec : {"cp:0.5", "cp:0.3:layer"}) {
    ZooOptions small;
    small.image_size = 64;
    Graph g = build_zoo_model("resnet50", small);
    const PruneReport r = prune(g, parse_prune_spec(spec));
    expect_consistent_groups(r);
    if (r.spec.scope == PruneScope::kGlobal) {
      EXPECT_EQ(r.pruned_channels, std::llround(0.5 * static_cast<double>(r.prunable_channels)));
    } else {
      for (const ChannelGroup& c : r.groups)
        EXPECT_EQ(c.channels - std::ssize(c.kept), std::llround(0.3 * double(c.channels)))
            << c.convs.front();
    }
  }
}

TEST(PruneChannel, RoundingKeepsMultiplesAndComputesTheRealMacRatio) {
  const Graph dense = build_zoo_model("vgg16-cifar");
  Graph a = dense, b = dense;
  const PruneReport plain = prune(a, parse_prune_spec("cp:0.8"));
  const PruneReport round = prune(b, parse_prune_spec("cp:0.8:round8"));
  EXPECT_EQ(round.spec.str(), "cp:0.8:round8");
  ASSERT_EQ(plain.groups.size(), round.groups.size());
  int64_t extra = 0;
  for (size_t i = 0; i < round.groups.size(); ++i) {
    const ChannelGroup& p = plain.groups[i];
    const ChannelGroup& q = round.groups[i];
    EXPECT_TRUE(q.kept.size() % 8 == 0 || std::ssize(q.kept) == q.channels) << q.convs[0];
    EXPECT_GE(q.kept.size(), p.kept.size());
    EXPECT_LT(q.kept.size(), p.kept.size() + 8);
    EXPECT_TRUE(std::includes(q.kept.begin(), q.kept.end(), p.kept.begin(), p.kept.end()));
    extra += std::ssize(q.kept) - std::ssize(p.kept);
  }
  EXPECT_GT(extra, 0);
  EXPECT_EQ(round.pruned_channels, plain.pruned_channels - extra);
  EXPECT_EQ(round.macs_after, b.macs());
  EXPECT_LT(round.mac_ratio(), plain.mac_ratio());
  expect_consistent_groups(round);
}

TEST(PruneChannel, ClassifierInputFeaturesShrinkThroughFlatten) {
  Graph g = build_zoo_model("vgg16-cifar");
  const PruneReport r = prune(g, parse_prune_spec("cp:0.8"));
  const PruneLayer& fc = r.layers.back();
  ASSERT_EQ(fc.op, "Gemm");
  const PruneLayer& last_conv = r.layers[r.layers.size() - 2];
  ASSERT_TRUE(last_conv.pruned);
  ASSERT_LT(last_conv.kept_outputs.size(), static_cast<size_t>(last_conv.out_channels));
  EXPECT_EQ(fc.kept_inputs.size(), last_conv.kept_outputs.size());  // 1x1 spatial: one each
  EXPECT_EQ(fc.cols, std::ssize(fc.kept_inputs));
  EXPECT_EQ(fc.in_channels, last_conv.out_channels);
}

TEST(PruneChannel, ScoresAreNormalisedPerLayer) {
  // Scaling one layer's weights changes its filters' L1 norms but not their ranking within the
  // layer relative to its mean: the same channels go.
  const Graph dense = build_zoo_model("vgg16-cifar");
  Graph a = dense;
  const PruneReport ra = prune(a, parse_prune_spec("cp:0.5"));
  Graph b = dense;
  const std::string w = ra.layers[3].weight;
  Tensor t = b.initializers.at(w).clone();
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= 100.f;
  b.initializers[w] = t;
  const PruneReport rb = prune(b, parse_prune_spec("cp:0.5"));
  ASSERT_EQ(ra.layers.size(), rb.layers.size());
  for (size_t i = 0; i < ra.layers.size(); ++i)
    EXPECT_EQ(ra.layers[i].kept_outputs, rb.layers[i].kept_outputs) << ra.layers[i].node;
  // The lowest-scored channel of a pruned layer is gone, the highest kept.
  const PruneLayer& l = ra.layers[3];
  const float* p = dense.initializers.at(l.weight).data<float>();
  const int64_t cols = dense.initializers.at(l.weight).numel() / l.out_channels;
  std::vector<double> norms(static_cast<size_t>(l.out_channels));
  for (int64_t o = 0; o < l.out_channels; ++o)
    for (int64_t c = 0; c < cols; ++c) norms[static_cast<size_t>(o)] += std::fabs(p[o * cols + c]);
  const int64_t lo = std::min_element(norms.begin(), norms.end()) - norms.begin();
  const int64_t hi = std::max_element(norms.begin(), norms.end()) - norms.begin();
  EXPECT_FALSE(std::binary_search(l.kept_outputs.begin(), l.kept_outputs.end(), lo));
  EXPECT_TRUE(std::binary_search(l.kept_outputs.begin(), l.kept_outputs.end(), hi));
}

// --- command line ---------------------------------------------------------------

using test::CliResult;
class PruneChannelCli : public test::CliTest {};

TEST_F(PruneChannelCli, PruneWritesTheSmallerModelAndInfoShowsIt) {
  const std::string x = path("c.onnx");
  CliResult r = dlas("prune vgg16-cifar --method channel --sparsity 0.8 --json -o " + x);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["spec"], "cp:0.8");
  EXPECT_EQ(j["method"], "channel");
  EXPECT_NEAR(j["sparsity"].get<double>(), 0.8, 1e-3);
  const double ratio = j["mac_ratio"].get<double>();
  EXPECT_GT(ratio, 4.0);
  EXPECT_DOUBLE_EQ(ratio, j["macs_before"].get<double>() / j["macs_after"].get<double>());
  EXPECT_TRUE(j["layers"][1].contains("kept_outputs"));

  r = dlas("info " + x + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto info = nlohmann::json::parse(r.out);
  EXPECT_EQ(info["params"].get<int64_t>(), j["params_after"].get<int64_t>());
  EXPECT_EQ(info["macs"].get<int64_t>(), j["macs_after"].get<int64_t>());

  r = dlas("prune mobilenetv2-cifar --method channel --sparsity 0.5 --scope layer -o " +
           path("m.onnx"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("MAC ratio"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("depthwise: follows"), std::string::npos) << r.out;

  r = dlas("prune resnet18-cifar --method channel --sparsity 0.5 --round 8 --json -o " +
           path("r.onnx"));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rj = nlohmann::json::parse(r.out);
  EXPECT_EQ(rj["spec"], "cp:0.5:round8");
  ASSERT_GT(rj["groups"].size(), 3u);
  for (const auto& g : rj["groups"]) {
    const size_t kept = g["kept"].size();
    EXPECT_TRUE(kept % 8 == 0 || static_cast<int64_t>(kept) == g["channels"].get<int64_t>());
  }
  r = dlas("prune resnet18-cifar --sparsity 0.5 --round 8 -o " + path("w.onnx"));
  EXPECT_EQ(r.code, 2) << r.err;  // --round is for channels only
}

TEST_F(PruneChannelCli, CompressChannelOnInfoRunAndBench) {
  CliResult r = dlas("info vgg16-cifar --compress cp:0.5 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto small_info = nlohmann::json::parse(r.out);
  const int64_t small = small_info["macs"].get<int64_t>();
  // Bytes per format: the original dense weights, the shrunk dense ones, and shrunk dense
  // plus the index lists of the kept channels (uint16 each here).
  const auto& sp = small_info["sparse"];
  int64_t original = 0, indexed = 0, index = 0;
  for (const auto& l : sp["layers"]) {
    original += l["original_dense_bytes"].get<int64_t>();
    indexed += l["dense_index_bytes"].get<int64_t>();
    const int64_t want = (l["out_kept"] == l["out_channels"] ? 0 : l["out_kept"].get<int64_t>()) +
                         (l["in_kept"] == l["in_channels"] ? 0 : l["in_kept"].get<int64_t>());
    EXPECT_EQ(l["index_bytes"].get<int64_t>(), 2 * want) << l["node"];
    index += 2 * want;
  }
  EXPECT_EQ(sp["original_dense_bytes"].get<int64_t>(), original);
  r = dlas("info vgg16-cifar --compress wp:0 --json");  // the unpruned weights' bytes
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(original, nlohmann::json::parse(r.out)["sparse"]["dense_bytes"].get<int64_t>());
  EXPECT_EQ(sp["dense_index_bytes"].get<int64_t>(), indexed);
  EXPECT_EQ(indexed, sp["dense_bytes"].get<int64_t>() + index);
  EXPECT_GT(index, 0);
  EXPECT_DOUBLE_EQ(sp["dense_index_ratio"].get<double>(),
                   static_cast<double>(original) / static_cast<double>(indexed));
  r = dlas("info vgg16-cifar --compress cp:0.5");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("DENSE+INDEX"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dense + index lists"), std::string::npos) << r.out;
  r = dlas("info vgg16-cifar --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_LT(small, nlohmann::json::parse(r.out)["macs"].get<int64_t>() / 2);

  r = dlas("run mobilenetv2-cifar --compress cp:0.5:layer --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("compress=cp:0.5:layer"), std::string::npos) << r.out;
  r = dlas("bench resnet18-cifar --repeat 2 --warmup 0 --compress cp:0.8 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["compress"], "cp:0.8");

  for (const char* bad : {"info vgg16-cifar --compress cp:1", "run vgg16-cifar --compress cp:x",
                          "bench vgg16-cifar --compress cp:0.5+wp:0.5"}) {
    r = dlas(bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << bad << "\n" << r.err;
  }
}

}  // namespace
}  // namespace dlas
