// The model zoo against external truth: the parameter counts of the reference PyTorch models
// (kuangliu/pytorch-cifar, torchvision) and their MACs, plus options, determinism and the
// init schemes.
#include "dlas/model/zoo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>

#include "model/zoo/models.h"

namespace dlas {
namespace {

struct Reference {
  const char* name;
  int64_t params;  // sum(p.numel() for p in model.parameters())
  int64_t macs;    // Conv: numel(Y) * Cin/group * KH * KW; Linear: M * N * K
};

void PrintTo(const Reference& r, std::ostream* os) { *os << r.name; }

// clang-format off
constexpr Reference kReferences[] = {
    {"resnet18-cifar",    11'173'962,   555'422'720},
    {"mobilenetv1-cifar",  3'217'226,    46'354'432},
    {"mobilenetv2-cifar",  2'296'922,    91'154'944},
    {"vgg16-cifar",       14'728'266,   313'201'664},
    {"resnet50",          25'557'032, 4'089'184'256},
    {"mobilenetv2",        3'504'872,   300'774'272},
    {"densenet161",       28'681'000, 7'727'907'072},
    {"efficientnetb0",     5'288'548,   385'814'752},
};
// clang-format on

constexpr const char* kCifarModels[] = {"resnet18-cifar", "mobilenetv1-cifar", "mobilenetv2-cifar",
                                        "vgg16-cifar"};

const Tensor& weight(const Graph& g, const std::string& name) {
  const Tensor* t = g.constant(name);
  if (!t) throw std::runtime_error("no initializer '" + name + "'");
  return *t;
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op == op;
  return n;
}

const Node* find_node(const Graph& g, const std::string& name) {
  for (const Node& node : g.nodes)
    if (node.name == name) return &node;
  return nullptr;
}

void expect_throws_invalid_input(const std::string& name, const ZooOptions& o,
                                 const std::string& fragment) {
  try {
    build_zoo_model(name, o);
    ADD_FAILURE() << name << ": expected an Error mentioning '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

double mean_of(const Tensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += t.data<float>()[i];
  return s / static_cast<double>(t.numel());
}

double std_of(const Tensor& t) {
  const double m = mean_of(t);
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += std::pow(t.data<float>()[i] - m, 2);
  return std::sqrt(s / static_cast<double>(t.numel()));
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(double{t.data<float>()[i]}));
  return m;
}

TEST(Zoo, TableListsTheEightModels) {
  ASSERT_EQ(zoo_models().size(), std::size(kReferences));
  for (size_t i = 0; i < std::size(kReferences); ++i) {
    const ZooEntry& e = zoo_models()[i];
    EXPECT_EQ(e.name, kReferences[i].name);
    EXPECT_EQ(find_zoo_model(e.name), &e);
    EXPECT_FALSE(e.description.empty());
    EXPECT_EQ(e.in_channels, 3);
    const bool cifar = e.dataset == "cifar10";
    EXPECT_TRUE(cifar || e.dataset == "imagenet") << e.dataset;
    EXPECT_EQ(e.image_size, cifar ? 32 : 224);
    EXPECT_EQ(e.num_classes, cifar ? 10 : 1000);
  }
  EXPECT_EQ(find_zoo_model("resnet18"), nullptr);
  EXPECT_EQ(find_zoo_model(""), nullptr);
}

class ZooReference : public ::testing::TestWithParam<Reference> {};

// The builder's own accounting needs no op schemas and pins the topology on its own; the
// inferred graph's counts come from the op schemas and must agree with it.
TEST_P(ZooReference, ParamsAndMacsMatchReference) {
  const Reference& r = GetParam();
  zoo::BuiltModel m = zoo::build_zoo_graph(r.name, {});
  EXPECT_EQ(m.trainable_params, r.params);
  EXPECT_EQ(m.macs, r.macs);
  Graph& g = m.graph;
  g.infer();
  EXPECT_EQ(g.name, r.name);
  EXPECT_EQ(g.param_count(), r.params);
  EXPECT_EQ(g.macs(), r.macs);
  const ZooEntry* e = find_zoo_model(r.name);
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].shape, (Shape{1, 3, e->image_size, e->image_size}));
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{1, e->num_classes}));
  EXPECT_EQ(g.value(g.outputs[0]).dtype, DType::kF32);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooReference, ::testing::ValuesIn(kReferences),
                         [](const ::testing::TestParamInfo<Reference>& info) {
                           std::string s = info.param.name;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

TEST(Zoo, NamesOpsAndAttributesFollowPyTorch) {
  const Graph g = zoo::build_zoo_graph("mobilenetv2", {}).graph;
  const Node* dw = find_node(g, "features.2.conv.1.0");
  ASSERT_NE(dw, nullptr);
  EXPECT_EQ(dw->op, "Conv");
  EXPECT_EQ(dw->attr_int("group", 0), 96);
  EXPECT_EQ(dw->attr_ints("strides", {}), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(dw->attr_ints("pads", {}), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(dw->attr_ints("kernel_shape", {}), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(dw->attr_ints("dilations", {}), (std::vector<int64_t>{1, 1}));
  const Node* relu6 = find_node(g, "features.2.conv.1.2");
  ASSERT_NE(relu6, nullptr);
  EXPECT_EQ(relu6->op, "Clip");
  ASSERT_EQ(relu6->inputs.size(), 3u);
  EXPECT_EQ(g.constant(relu6->inputs[1])->get_as_double(0), 0.0);
  EXPECT_EQ(g.constant(relu6->inputs[2])->get_as_double(0), 6.0);
  EXPECT_EQ(count_ops(g, "Clip"), 35);
  EXPECT_EQ(count_ops(g, "Add"), 10);
  const Node* fc = find_node(g, "classifier.1");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->op, "Gemm");
  EXPECT_EQ(fc->attr_int("transB", 0), 1);

  const Graph eff = zoo::build_zoo_graph("efficientnetb0", {}).graph;
  EXPECT_EQ(count_ops(eff, "Sigmoid"), 65);  // 49 SiLU + 16 SE gates
  EXPECT_EQ(count_ops(eff, "Mul"), 65);
  EXPECT_EQ(count_ops(eff, "GlobalAveragePool"), 17);
  EXPECT_FLOAT_EQ(find_node(eff, "features.0.1")->attr_float("epsilon", 0), 1e-5f);
  EXPECT_EQ(weight(eff, "features.1.0.block.1.fc1.bias").shape(), (Shape{8}));
  EXPECT_EQ(weight(eff, "features.6.3.block.2.fc2.weight").shape(), (Shape{1152, 48, 1, 1}));
  EXPECT_EQ(weight(eff, "classifier.1.weight").shape(), (Shape{1000, 1280}));

  // kuangliu's avg_pool2d(4) on the 4x4 map of a 32x32 image.
  const Graph r18 = zoo::build_zoo_graph("resnet18-cifar", {}).graph;
  const Node* pool = find_node(r18, "avg_pool");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->op, "AveragePool");
  EXPECT_EQ(pool->attr_ints("kernel_shape", {}), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(count_ops(r18, "BatchNormalization"), 20);
  EXPECT_EQ(weight(r18, "layer2.0.shortcut.0.weight").shape(), (Shape{128, 64, 1, 1}));
  EXPECT_EQ(weight(r18, "layer4.1.bn2.running_var").shape(), (Shape{512}));
  EXPECT_EQ(weight(r18, "linear.weight").shape(), (Shape{10, 512}));
  EXPECT_NE(find_node(r18, "layer1.0.conv1"), nullptr);

  // DenseNet concatenates every earlier feature map before each layer.
  const Graph dn = zoo::build_zoo_graph("densenet161", {}).graph;
  const Node* cat = find_node(dn, "features.denseblock1.denselayer6.cat");
  ASSERT_NE(cat, nullptr);
  EXPECT_EQ(cat->inputs.size(), 6u);
  EXPECT_EQ(count_ops(dn, "Conv"), 160);
  EXPECT_EQ(weight(dn, "features.denseblock3.denselayer36.conv1.weight").shape(),
            (Shape{192, 384 + 35 * 48, 1, 1}));
  EXPECT_EQ(weight(dn, "features.transition3.conv.weight").shape(), (Shape{1056, 2112, 1, 1}));
}

TEST(Zoo, SameSeedSameWeightsOtherSeedOtherWeights) {
  ZooOptions o;
  o.seed = 42;
  const Graph a = zoo::build_zoo_graph("mobilenetv2-cifar", o).graph;
  const Graph b = zoo::build_zoo_graph("mobilenetv2-cifar", o).graph;
  o.seed = 43;
  const Graph c = zoo::build_zoo_graph("mobilenetv2-cifar", o).graph;
  ASSERT_EQ(a.initializers.size(), b.initializers.size());
  int differing = 0, trainable = 0;
  for (const auto& [name, ta] : a.initializers) {
    const Tensor& tb = weight(b, name);
    const Tensor& tc = weight(c, name);
    ASSERT_EQ(ta.nbytes(), tb.nbytes());
    EXPECT_EQ(std::memcmp(ta.raw(), tb.raw(), ta.nbytes()), 0) << name;
    if (name.ends_with(".weight") && name.find("bn") == std::string::npos &&
        name.find("shortcut.1") == std::string::npos) {
      ++trainable;
      differing += std::memcmp(ta.raw(), tc.raw(), ta.nbytes()) != 0;
    }
  }
  EXPECT_GT(trainable, 50);
  EXPECT_EQ(differing, trainable);
}

TEST(Zoo, WeightsAreFixedAcrossMachines) {
  // The generator is specified bit for bit (splitmix64 + xoshiro256**); these values pin it.
  zoo::Rng rng(0);
  EXPECT_EQ(rng.next_u64(), 0x99ec5f36cb75f2b4ull);
  EXPECT_EQ(rng.next_u64(), 0xbf6e1f784956452aull);
  // resnet18-cifar, seed 0: conv1.weight ~ U(-1/sqrt(27), 1/sqrt(27)) from the stream of
  // splitmix64(0) ^ fnv1a("conv1.weight"); bit patterns computed independently in Python.
  const Graph g = zoo::build_zoo_graph("resnet18-cifar", {}).graph;
  const float* w = weight(g, "conv1.weight").data<float>();
  const uint32_t expected[] = {1005620400u, 1041986646u, 1041827759u};
  for (int i = 0; i < 3; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &w[i], 4);
    EXPECT_EQ(bits, expected[i]) << "element " << i << " = " << w[i];
  }
}

TEST(Zoo, InitialisationFollowsPyTorch) {
  // kuangliu models: PyTorch's default init, U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  const Graph r18 = zoo::build_zoo_graph("resnet18-cifar", {}).graph;
  const Tensor& c1 = weight(r18, "layer3.0.conv2.weight");  // fan_in 256*9
  const double bound = 1.0 / std::sqrt(256.0 * 9);
  EXPECT_LE(max_abs(c1), bound);
  EXPECT_NEAR(std_of(c1), bound / std::sqrt(3.0), 0.02 * bound);
  EXPECT_LE(max_abs(weight(r18, "linear.bias")), 1.0 / std::sqrt(512.0));
  EXPECT_GT(max_abs(weight(r18, "linear.bias")), 0.0);
  const Tensor& bn_w = weight(r18, "bn1.weight");
  const Tensor& bn_b = weight(r18, "bn1.bias");
  const Tensor& bn_var = weight(r18, "bn1.running_var");
  const Tensor& bn_mean = weight(r18, "bn1.running_mean");
  for (int64_t i = 0; i < bn_w.numel(); ++i) {
    EXPECT_EQ(bn_w.data<float>()[i], 1.0f);
    EXPECT_EQ(bn_b.data<float>()[i], 0.0f);
    EXPECT_EQ(bn_var.data<float>()[i], 1.0f);
    EXPECT_EQ(bn_mean.data<float>()[i], 0.0f);
  }
  // torchvision ResNet: kaiming_normal_(mode="fan_out", nonlinearity="relu"). Half width keeps
  // the test fast: the stem has 32 filters, fan_out 32 * 49.
  ZooOptions half;
  half.width_mult = 0.5;
  const Graph r50 = zoo::build_zoo_graph("resnet50", half).graph;
  const Tensor& stem = weight(r50, "conv1.weight");
  const double stem_std = std::sqrt(2.0 / (32 * 49));
  EXPECT_NEAR(mean_of(stem), 0.0, 0.06 * stem_std);
  EXPECT_NEAR(std_of(stem), stem_std, 0.04 * stem_std);
  // torchvision MobileNetV2: Linear ~ N(0, 0.01), bias 0.
  const Graph mb2 = zoo::build_zoo_graph("mobilenetv2", {}).graph;
  EXPECT_NEAR(std_of(weight(mb2, "classifier.1.weight")), 0.01, 0.0003);
  EXPECT_EQ(max_abs(weight(mb2, "classifier.1.bias")), 0.0);
  // torchvision EfficientNet: Linear ~ U(-1/sqrt(out), 1/sqrt(out)), SE conv biases 0.
  const Graph eff = zoo::build_zoo_graph("efficientnetb0", {}).graph;
  const Tensor& fc = weight(eff, "classifier.1.weight");
  EXPECT_LE(max_abs(fc), 1.0 / std::sqrt(1000.0));
  EXPECT_NEAR(std_of(fc), 1.0 / std::sqrt(3000.0), 0.01 / std::sqrt(3000.0));
  EXPECT_EQ(max_abs(weight(eff, "features.1.0.block.1.fc1.bias")), 0.0);
  // torchvision DenseNet: kaiming_normal_ (fan_in), Linear bias 0.
  const Graph dn = zoo::build_zoo_graph("densenet161", half).graph;
  EXPECT_NEAR(std_of(weight(dn, "features.conv0.weight")), std::sqrt(2.0 / (3 * 49)),
              0.05 * std::sqrt(2.0 / (3 * 49)));
  EXPECT_EQ(max_abs(weight(dn, "classifier.bias")), 0.0);
}

TEST(Zoo, NumClassesChangesTheClassifier) {
  ZooOptions o;
  o.num_classes = 100;
  const Graph g = build_zoo_model("resnet18-cifar", o);
  EXPECT_EQ(weight(g, "linear.weight").shape(), (Shape{100, 512}));
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{1, 100}));
  EXPECT_EQ(g.param_count(), 11'173'962 + 90 * 513);
}

TEST(Zoo, CifarModelsBuildForFashionMnist) {
  ZooOptions o;
  o.in_channels = 1;
  o.image_size = 28;
  o.batch = 2;
  for (const char* name : kCifarModels) {
    SCOPED_TRACE(name);
    const Graph g = build_zoo_model(name, o);
    EXPECT_EQ(g.inputs[0].shape, (Shape{2, 1, 28, 28}));
    EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{2, 10}));
    const zoo::BuiltModel m = zoo::build_zoo_graph(name, o);
    EXPECT_EQ(g.macs(), m.macs);  // the op schemas agree with the builder's shapes
    EXPECT_EQ(g.param_count(), m.trainable_params);
  }
  // VGG's five pools keep odd borders (ceil_mode) so 28 -> 14 -> 7 -> 4 -> 2 -> 1.
  const Graph vgg = zoo::build_zoo_graph("vgg16-cifar", o).graph;
  EXPECT_EQ(find_node(vgg, "features.23")->attr_int("ceil_mode", -1), 1);
  EXPECT_EQ(find_node(vgg, "features.13")->attr_int("ceil_mode", -1), 0);
}

