// [study] calibrate: the runner calibrates the machine profiles its dlas variants need before
// measuring them, and every dlas row names the profile its plan followed. Calibration runs
// over one tiny shape here (the built-in list takes ~45 s a profile), in a temporary cache.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/machine_profile.h"
#include "dlas/core/error.h"
#include "dlas/hw/cpu.h"
#include "dlas/hw/isa.h"
#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"
#include "dlas/study/runner.h"
#include "dlas/study/spec.h"
#include "dlas/study/store.h"
#include "dlas/system/calibrate.h"
#include "study/study_test_util.h"

namespace dlas::study {
namespace {

namespace fs = std::filesystem;

// Sets (or with nullptr unsets) an environment variable for a scope; the measuring children
// inherit it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class StudyCalibrate : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    export_tiny_zoo_model("resnet18-cifar", 8, path("tiny.onnx"));
    // dlas and oneDNN at 1 and 2 threads: two (ISA path, threads) pairs for dlas.
    std::ofstream(path("spec.toml"))
        << "[study]\nname = \"cal\"\nrepeat = 2\nwarmup = 0\ncalibrate = true\n[space]\n"
           "models = [\"tiny.onnx\"]\nbackend = [\"dlas\", \"onednn\"]\nthreads = [1, 2]\n";
    spec_ = parse_study_spec_file(path("spec.toml"));
  }

  // Run options whose calibration measures one small shape and records its calls.
  RunOptions options(const std::string& db) {
    RunOptions o;
    o.db_path = path(db);
    o.exe = DLAS_CLI_PATH;
    o.lock_path = path("measure.lock");
    o.calibrate = [this](const CalibrateOptions& c) {
      calls_.emplace_back(c.isa, c.threads);
      CalibrateOptions small = c;
      small.shapes = {ConvProblem::from_key("c16_h8_w8_k16_3x3_s1x1_p1x1x1x1_d1x1_g1")};
      small.repeat = 1;
      small.extra_knob_points = 0;
      small.search_seconds = 0;
      return calibrate(small);
    };
    return o;
  }

  // The database's rows by "backend/threads" ("dlas/2").
  std::map<std::string, Row> rows(const std::string& db) {
    std::map<std::string, Row> m;
    for (Row& r : ResultStore(path(db), ResultStore::Mode::kReadOnly).rows())
      m[r.text("backend") + "/" + r.text("threads")] = std::move(r);
    return m;
  }

  // `dlas study run` with `env` (NAME=VALUE ...) added to this process's environment.
  std::pair<int, std::string> cli(const std::string& args, const std::string& env) {
    const std::string out = path("out.txt"), err = path("err.txt");
    const std::string cmd = "env DLAS_MEASURE_LOCK='" + path("measure.lock") + "' " + env + " " +
                            DLAS_CLI_PATH + " " + args + " >" + out + " 2>" + err;
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, slurp(out) + slurp(err)};
  }

  StudySpec spec_;
  std::vector<std::pair<Isa, int>> calls_;
};

