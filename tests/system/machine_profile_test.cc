// Machine profiles: shape classes, the JSON round trip and its strict validation, the
// resolution (a profile for another CPU, ISA or thread count, or a corrupt one, is ignored
// with one warning), and a calibration on two tiny shapes whose profile the plan follows.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "dlas/algo/machine_profile.h"
#include "dlas/algo/qconv.h"
#include "dlas/core/error.h"
#include "dlas/core/file.h"
#include "dlas/hw/cpu.h"
#include "dlas/model/zoo.h"
#include "dlas/system/calibrate.h"
#include "dlas/system/compress.h"
#include "dlas/system/conv_shapes.h"
#include "dlas/system/plan.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

// Every test of this binary (and every dlas it spawns) sees the built-in rule, whatever
// profile the calibration cache of the machine running them holds.
const bool kNoProfile = [] { return setenv("DLAS_PROFILE", "none", 1) == 0; }();

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

class MachineProfileTest : public ::testing::Test {
 protected:
  fs::path dir_;
  void SetUp() override {
    ASSERT_TRUE(kNoProfile);
    dir_ = fs::temp_directory_path() /
           ("dlas_profile_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) { return (dir_ / name).string(); }

  static MachineProfile here(int threads = 1) {
    MachineProfile m;
    m.cpu = cpu_info().model_name;
    m.cpuid = cpu_info().signature();
    m.isa = active_isa();
    m.threads = threads;
    m.source = "test";
    return m;
  }
};

ConvProblem problem(const char* key) { return ConvProblem::from_key(key); }

// A graph of one 3x3 (or 1x1) conv with bias on [1, c, hw, hw].
Graph one_conv(int64_t c, int64_t k, int64_t hw, int64_t ks) {
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {1, c, hw, hw}});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-0.3f, 0.3f);
  Tensor w(DType::kF32, {k, c, ks, ks}), b(DType::kF32, {k});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = d(rng);
  for (int64_t i = 0; i < b.numel(); ++i) b.data<float>()[i] = d(rng);
  g.initializers.emplace("w", std::move(w));
  g.initializers.emplace("b", std::move(b));
  Node n{"conv", "Conv", {"x", "w", "b"}, {"y"}, {}};
  n.attrs["pads"] = std::vector<int64_t>(4, ks / 2);
  g.nodes.push_back(n);
  g.outputs = {"y"};
  g.infer();
  return g;
}

const StepInfo& conv_step(const Plan& plan) {
  for (const StepInfo& s : plan.steps())
    if (s.node == "conv") return s;
  throw std::runtime_error("no conv step");
}

const StepInfo& qconv_step(const Plan& plan) {
  for (const StepInfo& s : plan.steps())
    if (s.op == "QFusedConv" && s.node.find("conv2") == std::string::npos) return s;
  std::string ops;
  for (const StepInfo& s : plan.steps()) ops += " " + s.op + ":" + s.kernel;
  throw std::runtime_error("no int8 conv step among" + ops);
}

// One 3x3 conv, 16 -> 16 channels on 16x16 (the classes "dense-3x3-s1-o16-c64-k64" and
// "int8-dense-3x3-s1-o16-c64-k64"), quantized to int8 with u8 activations.
Graph one_int8_conv() {
  Graph g = one_conv(16, 16, 16, 3);
  // A ReLU and a 1x1 conv after it, so its output is an activation the quantizer keeps in
  // 8 bits (the graph's output stays f32).
  g.nodes[0].outputs = {"c"};
  g.nodes.push_back(Node{"relu", "Relu", {"c"}, {"r"}, {}});
  Tensor w2(DType::kF32, {16, 16, 1, 1});
  for (int64_t i = 0; i < w2.numel(); ++i) w2.data<float>()[i] = 0.01f * static_cast<float>(i % 7);
  g.initializers.emplace("w2", std::move(w2));
  g.nodes.push_back(Node{"conv2", "Conv", {"r", "w2"}, {"y"}, {}});
  g.infer();
  QuantSpec spec;
  spec.calib_samples = 2;
  quantize(g, spec);
  return g;
}

