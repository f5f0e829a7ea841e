// `mpirun -n 2 dlas study run` on localhost equals the unsharded run row for row, and
// `dlas study report` / `observe` from the command line: the files, the JSON, and a
// clear exit 2 on a database that is not one.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"
#include "dlas/study/mpi.h"
#include "dlas/study/store.h"
#include "study/study_test_util.h"

namespace dlas::study {
namespace {

namespace fs = std::filesystem;

class StudyMpiReport : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    export_tiny_zoo_model("resnet18-cifar", 8, path("tiny.onnx"));
    std::ofstream(path("spec.toml"))
        << "[study]\nname = \"mpi\"\nrepeat = 2\nwarmup = 0\n[space]\n"
           "models = [\"tiny.onnx\"]\nconv_algo = [\"direct\", \"gemm\", \"winograd\"]\n"
           "threads = [1, 2]\n";
  }

  // Runs a shell command line; returns its exit code, stdout in *out.
  int sh(const std::string& cmd, std::string* out = nullptr) {
    const std::string o = path("out.txt"), e = path("err.txt");
    const int status = std::system(
        ("env DLAS_MEASURE_LOCK='" + path("lock") + "' " + cmd + " >" + o + " 2>" + e).c_str());
    std::ifstream f(o), g(e);
    std::string text((std::istreambuf_iterator<char>(f)), {});
    err_ = std::string((std::istreambuf_iterator<char>(g)), {});
    if (out) *out = text;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  }
  std::string cli() const { return std::string(DLAS_CLI_PATH); }
  std::string err_;
};

std::map<std::string, std::string> ids_and_status(const std::string& db) {
  std::map<std::string, std::string> m;
  for (const Row& r : ResultStore(db, ResultStore::Mode::kReadOnly).rows())
    m[r.text("variant_id")] = r.text("status") + "|" + r.text("model") + "|" +
                              std::to_string(r.integer("threads")) + "|" + r.text("conv_algo");
  return m;
}

TEST_F(StudyMpiReport, MpirunTwoRanksEqualsTheUnshardedRun) {
  if (!mpi_available()) GTEST_SKIP() << "dlas built without MPI";
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun";
  ASSERT_EQ(sh(cli() + " study run " + path("spec.toml") + " --db " + path("one.db")), 0) << err_;
  // Root may only launch with --allow-run-as-root; --oversubscribe: 2 ranks on any core count.
  const std::string mpirun = "mpirun --oversubscribe" +
                             std::string(::geteuid() == 0 ? " --allow-run-as-root" : "") + " -n 2 ";
  ASSERT_EQ(sh(mpirun + cli() + " study run " + path("spec.toml") + " --db " + path("mpi.db")), 0)
      << err_;
  EXPECT_NE(err_.find("rank 0 merged 2 rank databases"), std::string::npos) << err_;
  const auto one = ids_and_status(path("one.db")), two = ids_and_status(path("mpi.db"));
  EXPECT_EQ(one.size(), 6u);
  EXPECT_EQ(one, two);
  for (const auto& e : fs::directory_iterator(dir()))  // rank databases removed
    EXPECT_EQ(e.path().string().find(".rank"), std::string::npos) << e.path();
  // A rerun under mpirun measures nothing new and keeps every row.
  ASSERT_EQ(sh(mpirun + cli() + " study run " + path("spec.toml") + " --db " + path("mpi.db")), 0)
      << err_;
  EXPECT_NE(err_.find("ran 0"), std::string::npos) << err_;
  EXPECT_EQ(ids_and_status(path("mpi.db")), two);
}

TEST_F(StudyMpiReport, ReportAndObserveFromTheCommandLine) {
  ASSERT_EQ(sh(cli() + " study run " + path("spec.toml") + " --db " + path("r.db")), 0) << err_;
  std::string out;
  ASSERT_EQ(
      sh(cli() + " study report " + path("r.db") + " -o " + path("rep") + " --no-plots --json",
         &out),
      0)
      << err_;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["tables"], 9);  // the summary first
  EXPECT_TRUE(j["accuracy_summary"].empty());  // no dataset: no accuracy
  EXPECT_TRUE(j["accuracy_curves"].empty());
  for (const auto& f : j["files"]) EXPECT_TRUE(fs::exists(path("rep/" + f.get<std::string>())));
  // The latency table has the 6 stored rows.
  std::ifstream lat(path("rep/latency.csv"));
  const auto rows = parse_csv(std::string((std::istreambuf_iterator<char>(lat)), {}));
  EXPECT_EQ(rows.size(), 7u);  // header + 6

  ASSERT_EQ(sh(cli() + " study observe " + path("r.db") + " --json", &out), 0) << err_;
  const auto obs = nlohmann::json::parse(out);
  EXPECT_EQ(obs.size(), 13u);
  std::set<std::string> verdicts;
  for (const auto& o : obs) verdicts.insert(o["verdict"].get<std::string>());
  EXPECT_TRUE(verdicts.count("not testable"));

  std::ofstream(path("junk.db")) << "not a database";
  EXPECT_EQ(sh(cli() + " study report " + path("junk.db") + " -o " + path("rep2")), 2);
  EXPECT_FALSE(fs::exists(path("rep2/report.md")));
  EXPECT_EQ(err_.find('\n'), err_.size() - 1) << err_;  // one line
  EXPECT_EQ(sh(cli() + " study observe " + path("missing.db")), 2);
}