TEST(Zoo, OtherImageSizesPoolGlobally) {
  ZooOptions o;
  o.image_size = 64;
  const Graph r18 = build_zoo_model("resnet18-cifar", o);
  EXPECT_EQ(find_node(r18, "avg_pool")->op, "GlobalAveragePool");
  EXPECT_EQ(r18.param_count(), 11'173'962);
  const Graph vgg = build_zoo_model("vgg16-cifar", o);
  EXPECT_EQ(vgg.param_count(), 14'728'266);
  EXPECT_EQ(vgg.value(vgg.outputs[0]).shape, (Shape{1, 10}));
  o.image_size = 128;
  o.width_mult = 0.25;  // only the shapes matter here
  const Graph r50 = build_zoo_model("resnet50", o);
  EXPECT_EQ(r50.value(r50.outputs[0]).shape, (Shape{1, 1000}));
}

TEST(Zoo, BatchScalesMacs) {
  ZooOptions o;
  o.batch = 3;
  EXPECT_EQ(zoo::build_zoo_graph("mobilenetv1-cifar", o).macs, 3 * 46'354'432);
}

TEST(Zoo, WidthMultShrinksEveryModel) {
  ZooOptions o;
  o.width_mult = 0.5;
  for (const Reference& r : kReferences) {
    SCOPED_TRACE(r.name);
    const zoo::BuiltModel m = zoo::build_zoo_graph(r.name, o);
    EXPECT_LT(m.trainable_params, r.params * 6 / 10);
    EXPECT_LT(m.macs, r.macs * 6 / 10);
  }
  // Channel rounding: plain rounding for kuangliu, _make_divisible(., 8) for torchvision.
  const Graph r18 = zoo::build_zoo_graph("resnet18-cifar", o).graph;
  EXPECT_EQ(weight(r18, "conv1.weight").shape(), (Shape{32, 3, 3, 3}));
  const Graph mb2 = zoo::build_zoo_graph("mobilenetv2", o).graph;
  EXPECT_EQ(weight(mb2, "features.0.0.weight").shape(), (Shape{16, 3, 3, 3}));
  EXPECT_EQ(weight(mb2, "features.1.conv.1.weight").shape(), (Shape{8, 16, 1, 1}));
  EXPECT_EQ(weight(mb2, "features.18.0.weight").shape(), (Shape{1280, 160, 1, 1}));
  const Graph half = build_zoo_model("mobilenetv2-cifar", o);
  EXPECT_EQ(half.param_count(), zoo::build_zoo_graph("mobilenetv2-cifar", o).trainable_params);
}