TEST(ConvShapeClass, IsCoarse) {
  EXPECT_EQ(conv_shape_class(problem("c64_h56_w56_k64_3x3_s1x1_p1x1x1x1_d1x1_g1")),
            "dense-3x3-s1-obig-c64-k64");
  EXPECT_EQ(conv_shape_class(problem("c256_h14_w14_k256_3x3_s1x1_p1x1x1x1_d1x1_g1")),
            "dense-3x3-s1-o16r-c256-k256");
  // F(4x4, 3x3) tiles 16 and 8 exactly, 14 and 7 with a ragged edge: dense stride-1 3x3
  // classes tell them apart; other kinds, strides and sizes do not.
  EXPECT_EQ(conv_shape_class(problem("c128_h16_w16_k128_3x3_s1x1_p1x1x1x1_d1x1_g1")),
            "dense-3x3-s1-o16-c256-k256");
  EXPECT_EQ(conv_shape_class(problem("c512_h7_w7_k512_3x3_s1x1_p1x1x1x1_d1x1_g1")),
            "dense-3x3-s1-o8r-cbig-kbig");
  EXPECT_EQ(conv_shape_class(problem("c256_h14_w14_k256_1x1_s1x1_p0x0x0x0_d1x1_g1")),
            "dense-1x1-s1-o16-c256-k256");
  EXPECT_EQ(conv_shape_class(problem("c256_h14_w14_k256_3x3_s1x1_p1x1x1x1_d1x1_g256")),
            "dw-3x3-s1-o16-c256");
  EXPECT_EQ(conv_shape_class(problem("c512_h3_w3_k512_3x3_s1x1_p1x1x1x1_d1x1_g1")),
            "dense-3x3-s1-o4-cbig-kbig");
  EXPECT_EQ(conv_shape_class(problem("c512_h14_w14_k512_3x3_s2x2_p1x1x1x1_d1x1_g1")),
            "dense-3x3-s2-o8-cbig-kbig");
  EXPECT_EQ(conv_shape_class(problem("c144_h56_w56_k144_3x3_s2x2_p1x1x1x1_d1x1_g144")),
            "dw-3x3-s2-o32-c256");
  EXPECT_EQ(conv_shape_class(problem("c3_h224_w224_k64_7x7_s2x2_p3x3x3x3_d1x1_g1")),
            "stem-7x7-s2-obig");
  EXPECT_EQ(conv_shape_class(problem("c64_h4_w4_k64_1x1_s1x1_p0x0x0x0_d1x1_g4")),
            "group-1x1-s1-o4-c64-k64");
  EXPECT_EQ(conv_shape_class(problem("c512_h2_w2_k512_3x3_s1x1_p1x1x1x1_d1x1_g1")),
            "dense-3x3-s1-o2-cbig-kbig");
  EXPECT_EQ(conv_shape_class(problem("c512_h4_w4_k512_3x3_s1x1_p1x1x1x1_d1x1_g1")),
            "dense-3x3-s1-o4-cbig-kbig");
  // Output channels enter dense and grouped classes only.
  EXPECT_EQ(conv_shape_class(problem("c192_h16_w16_k48_3x3_s1x1_p1x1x1x1_d1x1_g1")),
            "dense-3x3-s1-o16-c256-k64");
  // Batch, padding and the epilogue do not enter.
  ConvProblem p = problem("c64_h56_w56_k64_3x3_s1x1_p1x1x1x1_d1x1_g1");
  p.n = 4;
  p.epilogue.act = Activation::kRelu;
  EXPECT_EQ(conv_shape_class(p), "dense-3x3-s1-obig-c64-k64");
  // int8 convs have classes of their own.
  p.set_int8({0.1f, 0, DType::kU8}, {0.2f, 0, DType::kU8});
  EXPECT_EQ(conv_shape_class(p), "int8-dense-3x3-s1-obig-c64-k64");
  EXPECT_EQ(cpu_slug("AMD EPYC 9B14 96-Core Processor"), "amd-epyc-9b14-96-core-processor");
  EXPECT_EQ(cpu_slug("  "), "unknown-cpu");
}

// The calibration measures a shape of every class the zoo models' convs fall in, so no
// zoo layer is left to the hand-written rule by a calibrated profile; each shape opens a
// class of its own (a second shape of a class would be skipped). Convs on 1x1 planes (the
// squeeze-and-excitation ones) are left to the rule on purpose (calibrate.cc).
TEST(CalibrationShapes, CoverEveryZooClassOnce) {
  std::set<std::string> calibrated;
  for (const ConvProblem& p : calibration_shapes()) {
    EXPECT_TRUE(calibrated.insert(conv_shape_class(p)).second) << p.key();
    EXPECT_GT(p.oh() * p.ow(), 1) << p.key();
  }
  int covered = 0;
  for (const ZooEntry& e : zoo_models())
    for (const ConvLayer& l : conv_layers(build_zoo_model(e.name))) {
      if (l.problem.oh() * l.problem.ow() == 1) continue;
      EXPECT_TRUE(calibrated.count(conv_shape_class(l.problem)))
          << e.name << " " << l.node << ": " << conv_shape_class(l.problem);
      ++covered;
    }
  EXPECT_GT(covered, 300);
}

TEST_F(MachineProfileTest, RoundTripAndLookup) {
  MachineProfile m = here(2);
  m.entries.push_back({"dense-3x3-s1-o16-c64-k64", "gemm", Layout::kNchw, {{"mb", 8}}, 12.5});
  m.entries.push_back({"dw-3x3-s1-o16-c64", "depthwise", Layout::kNchw16c, {}, 3});
  m.save(path("p.json"));
  const MachineProfile r = MachineProfile::load(path("p.json"));
  EXPECT_EQ(r.to_json(), m.to_json());
  EXPECT_EQ(r.cpu, m.cpu);
  EXPECT_EQ(r.isa, m.isa);
  EXPECT_EQ(r.threads, 2);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_EQ(r.entries[0].knobs, (Knobs{{"mb", 8}}));
  EXPECT_EQ(r.entries[1].layout, Layout::kNchw16c);
  const auto* e = r.lookup(problem("c16_h16_w16_k16_3x3_s1x1_p1x1x1x1_d1x1_g1"));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->algo, "gemm");
  EXPECT_EQ(r.lookup(problem("c16_h16_w16_k16_1x1_s1x1_p0x0x0x0_d1x1_g1")), nullptr);
}