TEST_F(StudyCalibrate, MissingProfilesAreCalibratedOnceBeforeTheVariants) {
  const ScopedEnv cache("XDG_CACHE_HOME", path("cache").c_str());
  const ScopedEnv no_override("DLAS_PROFILE", nullptr);
  const Isa isa = active_isa();
  const std::string p1 = default_profile_path(isa, 1), p2 = default_profile_path(isa, 2);
  ASSERT_EQ(p1.rfind(path("cache/dlas/"), 0), 0u) << p1;

  // A dry run says what it would calibrate and measures nothing.
  RunOptions dry = options("dry.db");
  dry.dry_run = true;
  RunSummary s = run_study(spec_, dry);
  ASSERT_EQ(s.calibrations.size(), 2u);
  for (const ProfileCalibration& c : s.calibrations)
    EXPECT_EQ(c.status, ProfileCalibration::kPlanned) << c.path;
  EXPECT_TRUE(calls_.empty());
  EXPECT_FALSE(fs::exists(p1));

  // The run calibrates each pair once, at the variants' resolved ISA path and threads, and
  // saves the profiles where the variants' plans look for them.
  s = run_study(spec_, options("r.db"));
  EXPECT_EQ(s.ok, 4u);
  EXPECT_EQ(calls_, (std::vector<std::pair<Isa, int>>{{isa, 1}, {isa, 2}}));
  ASSERT_EQ(s.calibrations.size(), 2u);
  EXPECT_EQ(s.calibrations[0].path, p1);
  EXPECT_EQ(s.calibrations[1].path, p2);
  EXPECT_EQ(s.calibrations[0].isa, isa_name(isa));
  for (const ProfileCalibration& c : s.calibrations)
    EXPECT_EQ(c.status, ProfileCalibration::kCalibrated) << c.path;
  const MachineProfile m = MachineProfile::load(p2);
  EXPECT_EQ(m.cpu, cpu_info().model_name);
  EXPECT_EQ(m.isa, isa);
  EXPECT_EQ(m.threads, 2);
  ASSERT_EQ(m.entries.size(), 2u);  // the shape and its int8 twin
  EXPECT_EQ(m.entries[1].shape_class, "int8-" + m.entries[0].shape_class);
  // Each dlas row names its profile; oneDNN rows have none.
  auto r = rows("r.db");
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r["dlas/1"].text("profile"), p1) << r["dlas/1"].text("stderr_tail");
  EXPECT_EQ(r["dlas/2"].text("profile"), p2);
  EXPECT_FALSE(r["onednn/1"].has("profile"));
  EXPECT_FALSE(r["onednn/2"].has("profile"));

  // Present profiles are not re-measured.
  s = run_study(spec_, options("r2.db"));
  EXPECT_EQ(calls_.size(), 2u);
  ASSERT_EQ(s.calibrations.size(), 2u);
  for (const ProfileCalibration& c : s.calibrations)
    EXPECT_EQ(c.status, ProfileCalibration::kPresent) << c.path;
  // Nothing left to run: nothing to calibrate either.
  s = run_study(spec_, options("r2.db"));
  EXPECT_EQ(s.ran, 0u);
  EXPECT_TRUE(s.calibrations.empty());

  // The command line says so, and its JSON summary lists them.
  const auto run = cli("study run " + path("spec.toml") + " --db " + path("cli.db") + " --json",
                       "XDG_CACHE_HOME='" + path("cache") + "' DLAS_PROFILE=");
  ASSERT_EQ(run.first, 0) << run.second;
  EXPECT_NE(run.second.find("machine profiles present, not re-measured"), std::string::npos)
      << run.second;
  EXPECT_NE(run.second.find("\"status\": \"present\""), std::string::npos) << run.second;
  EXPECT_EQ(rows("cli.db")["dlas/2"].text("profile"), p2);
  // Exports carry the column.
  const auto csv = cli("study export " + path("cli.db") + " --format csv", "");
  ASSERT_EQ(csv.first, 0) << csv.second;
  EXPECT_NE(csv.second.find(",profile,"), std::string::npos) << csv.second.substr(0, 400);
  EXPECT_NE(csv.second.find(p2), std::string::npos);
}

TEST_F(StudyCalibrate, DlasProfileSkipsTheStep) {
  const ScopedEnv cache("XDG_CACHE_HOME", path("cache").c_str());
  const ScopedEnv none("DLAS_PROFILE", "none");
  const RunSummary s = run_study(spec_, options("r.db"));
  EXPECT_TRUE(calls_.empty());
  EXPECT_TRUE(s.calibrations.empty());
  EXPECT_NE(s.calibration_skipped.find("DLAS_PROFILE=none"), std::string::npos)
      << s.calibration_skipped;
  EXPECT_FALSE(fs::exists(path("cache")));
  auto r = rows("r.db");
  EXPECT_EQ(r["dlas/1"].text("profile"), "none");
  EXPECT_FALSE(r["onednn/1"].has("profile"));
  const auto [code, text] = cli("study run " + path("spec.toml") + " --db " + path("cli.db"),
                                "XDG_CACHE_HOME='" + path("cache") + "' DLAS_PROFILE=none");
  EXPECT_EQ(code, 0) << text;
  EXPECT_NE(text.find("calibrate: skipped, DLAS_PROFILE=none overrides the calibration cache"),
            std::string::npos)
      << text;
}

TEST_F(StudyCalibrate, AFailingCalibrationStopsTheRunWithItsError) {
  const ScopedEnv cache("XDG_CACHE_HOME", path("cache").c_str());
  const ScopedEnv no_override("DLAS_PROFILE", nullptr);
  RunOptions o = options("r.db");
  o.calibrate = [](const CalibrateOptions&) -> CalibrateResult {
    fail(ErrorKind::kInvalidInput, "calibrate: shapes must be f32");
  };
  try {
    run_study(spec_, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()).rfind("[study].calibrate: calibrating ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("shapes must be f32"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ResultStore(path("r.db"), ResultStore::Mode::kReadOnly).count(), 0);
  o.calibrate = [](const CalibrateOptions&) -> CalibrateResult {
    throw std::runtime_error("out of disk");
  };
  try {
    run_study(spec_, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_EQ(e.exit_code(), 1);
  }
  // No cache folder at all: bad input, found before anything runs.
  const ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
  const ScopedEnv no_home("HOME", nullptr);
  RunOptions dry = options("dry.db");
  dry.dry_run = true;
  try {
    run_study(spec_, dry);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("no calibration cache folder"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(calls_.empty());
}

}  // namespace
}  // namespace dlas::study