TEST(Zoo, MakeDivisibleMatchesTorchvision) {
  EXPECT_EQ(zoo::make_divisible(32 * 0.5), 16);
  EXPECT_EQ(zoo::make_divisible(24 * 0.75), 24);  // 18 -> 16 < 0.9 * 18 -> 24
  EXPECT_EQ(zoo::make_divisible(16 * 0.35), 8);   // never below the divisor
  EXPECT_EQ(zoo::make_divisible(1280 * 1.4), 1792);
  EXPECT_EQ(zoo::scale_channels(64, 0.01), 1);
  EXPECT_EQ(zoo::scale_channels(96, 1.5), 144);
}

TEST(Zoo, BadOptionsAreRejected) {
  expect_throws_invalid_input("resnet19", {}, "unknown zoo model 'resnet19'");
  ZooOptions o;
  o.width_mult = 0;
  expect_throws_invalid_input("resnet18-cifar", o, "width_mult");
  o.width_mult = -1;
  expect_throws_invalid_input("mobilenetv2", o, "width_mult");
  o.width_mult = std::numeric_limits<double>::quiet_NaN();
  expect_throws_invalid_input("vgg16-cifar", o, "width_mult");
  o = {};
  o.image_size = 0;
  expect_throws_invalid_input("resnet18-cifar", o, "image_size");
  o.image_size = 4;  // layer4's stride-2 conv would see a 1x1 map
  expect_throws_invalid_input("resnet18-cifar", o, "too small");
  o.image_size = 16;
  expect_throws_invalid_input("resnet50", o, "too small");
  o.image_size = 8;
  expect_throws_invalid_input("vgg16-cifar", o, "too small");
  o = {};
  o.num_classes = 0;
  expect_throws_invalid_input("densenet161", o, "num_classes");
  o = {};
  o.in_channels = -5;
  expect_throws_invalid_input("efficientnetb0", o, "in_channels");
  o = {};
  o.batch = 0;
  expect_throws_invalid_input("mobilenetv1-cifar", o, "batch");
}

}  // namespace
}  // namespace dlas
