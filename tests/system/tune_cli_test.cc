// `dlas tune`, `dlas records best` and `--records` end to end on a narrow model with a
// trial budget (a few seconds): files, JSON, the records applied, bad input exits 2.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <tuple>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dlas/system/plan.h"
#include "dlas/system/tune.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out, err;
};

class TuneCli : public ::testing::Test {
 protected:
  fs::path dir_;
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dlas_tune_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
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
};

TEST_F(TuneCli, TuneDistillAndApply) {
  const std::string model = "resnet18-cifar --width-mult 0.125 --threads 1";
  Result r = dlas("tune " + model + " --budget 90trials --phi 0 --json -o " + path("r.jsonl"));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["trials"].get<int>(), 90);
  EXPECT_EQ(j["stop_reason"], "trials");
  EXPECT_GT(j["untuned_ms"].get<double>(), 0);
  EXPECT_GE(j["curve"].size(), 2u);
  EXPECT_NE(r.err.find("tune: round 1"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("r.jsonl.partial")));
  const auto records = tune::read_records(path("r.jsonl"));
  // Every trial, then the confirmation's re-timings of each layer's finalists.
  EXPECT_GT(j["confirmed"].get<size_t>(), 10u);
  // ... and the whole-model pick, one chosen record per layer shape.
  size_t chosen = 0;
  for (const auto& rec : records) chosen += rec.chosen;
  EXPECT_GT(chosen, 5u);
  EXPECT_LE(chosen, j["layers"].get<size_t>());
  EXPECT_EQ(records.size(), 90u + j["confirmed"].get<size_t>() + chosen);
  EXPECT_EQ(j["measure_cache"], "model");
  EXPECT_GT(j["reuse_bytes"].get<double>(), 0);

  r = dlas("records best " + path("r.jsonl") + " -o " + path("best.jsonl") + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto best = tune::read_records(path("best.jsonl"));
  EXPECT_EQ(nlohmann::json::parse(r.out)["tasks"].get<size_t>(), best.size());
  EXPECT_LT(best.size(), records.size());

  r = dlas("profile " + model + " --repeat 1 --json --records " + path("best.jsonl"));
  ASSERT_EQ(r.code, 0) << r.err;
  // Every conv layer of the model it was tuned on has a record.
  int matched = -1, convs = -2;
  ASSERT_EQ(std::sscanf(r.err.c_str(), "records: %d of %d conv layers", &matched, &convs), 2)
      << r.err;
  EXPECT_EQ(matched, convs);
  EXPECT_GT(convs, 10);
  EXPECT_NE(nlohmann::json::parse(r.out)["variant"].get<std::string>().find("conv=records:"),
            std::string::npos);
}

TEST_F(TuneCli, SequentialModeAndQuantizedModels) {
  const std::string model = "resnet18-cifar --width-mult 0.125 --threads 1";
  // A trial budget that ends a few layers in (each layer's checkpoint re-times the model).
  Result r =
      dlas("tune " + model + " --mode sequential --task-trials 2 --budget 110trials --json -o " +
           path("s.jsonl") + " --choices " + path("c.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["mode"], "sequential");
  EXPECT_EQ(j["stop_reason"], "trials");
  EXPECT_EQ(j["trials"].get<size_t>(), 110u);
  // Untuned, the defaults, then one checkpoint per layer done (+ the partial last one).
  EXPECT_GE(j["curve"].size(), 4u);
  size_t chosen = 0;
  for (const auto& rec : tune::read_records(path("s.jsonl"))) chosen += rec.chosen;
  EXPECT_EQ(tune::read_records(path("s.jsonl")).size(),
            110u + j["confirmed"].get<size_t>() + chosen);
  EXPECT_NE(r.err.find("tune: layer 1 "), std::string::npos) << r.err;
  // --choices: the tuner's final whole-model choices, a --layers file.
  // Parses as a --layers file (possibly empty: the untuned model may be the fastest timed)
  // and runs: an unknown node, algorithm or knob would exit 2.
  EXPECT_NO_THROW(read_layer_choices(path("c.json")));
  EXPECT_EQ(dlas("bench " + model + " --repeat 1 --layers " + path("c.json")).code, 0);
  EXPECT_FALSE(fs::exists(path("c.json.partial")));
  // An int8 (fp16) model tunes int8 (f16) tasks; its records apply to the quantized plan.
  // Budgets above the task counts (int8: no winograd twin, fewer tasks).
  for (const auto& [compress, dtype, trials] :
       {std::tuple{"int8", "|int8|", 60u}, std::tuple{"fp16", "|f16|", 90u}}) {
    SCOPED_TRACE(compress);
    const std::string out = path(std::string(compress) + ".jsonl");
    r = dlas("tune " + model + " --compress " + compress + " --budget " + std::to_string(trials) +
             "trials --confirm-rounds 0 --measure-cache warm --json -o " + out);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["confirmed"].get<int>(), 0);
    const auto records = tune::read_records(out);
    size_t chosen = 0;
    for (const auto& rec : records) chosen += rec.chosen;
    ASSERT_EQ(records.size(), trials + chosen);  // every task's default point is among them
    for (const auto& rec : records) EXPECT_NE(rec.task.find(dtype), std::string::npos);
    r = dlas("profile " + model + " --compress " + compress + " --repeat 1 --json --records " +
             out);
    ASSERT_EQ(r.code, 0) << r.err;
    const size_t at = r.err.find("records: ");
    ASSERT_NE(at, std::string::npos) << r.err;
    int matched = -1, convs = -2;
    ASSERT_EQ(std::sscanf(r.err.c_str() + at, "records: %d of %d conv layers", &matched, &convs), 2)
        << r.err;
    EXPECT_EQ(matched, convs);
    EXPECT_GT(convs, 10);
  }
  EXPECT_EQ(dlas("tune " + model + " --mode greedy -o " + path("x.jsonl")).code, 2);
}

TEST_F(TuneCli, BadInputExitsTwo) {
  std::ofstream(path("junk.jsonl")) << "{\"task\": 1}\n";
  Result r =
      dlas("bench resnet18-cifar --width-mult 0.125 --repeat 1 --records " + path("junk.jsonl"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("junk.jsonl:1"), std::string::npos) << r.err;
  r = dlas("tune resnet18-cifar --budget 10parsecs -o " + path("x.jsonl"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--budget"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("x.jsonl")));
  r = dlas("records best " + path("junk.jsonl") + " -o " + path("y.jsonl"));
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(fs::exists(path("y.jsonl")));
  EXPECT_EQ(dlas("tune --help").code, 0);
  EXPECT_EQ(dlas("records best --help").code, 0);
}

}  // namespace
}  // namespace dlas
