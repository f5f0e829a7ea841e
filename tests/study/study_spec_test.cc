// The study spec: parsing, validation messages (file:line:col and field), expansion,
// exclusions, the oneDNN collapse, and shards.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "dlas/core/error.h"
#include "dlas/hw/isa.h"
#include "dlas/study/runner.h"
#include "dlas/study/spec.h"
#include "dlas/data/dataset.h"
#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"
#include "dlas/system/accuracy.h"
#include <fstream>

namespace dlas::study {
namespace {

// A minimal spec, as the study documentation writes it.
constexpr const char* kMinimalSpec = R"([study]
name = "cifar10-cpu"
repeat = 150          # timed runs per variant (median reported)
warmup = 1
[space]
models = ["resnet18-cifar", "mobilenetv1-cifar"]   # zoo names or .onnx paths
conv_algo = ["direct", "gemm", "spatial-pack"]
threads = [2]
compress = ["dense"]
)";

// The message of the kInvalidInput error parsing `text` throws ("" when none).
std::string spec_error(const std::string& text) {
  try {
    parse_study_spec(text, "s.toml");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput) << e.what();
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(StudySpec, MinimalSpecParsesAsWritten) {
  const StudySpec s = parse_study_spec(kMinimalSpec, "cifar.toml");
  EXPECT_EQ(s.name, "cifar10-cpu");
  EXPECT_EQ(s.repeat, 150);
  EXPECT_EQ(s.warmup, 1);
  EXPECT_EQ(s.space.models, (std::vector<std::string>{"resnet18-cifar", "mobilenetv1-cifar"}));
  EXPECT_EQ(s.space.conv_algo, (std::vector<std::string>{"direct", "gemm", "spatial-pack"}));
  EXPECT_EQ(s.space.threads, (std::vector<int>{2}));
  EXPECT_EQ(s.space.compress, (std::vector<std::string>{"dense"}));
  // Dimensions left out take their defaults.
  EXPECT_EQ(s.space.batch, (std::vector<int64_t>{1}));
  EXPECT_EQ(s.space.backend, (std::vector<std::string>{"dlas"}));
  EXPECT_EQ(s.space.isa, (std::vector<std::string>{"native"}));
  EXPECT_EQ(s.space.opt_level, (std::vector<int>{3}));
  EXPECT_EQ(s.space.layout, (std::vector<std::string>{"auto"}));
  const Expansion e = expand_study(s);
  EXPECT_EQ(e.total, 6u);
  ASSERT_EQ(e.points.size(), 6u);
  // Spec order, models outermost, conv_algo inside.
  EXPECT_EQ(e.points[0].model, "resnet18-cifar");
  EXPECT_EQ(e.points[0].conv_algo, "direct");
  EXPECT_EQ(e.points[2].conv_algo, "spatial-pack");
  EXPECT_EQ(e.points[3].model, "mobilenetv1-cifar");
  EXPECT_EQ(e.points[3].threads, 2);
}

// The specs shipped in studies/ stay valid (the README runs them).
TEST(StudySpec, ShippedSpecsParse) {
  // The default study's trained models (models/<zoo name>-fmnist.onnx, which scripts/main.sh
  // trains) stand in as untrained zoo models built for Fashion-MNIST, in a temporary folder.
  namespace fs = std::filesystem;
  const fs::path models = fs::temp_directory_path() / "dlas_shipped_specs" / "models";
  fs::create_directories(models);
  const data::DatasetInfo fmnist =
      data::open_dataset("synthetic:1,28,28:10:4", data::Split::kTest)->info();
  int n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(DLAS_SOURCE_DIR) + "/studies")) {
    if (e.path().extension() != ".toml") continue;
    std::ifstream in(e.path());
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    for (size_t at = text.find("\"models/"); at != std::string::npos;
         at = text.find("\"models/", at + 1)) {
      const std::string file = text.substr(at + 8, text.find('"', at + 1) - at - 8);
      const std::string zoo = file.substr(0, file.find("-fmnist.onnx"));
      ASSERT_NE(zoo, file) << e.path() << ": " << file;
      ZooOptions z = zoo_options_for(fmnist);
      z.width_mult = 0.125;
      export_onnx_file(build_zoo_model(zoo, z), (models / file).string());
    }
    const StudySpec s =
        parse_study_spec(text, e.path().string(), models.parent_path().string());
    EXPECT_EQ(s.name, e.path().stem().string()) << e.path();
    EXPECT_FALSE(expand_study(s).points.empty()) << e.path();
    ++n;
  }
  fs::remove_all(models.parent_path());
  EXPECT_GE(n, 2);
}

