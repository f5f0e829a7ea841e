// The preprocessing flags and metadata on the command line: eval, quantize, export, prune and
// data info follow flags > metadata > the dataset's default, keep the metadata in the models
// they write, warn once for the default and for chance-level accuracy, and refuse bad values
// with exit 2 and one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "dlas/model/onnx.h"
#include "dlas/system/loader.h"
#include "dlas/system/preprocess_meta.h"
#include "data/nearest_mean_model.h"
#include "optimize/cli_test_util.h"

namespace dlas::test {
namespace {

constexpr const char* kData = "synthetic:1,8,8:4:120";

size_t count_of(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

nlohmann::json json_of(const CliResult& r) {
  EXPECT_EQ(r.code, 0) << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception&) {
    ADD_FAILURE() << "not JSON: " << r.out << "\n" << r.err;
    return {};
  }
}

class PreprocessCli : public CliTest {
 protected:
  // nm.onnx without metadata; meta.onnx with the dataset's own preprocessing and an unknown key.
  void SetUp() override {
    CliTest::SetUp();
    Graph g = nearest_mean_model(kData);
    export_onnx_file(g, path("nm.onnx"));
    g.metadata.emplace_back("author", "someone");
    const auto ds = data::open_dataset(kData, data::Split::kTest);
    set_preprocess_metadata(g, data::default_preprocess(ds->info(), false));
    export_onnx_file(g, path("meta.onnx"));
  }
};

TEST_F(PreprocessCli, DefaultWarnsOnceMetadataDoesNotFlagsWin) {
  const std::string eval = str("eval ", path("nm.onnx"), " --dataset ", kData, " --json");
  const CliResult plain = dlas(eval);
  const auto j = json_of(plain);
  EXPECT_EQ(count_of(plain.err, "carries no preprocessing"), 1u) << plain.err;
  EXPECT_EQ(j["preprocess_source"], "default");
  ASSERT_EQ(j["warnings"].size(), 1u);
  EXPECT_GT(j["top1"].get<double>(), 0.9);

  const CliResult meta = dlas(str("eval ", path("meta.onnx"), " --dataset ", kData, " --json"));
  const auto m = json_of(meta);
  EXPECT_EQ(meta.err.find("warning"), std::string::npos) << meta.err;
  EXPECT_EQ(m["preprocess_source"], "metadata");
  EXPECT_TRUE(m["warnings"].empty());
  EXPECT_EQ(m["top1"], j["top1"]);

  // The wrong normalisation by flags: every image lands on one class, top-1 at chance (25%),
  // and the warning names the likely causes (text on stderr, JSON "warnings").
  const CliResult wrong = dlas(str("eval ", path("meta.onnx"), " --dataset ", kData,
                                   " --mean 5 --std 0.01 --json"));
  const auto w = json_of(wrong);
  EXPECT_EQ(w["preprocess_source"], "flags+metadata");
  EXPECT_LT(w["top1"].get<double>(), 0.27);
  ASSERT_EQ(w["warnings"].size(), 1u) << wrong.err;
  EXPECT_NE(w["warnings"][0].get<std::string>().find("chance"), std::string::npos);
  EXPECT_NE(wrong.err.find("--mean"), std::string::npos) << wrong.err;
  const CliResult text =
      dlas(str("eval ", path("meta.onnx"), " --dataset ", kData, " --mean 5 --std 0.01"));
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(count_of(text.err, "within 2 points of chance"), 1u) << text.err;
  EXPECT_NE(text.out.find("preprocessing (flags+metadata): x/255, mean 5, std 0.01"),
            std::string::npos)
      << text.out;
}

TEST_F(PreprocessCli, WrittenModelsKeepOrRecordThePreprocessing) {
  const auto metadata_of = [](const std::string& file) { return load_model(file).metadata; };
  const auto want = metadata_of(path("meta.onnx"));
  ASSERT_EQ(want.size(), 2u);
  ASSERT_EQ(dlas(str("export ", path("meta.onnx"), " -o ", path("e.onnx"))).code, 0);
  EXPECT_EQ(metadata_of(path("e.onnx")), want);
  ASSERT_EQ(dlas(str("prune ", path("meta.onnx"), " --sparsity 0.5 --prune-classifier -o ",
                     path("p.onnx")))
                .code,
            0);
  EXPECT_EQ(metadata_of(path("p.onnx")), want);
  ASSERT_EQ(dlas(str("quantize ", path("meta.onnx"), " --dtype fp16 -o ", path("h.onnx"))).code,
            0);
  EXPECT_EQ(metadata_of(path("h.onnx")), want);
  // int8 calibrated on the dataset with flags: the written model records what it was fed.
  const CliResult q = dlas(str("quantize ", path("nm.onnx"), " --dtype int8 --calib-data ", kData,
                               " --calib-samples 2 --mean 0 --std 1 -o ", path("q.onnx")));
  ASSERT_EQ(q.code, 0) << q.err;
  const Graph qg = load_model(path("q.onnx"));
  const auto pre = preprocess_from_metadata(qg);
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->mean, std::vector<float>{0.f});
  EXPECT_EQ(pre->std, std::vector<float>{1.f});
  // data info shows the preprocessing in force: the model's, or the flags'.
  const auto info = json_of(dlas(str("data info ", kData, " --model ", path("q.onnx"), " --json")));
  EXPECT_EQ(info["preprocess_source"], "metadata");
  EXPECT_EQ(info["preprocess"]["std"], nlohmann::json({1.0}));
  const auto flags = json_of(dlas(str("data info ", kData, " --scale 1 --input-layout nhwc --json")));
  EXPECT_EQ(flags["preprocess_source"], "flags");
  EXPECT_EQ(flags["preprocess"]["layout"], "nhwc");
  EXPECT_EQ(flags["preprocessed_shape"], nlohmann::json({8, 8, 1}));
  const CliResult t = dlas(str("data info ", kData, " --model ", path("q.onnx")));
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("preprocessing (test, from metadata"), std::string::npos) << t.out;
}

