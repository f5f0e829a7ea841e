// End-to-end tests of the dlas command line: exit codes, JSON, files, bad input.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "dlas/core/npy.h"
#include "dlas/hw/cpu.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class Cli : public ::testing::Test {
 protected:
  fs::path dir_;
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dlas_cli_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result dlas(const std::string& args) {
    const std::string out = (dir_ / "stdout.txt").string(), err = (dir_ / "stderr.txt").string();
    const std::string cmd = std::string(DLAS_CLI_PATH) + " " + args + " >" + out + " 2>" + err;
    const int status = std::system(cmd.c_str());
    Result r{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(out),
             slurp(err)};
    fs::remove(out);
    fs::remove(err);
    return r;
  }
  std::string path(const std::string& name) { return (dir_ / name).string(); }
  // Files in the test folder (to check that failures leave nothing behind).
  size_t file_count() {
    size_t n = 0;
    for (auto& e : fs::directory_iterator(dir_)) n += e.is_regular_file();
    return n;
  }
};

TEST_F(Cli, HelpAndVersion) {
  for (const char* c : {"--help", "zoo --help", "info --help", "run --help", "export --help",
                        "hw --help", "bench --help", "profile --help"}) {
    Result r = dlas(c);
    EXPECT_EQ(r.code, 0) << c;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << c;
  }
  EXPECT_EQ(dlas("--version").code, 0);
}

TEST_F(Cli, BadUsageExitsTwo) {
  EXPECT_EQ(dlas("").code, 2);
  EXPECT_EQ(dlas("frobnicate").code, 2);
  EXPECT_EQ(dlas("info").code, 2);                         // MODEL missing
  EXPECT_EQ(dlas("info resnet18-cifar --bogus").code, 2);  // unknown flag
  EXPECT_EQ(dlas("export resnet18-cifar").code, 2);        // -o missing
  Result r = dlas("info no-such-model");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no-such-model"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line
}