// A class without an entry of its own takes the nearest output-channel bucket (ties: the
// larger), or the entry without one that a profile written before the buckets has.
TEST_F(MachineProfileTest, LookupFallsBackToTheNearestOutputChannelBucket) {
  MachineProfile m = here(2);
  m.entries.push_back({"dense-3x3-s1-o16-c256-k64", "direct", Layout::kNchw16c, {}, 1});
  m.entries.push_back({"dense-3x3-s1-o16-c256-kbig", "winograd", Layout::kNchw, {}, 2});
  auto algo_for = [](const MachineProfile& p, const char* key) {
    const MachineProfile::Entry* e = p.lookup(problem(key));
    return e ? e->algo : std::string("none");
  };
  EXPECT_EQ(algo_for(m, "c192_h14_w14_k48_3x3_s1x1_p1x1x1x1_d1x1_g1"), "direct");
  EXPECT_EQ(algo_for(m, "c192_h14_w14_k512_3x3_s1x1_p1x1x1x1_d1x1_g1"), "winograd");
  // k256: as near to 64 as to big; the larger wins.
  EXPECT_EQ(algo_for(m, "c192_h14_w14_k128_3x3_s1x1_p1x1x1x1_d1x1_g1"), "winograd");
  // Another input-channel bucket or side is another class.
  EXPECT_EQ(algo_for(m, "c32_h14_w14_k48_3x3_s1x1_p1x1x1x1_d1x1_g1"), "none");
  EXPECT_EQ(algo_for(m, "c192_h28_w28_k48_3x3_s1x1_p1x1x1x1_d1x1_g1"), "none");
  // An entry without the bucket serves every output-channel count of its class.
  MachineProfile old = here(2);
  old.entries.push_back({"dense-3x3-s1-o16-c256", "winograd", Layout::kNchw, {}, 1});
  EXPECT_EQ(algo_for(old, "c192_h14_w14_k48_3x3_s1x1_p1x1x1x1_d1x1_g1"), "winograd");
  EXPECT_EQ(algo_for(old, "c192_h14_w14_k512_3x3_s1x1_p1x1x1x1_d1x1_g1"), "winograd");
}

// A ragged plane's class takes its own entry where the profile has one, else its even
// twin's (a profile written before the split), before the hand-written rule.
TEST_F(MachineProfileTest, RaggedPlanesFallBackToTheirEvenTwin) {
  auto algo_for = [](const MachineProfile& p, const char* key) {
    const MachineProfile::Entry* e = p.lookup(problem(key));
    return e ? e->algo : std::string("none");
  };
  MachineProfile m = here(2);
  m.entries.push_back({"dense-3x3-s1-o16-c256-k256", "winograd", Layout::kNchw16c, {}, 1});
  EXPECT_EQ(algo_for(m, "c256_h14_w14_k256_3x3_s1x1_p1x1x1x1_d1x1_g1"), "winograd");
  EXPECT_EQ(algo_for(m, "c128_h16_w16_k128_3x3_s1x1_p1x1x1x1_d1x1_g1"), "winograd");
  m.entries.push_back({"dense-3x3-s1-o16r-c256-k256", "direct", Layout::kNchw16c, {}, 1});
  EXPECT_EQ(algo_for(m, "c256_h14_w14_k256_3x3_s1x1_p1x1x1x1_d1x1_g1"), "direct");
  EXPECT_EQ(algo_for(m, "c128_h16_w16_k128_3x3_s1x1_p1x1x1x1_d1x1_g1"), "winograd");
  // The even class never takes the ragged one's entry.
  MachineProfile r = here(2);
  r.entries.push_back({"dense-3x3-s1-o16r-c256-k256", "direct", Layout::kNchw16c, {}, 1});
  EXPECT_EQ(algo_for(r, "c128_h16_w16_k128_3x3_s1x1_p1x1x1x1_d1x1_g1"), "none");
}

// The other layout's best and the reorder cost round-trip and decide the layout: NCHW keeps
// a layer only when its lead exceeds the reorders; a version-1 file (neither) still reads.
TEST_F(MachineProfileTest, OtherLayoutAndReorderCostDecideTheLayout) {
  MachineProfile m = here(2);
  MachineProfile::Entry e{"dense-3x3-s1-o16-c64-k64", "winograd", Layout::kNchw, {}, 100};
  e.other = MachineProfile::Choice{"direct", Layout::kNchw16c, {{"nv", 2}, {"pw", 4}}, 110};
  e.reorder_us = 15;
  m.entries.push_back(e);
  m.save(path("p.json"));
  const MachineProfile r = MachineProfile::load(path("p.json"));
  EXPECT_EQ(r.to_json(), m.to_json());
  ASSERT_TRUE(r.entries[0].other.has_value());
  EXPECT_EQ(*r.entries[0].other, *e.other);
  EXPECT_DOUBLE_EQ(r.entries[0].reorder_us, 15);
  EXPECT_TRUE(e.blocked_wins());  // 110 <= 100 + 15
  EXPECT_EQ(e.for_layout(Layout::kNchw16c).algo, "direct");
  EXPECT_EQ(e.for_layout(Layout::kNchw8c).algo, "direct");
  EXPECT_EQ(e.for_layout(Layout::kNchw).algo, "winograd");
  e.reorder_us = 5;
  EXPECT_FALSE(e.blocked_wins());  // 110 > 100 + 5
  e.other.reset();
  EXPECT_FALSE(e.blocked_wins());
  EXPECT_EQ(e.for_layout(Layout::kNchw16c).algo, "winograd");
  // Version 1: no "other", no "reorder_us".
  auto j = nlohmann::json::parse(m.to_json());
  j["version"] = 1;
  j["entries"][0].erase("other");
  j["entries"][0].erase("reorder_us");
  const MachineProfile v1 = MachineProfile::from_json(j.dump());
  EXPECT_FALSE(v1.entries[0].other.has_value());
  EXPECT_FALSE(v1.entries[0].blocked_wins());
  j["version"] = 3;
  EXPECT_THROW(MachineProfile::from_json(j.dump()), Error);
}