// [study].calibrate: a boolean, false unless given.
TEST(StudySpec, CalibrateIsABooleanDefaultingToFalse) {
  EXPECT_FALSE(parse_study_spec(kMinimalSpec, "s.toml").calibrate);
  const std::string space = "[space]\nmodels = [\"resnet18-cifar\"]\n";
  EXPECT_TRUE(parse_study_spec("[study]\ncalibrate = true\n" + space, "s.toml").calibrate);
  EXPECT_FALSE(parse_study_spec("[study]\ncalibrate = false\n" + space, "s.toml").calibrate);
  // A wrong type names the file, line and column of the value.
  const std::string msg = spec_error("[study]\nname = \"x\"\ncalibrate = \"true\"\n" + space);
  EXPECT_EQ(msg.rfind("s.toml:3:13: [study].calibrate: expected true or false", 0), 0u) << msg;
  // An unknown [study] key lists calibrate among the known ones.
  EXPECT_TRUE(contains(spec_error("[study]\ncalibration = true\n" + space), "calibrate")) << msg;
}

TEST(StudySpec, NameDefaultsToFileStem) {
  EXPECT_EQ(parse_study_spec("[space]\nmodels = [\"resnet18-cifar\"]\n", "dir/my-study.toml").name,
            "my-study");
}