TEST_F(Cli, ZooListsTheEightModels) {
  Result r = dlas("zoo --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::set<std::string> names;
  for (auto& m : j) names.insert(m["name"]);
  for (const char* n : {"resnet18-cifar", "mobilenetv1-cifar", "mobilenetv2-cifar", "vgg16-cifar",
                        "resnet50", "mobilenetv2", "densenet161", "efficientnetb0"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_EQ(dlas("zoo").code, 0);
}

TEST_F(Cli, HwJsonListsFeatures) {
  Result r = dlas("hw --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_GE(j["cores"].get<int>(), 1);
  EXPECT_TRUE(j["features"].contains("avx2"));
  EXPECT_TRUE(j["features"].contains("amx_int8"));
  EXPECT_EQ(j["family"].get<uint32_t>(), cpu_info().family);
  EXPECT_EQ(j["cpu_model"].get<uint32_t>(), cpu_info().model);
  EXPECT_EQ(dlas("hw").code, 0);
  // --search-seconds: the CPU calibration's option, in range.
  for (const char* bad :
       {"hw --search-seconds 5", "hw --calibrate --device cuda --search-seconds 5",
        "hw --calibrate --search-seconds -1"}) {
    const Result e = dlas(bad);
    EXPECT_EQ(e.code, 2) << bad;
    EXPECT_NE(e.err.find("--search-seconds"), std::string::npos) << bad << ": " << e.err;
  }
}

TEST_F(Cli, InfoJsonHasParamsAndMacs) {
  Result r = dlas("info resnet50 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["params"].get<int64_t>(), 25557032);
  EXPECT_EQ(j["macs"].get<int64_t>(), 4089184256);
  EXPECT_GT(j["layers"].size(), 50u);
  Result t = dlas("info mobilenetv1-cifar");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("3,217,226"), std::string::npos) << t.out;
}

TEST_F(Cli, ExportRunRoundTrip) {
  // Same weights through the zoo and through its exported ONNX file give identical outputs.
  const std::string onnx = path("m.onnx"), x = path("x.npy"), y1 = path("y1.npy"),
                    y2 = path("y2.npy");
  Tensor in(DType::kF32, {1, 3, 32, 32});
  for (int64_t i = 0; i < in.numel(); ++i)
    in.data<float>()[i] = static_cast<float>((i * 37 % 101) - 50) / 25.f;
  write_npy(x, in);
  ASSERT_EQ(dlas("export resnet18-cifar --seed 3 -o " + onnx).code, 0);
  Result a = dlas("run resnet18-cifar --seed 3 --input " + x + " --output " + y1);
  ASSERT_EQ(a.code, 0) << a.err;
  Result b = dlas("run " + onnx + " --input " + x + " --output " + y2 + " --json");
  ASSERT_EQ(b.code, 0) << b.err;
  auto j = nlohmann::json::parse(b.out);
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json({1, 10}));
  Tensor o1 = read_npy(y1), o2 = read_npy(y2);
  ASSERT_EQ(o1.shape(), (Shape{1, 10}));
  EXPECT_EQ(o1.to_float_vector(), o2.to_float_vector());
  // The weights in an external data file beside the model: the same outputs.
  const std::string ext = path("e.onnx"), y3 = path("y3.npy");
  Result e = dlas("export resnet18-cifar --seed 3 --external-data -o " + ext);
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("e.onnx.data"), std::string::npos) << e.out;
  ASSERT_EQ(dlas("run " + ext + " --input " + x + " --output " + y3).code, 0);
  EXPECT_EQ(o1.to_float_vector(), read_npy(y3).to_float_vector());
  fs::remove(ext + ".data");
  EXPECT_EQ(dlas("run " + ext).code, 2);  // its data file is gone: one line, exit 2
}

TEST_F(Cli, RandomInputIsSeeded) {
  const std::string y1 = path("a.npy"), y2 = path("b.npy"), y3 = path("c.npy");
  ASSERT_EQ(dlas("run resnet18-cifar --input-seed 5 --output " + y1).code, 0);
  ASSERT_EQ(dlas("run resnet18-cifar --input-seed 5 --output " + y2).code, 0);
  ASSERT_EQ(dlas("run resnet18-cifar --input-seed 6 --output " + y3).code, 0);
  EXPECT_EQ(read_npy(y1).to_float_vector(), read_npy(y2).to_float_vector());
  EXPECT_NE(read_npy(y1).to_float_vector(), read_npy(y3).to_float_vector());
}

TEST_F(Cli, WrongInputShapeOrDTypeExitsTwoWithoutOutput) {
  const std::string x = path("x.npy"), y = path("y.npy");
  write_npy(x, Tensor(DType::kF32, {1, 3, 28, 28}));
  Result r = dlas("run resnet18-cifar --input " + x + " --output " + y);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("x.npy"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[1, 3, 32, 32]"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(y));
  write_npy(x, Tensor(DType::kS32, {1, 3, 32, 32}));
  EXPECT_EQ(dlas("run resnet18-cifar --input " + x + " --output " + y).code, 2);
  EXPECT_FALSE(fs::exists(y));
  EXPECT_EQ(dlas("run resnet18-cifar --input " + path("missing.npy")).code, 2);
  EXPECT_EQ(dlas("run resnet18-cifar --output " + path("nodir/y.npy")).code, 2);
}

TEST_F(Cli, CorruptAndTruncatedOnnxExitTwo) {
  const std::string onnx = path("m.onnx");
  ASSERT_EQ(dlas("export mobilenetv1-cifar -o " + onnx).code, 0);
  const std::string bytes = slurp(onnx);
  for (size_t cut : {size_t{10}, bytes.size() / 3, bytes.size() - 7}) {
    const std::string bad = path("cut.onnx");
    std::ofstream(bad, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(cut));
    Result r = dlas("run " + bad + " --output " + path("y.npy"));
    EXPECT_EQ(r.code, 2) << "cut at " << cut << ": " << r.err;
    EXPECT_NE(r.err.find("cut.onnx"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(path("y.npy")));
  }
  std::ofstream(path("garbage.onnx")) << "this is not a protobuf at all \xff\xfe";
  EXPECT_EQ(dlas("info " + path("garbage.onnx")).code, 2);
  EXPECT_EQ(dlas("info " + path("absent.onnx")).code, 2);
}

// A one-node ONNX model y = op(x) on a 1-D f32 tensor of 4 values.
void write_one_op_model(const std::string& file, const char* op, const char* node) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto add_vi = [](onnx::ValueInfoProto* vi, const char* name) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(1);
    tt->mutable_shape()->add_dim()->set_dim_value(4);
  };
  add_vi(g->add_input(), "x");
  add_vi(g->add_output(), "y");
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(node);
  n->add_input("x");
  n->add_output("y");
  std::ofstream(file, std::ios::binary) << m.SerializeAsString();
}

TEST_F(Cli, UnsupportedOpNamesOpAndNode) {
  write_one_op_model(path("u.onnx"), "FancyNewOp", "the_fancy_node");
  Result r = dlas("run " + path("u.onnx"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("FancyNewOp"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the_fancy_node"), std::string::npos) << r.err;
}

// A step with no fast path is marked by profile and warned about once by bench; a model
// whose every step is fast gets neither.
TEST_F(Cli, ReferenceStepsAreMarkedAndWarnedAbout) {
  write_one_op_model(path("s.onnx"), "Hardmax", "the_hardmax");
  Result b = dlas("bench " + path("s.onnx") + " --repeat 2 --json");
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(b.out)["reference_steps"], 1);
  EXPECT_NE(b.err.find("1 step runs on a reference kernel"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("the_hardmax (Hardmax)"), std::string::npos) << b.err;
  Result p = dlas("profile " + path("s.onnx") + " --repeat 1");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("! reference"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("the_hardmax (Hardmax)"), std::string::npos) << p.out;
  Result fast = dlas("bench mobilenetv1-cifar --compress fp16 --repeat 2 --json");
  ASSERT_EQ(fast.code, 0) << fast.err;
  EXPECT_EQ(nlohmann::json::parse(fast.out)["reference_steps"], 0);
  EXPECT_EQ(fast.err.find("reference kernel"), std::string::npos) << fast.err;
}

TEST_F(Cli, ExportFailureLeavesNoFile) {
  EXPECT_EQ(dlas("export resnet18-cifar -o " + path("nodir/m.onnx")).code, 2);
  EXPECT_FALSE(fs::exists(path("nodir")));
  EXPECT_EQ(file_count(), 0u);
}

TEST_F(Cli, BenchJsonHasTheContractKeys) {
  Result r = dlas("bench mobilenetv1-cifar --repeat 5 --warmup 1 --threads 2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"median_ms", "mean_ms", "min_ms", "max_ms", "p10_ms", "p90_ms", "cv",
                        "first_ms", "repeat", "threads", "variant", "arena_bytes", "gflops"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["repeat"], 5);
  EXPECT_EQ(j["threads"], 2);
  EXPECT_LE(j["min_ms"].get<double>(), j["median_ms"].get<double>());
  EXPECT_LE(j["median_ms"].get<double>(), j["max_ms"].get<double>());
  EXPECT_NE(j["variant"].get<std::string>().find("model=mobilenetv1-cifar"), std::string::npos);
  Result o = dlas("bench mobilenetv1-cifar --repeat 2 --backend onednn --json");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(nlohmann::json::parse(o.out)["backend"], "onednn");
}

TEST_F(Cli, ProfileListsEveryStepWithItsKernel) {
  Result r = dlas("profile resnet18-cifar --repeat 1 --conv-algo gemm --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  int convs = 0;
  for (const auto& s : j["steps"]) {
    if (s["op"] == "FusedConv" || s["op"] == "Conv") {
      ++convs;
      EXPECT_EQ(s["kernel"], "gemm") << s["node"];
      EXPECT_FALSE(s["knobs"].get<std::string>().empty());
      if (s["node"] == "conv1")  // the stem: 3 -> 64 channels, 3x3, on the 32x32 image
        EXPECT_EQ(s["shape"].get<std::string>().rfind("c3_h32_w32_k64_3x3_s1x1_", 0), 0u)
            << s["shape"];
    } else if (s["op"] == "Gemm") {
      EXPECT_EQ(s["shape"], "1x10");  // the classifier writes the logits
    }
  }
  EXPECT_EQ(convs, 20);
}

TEST_F(Cli, EngineFlagErrorsExitTwo) {
  EXPECT_EQ(dlas("bench resnet18-cifar --conv-algo bogus --repeat 1").code, 2);
  EXPECT_EQ(dlas("bench resnet18-cifar --opt-level 7 --repeat 1").code, 2);
  EXPECT_EQ(dlas("run resnet18-cifar --isa neon").code, 2);
  {
    std::ofstream f(path("layers.json"));
    f << R"({"conv1": {"algo": "winograd", "knobs": {"variant": 3}}})";
  }
  Result r = dlas("run resnet18-cifar --layers " + path("layers.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("variant"), std::string::npos) << r.err;
  {
    std::ofstream f(path("layers.json"));
    f << R"({"layer1.0.conv1": {"algo": "winograd", "knobs": {}}})";
  }
  EXPECT_EQ(dlas("run resnet18-cifar --layers " + path("layers.json")).code, 0);
}

TEST_F(Cli, RunOnTheEngineMatchesTheReference) {
  ASSERT_EQ(dlas("run mobilenetv2-cifar --output " + path("a.npy")).code, 0);
  ASSERT_EQ(dlas("run mobilenetv2-cifar --reference --output " + path("b.npy")).code, 0);
  const Tensor a = read_npy(path("a.npy")), b = read_npy(path("b.npy"));
  ASSERT_EQ(a.shape(), b.shape());
  double scale = 0, worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    scale = std::max(scale, std::fabs(double(b.data<float>()[i])));
    worst = std::max(worst, std::fabs(double(a.data<float>()[i]) - b.data<float>()[i]));
  }
  EXPECT_LE(worst, 1e-4 * std::max(1.0, scale));
}

}  // namespace
}  // namespace dlas