TEST_F(MachineProfileTest, ValidationIsStrict) {
  const std::string good = here().to_json();
  EXPECT_NO_THROW(MachineProfile::from_json(good));
  auto j = nlohmann::json::parse(good);
  auto bad = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json k = j;
    edit(k);
    return k.dump();
  };
  const std::string entry =
      R"({"class": "c", "algo": "gemm", "layout": "nchw", "knobs": {}, "us": 1, "reorder_us": 0})";
  // The entry the bad cases below break is itself valid.
  EXPECT_NO_THROW(MachineProfile::from_json(
      bad([&](auto& k) { k["entries"] = nlohmann::json::array({nlohmann::json::parse(entry)}); })));
  for (const std::string& text :
       {std::string("{"), std::string("[]"), bad([](auto& k) { k.erase("cpu"); }),
        bad([](auto& k) { k["format"] = "x"; }), bad([](auto& k) { k["version"] = 3; }),
        bad([](auto& k) { k["isa"] = "avx9"; }), bad([](auto& k) { k["threads"] = 0; }),
        bad([](auto& k) { k["threads"] = "2"; }), bad([&](auto& k) {
          k["entries"] =
              nlohmann::json::array({nlohmann::json::parse(entry), nlohmann::json::parse(entry)});
        }),
        bad([&](auto& k) {
          auto e = nlohmann::json::parse(entry);
          e["algo"] = "magic";
          k["entries"] = nlohmann::json::array({e});
        }),
        bad([&](auto& k) {
          auto e = nlohmann::json::parse(entry);
          e["other"] = {{"algo", "magic"}, {"layout", "nchw8c"}, {"knobs", {}}, {"us", 2}};
          k["entries"] = nlohmann::json::array({e});
        }),
        bad([&](auto& k) {
          auto e = nlohmann::json::parse(entry);
          e.erase("reorder_us");
          k["entries"] = nlohmann::json::array({e});
        }),
        bad([&](auto& k) {
          auto e = nlohmann::json::parse(entry);
          e["layout"] = "nhwc";
          k["entries"] = nlohmann::json::array({e});
        }),
        bad([&](auto& k) {
          auto e = nlohmann::json::parse(entry);
          e["knobs"] = {{"mb", 1.5}};
          k["entries"] = nlohmann::json::array({e});
        }),
        bad([&](auto& k) {
          auto e = nlohmann::json::parse(entry);
          e.erase("us");
          k["entries"] = nlohmann::json::array({e});
        })}) {
    try {
      MachineProfile::from_json(text, "p.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << text;
      EXPECT_NE(std::string(e.what()).find("p.json"), std::string::npos) << e.what();
    }
  }
}

TEST_F(MachineProfileTest, MismatchedOrCorruptProfilesAreIgnoredWithOneWarning) {
  const Isa isa = active_isa();
  MachineProfile cpu = here(), other_isa = here(), threads = here(3), uarch = here();
  cpu.cpu = "Some Other CPU";
  other_isa.isa = isa == Isa::kScalar ? Isa::kAvx2 : Isa::kScalar;
  uarch.cpuid = "family 1 model 1";  // the same model name on another microarchitecture
  cpu.save(path("cpu.json"));
  other_isa.save(path("isa.json"));
  threads.save(path("threads.json"));
  uarch.save(path("uarch.json"));
  write_file_atomic(path("corrupt.json"), std::string("{\"format\": \"dlas-machine-prof"));
  const ActiveProfile builtin = builtin_machine_profile(isa, 1);
  for (const char* name : {"cpu.json", "isa.json", "threads.json", "uarch.json", "corrupt.json"}) {
    testing::internal::CaptureStderr();
    const ActiveProfile a = active_machine_profile(path(name), isa, 1);
    const ActiveProfile again = active_machine_profile(path(name), isa, 1);
    const std::string err = testing::internal::GetCapturedStderr();
    // Ignored for the built-in table of the ISA path (none on the scalar path).
    EXPECT_EQ(a.profile, builtin.profile) << name;
    EXPECT_EQ(again.profile, builtin.profile) << name;
    EXPECT_EQ(a.path, builtin.path) << name;
    EXPECT_EQ(count_lines(err), 1) << name << ": " << err;
    EXPECT_NE(err.find(name), std::string::npos) << err;
  }
  // The matching one is used, silently, and so is one written before profiles carried the
  // cpuid signature; "none" and an explicit missing file.
  here().save(path("ok.json"));
  MachineProfile unsigned_profile = here();
  unsigned_profile.cpuid.clear();
  unsigned_profile.save(path("unsigned.json"));
  testing::internal::CaptureStderr();
  const ActiveProfile ok = active_machine_profile(path("ok.json"), isa, 1);
  const ActiveProfile old = active_machine_profile(path("unsigned.json"), isa, 1);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ASSERT_NE(ok.profile, nullptr);
  EXPECT_EQ(ok.path, path("ok.json"));
  ASSERT_NE(old.profile, nullptr);
  EXPECT_EQ(old.path, path("unsigned.json"));
  EXPECT_EQ(active_machine_profile("none", isa, 1).profile, nullptr);
  EXPECT_EQ(active_machine_profile("builtin", isa, 1).path, builtin.path);
  EXPECT_THROW(active_machine_profile(path("missing.json"), isa, 1), Error);
  // DLAS_PROFILE names the file when the option is empty.
  setenv("DLAS_PROFILE", path("ok.json").c_str(), 1);
  const ActiveProfile env = active_machine_profile("", isa, 1);
  setenv("DLAS_PROFILE", "none", 1);
  EXPECT_EQ(env.path, path("ok.json"));
  EXPECT_EQ(active_machine_profile("", isa, 1).profile, nullptr);
}