TEST_F(PreprocessCli, BadValuesAreExitTwoWithOneLine) {
  Graph bad = nearest_mean_model(kData);
  bad.set_metadata(kPreprocessKey, "{\"mean\": [0.1,");
  export_onnx_file(bad, path("bad.onnx"));
  const std::string eval = str("eval ", path("nm.onnx"), " --dataset ", kData);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {eval + " --mean 0.1,0.2,0.3", "--mean has 3 values"},
      {eval + " --std 0", "--std values must be > 0"},
      {eval + " --std 0.5,-1", "--std values must be > 0"},
      {eval + " --channel-order grb", "unknown channel order 'grb'"},
      {eval + " --input-layout nhcw", "unknown input layout 'nhcw'"},
      {eval + " --mean abc", "'abc' is not a number"},
      {eval + " --scale 0", "--scale must be > 0"},
      {eval + " --center-crop x", "--center-crop: 'x'"},
      {eval + " --input-layout nhwc", "does not take"},
      {str("eval ", path("bad.onnx"), " --dataset ", kData),
       path("bad.onnx") + ": metadata 'dlas.preprocess': not valid JSON"},
      {str("quantize ", path("nm.onnx"), " --dtype int8 --mean 0 -o ", path("x.onnx")),
       "apply with --calib-data DATASET"},
      {str("quantize ", path("nm.onnx"), " --dtype int8 --calib-data ", kData,
           " --mean 1,2 -o ", path("x.onnx")),
       "--mean has 2 values"},
      {str("data info ", kData, " --std 0"), "--std values must be > 0"},
  };
  for (const auto& [args, message] : cases) {
    const CliResult r = dlas(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(path("x.onnx")));
}

}  // namespace
}  // namespace dlas::test
