// dlas explore: the race's statistics on populations with known accuracies, and the whole
// command on a tiny real model (a nearest-class-mean CNN) and the synthetic dataset.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "data/nearest_mean_model.h"
#include "dlas/data/dataset.h"
#include "dlas/model/onnx.h"
#include "dlas/study/explore.h"
#include "dlas/study/runner.h"
#include "dlas/study/store.h"
#include "optimize/cli_test_util.h"
#include "study/explore_internal.h"
#include "study/explore_store.h"

namespace dlas::study {
namespace {

// --- the bound ---------------------------------------------------------------------------------

TEST(ExploreBound, ExactOnTheWholePopulation) {
  const DifferenceBound b = paired_difference_bound(30, 10, 1000, 1000, kExploreZ);
  EXPECT_DOUBLE_EQ(b.estimate, 0.02);
  EXPECT_DOUBLE_EQ(b.low, 0.02);
  EXPECT_DOUBLE_EQ(b.high, 0.02);
}

TEST(ExploreBound, IdenticalAnswersOnASampleStillLeaveAnInterval) {
  const DifferenceBound b = paired_difference_bound(0, 0, 500, 10000, kExploreZ);
  EXPECT_EQ(b.estimate, 0);
  EXPECT_LT(b.low, 0);
  EXPECT_GT(b.high, 0);
}

TEST(ExploreBound, SampleSizesGrowToTheSplit) {
  EXPECT_EQ(explore_sample_sizes(10000),
            (std::vector<int64_t>{500, 1000, 2000, 4000, 8000, 10000}));
  EXPECT_EQ(explore_sample_sizes(300), (std::vector<int64_t>{300}));
  EXPECT_EQ(explore_order(5, 1), explore_order(5, 1));
  std::vector<int64_t> o = explore_order(1000, 7);
  std::sort(o.begin(), o.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(o[static_cast<size_t>(i)], i);
}

// The race's rule on populations whose true drop is known: a model whose true drop is exactly
// the budget is never dropped at any sample size (over many random orders), and one far
// outside it is dropped early.
TEST(ExploreBound, NeverDropsAModelWithinTheBudget) {
  const int64_t n = 10000;
  const double budget = 0.005;  // 0.5 points
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 60; ++trial) {
    // Differences: +1 where the dense model is right and the candidate wrong, -1 the reverse.
    // True drop = (plus - minus) / n = budget exactly, with varying disagreement.
    const int64_t minus = 20 + trial * 5;
    const int64_t plus = minus + static_cast<int64_t>(budget * n);
    std::vector<int> d(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < plus; ++i) d[static_cast<size_t>(i)] = 1;
    for (int64_t i = 0; i < minus; ++i) d[static_cast<size_t>(plus + i)] = -1;
    std::shuffle(d.begin(), d.end(), rng);
    for (int64_t size : explore_sample_sizes(n)) {
      int64_t p = 0, m = 0;
      for (int64_t i = 0; i < size; ++i) {
        p += d[static_cast<size_t>(i)] == 1;
        m += d[static_cast<size_t>(i)] == -1;
      }
      const DifferenceBound b = paired_difference_bound(p, m, size, n, kExploreZ);
      ASSERT_LE(b.low, budget + 1e-12) << "trial " << trial << " dropped after " << size;
    }
  }
  // 10 points lost: out after the first 500 images.
  std::vector<int> d(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < 1000; ++i) d[static_cast<size_t>(i)] = 1;
  std::shuffle(d.begin(), d.end(), rng);
  int64_t p = 0;
  for (int64_t i = 0; i < 500; ++i) p += d[static_cast<size_t>(i)] == 1;
  EXPECT_GT(paired_difference_bound(p, 0, 500, n, kExploreZ).low, budget);
}

TEST(ExploreBound, DominanceNeedsFasterNoLargerAndConfidentlyAsAccurate) {
  const DifferenceBound sure{0.001, 0.01, 0.02}, unsure{-0.01, 0.0, 0.01};
  EXPECT_TRUE(explore_dominates(1.0, 100, 2.0, 100, sure));
  EXPECT_FALSE(explore_dominates(1.0, 100, 2.0, 100, unsure));  // accuracy not settled
  EXPECT_FALSE(explore_dominates(1.0, 200, 2.0, 100, sure));    // larger
  EXPECT_FALSE(explore_dominates(1.95, 100, 2.0, 100, sure));   // within the latency margin
  EXPECT_FALSE(explore_dominates(-1, 100, 2.0, 100, sure));     // not measured
}

// The level fine-tuned longer: the fastest one that missed the budget by little and would be
// the fastest deployment. Budget 0.5 points: "near" is a drop up to 1.0.
TEST(ExploreBound, FineTuningLongerPicksTheFastestNearMiss) {
  const LongerCandidate cp50{0.204, 0.77, false};  // resnet18-cifar's cp:0.5+int8 on Zen 4
  const LongerCandidate cp25{0.328, 0.23, true};   // within the budget already
  const LongerCandidate far{0.150, 3.0, false};    // far outside it
  const LongerCandidate slow{0.320, 0.6, false};   // near, but not faster than the best
  EXPECT_EQ(explore_longer_pick({cp25, cp50, far, slow}, 0.5, 0.328), 1);
  EXPECT_EQ(explore_longer_pick({cp25, far, slow}, 0.5, 0.328), -1);
  // "always": the fastest miss, however far and however fast.
  EXPECT_EQ(explore_longer_pick({cp25, cp50, far, slow}, 0.5, 0.328, true), 2);
  EXPECT_EQ(explore_longer_pick({cp25, slow}, 0.5, 0.3, true), 1);
  EXPECT_EQ(explore_longer_pick({cp25}, 0.5, 0.3, true), -1);
  // Nothing within the budget yet: any near miss, the fastest first.
  EXPECT_EQ(explore_longer_pick({slow, cp50}, 0.5, -1), 1);
  // A level within the budget, or one that was never timed, is not fine-tuned longer.
  EXPECT_EQ(explore_longer_pick({cp25, LongerCandidate{-1, 0.7, false}}, 0.5, -1), -1);
  // A budget of 0 points: "near" is up to half a point.
  EXPECT_EQ(explore_longer_pick({LongerCandidate{0.1, 0.4, false}}, 0.0, 1.0), 0);
  EXPECT_EQ(explore_longer_pick({LongerCandidate{0.1, 0.6, false}}, 0.0, 1.0), -1);
}

// --- the space
// ------------------------------------------------------------------------------------

// The final comparison's speedups on the round medians of an exploration whose host slowed
// down (its second vCPU taken) between dense's and the recommendation's runs in round 2:
// the median of the rounds' ratios (2.88x) against the ratio of the medians (5.1x).
TEST(ExploreFinal, SpeedupIsTheMedianOfEachRoundsRatio) {
  const std::map<int, double> dense = {{0, 1.7056}, {1, 1.6485}, {2, 0.8977}};
  const std::map<int, double> rec = {{0, 0.5935}, {1, 0.3216}, {2, 0.3220}};
  EXPECT_NEAR(median_round_ratio(dense, rec), 1.7056 / 0.5935, 1e-9);
  // Only rounds both were timed in count; two rounds: the mean of their ratios.
  EXPECT_NEAR(median_round_ratio(dense, {{1, 0.5}, {2, 0.45}, {7, 0.1}}),
              (1.6485 / 0.5 + 0.8977 / 0.45) / 2, 1e-9);
  EXPECT_EQ(median_round_ratio(dense, {{5, 0.3}}), -1);
  EXPECT_EQ(median_round_ratio({}, rec), -1);
  EXPECT_NEAR(median_round_ratio(dense, dense), 1.0, 1e-12);
}

TEST(ExploreSpace, AFileReplacesTheListsItNamesAndNamesTheFaultyKey) {
  const std::string file =
      (std::filesystem::temp_directory_path() / "dlas_explore_space.toml").string();
  std::ofstream(file) << "[space]\ncompress = [\"int8:entropy\", \"wp:0.5+int8\"]\n"
                         "layout = \"nchwc\"\n[explore]\nweight_levels = [0.9]\ntune_top = 1\n";
  const ExploreSpace base = default_explore_space(true);
  const ExploreSpace s = read_explore_space(file, base);
  EXPECT_EQ(s.compress, (std::vector<std::string>{"int8:entropy", "wp:0.5+int8"}));
  EXPECT_EQ(s.layout, (std::vector<std::string>{"nchwc"}));
  EXPECT_EQ(s.weight_levels, (std::vector<double>{0.9}));
  EXPECT_EQ(s.channel_levels, base.channel_levels);  // not named: the default's
  EXPECT_EQ(s.conv_algo, base.conv_algo);
  EXPECT_EQ(s.tune_top, 1);
  EXPECT_EQ(s.finetune_longer, "near-miss");
  std::ofstream(file) << "[explore]\nfinetune_longer = \"never\"\n";
  EXPECT_EQ(read_explore_space(file, base).finetune_longer, "never");
  for (const auto& [text, where] : std::vector<std::pair<std::string, std::string>>{
           {"[space]\nmodels = [\"x\"]\n", ":2:10: space.models: unknown key"},
           {"[space]\ncompress = [\"wp:2\"]\n", "space.compress"},
           {"[explore]\nweight_levels = [0.9, 0.5]\n", "ascending"},
           {"[explore]\nfinetune_longer = \"sometimes\"\n", "explore.finetune_longer"},
           {"[tuning]\nx = 1\n", "unknown table"}}) {
    std::ofstream(file) << text;
    try {
      read_explore_space(file, base);
      ADD_FAILURE() << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove(file);
}

// --- the command
// ----------------------------------------------------------------------------------

constexpr const char* kData = "synthetic:1,8,8:4:1200";

class ExploreCli : public test::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    // Its own measure lock: other measuring tests on the machine do not hold this one up.
    ::setenv("DLAS_MEASURE_LOCK", path("measure.lock").c_str(), 1);
    export_onnx_file(test::nearest_mean_cnn(kData), path("m.onnx"));
    std::ofstream(path("space.toml")) << "[space]\n"
                                         "compress = [\"int8:minmax\", \"fp16\", \"wp:0.99\"]\n"
                                         "conv_algo = [\"auto\", \"direct\"]\n"
                                         "layout = [\"auto\"]\n"
                                         "backend = [\"dlas\"]\n"
                                         "tuning = \"untuned\"\n";
  }
  void TearDown() override {
    ::unsetenv("DLAS_MEASURE_LOCK");
    CliTest::TearDown();
  }
  std::string args(const std::string& out) {
    return str(path("m.onnx"), " --dataset ", kData, " --max-drop 1 --threads 1 --space ",
               path("space.toml"), " --no-finetune --repeat 5 --rounds 1 --budget 10m -o ", out);
  }
  nlohmann::json explore_json(const std::string& out) {
    return nlohmann::json::parse(slurp(std::filesystem::path(out) / "explore.json"));
  }
};

TEST_F(ExploreCli, RespectsTheBudgetDropsTheLossyModelAndItsReadmeReproduces) {
  const std::string out = path("out");
  const test::CliResult r = dlas("explore " + args(out));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"explore.json", "explore.db", "best.onnx", "README.md", "report.html"})
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(out) / f)) << f;
  const nlohmann::json j = explore_json(out);
  // The budget: the recommendation's own answers on the whole split lose at most 1 point.
  EXPECT_LE(j["recommendation"]["drop_points"].get<double>(), 1.0 + 1e-9);
  bool lossy_dropped = false;
  for (const auto& m : j["models"]) {
    if (m["compress"] == "wp:0.99") {
      EXPECT_EQ(m["state"], "dropped");
      EXPECT_NE(m["reason"].get<std::string>().find("outside the budget"), std::string::npos);
      EXPECT_LT(m["samples"].get<int64_t>(), 1200);  // dropped before the whole split
      lossy_dropped = true;
    }
    if (m["state"] == "confirmed") {
      EXPECT_EQ(m["samples"], 1200);  // the test split
    }
  }
  EXPECT_TRUE(lossy_dropped);
  // README's reproduce command for the accuracy, run in DIR, gives the recommendation's.
  const std::string readme = slurp(std::filesystem::path(out) / "README.md");
  const size_t at = readme.find("dlas eval best.onnx");
  ASSERT_NE(at, std::string::npos) << readme;
  const std::string eval = readme.substr(at + 5, readme.find('\n', at) - at - 5);
  const std::string cmd = str("cd ", out, " && ", DLAS_CLI_PATH, " ", eval, " --json > eval.json");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const nlohmann::json ev = nlohmann::json::parse(slurp(std::filesystem::path(out) / "eval.json"));
  EXPECT_DOUBLE_EQ(ev["top1"].get<double>(), j["recommendation"]["accuracy"].get<double>());
  // The store reads as a study.
  ResultStore store(out + "/explore.db", ResultStore::Mode::kReadOnly);
  EXPECT_GE(store.count(), 5);
}