// A profile fits this CPU by model name and, where it has one, cpuid signature; the
// signature round-trips through the file and is left out when empty.
TEST_F(MachineProfileTest, CpuMatchUsesTheNameAndTheSignature) {
  MachineProfile m = here();
  EXPECT_EQ(cpu_match(m), cpu_info().signature().empty() ? 1 : 2);
  EXPECT_EQ(MachineProfile::from_json(m.to_json()).cpuid, m.cpuid);
  m.cpuid.clear();
  EXPECT_EQ(cpu_match(m), 1);
  EXPECT_EQ(nlohmann::json::parse(m.to_json()).count("cpuid"), 0u);
  m.cpuid = "family 1 model 1";
  EXPECT_EQ(cpu_match(m), 0);
  m = here();
  m.cpu = "Some Other CPU";
  EXPECT_EQ(cpu_match(m), 0);
  auto j = nlohmann::json::parse(here().to_json());
  j["cpuid"] = 7;
  EXPECT_THROW(MachineProfile::from_json(j.dump()), Error);
}

// The calibration cache names its files by model name and cpuid signature, so CPUs that share
// a generic name keep apart; a file named by the model name alone (written before) is still
// read where the signed one is missing.
TEST_F(MachineProfileTest, CacheFilesCarryTheSignatureAndOldNamesStillLoad) {
  const Isa isa = active_isa();
  if (base_isa(isa) == Isa::kScalar) GTEST_SKIP() << "no profiles on the scalar path";
  const char* was = std::getenv("XDG_CACHE_HOME");
  const std::string saved = was ? was : "";
  setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  setenv("DLAS_PROFILE", "", 1);
  const std::string signed_path = default_profile_path(isa, 1);
  const std::string slug = cpu_slug(cpu_info().model_name + " " + cpu_info().signature());
  EXPECT_NE(signed_path.find("profile-" + slug + "-"), std::string::npos) << signed_path;
  fs::create_directories(dir_ / "dlas");
  const std::string legacy =
      (dir_ / "dlas" /
       ("profile-" + cpu_slug(cpu_info().model_name) + "-" + isa_name(isa) + "-t1.json"))
          .string();
  here().save(legacy);
  const ActiveProfile a = active_machine_profile("", isa, 1);
  here().save(signed_path);
  const ActiveProfile b = active_machine_profile("", isa, 1);
  if (was)
    setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else
    unsetenv("XDG_CACHE_HOME");
  setenv("DLAS_PROFILE", "none", 1);
  if (!cpu_info().signature().empty()) EXPECT_EQ(a.path, legacy);
  EXPECT_EQ(b.path, signed_path);
}

// Choosing among built-in tables: the one of this CPU (name and signature) first, then one
// matching by name alone; a table signed for another microarchitecture of the same name never
// serves this one, the unsigned tables serve every CPU, and the thread count breaks ties.
TEST_F(MachineProfileTest, BuiltinChoiceFollowsTheCpuThenTheThreads) {
  const Isa isa = active_isa();
  if (base_isa(isa) == Isa::kScalar) GTEST_SKIP() << "no tables on the scalar path";
  auto table = [&](const std::string& name, const std::string& cpu, const std::string& cpuid,
                   int threads) {
    MachineProfile m = here(threads);
    m.cpu = cpu;
    m.cpuid = cpuid;
    return BuiltinProfile{name, std::make_shared<const MachineProfile>(m)};
  };
  const std::string cpu = cpu_info().model_name, sig = cpu_info().signature();
  const BuiltinProfile generic = table("a-generic", "Other CPU", "", 2),
                       other_uarch = table("b-other-uarch", cpu, "family 1 model 1", 2),
                       by_name = table("c-by-name", cpu, "", 4),
                       mine = table("d-mine", cpu, sig, 8);
  auto pick = [&](std::vector<BuiltinProfile> tables, int threads) {
    const BuiltinProfile* b = pick_builtin_profile(tables, isa, threads);
    return b ? b->name : std::string("none");
  };
  if (!sig.empty()) EXPECT_EQ(pick({generic, other_uarch, by_name, mine}, 2), "d-mine");
  EXPECT_EQ(pick({generic, other_uarch, by_name}, 2), "c-by-name");
  EXPECT_EQ(pick({generic, other_uarch}, 2), "a-generic");
  EXPECT_EQ(pick({other_uarch}, 2), "none");
  EXPECT_EQ(pick({generic, table("e-generic", "Other CPU", "", 1)}, 1), "e-generic");
  EXPECT_EQ(pick({generic}, 2), "a-generic");
  EXPECT_EQ(pick_builtin_profile({generic}, Isa::kScalar, 2), nullptr);
}

