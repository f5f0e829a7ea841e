// The shape lists the conv microbenchmarks read (bench/shapes/<model>.txt) are current:
// regenerated from the zoo in memory, each must equal the committed file byte for byte
// (fix: `build/dlas_gen_shapes`). Also checks the extraction and the list parser.
#include "dlas/system/conv_shapes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "dlas/core/error.h"
#include "dlas/model/zoo.h"

namespace dlas {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

class BenchShapesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BenchShapesTest, CommittedListIsCurrent) {
  const std::string path = std::string(DLAS_SOURCE_DIR) + "/bench/shapes/" + GetParam() + ".txt";
  const std::string committed = read_file(path);
  ASSERT_FALSE(committed.empty()) << path << " is missing; run build/dlas_gen_shapes";
  const std::string expected = zoo_conv_shape_list(GetParam());
  EXPECT_EQ(committed, expected) << path << " is stale; run build/dlas_gen_shapes";

  // The list round-trips and covers every conv layer of the model exactly once.
  const std::vector<ConvShape> parsed = parse_conv_shape_list(committed);
  const std::vector<ConvLayer> layers = conv_layers(build_zoo_model(GetParam()));
  int64_t count = 0, macs = 0, layer_macs = 0;
  for (const ConvShape& s : parsed) count += s.count, macs += s.count * s.problem.macs();
  for (const ConvLayer& l : layers) layer_macs += l.problem.macs();
  EXPECT_EQ(count, static_cast<int64_t>(layers.size()));
  EXPECT_EQ(macs, layer_macs);
  EXPECT_EQ(format_conv_shape_list(parsed, {}),
            format_conv_shape_list(unique_conv_shapes(layers), {}));
}

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const ZooEntry& e : zoo_models()) names.push_back(e.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Zoo, BenchShapesTest, ::testing::ValuesIn(zoo_names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

TEST(BenchShapes, ConvMacsMatchGraph) {
  // Every conv MAC of the model is in the extracted layers (zoo models have no other
  // MAC-bearing op besides the classifier Gemm/MatMul).
  const Graph g = build_zoo_model("resnet18-cifar");
  const std::vector<ConvLayer> layers = conv_layers(g);
  ASSERT_EQ(layers.size(), 20u);  // stem + 16 3x3 + 3 1x1 shortcuts
  int64_t macs = 0;
  for (const ConvLayer& l : layers) {
    macs += l.problem.macs();
    EXPECT_EQ(l.problem.macs(),
              g.node_macs(*std::find_if(g.nodes.begin(), g.nodes.end(),
                                        [&](const Node& n) { return n.name == l.node; })));
  }
  EXPECT_GT(macs, 0);
  EXPECT_LT(macs, g.macs());
}

TEST(BenchShapes, ParseComments) {
  const auto shapes = parse_conv_shape_list(
      "# header\n\n"
      "c3_h32_w32_k64_3x3_s1x1_p1x1x1x1_d1x1_g1  # conv1 x3\n"
      "  c64_h8_w8_k64_1x1_s2x2_p0x0x0x0_d1x1_g1_n4\r\n"
      "c32_h16_w16_k32_3x3_s1x1_p1x1x1x1_d1x1_g32 # dw\n");
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_EQ(shapes[0].problem.c, 3);
  EXPECT_EQ(shapes[0].node, "conv1");
  EXPECT_EQ(shapes[0].count, 3);
  EXPECT_EQ(shapes[1].problem.n, 4);
  EXPECT_EQ(shapes[1].problem.stride_h, 2);
  EXPECT_EQ(shapes[1].node, "");
  EXPECT_EQ(shapes[1].count, 1);
  EXPECT_TRUE(shapes[2].problem.is_depthwise());
  EXPECT_EQ(shapes[2].node, "dw");
  EXPECT_EQ(shapes[2].count, 1);
}

TEST(BenchShapes, ParseErrorNamesLine) {
  try {
    parse_conv_shape_list("# ok\nc3_h32_w32_k64_3x3_s1x1_p1x1x1x1_d1x1_g1\nc3_h32_bogus\n");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dlas