// A tuned deployment whose algorithm has nothing to tune (winograd on an int8 model: no int8
// twin) still leaves its records file, empty, for the scoring and the README that apply it.
TEST_F(ExploreCli, ATuneWithNothingToTuneStillWritesItsRecordsFile) {
  StudyPoint p;
  p.model = p.model_path = path("m.onnx");
  p.compress = "int8";
  p.conv_algo = "winograd";
  p.tuning = "tuned:4trials";
  MeasureRequest req;
  req.variant = resolve_variant(p, nullptr);
  req.model_path = p.model_path;
  req.repeat = 2;
  req.records_out = path("r.jsonl");
  const Row row = measure_variant(req);
  EXPECT_EQ(row.text("tuning_stop"), "no-tasks");
  ASSERT_TRUE(std::filesystem::exists(req.records_out));
  EXPECT_EQ(std::filesystem::file_size(req.records_out), 0u);
  // Applying it runs the untuned choices.
  const ScoreChildArgs a{.model_path = p.model_path,
                         .compress = "int8",
                         .dataset = kData,
                         .conv_algo = "winograd",
                         .records = req.records_out,
                         .end = 10};
  EXPECT_NE(run_score_child(a).find("\"hits\""), std::string::npos);
}

TEST_F(ExploreCli, ResumesAfterSigkillWithoutMeasuringAgain) {
  const std::string out = path("out");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    const std::string cmd = str("exec ", DLAS_CLI_PATH, " explore ", args(out), " >/dev/null 2>&1");
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  // Kill the whole process group once a few measurements are stored.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int64_t stored = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!std::filesystem::exists(out + "/explore.db")) continue;
    try {
      stored = ResultStore(out + "/explore.db", ResultStore::Mode::kReadOnly).count();
    } catch (const Error&) {
      continue;
    }
    if (stored >= 3) break;
  }
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_GE(stored, 3) << "the exploration stored nothing within 120 s";
  stored = ResultStore(out + "/explore.db", ResultStore::Mode::kReadOnly).count();
  // Killed mid-search: the answer is written only at the end.
  ASSERT_FALSE(std::filesystem::exists(out + "/explore.json"));

  // Without --resume a used folder is refused.
  const test::CliResult refused = dlas("explore " + args(out));
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("--resume"), std::string::npos) << refused.err;

  const test::CliResult r = dlas("explore " + args(out) + " --resume");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = explore_json(out);
  const int64_t total = ResultStore(out + "/explore.db", ResultStore::Mode::kReadOnly).count();
  // Only what was missing was measured.
  EXPECT_EQ(j["children_this_run"]["latency"].get<int64_t>(), total - stored);

  // Resuming a finished exploration measures nothing and answers the same.
  const test::CliResult again = dlas("explore " + args(out) + " --resume");
  ASSERT_EQ(again.code, 0) << again.err;
  const nlohmann::json k = explore_json(out);
  EXPECT_EQ(k["children_this_run"]["latency"], 0);
  EXPECT_EQ(k["children_this_run"]["scoring"], 0);
  EXPECT_EQ(k["children_this_run"]["final"], 0);
  EXPECT_EQ(k["children_this_run"]["gate"], 0);
  EXPECT_EQ(k["recommendation"]["label"], j["recommendation"]["label"]);
}