// The tables shipped in the binary: valid, an AVX2 and an AVX-512 one at least; the choice follows
// the ISA path's f32 kernels (a path without a table of its base gets none).
TEST(BuiltinProfiles, CoverTheVectorPathsAndAreChosenByIsa) {
  const auto& tables = builtin_machine_profiles();
  ASSERT_FALSE(tables.empty());
  std::set<Isa> bases;
  for (const BuiltinProfile& b : tables) {
    ASSERT_NE(b.profile, nullptr) << b.name;
    EXPECT_FALSE(b.profile->cpu.empty()) << b.name;
    EXPECT_GE(b.profile->entries.size(), 20u) << b.name;
    bases.insert(base_isa(b.profile->isa));
    // Every entry names a dense algorithm that exists.
    for (const auto& e : b.profile->entries)
      EXPECT_NE(find_conv_algorithm(e.algo), nullptr) << b.name << " " << e.shape_class;
  }
  EXPECT_TRUE(bases.count(Isa::kAvx2));
  EXPECT_TRUE(bases.count(Isa::kAvx512));
  EXPECT_EQ(builtin_machine_profile(Isa::kScalar, 2).profile, nullptr);
  for (Isa isa : {Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAvx512Bf16, Isa::kAmx})
    for (int threads : {1, 2, 16}) {
      const ActiveProfile a = builtin_machine_profile(isa, threads);
      ASSERT_EQ(a.profile != nullptr, bases.count(base_isa(isa)) == 1) << isa_name(isa);
      if (!a.profile) continue;
      EXPECT_EQ(base_isa(a.profile->isa), base_isa(isa)) << isa_name(isa);
      EXPECT_EQ(a.path.rfind("builtin:", 0), 0u) << a.path;
    }
}

TEST_F(MachineProfileTest, PlanFollowsTheProfile) {
  const Graph g = one_conv(16, 16, 16, 3);  // dense-3x3-s1-o16-c64-k64: the rule picks winograd
  const Layout L = native_blocked_layout(active_isa());
  PlanOptions o;
  o.threads = 1;
  o.profile = "none";
  EXPECT_EQ(conv_step(Plan(g, o)).kernel, "winograd");
  MachineProfile m = here();
  m.entries.push_back(
      {"dense-3x3-s1-o16-c64-k64", "gemm", Layout::kNchw, {{"no-such-knob", 1}}, 1});
  m.save(path("gemm.json"));
  o.profile = path("gemm.json");
  const Plan gemm(g, o);
  EXPECT_EQ(conv_step(gemm).kernel, "gemm");  // invalid knobs: its default point
  EXPECT_EQ(conv_step(gemm).layout, Layout::kNchw);
  // A blocked entry runs blocked; --conv-algo and per-layer choices still win.
  if (is_blocked(L)) {
    m.entries[0] = {"dense-3x3-s1-o16-c64-k64", "direct", L, {}, 1};
    m.save(path("direct.json"));
    o.profile = path("direct.json");
    const Plan direct(g, o);
    EXPECT_EQ(conv_step(direct).kernel, "direct");
    EXPECT_EQ(conv_step(direct).layout, L);
  }
  o.conv_algo = "spatial-pack";
  EXPECT_EQ(conv_step(Plan(g, o)).kernel, "spatial-pack");
  o.conv_algo = "auto";
  o.layers["conv"] = {"winograd", {}};
  EXPECT_EQ(conv_step(Plan(g, o)).kernel, "winograd");
}

// A quick calibration on this machine's path: 1 thread, 2 repeats, 1 knob point besides the
// default.
CalibrateOptions quick_calibration() {
  CalibrateOptions c;
  c.isa = active_isa();
  c.threads = 1;
  c.repeat = 2;
  c.extra_knob_points = 1;
  c.search_seconds = 0;
  return c;
}

TEST_F(MachineProfileTest, CalibrationOnTinyShapesDrivesThePlan) {
  CalibrateOptions c = quick_calibration();
  c.int8 = false;
  c.shapes = {problem("c16_h8_w8_k16_3x3_s1x1_p1x1x1x1_d1x1_g1"),
              problem("c16_h8_w8_k32_1x1_s1x1_p0x0x0x0_d1x1_g1"),
              problem("c32_h8_w8_k32_3x3_s1x1_p1x1x1x1_d1x1_g1")};  // same class: skipped
  int calls = 0;
  c.progress = [&](int, int total, const std::string&) {
    ++calls;
    EXPECT_EQ(total, 3);
  };
  const CalibrateResult r = calibrate(c);
  EXPECT_EQ(calls, 2);
  ASSERT_EQ(r.rows.size(), 2u);
  ASSERT_EQ(r.profile.entries.size(), 2u);
  EXPECT_EQ(r.profile.entries[0].shape_class, "dense-3x3-s1-o8-c64-k64");
  EXPECT_EQ(r.profile.entries[1].shape_class, "dense-1x1-s1-o8-c64-k64");
  for (const CalibrateRow& row : r.rows) EXPECT_GT(row.candidates, 1) << row.shape_class;
  r.profile.save(path("calibrated.json"));

  const MachineProfile::Entry& e = r.profile.entries[0];
  PlanOptions o;
  o.threads = 1;
  o.profile = path("calibrated.json");
  const Plan plan(one_conv(16, 16, 8, 3), o);
  EXPECT_EQ(conv_step(plan).kernel, e.algo);
  EXPECT_EQ(conv_step(plan).layout, e.layout);
}