// The compression dimension end to end: dense and pruned variants of one model, the pruned
// one on a sparse algorithm too; the report's speedup table compares each with its dense twin.
TEST_F(StudyMpiReport, CompressedVariantsRunAndTheSpeedupTableFills) {
  std::ofstream(path("c.toml"))
      << "[study]\nname = \"c\"\nrepeat = 2\nwarmup = 0\n[space]\n"
         "models = [\"tiny.onnx\"]\ncompress = [\"dense\", \"wp:0.9:layer\", \"int8\"]\n"
         "conv_algo = [\"gemm\", \"sparse-direct\"]\n";
  ASSERT_EQ(sh(cli() + " study run " + path("c.toml") + " --db " + path("c.db")), 0) << err_;
  int pruned = 0, quantized = 0;
  for (const Row& r : ResultStore(path("c.db"), ResultStore::Mode::kReadOnly).rows()) {
    EXPECT_EQ(r.text("status"), kStatusOk) << r.text("variant_id") << ": " << r.text("reason");
    if (r.text("compress") == "wp:0.9:layer") ++pruned;
    if (r.text("compress") == "int8") ++quantized;
  }
  EXPECT_EQ(pruned, 2);
  EXPECT_EQ(quantized, 2);
  ASSERT_EQ(sh(cli() + " study report " + path("c.db") + " -o " + path("crep") + " --no-plots"), 0)
      << err_;
  std::ifstream sp(path("crep/speedup.csv"));
  const auto rows = parse_csv(std::string((std::istreambuf_iterator<char>(sp)), {}));
  ASSERT_EQ(rows.size(), 5u);  // header + (gemm, sparse-direct) x (wp:0.9:layer, int8)
  int checked = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i][5] == "wp:0.9:layer") {
      EXPECT_EQ(rows[i][8], "10.00");  // expected 1 / (1 - 0.9)
      ++checked;
    }
    if (rows[i][5] == "int8") {
      EXPECT_EQ(rows[i][8], "4.00");  // expected: 8-bit vs 32-bit
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4);
}

// The tuning dimension end to end: a tuned variant tunes in its child (a few trials), stores
// its tuning columns, runs the tuned layer choices, and the report pairs it with its
// untuned twin.
TEST_F(StudyMpiReport, TunedVariantsStoreTheirCostAndTheTuningTableFills) {
  std::ofstream(path("t.toml"))
      << "[study]\nname = \"t\"\nrepeat = 2\nwarmup = 0\ntimeout = 300\n[space]\n"
         "models = [\"tiny.onnx\"]\nconv_algo = [\"gemm\", \"auto\"]\n"
         "tuning = [\"untuned\", \"tuned:8trials,60s\"]\n";
  ASSERT_EQ(sh(cli() + " study run " + path("t.toml") + " --db " + path("t.db")), 0) << err_;
  int tuned = 0;
  for (const Row& r : ResultStore(path("t.db"), ResultStore::Mode::kReadOnly).rows()) {
    EXPECT_EQ(r.text("status"), kStatusOk) << r.text("variant_id") << ": " << r.text("reason");
    if (r.text("schedule") == "default") {
      EXPECT_EQ(r.text("variant_id").find("tuned"), std::string::npos);
      EXPECT_FALSE(r.has("tuning_trials"));
      continue;
    }
    ++tuned;
    EXPECT_EQ(r.text("schedule"), "tuned:8trials,60s");
    EXPECT_NE(r.text("variant_id").find("schedule=tuned:8trials,60s"), std::string::npos);
    EXPECT_GE(r.integer("tuning_trials"), 1);
    EXPECT_LE(r.integer("tuning_trials"), 8 + 16);  // the budget is checked between batches
    EXPECT_GT(r.real("tuning_s"), 0);
    EXPECT_FALSE(r.text("tuning_stop").empty());
  }
  EXPECT_EQ(tuned, 2);
  ASSERT_EQ(sh(cli() + " study report " + path("t.db") + " -o " + path("trep") + " --no-plots"), 0)
      << err_;
  std::ifstream tu(path("trep/tuning.csv"));
  const auto rows = parse_csv(std::string((std::istreambuf_iterator<char>(tu)), {}));
  ASSERT_EQ(rows.size(), 3u);  // header + gemm + auto
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][4], "tuned:8trials,60s");
    EXPECT_GT(std::stod(rows[i][7]), 0.0);  // untuned_ms
    EXPECT_GT(std::stod(rows[i][8]), 0.0);  // tuned_ms
  }
}

}  // namespace
}  // namespace dlas::study