// Whether a pruning level is fine-tuned is decided once per machine and stored: a resumed
// exploration reads the decision (here one planted in the store) instead of timing again,
// so it fine-tunes the same levels and gives the same answer.
TEST_F(ExploreCli, TheFineTuningDecisionIsStoredAndAResumeReusesIt) {
  const std::string out = path("out");
  ASSERT_EQ(dlas("explore " + args(out)).code, 0);
  ExploreStore(out + "/explore.db")
      .put_setting(str("finetune_gate/", current_host().hardware_id, "/cp:0.5"),
                   "no planted by the test");
  std::ofstream(path("levels.toml")) << "[space]\n"
                                        "compress = [\"int8:minmax\"]\n"
                                        "conv_algo = [\"auto\"]\n"
                                        "layout = [\"auto\"]\n"
                                        "backend = [\"dlas\"]\n"
                                        "tuning = \"untuned\"\n"
                                        "[explore]\n"
                                        "weight_levels = []\n"
                                        "channel_levels = [0.5]\n"
                                        "finetuned_quant = [\"dense\"]\n";
  const test::CliResult r = dlas(str("explore ", path("m.onnx"), " --dataset ", kData,
                                     " --max-drop 1 --threads 1 --space ", path("levels.toml"),
                                     " --repeat 5 --rounds 1 --budget 10m --resume -o ", out));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("cp:0.5: not fine-tuned, planted by the test"), std::string::npos)
      << r.out << r.err;
  EXPECT_FALSE(std::filesystem::exists(out + "/sweeps/channel"));
  EXPECT_EQ(explore_json(out)["children_this_run"]["gate"], 0);  // nothing timed again
}