// A machine slow enough to spend the whole budget in the survey stops surveying there: the
// shapes left get no entry (their classes fall back to the nearest entry or the rule), and
// the result counts them.
TEST_F(MachineProfileTest, CalibrationStopsSurveyingAtTheBudget) {
  CalibrateOptions c = quick_calibration();
  c.shapes = {problem("c16_h8_w8_k16_3x3_s1x1_p1x1x1x1_d1x1_g1"),
              problem("c16_h8_w8_k32_1x1_s1x1_p0x0x0x0_d1x1_g1")};
  c.budget_seconds = 1e-9;
  CalibrateResult r = calibrate(c);
  EXPECT_TRUE(r.rows.empty());
  EXPECT_TRUE(r.profile.entries.empty());
  EXPECT_EQ(r.skipped_shapes, 4);  // two f32 shapes and their int8 twins
  c.int8 = false;
  c.budget_seconds = 0;
  r = calibrate(c);
  EXPECT_EQ(r.skipped_shapes, 0);
  EXPECT_EQ(r.rows.size(), 2u);
}

// The search stage tunes each class's leading candidates after the survey: it measures more
// points per class, and each entry is the fastest point of either stage, one of the
// measured algorithm's valid knob points. A budget already spent leaves the survey alone.
TEST_F(MachineProfileTest, CalibrationSearchRefinesTheSurvey) {
  CalibrateOptions c = quick_calibration();
  c.int8 = false;
  c.search_seconds = 2;
  c.budget_seconds = 0;
  c.shapes = {problem("c16_h8_w8_k16_3x3_s1x1_p1x1x1x1_d1x1_g1"),
              problem("c32_h8_w8_k16_1x1_s1x1_p0x0x0x0_d1x1_g1")};
  int rounds = 0;
  c.search_progress = [&](double, double budget, int64_t, int) {
    ++rounds;
    EXPECT_DOUBLE_EQ(budget, 2);
  };
  const CalibrateResult r = calibrate(c);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_GT(r.search_trials, 0);
  EXPECT_GT(rounds, 0);
  EXPECT_FALSE(r.search_stop.empty());
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const CalibrateRow& row = r.rows[i];
    EXPECT_GT(row.searched, 0) << row.shape_class;
    EXPECT_GT(row.best.us, 0) << row.shape_class;
    EXPECT_LE(row.best.us, row.survey_us) << row.shape_class;
    if (row.best.other) EXPECT_NE(is_blocked(row.best.layout), is_blocked(row.best.other->layout));
    if (row.best.other) EXPECT_LE(row.best.us, row.best.other->us) << row.shape_class;
    EXPECT_EQ(r.profile.entries[i].algo, row.best.algo);
    EXPECT_EQ(r.profile.entries[i].knobs, row.best.knobs);
    // The entry's knobs are a point of its algorithm's space for the measured shape.
    ConvProblem p = ConvProblem::from_key(row.shape);
    if (is_blocked(row.best.layout))
      p.set_layouts(p.c <= 4 ? Layout::kNchw : row.best.layout, row.best.layout);
    const ConvAlgorithm* a = find_conv_algorithm(row.best.algo);
    ASSERT_NE(a, nullptr);
    EXPECT_NO_THROW(a->knob_space(p, c.isa).validate(row.best.knobs, row.shape_class));
  }

  c.budget_seconds = 1e-3;  // spent before the search starts
  rounds = 0;
  const CalibrateResult survey_only = calibrate(c);
  EXPECT_EQ(survey_only.search_trials, 0);
  EXPECT_EQ(rounds, 0);
  for (const CalibrateRow& row : survey_only.rows) {
    EXPECT_EQ(row.searched, 0);
    EXPECT_EQ(row.best.us, row.survey_us);
  }
}