TEST(StudySpec, ErrorsNameFileLineAndField) {
  struct Case {
    std::string text, where, field, why;
  };
  const std::vector<Case> cases = {
      {"[space]\nmodels = [\"resnet18-cifar\", \"nosuchnet\"]\n", "s.toml:2:", "[space].models[1]",
       "unknown model 'nosuchnet'"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nconv_algo = [\"gemm\", \"fft\"]\n",
       "s.toml:3:", "[space].conv_algo[1]", "'fft' is not a convolution algorithm"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nconv_algo = [\"sparse-direct:format\"]\n",
       "s.toml:3:", "[space].conv_algo[0]", "expected knob=value"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nconv_algo = [\"auto:format=csr\"]\n",
       "s.toml:3:", "[space].conv_algo[0]", "auto takes no knobs"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nlayout = [\"nchw\", \"nhwc\"]\n", "s.toml:3:19",
       "[space].layout[1]", "'nhwc' is not an activation layout (nchw, nchwc, auto)"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nlayout = [\"nchw\", \"nchw\"]\n",
       "s.toml:3:", "[space].layout[1]", "listed twice"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nlayout = [16]\n", "s.toml:3:", "[space].layout[0]",
       "expected a string"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nlayout = [\"nchw\"]\n[[exclude]]\nlayout = "
       "\"nchwc\"\n",
       "s.toml:5:", "[[exclude]][0].layout", "'nchwc' is not a value of [space].layout"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nthreads = [\"two\"]\n",
       "s.toml:3:", "[space].threads[0]", "expected an integer"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\n\nbackend = [\"tensorrt\"]\n",
       "s.toml:4:", "[space].backend[0]", "not a backend"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nisa = [\"neon\"]\n", "s.toml:3:", "[space].isa[0]",
       "not an ISA path"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nopt_level = [4]\n",
       "s.toml:3:", "[space].opt_level[0]", "out of range"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nbatch = [0]\n", "s.toml:3:", "[space].batch[0]",
       "out of range"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nthreadz = [1]\n", "s.toml:3:", "[space].threadz",
       "unknown dimension"},
      {"[study]\nrepeat = 0\n[space]\nmodels = [\"resnet18-cifar\"]\n",
       "s.toml:2:", "[study].repeat", "out of range"},
      {"[study]\nname = \"x\"\ncolour = 1\n[space]\nmodels = [\"resnet18-cifar\"]\n",
       "s.toml:3:", "[study].colour", "unknown key"},
      {"[study]\ncalibrate = \"yes\"\n[space]\nmodels = [\"resnet18-cifar\"]\n", "s.toml:2:13",
       "[study].calibrate", "expected true or false"},
      {"[study]\ncalibrate = 1\n[space]\nmodels = [\"resnet18-cifar\"]\n", "s.toml:2:13",
       "[study].calibrate", "expected true or false"},
      {"[space]\nmodels = []\n", "s.toml:2:", "[space].models", "empty list"},
      {"[space]\nmodels = [\"resnet18-cifar\", \"resnet18-cifar\"]\n",
       "s.toml:2:", "[space].models", "listed twice"},
      {"[space]\nmodels = [\"missing/net.onnx\"]\n", "s.toml:2:", "[space].models[0]",
       "does not exist"},
      {"[study]\nname = \"x\"\n", "s.toml:", "[space]", "missing"},
      {"[space]\nconv_algo = [\"gemm\"]\n", "s.toml:1:", "[space].models", "missing"},
      // TOML syntax: the parser's own position.
      {"[space]\nmodels = [\"resnet18-cifar\"\n", "s.toml:", "TOML", ""},
      // Compression values: parsed, refused clearly.
      {"[space]\nmodels = [\"resnet18-cifar\"]\ncompress = [\"dense\", \"cp:0.5:rows\"]\n",
       "s.toml:3:", "[space].compress", "scope 'rows' is not global or layer"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\ncompress = [\"wp:0.9+int8:median\"]\n",
       "s.toml:3:", "[space].compress", "median"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\ncompress = [\"wp:1.5\"]\n",
       "s.toml:3:", "[space].compress", "sparsity must be in [0, 1)"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\ncompress = [\"zip\"]\n",
       "s.toml:3:", "[space].compress", "not a compression spec"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\naccuracy = [true]\n",
       "s.toml:3:", "[space].accuracy", "not a dimension"},
      // Datasets and [accuracy].
      {"[space]\nmodels = [\"resnet18-cifar\"]\ndataset = [\"imagenet-22k\"]\n",
       "s.toml:3:", "[space].dataset[0]", "unknown dataset 'imagenet-22k'"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\ndataset = [\"synthetic:1,8,6\"]\n",
       "s.toml:3:", "[space].dataset[0]", "square images"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\n[accuracy]\nlimit = -1\n",
       "s.toml:4:", "[accuracy].limit", "out of range"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\n[accuracy]\nsamples = 5\n",
       "s.toml:4:", "[accuracy].samples", "unknown key"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\n[accuracy]\nsweeps = [\"no/such/dir\"]\n",
       "s.toml:4:", "[accuracy].sweeps[0]", "does not exist"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\ncompress = [\"wp:elbow:layer\"]\n",
       "s.toml:3:", "[space].compress[0]", "takes no options"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\ncompress = [\"dense\", \"wp:elbow+int8\"]\n",
       "s.toml:3:", "[space].compress[1]", "needs a weight sweep of resnet18-cifar in [accuracy]"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\n[tuning]\ntrials = 10\n", "s.toml:3:", "[tuning]",
       "not supported: tuning is the [space].tuning dimension"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\n[dataset]\nname = \"x\"\n",
       "s.toml:3:", "[dataset]", "not supported: datasets are the [space].dataset dimension"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\nschedule = [\"default\"]\n", "s.toml:3:",
       "[space].schedule", "not supported: a variant's schedule comes from the tuning dimension"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\ntuning = [\"fast\"]\n",
       "s.toml:3:", "[space].tuning[0]", "is not a tuning"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\ntuning = [\"tuned:5x\"]\n",
       "s.toml:3:", "[space].tuning[0]", "unknown unit 'x'"},
      {"[study]\ntimeout = 100\n[space]\nmodels = [\"resnet18-cifar\"]\ntuning = [\"tuned:2m\"]\n",
       "s.toml:5:", "[space].tuning", "at least 30 s under [study].timeout"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\ntuning = [\"tuned:50trials\"]\n",
       "s.toml:3:", "[space].tuning", "needs a time budget"},
      // Exclusion rules are checked against the space.
      {"[space]\nmodels = [\"resnet18-cifar\"]\nconv_algo = [\"gemm\"]\n[[exclude]]\nconv_algo = "
       "\"winograd\"\n",
       "s.toml:5:", "[[exclude]][0].conv_algo", "'winograd' is not a value of [space].conv_algo"},
      {"[space]\nmodels = [\"resnet18-cifar\"]\n[[exclude]]\nspeed = 1\n",
       "s.toml:4:", "[[exclude]][0].speed", "unknown dimension"},
  };
  for (const Case& c : cases) {
    const std::string msg = spec_error(c.text);
    ASSERT_FALSE(msg.empty()) << "no error for:\n" << c.text;
    EXPECT_EQ(msg.rfind(c.where, 0), 0u) << msg;
    EXPECT_TRUE(contains(msg, c.field)) << msg;
    EXPECT_TRUE(contains(msg, c.why)) << msg;
  }
}

TEST(StudySpec, MissingFileIsInvalidInput) {
  try {
    parse_study_spec_file("/nonexistent/spec.toml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_TRUE(contains(e.what(), "/nonexistent/spec.toml")) << e.what();
  }
}

TEST(StudySpec, ExclusionsRemovePartialCombinations) {
  const StudySpec s = parse_study_spec(R"([space]
models = ["resnet18-cifar", "mobilenetv1-cifar", "vgg16-cifar"]
conv_algo = ["direct", "gemm", "winograd"]
threads = [1, 2]
[[exclude]]
model = "vgg16-cifar"
conv_algo = ["winograd", "direct"]
[[exclude]]
models = "mobilenetv1-cifar"
threads = 2
)",
                                       "s.toml");
  ASSERT_EQ(s.exclude.size(), 2u);
  EXPECT_EQ(s.exclude[0].line, 5);
  const Expansion e = expand_study(s);
  EXPECT_EQ(e.total, 18u);
  // vgg16 x {winograd, direct} x {1, 2} = 4; mobilenetv1 x 3 algos x threads 2 = 3.
  EXPECT_EQ(e.excluded, 7u);
  EXPECT_EQ(e.points.size(), 11u);
  for (const StudyPoint& p : e.points) {
    EXPECT_FALSE(p.model == "vgg16-cifar" && p.conv_algo != "gemm") << p.str();
    EXPECT_FALSE(p.model == "mobilenetv1-cifar" && p.threads == 2) << p.str();
  }
  std::set<std::string> ids;
  for (const StudyPoint& p : e.points) ids.insert(p.str());
  EXPECT_EQ(ids.size(), e.points.size());
}

TEST(StudySpec, OnednnCollapsesDimensionsItIgnores) {
  const StudySpec s = parse_study_spec(R"([space]
models = ["resnet18-cifar"]
backend = ["dlas", "onednn"]
conv_algo = ["direct", "gemm"]
opt_level = [1, 3]
)",
                                       "s.toml");
  const Expansion e = expand_study(s);
  EXPECT_EQ(e.total, 8u);
  EXPECT_EQ(e.points.size(), 5u);  // 4 dlas + 1 onednn
  EXPECT_EQ(e.collapsed, 3u);
  const auto one = std::find_if(e.points.begin(), e.points.end(),
                                [](const StudyPoint& p) { return p.backend == "onednn"; });
  ASSERT_NE(one, e.points.end());
  EXPECT_EQ(one->conv_algo, "onednn");
  EXPECT_EQ(one->isa, "onednn");
  EXPECT_EQ(one->opt_level, 0);
}

TEST(StudySpec, LayoutMultipliesDlasVariantsAndCollapsesForOnednn) {
  const StudySpec s = parse_study_spec(R"([space]
models = ["resnet18-cifar", "mobilenetv1-cifar"]
backend = ["dlas", "onednn"]
conv_algo = ["direct", "gemm"]
layout = ["nchw", "nchwc", "auto"]
threads = [1, 2]
[[exclude]]
model = "mobilenetv1-cifar"
layout = ["nchw", "auto"]
)",
                                       "s.toml");
  EXPECT_EQ(s.space.layout, (std::vector<std::string>{"nchw", "nchwc", "auto"}));
  const Expansion e = expand_study(s);
  // 2 models x 2 backends x 2 algorithms x 3 layouts x 2 threads.
  EXPECT_EQ(e.total, 48u);
  // mobilenetv1 x {nchw, auto}: 2 backends x 2 algorithms x 2 layouts x 2 threads.
  EXPECT_EQ(e.excluded, 16u);
  // resnet18: 12 dlas + 2 onednn (one per thread count); mobilenetv1: 4 dlas nchwc + 2 onednn.
  EXPECT_EQ(e.points.size(), 20u);
  EXPECT_EQ(e.collapsed, 48u - 16u - 20u);
  std::map<std::string, int> per_layout;
  for (const StudyPoint& p : e.points) {
    ++per_layout[p.backend + "/" + p.layout];
    EXPECT_EQ(p.value("layout"), p.layout);
    EXPECT_FALSE(p.model == "mobilenetv1-cifar" && p.backend == "dlas" && p.layout != "nchwc")
        << p.str();
    // The layout is in the point's string only when not auto: older ids stay.
    if (p.layout == "auto") {
      EXPECT_EQ(p.str().find("layout"), std::string::npos) << p.str();
    } else {
      EXPECT_TRUE(contains(p.str(), ";layout=" + p.layout)) << p.str();
    }
  }
  EXPECT_EQ(per_layout["dlas/nchw"], 4);
  EXPECT_EQ(per_layout["dlas/nchwc"], 8);
  EXPECT_EQ(per_layout["dlas/auto"], 4);
  EXPECT_EQ(per_layout["onednn/auto"], 4);  // oneDNN picks its own layouts
  // Layout next to the algorithm, threads inside it.
  EXPECT_EQ(e.points[0].str(),
            "model=resnet18-cifar;compress=dense;batch=1;backend=dlas;isa=native;opt=3;"
            "conv=direct;threads=1;layout=nchw");
  EXPECT_EQ(e.points[1].layout, "nchw");
  EXPECT_EQ(e.points[1].threads, 2);
  EXPECT_EQ(e.points[2].layout, "nchwc");
}

TEST(StudySpec, TuningMultipliesDlasVariantsAndCollapsesForOnednn) {
  const StudySpec s = parse_study_spec(R"([space]
models = ["resnet18-cifar"]
backend = ["dlas", "onednn"]
conv_algo = ["gemm", "winograd"]
tuning = ["untuned", "tuned:90s"]
)",
                                       "s.toml");
  const Expansion e = expand_study(s);
  EXPECT_EQ(e.total, 8u);
  EXPECT_EQ(e.points.size(), 5u);  // 2 algorithms x 2 tunings + 1 onednn (untuned)
  int tuned = 0;
  for (const StudyPoint& p : e.points) {
    if (p.backend == "onednn") {
      EXPECT_EQ(p.tuning, "untuned");
    }
    if (p.tuning == "tuned:90s") {
      ++tuned;
      EXPECT_NE(p.str().find(";tuning=tuned:90s"), std::string::npos) << p.str();
    } else {
      EXPECT_EQ(p.str().find("tuning"), std::string::npos) << p.str();  // ids as before
    }
  }
  EXPECT_EQ(tuned, 2);
}

TEST(StudySpec, QuantizedVariantsAreDlasOnly) {
  const StudySpec s = parse_study_spec(R"([space]
models = ["resnet18-cifar"]
backend = ["dlas", "onednn"]
compress = ["dense", "int8", "wp:0.9+fp16"]
)",
                                       "s.toml");
  const Expansion e = expand_study(s);
  EXPECT_EQ(e.total, 6u);
  EXPECT_EQ(e.points.size(), 4u);  // 3 dlas + the dense onednn row
  EXPECT_EQ(e.excluded, 2u);
  for (const StudyPoint& p : e.points) {
    if (p.backend == "onednn") {
      EXPECT_EQ(p.compress, "dense");
    }
  }
}

TEST(StudySpec, PreprocessTableAndModelTablesGiveEachPointItsFlags) {
  const StudySpec s = parse_study_spec(R"([space]
models = ["resnet18-cifar", "mobilenetv1-cifar"]
dataset = ["fashion-mnist"]
[preprocess]
scale = 1
mean = [0.5]
[preprocess."mobilenetv1-cifar"]
std = 0.25
scale = 255.0
input_layout = "nhwc"
)",
                                       "p.toml");
  const Expansion e = expand_study(s);
  ASSERT_EQ(e.points.size(), 2u);
  std::map<std::string, std::string> flags;
  for (const StudyPoint& p : e.points) {
    const std::string f = p.preprocess.str();
    flags[p.model] = f;
    // Part of the point's and the variant's id: other preprocessing, another measurement.
    EXPECT_TRUE(contains(p.str(), ";preprocess=" + f)) << p.str();
    EXPECT_TRUE(contains(resolve_variant(p, nullptr).str(), ";preprocess=" + f));
  }
  EXPECT_EQ(flags["resnet18-cifar"], "--mean 0.5 --scale 1");
  EXPECT_EQ(flags["mobilenetv1-cifar"], "--mean 0.5 --std 0.25 --scale 255 --input-layout nhwc");
  // Without [preprocess] the ids are what they were.
  const StudySpec plain = parse_study_spec(R"([space]
models = ["resnet18-cifar"]
dataset = ["fashion-mnist"]
)",
                                           "p.toml");
  EXPECT_FALSE(contains(expand_study(plain).points.at(0).str(), "preprocess"));
}

TEST(StudySpec, PreprocessErrorsNameTheKey) {
  const std::string head = "[space]\nmodels = [\"resnet18-cifar\"]\ndataset = [\"fashion-mnist\"]\n";
  const std::pair<std::string, std::string> cases[] = {
      {"[preprocess]\nstd = [0.5, 0]\n", "[preprocess].std[1]: must be > 0"},
      {"[preprocess]\nscale = -1\n", "[preprocess].scale: must be > 0"},
      {"[preprocess]\nchannel_order = \"grb\"\n", "[preprocess].channel_order"},
      {"[preprocess]\ninput_layout = 4\n", "[preprocess].input_layout: expected a string"},
      {"[preprocess]\nmeans = 0.5\n", "[preprocess].means: unknown key"},
      {"[preprocess]\nresize = 2.5\n", "[preprocess].resize: expected an integer"},
      {"[preprocess.\"vgg16-cifar\"]\nscale = 1\n", "not a model of [space].models"},
      {"[preprocess.\"resnet18-cifar\".x]\nscale = 1\n", "a model's table has keys only"},
  };
  for (const auto& [text, want] : cases) {
    const std::string msg = spec_error(head + text);
    EXPECT_TRUE(contains(msg, want)) << text << " -> " << msg;
    EXPECT_TRUE(contains(msg, "s.toml:")) << msg;
  }
  EXPECT_TRUE(contains(spec_error("[space]\nmodels = [\"resnet18-cifar\"]\n[preprocess]\nscale = 1\n"),
                       "no dataset"));
}

TEST(StudySpec, RelativeOnnxPathsResolveAgainstTheSpecFolder) {
  // The spec file itself serves as an existing file: its name need not end in .onnx when it
  // holds a '/'.
  const std::string dir = ::testing::TempDir() + "study_spec_rel";
  std::system(("mkdir -p " + dir + "/models && touch " + dir + "/models/m.onnx").c_str());
  const StudySpec s =
      parse_study_spec("[space]\nmodels = [\"models/m.onnx\"]\n", dir + "/s.toml", dir);
  const Expansion e = expand_study(s);
  ASSERT_EQ(e.points.size(), 1u);
  EXPECT_EQ(e.points[0].model, "models/m.onnx");
  EXPECT_EQ(e.points[0].model_path, dir + "/models/m.onnx");
  std::system(("rm -rf " + dir).c_str());
}

TEST(StudyShard, ParseAndPartition) {
  EXPECT_EQ(parse_shard("1/4").index, 1);
  EXPECT_EQ(parse_shard("1/4").count, 4);
  for (const char* bad : {"4/4", "-1/2", "1", "a/b", "1/0", "/2", "1/"}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), 2) << bad;
    }
  }
  for (size_t n : {0u, 1u, 5u, 12u}) {
    std::vector<int> seen(n, 0);
    for (int i = 0; i < 3; ++i)
      for (size_t k : shard_indices(n, Shard{i, 3})) ++seen[k];
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; })) << n;
  }
  EXPECT_EQ(shard_indices(5, Shard{1, 2}), (std::vector<size_t>{1, 3}));
}

TEST(StudyShard, FromSlurmArray) {
  for (const char* v : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
                        "SLURM_ARRAY_TASK_STEP"})
    ::unsetenv(v);
  EXPECT_FALSE(shard_from_environment().has_value());
  ::setenv("SLURM_ARRAY_TASK_ID", "3", 1);
  ::setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
  ::setenv("SLURM_ARRAY_TASK_MIN", "1", 1);  // --array=1-4
  auto s = shard_from_environment();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 4);
  EXPECT_EQ(s->source, "slurm");
  ::setenv("SLURM_ARRAY_TASK_ID", "9", 1);  // beyond the array: a usage error
  EXPECT_THROW(shard_from_environment(), Error);
  ::setenv("SLURM_ARRAY_TASK_ID", "4", 1);  // --array=0-6:2 -> ids 0,2,4,6
  ::setenv("SLURM_ARRAY_TASK_MIN", "0", 1);
  ::setenv("SLURM_ARRAY_TASK_STEP", "2", 1);
  s = shard_from_environment();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->index, 2);
  for (const char* v : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
                        "SLURM_ARRAY_TASK_STEP"})
    ::unsetenv(v);
}

TEST(StudyVariant, ResolvesNativeIsaAndAllThreads) {
  StudyPoint p;
  p.model = "resnet18-cifar";
  p.model_path = "resnet18-cifar";
  p.threads = 0;
  std::string skip;
  const Variant v = resolve_variant(p, &skip);
  EXPECT_TRUE(skip.empty());
  EXPECT_GE(v.threads, 1);
  EXPECT_EQ(v.isa, isa_name(active_isa()));
  EXPECT_EQ(v.str().rfind("model=resnet18-cifar;batch=1;compress=dense;backend=dlas;conv=auto", 0),
            0u)
      << v.str();
  // The default layout leaves the id as it was before layouts; another one is part of it.
  EXPECT_EQ(v.layout, "auto");
  EXPECT_EQ(v.str().find("layout"), std::string::npos) << v.str();
  StudyPoint q = p;
  q.layout = "nchwc";
  const Variant b = resolve_variant(q, &skip);
  EXPECT_EQ(b.layout, "nchwc");
  EXPECT_NE(b.str().find(";layout=nchwc"), std::string::npos) << b.str();
  EXPECT_NE(b.hash_hex(), v.hash_hex());
  // A path above the CPU's is skipped with a reason, never run.
  if (!isa_supported(Isa::kAvx512)) {
    p.isa = "avx512";
    const Variant w = resolve_variant(p, &skip);
    EXPECT_EQ(w.isa, "avx512");
    EXPECT_TRUE(contains(skip, "cannot run the avx512 path")) << skip;
  }
  p.isa = "scalar";
  skip.clear();
  const Variant s = resolve_variant(p, &skip);
  EXPECT_TRUE(skip.empty());
  EXPECT_EQ(s.isa_emulated, detected_isa() != Isa::kScalar);
}

}  // namespace
}  // namespace dlas::study