TEST_F(ExploreCli, BadInputIsOneLineAndExit2) {
  const std::string m = path("m.onnx");
  const std::string base = str("explore ", m, " --dataset ", kData, " -o ", path("o"));
  struct Case {
    std::string args, needle;
  } cases[] = {
      {base + " --max-drop 1 --metric top3", "--metric 'top3'"},
      {base + " --max-drop -1", "--max-drop"},
      {base + " --max-drop 1 --budget -5m", "--budget"},
      {base + " --max-drop 1 --budget 10trials", "--budget"},
      {str("explore ", m, " --dataset synthetic:1,8,8:5:100 --max-drop 1 -o ", path("o")),
       "classes"},  // the model has 4
      {str("explore ", path("none.onnx"), " --dataset ", kData, " --max-drop 1 -o ", path("o")),
       "no such model file"},
      {str("explore resnet18-cifar --dataset ", kData, " --max-drop 1 -o ", path("o")),
       "untrained zoo model"},
      {str("explore ", m, " --max-drop 1 -o ", path("o")), "--dataset"},
  };
  for (const Case& c : cases) {
    const test::CliResult r = dlas(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  std::ofstream(path("bad.toml")) << "[space]\nconv_algo = [\"fastest\"]\n";
  const test::CliResult r = dlas(base + " --max-drop 1 --space " + path("bad.toml"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.toml:2"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dlas::study
