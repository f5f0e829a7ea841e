// The pass list as a table, and its lowering log (the graph after each pass).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <unistd.h>

#include "dlas/core/error.h"
#include "dlas/model/zoo.h"
#include "dlas/system/passes.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

TEST(PassTable, EveryRowIsNamedLevelledAndRunnable) {
  std::set<std::string> names;
  for (const GraphPass& p : graph_passes()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name << " listed twice";
    EXPECT_GE(p.opt_level, 1) << p.name;
    EXPECT_LE(p.opt_level, 3) << p.name;
    EXPECT_NE(p.run, nullptr) << p.name;
  }
  EXPECT_EQ(names.size(), 19u);
}

TEST(PassDump, WritesTheGraphBeforeAndAfterEveryPassThatRuns) {
  const fs::path dir = fresh_dir("dlas-pass-dump");
  Graph g = build_zoo_model("resnet18-cifar");
  Graph plain = g;
  PassOptions o;
  o.opt_level = 3;
  o.dump_dir = dir.string();
  const PassReport r = optimize_graph(g, o);
  const PassReport want = optimize_graph(plain, 3);
  // The log changes nothing.
  EXPECT_EQ(r.batchnorms_folded, want.batchnorms_folded);
  EXPECT_EQ(r.nodes_after, want.nodes_after);
  EXPECT_EQ(g.to_string(), plain.to_string());

  const std::set<std::string> expected = {"00-input.txt",
                                          "01-fold_constants.txt",
                                          "02-eliminate_dead_code.txt",
                                          "03-eliminate_identity.txt",
                                          "04-einsum_to_matmul.txt",
                                          "05-fold_pad.txt",
                                          "06-trim_conv_taps.txt",
                                          "07-fold_batchnorm.txt",
                                          "08-fuse_residual_add.txt",
                                          "09-fuse_gelu.txt",
                                          "10-fuse_layer_norm.txt",
                                          "11-fuse_linear.txt",
                                          "12-fuse_activation.txt",
                                          "13-fuse_channel_affine.txt",
                                          "14-fuse_quantized_conv.txt",
                                          "15-fuse_quantized_fc.txt",
                                          "16-fold_linear_scale.txt",
                                          "17-fuse_quantized_lookup.txt",
                                          "18-fuse_channel_scale_quantize.txt",
                                          "19-fold_dequantize.txt"};
  EXPECT_EQ(files_in(dir), expected);
  const std::string input = read_file(dir / "00-input.txt");
  const std::string folded = read_file(dir / "07-fold_batchnorm.txt");
  EXPECT_NE(input.find("BatchNormalization"), std::string::npos);
  EXPECT_EQ(folded.find("BatchNormalization"), std::string::npos);  // every BN follows a conv
  EXPECT_NE(folded.find("# after fold_batchnorm: 20 rewrites"), std::string::npos) << folded;
  EXPECT_NE(read_file(dir / "12-fuse_activation.txt").find("activation=\"relu\""),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(PassDump, EnvironmentVariableLogsTheLevelsPasses) {
  const fs::path dir = fresh_dir("dlas-pass-dump-env");
  ::setenv("DLAS_DUMP_PASSES", dir.c_str(), 1);
  Graph g = build_zoo_model("mobilenetv1-cifar");
  optimize_graph(g, 1);
  ::unsetenv("DLAS_DUMP_PASSES");
  const std::set<std::string> expected = {"00-input.txt",
                                          "01-fold_constants.txt",
                                          "02-eliminate_dead_code.txt",
                                          "03-eliminate_identity.txt",
                                          "04-einsum_to_matmul.txt",
                                          "19-fold_dequantize.txt"};
  EXPECT_EQ(files_in(dir), expected);
  fs::remove_all(dir);

  // Level 0 runs no pass: only the input is logged.
  PassOptions o;
  o.opt_level = 0;
  o.dump_dir = dir.string();
  Graph h = build_zoo_model("mobilenetv1-cifar");
  optimize_graph(h, o);
  EXPECT_EQ(files_in(dir), std::set<std::string>{"00-input.txt"});
  fs::remove_all(dir);
}

TEST(PassDump, UnwritableFolderIsInvalidInput) {
  PassOptions o;
  o.dump_dir = "/proc/no-such-folder/passes";
  Graph g = build_zoo_model("mobilenetv1-cifar");
  try {
    optimize_graph(g, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("/proc/no-such-folder/passes"), std::string::npos);
  }
}

// Identity, inference Dropout and all-zero Pads disappear, their consumers reading the input;
// a Pad with real padding and a pass-through producing a graph output stay.
TEST(EliminateIdentity, RewiresConsumersPastPassThroughs) {
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {1, 2, 4, 4}});
  Tensor zeros(DType::kS64, {8}), ones(DType::kS64, {8});
  for (int i = 0; i < 8; ++i) zeros.data<int64_t>()[i] = 0, ones.data<int64_t>()[i] = i % 4 >= 2;
  g.initializers.emplace("zeros", std::move(zeros));
  g.initializers.emplace("ones", std::move(ones));
  g.nodes.push_back({"id", "Identity", {"x"}, {"a"}, {}});
  g.nodes.push_back({"pad0", "Pad", {"a", "zeros"}, {"b"}, {}});
  g.nodes.push_back({"drop", "Dropout", {"b"}, {"c"}, {}});
  g.nodes.push_back({"relu", "Relu", {"c"}, {"d"}, {}});
  Node old_pad{"pad_attr", "Pad", {"d"}, {"e"}, {}};
  old_pad.attrs["pads"] = std::vector<int64_t>(8, 0);
  g.nodes.push_back(old_pad);
  g.nodes.push_back({"pad1", "Pad", {"e", "ones"}, {"f"}, {}});  // real padding: stays
  g.nodes.push_back({"out", "Identity", {"f"}, {"y"}, {}});      // graph output: stays
  g.outputs = {"y"};
  g.infer();
  EXPECT_EQ(eliminate_identity(g), 4);
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.name);
  EXPECT_EQ(ops, (std::vector<std::string>{"relu", "pad1", "out"}));
  EXPECT_EQ(g.nodes[0].inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(g.nodes[1].inputs[0], "d");
  EXPECT_EQ(g.initializers.count("zeros"), 0u);  // dead once its Pad went
  g.infer();
  EXPECT_EQ(g.value("y").shape, (Shape{1, 2, 6, 6}));
}

}  // namespace
}  // namespace dlas