// A profile's int8 entries pick an int8 conv's algorithm and, under auto, whether it runs on
// 8-bit blocks: blocked where the path has the int8 block kernels and the entry's blocked
// candidate wins, counting the reorders an NCHW layer costs. f32 entries never apply to it.
TEST_F(MachineProfileTest, Int8EntriesDriveTheInt8Convs) {
  const Graph g = one_int8_conv();
  const Isa isa = active_isa();
  const bool blocks = int8_blocks_native(isa);
  PlanOptions o;
  o.threads = 1;
  o.profile = "none";
  const StepInfo rule = qconv_step(Plan(g, o));
  MachineProfile m = here();
  m.entries.push_back({"dense-3x3-s1-o16-c64-k64", "gemm", Layout::kNchw, {}, 1});
  m.save(path("f32.json"));
  o.profile = path("f32.json");
  EXPECT_EQ(qconv_step(Plan(g, o)).kernel, rule.kernel);
  EXPECT_EQ(qconv_step(Plan(g, o)).layout, rule.layout);

  // NCHW spatial-pack ahead of blocked direct by more than the reorders: NCHW.
  using Choice = MachineProfile::Choice;
  m.entries.push_back({"int8-dense-3x3-s1-o16-c64-k64",
                       "spatial-pack",
                       Layout::kNchw,
                       {},
                       10,
                       Choice{"direct", Layout::kNchw16c, {}, 20},
                       2});
  m.save(path("int8.json"));
  o.profile = path("int8.json");
  EXPECT_EQ(qconv_step(Plan(g, o)).kernel, "spatial-pack");
  EXPECT_EQ(qconv_step(Plan(g, o)).layout, Layout::kNchw);
  if (!blocks) return;
  // Ahead by less than the reorders: blocked, on the blocked candidate.
  m.entries.back() = {"int8-dense-3x3-s1-o16-c64-k64",
                      "gemm",
                      Layout::kNchw,
                      {},
                      10,
                      Choice{"direct", Layout::kNchw16c, {{"nv", 1}, {"pw", 8}}, 11},
                      2};
  m.save(path("int8.json"));
  const Plan blocked(g, o);
  EXPECT_EQ(qconv_step(blocked).kernel, "direct");
  EXPECT_EQ(qconv_step(blocked).layout, Layout::kNchw16c);
  EXPECT_EQ(qconv_step(blocked).knobs, "nv=1,pw=8");
  // --layout nchw keeps it NCHW, on the entry's NCHW candidate.
  o.layout = LayoutMode::kNchw;
  EXPECT_EQ(qconv_step(Plan(g, o)).kernel, "gemm");
  EXPECT_EQ(qconv_step(Plan(g, o)).layout, Layout::kNchw);
}

// With int8 on, the calibration measures each shape's int8 twin after the f32 shapes, as a
// class of its own, and a plan of the int8 conv follows that entry.
TEST_F(MachineProfileTest, CalibrationMeasuresTheInt8Twins) {
  CalibrateOptions c = quick_calibration();
  c.shapes = {problem("c16_h16_w16_k16_3x3_s1x1_p1x1x1x1_d1x1_g1")};
  std::vector<std::string> seen;
  c.progress = [&](int, int total, const std::string& cls) {
    EXPECT_EQ(total, 2);
    seen.push_back(cls);
  };
  const CalibrateResult r = calibrate(c);
  EXPECT_EQ(seen, (std::vector<std::string>{"dense-3x3-s1-o16-c64-k64",
                                            "int8-dense-3x3-s1-o16-c64-k64"}));
  ASSERT_EQ(r.profile.entries.size(), 2u);
  const MachineProfile::Entry& e = r.profile.entries[1];
  EXPECT_EQ(e.shape_class, "int8-dense-3x3-s1-o16-c64-k64");
  EXPECT_GT(r.rows[1].candidates, 1);
  // Blocked candidates exactly where the path has the int8 block kernels.
  const Isa isa = active_isa();
  const bool blocks = int8_blocks_native(isa);
  EXPECT_EQ(e.other.has_value(), blocks);
  if (e.other) EXPECT_GT(e.reorder_us, 0);
  r.profile.save(path("calibrated.json"));

  PlanOptions o;
  o.threads = 1;
  o.profile = path("calibrated.json");
  const Plan plan(one_int8_conv(), o);
  const Layout y = blocks && e.blocked_wins() ? Layout::kNchw16c : Layout::kNchw;
  EXPECT_EQ(qconv_step(plan).layout, y);
  EXPECT_EQ(qconv_step(plan).kernel, e.for_layout(y).algo);
}

class ProfileCli : public MachineProfileTest {
 protected:
  int dlas(const std::string& args, std::string* err = nullptr) {
    const std::string e = path("err.txt");
    const int st = std::system(
        (std::string(DLAS_CLI_PATH) + " " + args + " >" + path("out.txt") + " 2>" + e).c_str());
    if (err) *err = read_file(e);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  }
};

TEST_F(ProfileCli, MissingProfileIsAUsageError) {
  std::string err;
  EXPECT_EQ(dlas("bench resnet18-cifar --repeat 1 --profile " + path("nope.json"), &err), 2);
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_NE(err.find("nope.json"), std::string::npos) << err;
  EXPECT_EQ(dlas("hw --threads 2", &err), 2);
}

TEST_F(ProfileCli, BenchJsonNamesTheProfile) {
  here().save(path("ok.json"));
  EXPECT_EQ(
      dlas("bench mobilenetv1-cifar --repeat 1 --warmup 0 --json --profile " + path("ok.json")), 0);
  auto j = nlohmann::json::parse(read_file(path("out.txt")));
  EXPECT_EQ(j["profile"], path("ok.json"));
  EXPECT_EQ(dlas("bench mobilenetv1-cifar --repeat 1 --warmup 0 --json"), 0);  // DLAS_PROFILE=none
  j = nlohmann::json::parse(read_file(path("out.txt")));
  EXPECT_EQ(j["profile"], "none");
  EXPECT_EQ(dlas("bench mobilenetv1-cifar --repeat 1 --warmup 0 --json --profile builtin"), 0);
  j = nlohmann::json::parse(read_file(path("out.txt")));
  EXPECT_EQ(j["profile"], builtin_machine_profile(active_isa(), 1).path.empty()
                              ? "none"
                              : builtin_machine_profile(active_isa(), 1).path);
}

}  // namespace
}  // namespace dlas
