// `dlas study` end to end on tiny models (seconds): runs stored, faults recorded, resume
// after SIGKILL, shards merged equal to the unsharded run, export, the measurement lock,
// bad input. No timing assertions: latencies are only checked to be present and ordered.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "dlas/core/error.h"
#include "dlas/hw/isa.h"
#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"
#include "dlas/study/runner.h"
#include "dlas/study/spec.h"
#include "dlas/study/store.h"
#include "dlas/system/loader.h"
#include "dlas/system/peer_executor.h"
#include "study/study_test_util.h"

namespace dlas::study {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out, err;
};

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Columns that differ between two measurements of the same variant.
const std::set<std::string> kTimingColumns = {
    "median_ms",  "mean_ms",     "p10_ms",     "p90_ms",         "min_ms",
    "max_ms",     "std_ms",      "cv",         "first_ms",       "compile_ms",
    "started_at", "finished_at", "duration_s", "peak_rss_bytes", "stderr_tail"};

Row without_timings(Row r) {
  for (const auto& c : kTimingColumns) r.cells.erase(c);
  return r;
}

class StudyCli : public TempDirTest {
 protected:
  static void SetUpTestSuite() {
    models_ = fs::temp_directory_path() / ("dlas_study_models_" + std::to_string(::getpid()));
    fs::create_directories(models_);
    // Tiny versions of two zoo CNNs (a residual net and a depthwise one): milliseconds a variant.
    export_tiny_zoo_model("resnet18-cifar", 8, (models_ / "tiny-a.onnx").string());
    export_tiny_zoo_model("mobilenetv1-cifar", 16, (models_ / "tiny-b.onnx").string());
  }
  static void TearDownTestSuite() { fs::remove_all(models_); }

  void SetUp() override {
    TempDirTest::SetUp();
    fs::copy_file(models_ / "tiny-a.onnx", path("tiny-a.onnx"));
    fs::copy_file(models_ / "tiny-b.onnx", path("tiny-b.onnx"));
    // Each test its own measurement lock: a lead's long study holding the machine-wide lock
    // must not stall the tests (the lock itself has its own test below).
    lock_ = path("measure.lock");
  }

  // A spec over the tiny models (paths relative to the spec, which lives in the test folder).
  std::string write_spec(const std::string& space, const std::string& name = "spec.toml",
                         const std::string& extra = "") {
    const std::string p = path(name);
    std::ofstream(p) << "[study]\nname = \"tiny\"\nrepeat = 2\nwarmup = 0\n[space]\n"
                     << space << "\n"
                     << extra;
    return p;
  }

  Result dlas(const std::string& args, const std::string& env = "") {
    const std::string out = path("stdout.txt"), err = path("stderr.txt");
    const std::string cmd = "env DLAS_MEASURE_LOCK='" + lock_ + "' " + env + " " +
                            std::string(DLAS_CLI_PATH) + " " + args + " >" + out + " 2>" + err;
    const int status = std::system(cmd.c_str());
    Result r{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(out),
             slurp(err)};
    fs::remove(out);
    fs::remove(err);
    return r;
  }

  // Starts `dlas study run SPEC --db DB` in the background (for SIGKILL tests).
  pid_t spawn_run(const std::string& spec, const std::string& db, const std::string& fault) {
    const std::string log = path("runner.log");
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("DLAS_MEASURE_LOCK", lock_.c_str(), 1);
      if (fault.empty())
        ::unsetenv("DLAS_STUDY_FAULT");
      else
        ::setenv("DLAS_STUDY_FAULT", fault.c_str(), 1);
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execl(DLAS_CLI_PATH, DLAS_CLI_PATH, "study", "run", spec.c_str(), "--db", db.c_str(),
              "--timeout", "600", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  }

  // Waits for a spawned runner; kills it after `seconds` so a bug cannot stall the suite.
  static bool wait_exit_ok(pid_t pid, int seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

  // Rows in a database (0 while it does not exist yet or is being created).
  static int64_t row_count(const std::string& db) {
    if (!fs::exists(db)) return 0;
    try {
      return ResultStore(db, ResultStore::Mode::kReadOnly).count();
    } catch (const Error&) {
      return 0;
    }
  }

  // Processes whose command line mentions the test folder (measuring children left behind).
  int processes_in_test_dir() {
    int n = 0;
    const std::string needle = dir().string();
    DIR* d = ::opendir("/proc");
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
      std::string cmd(std::istreambuf_iterator<char>(in), {});
      if (cmd.find(needle) != std::string::npos && ::atoi(e->d_name) != ::getpid()) ++n;
    }
    ::closedir(d);
    return n;
  }
  bool no_processes_left() {
    for (int i = 0; i < 50; ++i) {  // the kernel delivers the death signals asynchronously
      if (processes_in_test_dir() == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // The variant ids a spec expands to on this machine.
  static std::vector<std::string> expected_ids(const std::string& spec) {
    std::vector<std::string> ids;
    for (const StudyPoint& p : expand_study(parse_study_spec_file(spec)).points)
      ids.push_back(resolve_variant(p, nullptr).str());
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  static std::map<std::string, Row> rows_by_id(const std::string& db) {
    std::map<std::string, Row> m;
    for (Row& r : ResultStore(db, ResultStore::Mode::kReadOnly).rows())
      m[r.text("variant_id")] = std::move(r);
    return m;
  }

  std::string lock_;
  static fs::path models_;
};

fs::path StudyCli::models_;

const char* const kTwoByTwo =
    "models = [\"tiny-a.onnx\", \"tiny-b.onnx\"]\nconv_algo = [\"direct\", \"gemm\"]\nthreads = "
    "[1]";

TEST_F(StudyCli, RunStoresEveryVariantAndSkipsThemOnRerun) {
  const std::string spec = write_spec(kTwoByTwo), db = path("r.db");
  const Result r = dlas("study run " + spec + " --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ids = expected_ids(spec);
  ASSERT_EQ(ids.size(), 4u);
  // Not a TTY: one plain progress line per variant, then the summary.
  for (const char* line : {"study: [1/4] ok ", "study: [4/4] ok ", "ran 4: 4 ok, 0 failed"})
    EXPECT_NE(r.err.find(line), std::string::npos) << r.err;
  const auto rows = rows_by_id(db);
  ASSERT_EQ(rows.size(), 4u);
  const int64_t params_a = load_model(path("tiny-a.onnx")).param_count();
  const int64_t params_b = load_model(path("tiny-b.onnx")).param_count();
  for (const std::string& id : ids) {
    ASSERT_TRUE(rows.count(id)) << id;
    const Row& row = rows.at(id);
    EXPECT_EQ(row.text("status"), "ok") << row.text("reason") << row.text("stderr_tail");
    EXPECT_EQ(row.text("hardware_id"), current_host().hardware_id);
    EXPECT_EQ(row.text("variant_hash").size(), 16u);
    EXPECT_EQ(row.text("study"), "tiny");
    EXPECT_EQ(row.integer("repeat"), 2);
    EXPECT_EQ(row.integer("threads"), 1);
    EXPECT_EQ(row.integer("attempts"), 1);
    EXPECT_EQ(row.integer("params"), row.text("model") == "tiny-a.onnx" ? params_a : params_b);
    EXPECT_GT(row.integer("macs"), 0);
    EXPECT_GT(row.integer("weight_bytes"), 0);
    EXPECT_GT(row.integer("peak_activation_bytes"), 0);
    EXPECT_GT(row.integer("peak_rss_bytes"), 0);
    EXPECT_GT(row.real("median_ms"), 0);
    EXPECT_LE(row.real("min_ms"), row.real("median_ms"));
    EXPECT_LE(row.real("median_ms"), row.real("max_ms"));
    EXPECT_LE(row.real("p10_ms"), row.real("p90_ms"));
    EXPECT_FALSE(row.text("git_sha").empty());
    EXPECT_FALSE(row.text("cpu_model").empty());
    EXPECT_EQ(row.text("finished_at").size(), 20u);  // 2024-01-01T00:00:00Z
  }
  // The two algorithms were really measured under their names.
  EXPECT_EQ(rows.begin()->second.text("conv_algo"), "direct");

  // A rerun measures nothing: every row is exactly as it was.
  const Result again = dlas("study run " + spec + " --db " + db + " --json");
  ASSERT_EQ(again.code, 0) << again.err;
  const auto j = nlohmann::json::parse(again.out);
  EXPECT_EQ(j["ran"], 0);
  EXPECT_EQ(j["already_ok"], 4);
  const auto after = rows_by_id(db);
  for (const auto& [id, row] : rows) EXPECT_EQ(after.at(id).cells, row.cells) << id;
}

TEST_F(StudyCli, IsaPathsAndTheOnednnBackend) {
  // scalar: emulated below the detected path; avx512: skipped where the CPU lacks it; the
  // oneDNN backend: one row whatever the ISA list.
  const std::string
      spec = write_spec(
          "models = [\"tiny-b.onnx\"]\nbackend = [\"dlas\", \"onednn\"]\nisa = [\"scalar\", "
          "\"avx512\"]\nthreads = [1]"),
      db = path("r.db");
  const Result r = dlas("study run " + spec + " --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = rows_by_id(db);
  ASSERT_EQ(rows.size(), 3u);
  std::map<std::string, const Row*> by;
  for (const auto& [id, row] : rows) by[row.text("backend") + "/" + row.text("isa")] = &row;
  ASSERT_TRUE(by.count("dlas/scalar") && by.count("dlas/avx512") && by.count("onednn/onednn"));
  const Row& scalar = *by["dlas/scalar"];
  EXPECT_EQ(scalar.text("status"), "ok") << scalar.text("reason");
  EXPECT_EQ(scalar.integer("isa_emulated"), detected_isa() > Isa::kScalar ? 1 : 0);
  EXPECT_EQ(scalar.text("variant_id").find(";emulated") != std::string::npos,
            detected_isa() > Isa::kScalar);
  const Row& avx512 = *by["dlas/avx512"];
  if (isa_supported(Isa::kAvx512)) {
    EXPECT_EQ(avx512.text("status"), "ok") << avx512.text("reason");
  } else {
    EXPECT_EQ(avx512.text("status"), "skipped");
    EXPECT_NE(avx512.text("reason").find("cannot run the avx512 path"), std::string::npos)
        << avx512.text("reason");
    EXPECT_FALSE(avx512.has("median_ms"));
  }
  const Row& onednn = *by["onednn/onednn"];
  EXPECT_EQ(onednn.text("status"), "ok") << onednn.text("reason") << onednn.text("stderr_tail");
  EXPECT_EQ(onednn.text("conv_algo"), "onednn");
  EXPECT_EQ(onednn.integer("opt_level"), 0);
  EXPECT_EQ(onednn.integer("params"), scalar.integer("params"));
}

TEST_F(StudyCli, PeerBackendsRunOrSayWhyNot) {
  // Without a peers environment every peer row is `unsupported` with the fix in its reason;
  // with ONNX Runtime installed (scripts/peers-setup.sh), its rows are measured like dlas's,
  // the int8 graph exported as QuantizeLinear/DequantizeLinear.
  const std::string spec = write_spec(
      "models = [\"tiny-b.onnx\"]\nbackend = [\"dlas\", \"onnxruntime\", \"deepsparse\"]\n"
      "compress = [\"dense\", \"int8\"]\nthreads = [1]");
  const Result none = dlas("study run " + spec + " --db " + path("none.db"),
                           "DLAS_PEERS_VENV='" + path("no-venv") + "'");
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_NE(none.err.find("4 unsupported"), std::string::npos) << none.err;
  for (const auto& [id, row] : rows_by_id(path("none.db"))) {
    if (row.text("backend") == "dlas") {
      EXPECT_EQ(row.text("status"), "ok") << id << ": " << row.text("reason");
      continue;
    }
    EXPECT_EQ(row.text("status"), "unsupported") << id;
    EXPECT_EQ(row.text("conv_algo"), row.text("backend")) << id;
    EXPECT_NE(row.text("reason").find("is not installed"), std::string::npos) << row.text("reason");
    EXPECT_NE(row.text("reason").find("scripts/peers-setup.sh"), std::string::npos);
    EXPECT_FALSE(row.has("median_ms")) << id;
  }
  // Whatever this machine has: a peer row is ok with its statistics, or unsupported with
  // a reason -- never failed or crashed.
  const Result real = dlas("study run " + spec + " --db " + path("real.db"));
  ASSERT_EQ(real.code, 0) << real.err;
  const bool ort = peer_unavailable_reason("onnxruntime").empty();
  for (const auto& [id, row] : rows_by_id(path("real.db"))) {
    const std::string status = row.text("status");
    if (status == "ok") {
      EXPECT_GT(row.real("median_ms"), 0) << id;
      EXPECT_LE(row.real("p10_ms"), row.real("p90_ms")) << id;
      EXPECT_GT(row.integer("macs"), 0) << id;
    } else {
      EXPECT_EQ(status, "unsupported")
          << id << ": " << row.text("reason") << row.text("stderr_tail");
      EXPECT_FALSE(row.text("reason").empty()) << id;
    }
    if (row.text("backend") == "onnxruntime" && row.text("compress") == "dense") {
      EXPECT_EQ(status, ort ? "ok" : "unsupported")
          << row.text("reason") << row.text("stderr_tail");
    }
  }
}

TEST_F(StudyCli, LayoutsAreMeasuredUnderTheirOwnIdsAndCompared) {
  // The child gets --layout: its own variant id (which the fault switch matches) carries it.
  MeasureRequest req;
  req.variant.layout = "nchwc";
  const std::vector<std::string> args = exec_variant_args(req);
  const auto flag = std::find(args.begin(), args.end(), "--layout");
  ASSERT_NE(flag, args.end());
  ASSERT_NE(std::next(flag), args.end());
  EXPECT_EQ(*std::next(flag), "nchwc");

  const std::string
      spec =
          write_spec("models = [\"tiny-a.onnx\"]\nlayout = [\"nchw\", \"nchwc\"]\nthreads = [1]"),
      db = path("r.db");
  const Result r =
      dlas("study run " + spec + " --db " + db, "DLAS_STUDY_FAULT='fail:;layout=nchwc'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto rows = rows_by_id(db);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(expected_ids(spec).size(), 2u);
  std::map<std::string, const Row*> by;
  for (const auto& [id, row] : rows) {
    by[row.text("layout")] = &row;
    EXPECT_NE(id.find(";layout=" + row.text("layout")), std::string::npos) << id;
  }
  ASSERT_TRUE(by.count("nchw") && by.count("nchwc"));
  EXPECT_EQ(by["nchw"]->text("status"), "ok") << by["nchw"]->text("stderr_tail");
  EXPECT_EQ(by["nchwc"]->text("status"), "failed");
  EXPECT_NE(by["nchwc"]->text("reason").find("injected failure"), std::string::npos)
      << by["nchwc"]->text("reason");

  // Without the fault the blocked variant runs; the report compares the two layouts.
  ASSERT_EQ(dlas("study run " + spec + " --db " + db).code, 0);
  rows = rows_by_id(db);
  for (const auto& [id, row] : rows)
    EXPECT_EQ(row.text("status"), "ok")
        << id << ": " << row.text("reason") << row.text("stderr_tail");
  const Result rep = dlas("study report " + db + " -o " + path("rep") + " --no-plots");
  ASSERT_EQ(rep.code, 0) << rep.err;
  const std::string md = slurp(path("rep/report.md"));
  EXPECT_NE(md.find("## Data layouts"), std::string::npos) << md;
  const std::string csv = slurp(path("rep/layouts.csv"));
  EXPECT_EQ(
      csv.rfind("platform,model,batch,opt,algorithm,compress,nchw_ms,nchwc_ms,nchwc_vs_nchw", 0),
      0u)
      << csv;
  EXPECT_NE(csv.find(",tiny-a.onnx,1,3,auto,dense,"), std::string::npos) << csv;

  // A layout the engine does not have is refused by the child's command line.
  const Result bad = dlas("study exec-variant --model tiny-a.onnx --model-path " +
                          path("tiny-a.onnx") + " --isa scalar --layout nhwc --repeat 1");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("--layout"), std::string::npos) << bad.err;
}

TEST_F(StudyCli, DryRunListsAndCreatesNothing) {
  const std::string spec = write_spec(kTwoByTwo), db = path("r.db");
  const Result r = dlas("study run " + spec + " --db " + db + " --dry-run");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(db));
  for (const std::string& id : expected_ids(spec))
    EXPECT_NE(r.out.find("run     " + id), std::string::npos) << r.out;
}

TEST_F(StudyCli, CrashHangAndFailureAreRecordedAndTheStudyGoesOn) {
  const std::string spec = write_spec(kTwoByTwo), db = path("r.db");
  // Substrings of the canonical ids: model and algorithm pick one variant each.
  const std::string a = "model=tiny-a.onnx;batch=1;compress=dense;backend=dlas;conv=";
  const std::string b = "model=tiny-b.onnx;batch=1;compress=dense;backend=dlas;conv=";
  const std::string fault = "crash:" + a + "direct,fail:" + a + "gemm,hang:" + b + "direct";
  const Result r = dlas("study run " + spec + " --db " + db + " --timeout 2",
                        "DLAS_STUDY_FAULT='" + fault + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(no_processes_left()) << "the hung variant's process outlived its timeout";
  auto rows = rows_by_id(db);
  ASSERT_EQ(rows.size(), 4u);
  std::map<std::string, std::string> status;
  for (const auto& [id, row] : rows) {
    const std::string key =
        (row.text("model") == "tiny-a.onnx" ? "a-" : "b-") + row.text("conv_algo");
    status[key] = row.text("status");
    if (key == "a-direct") {
      EXPECT_NE(row.text("reason").find("SIGSEGV"), std::string::npos) << row.text("reason");
      EXPECT_NE(row.text("stderr_tail").find("DLAS_STUDY_FAULT: injecting 'crash'"),
                std::string::npos)
          << row.text("stderr_tail");
      EXPECT_FALSE(row.has("median_ms"));
    } else if (key == "a-gemm") {
      EXPECT_NE(row.text("reason").find("exit code 1: dlas: error: injected failure"),
                std::string::npos)
          << row.text("reason");
    } else if (key == "b-direct") {
      EXPECT_NE(row.text("reason").find("time limit"), std::string::npos) << row.text("reason");
    } else {
      EXPECT_GT(row.real("median_ms"), 0);
    }
  }
  EXPECT_EQ(status, (std::map<std::string, std::string>{{"a-direct", "crashed"},
                                                        {"a-gemm", "failed"},
                                                        {"b-direct", "timeout"},
                                                        {"b-gemm", "ok"}}));
  // Without the faults a rerun redoes the three failures and leaves the ok row alone.
  const Result again = dlas("study run " + spec + " --db " + db);
  ASSERT_EQ(again.code, 0) << again.err;
  const auto after = rows_by_id(db);
  ASSERT_EQ(after.size(), 4u);
  for (const auto& [id, row] : after) {
    EXPECT_EQ(row.text("status"), "ok") << id;
    const bool was_ok = rows.at(id).text("status") == "ok";
    EXPECT_EQ(row.integer("attempts"), was_ok ? 1 : 2) << id;
    if (was_ok) {
      EXPECT_EQ(row.cells, rows.at(id).cells) << id;
    }
    EXPECT_TRUE(row.text("reason").empty()) << id;
  }
}

TEST_F(StudyCli, OutOfMemoryKillIsRecorded) {
  const std::string spec = write_spec("models = [\"tiny-a.onnx\"]\nthreads = [1]"),
                    db = path("r.db");
  const Result r = dlas("study run " + spec + " --db " + db, "DLAS_STUDY_FAULT=oom:tiny-a");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = rows_by_id(db);
  ASSERT_EQ(rows.size(), 1u);
  const Row& row = rows.begin()->second;
  EXPECT_EQ(row.text("status"), "crashed");
  EXPECT_NE(row.text("reason").find("SIGKILL"), std::string::npos) << row.text("reason");
  EXPECT_NE(row.text("reason").find("out of memory"), std::string::npos) << row.text("reason");
  EXPECT_NE(row.text("stderr_tail").find("injecting 'oom'"), std::string::npos);
}

TEST_F(StudyCli, ResumeAfterSigkillLosesAndDuplicatesNothing) {
  const std::string spec = write_spec(
      "models = [\"tiny-a.onnx\", \"tiny-b.onnx\"]\nconv_algo = [\"direct\", \"gemm\", "
      "\"spatial-pack\"]\nthreads = [1]");
  const auto ids = expected_ids(spec);
  ASSERT_EQ(ids.size(), 6u);
  // 1) Killed while a variant hangs: the three before it are stored, the hung child dies too.
  const std::string db = path("r.db");
  const pid_t pid =
      spawn_run(spec, db, "hang:model=tiny-b.onnx;batch=1;compress=dense;backend=dlas;conv=direct");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (row_count(db) < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(row_count(db), 3) << slurp(path("runner.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let it settle on the hang
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(no_processes_left()) << "the measuring child outlived its killed runner";
  const auto partial = rows_by_id(db);
  ASSERT_EQ(partial.size(), 3u);
  for (const auto& [id, row] : partial) EXPECT_EQ(row.text("status"), "ok") << id;
  const Result r = dlas("study run " + spec + " --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto all = rows_by_id(db);
  std::vector<std::string> got;
  for (const auto& [id, row] : all) {
    got.push_back(id);
    EXPECT_EQ(row.text("status"), "ok") << id;
    EXPECT_EQ(row.integer("attempts"), 1) << id;
    if (partial.count(id)) {
      EXPECT_EQ(row.cells, partial.at(id).cells) << "rerun: " << id;
    }
  }
  EXPECT_EQ(got, ids);

  // 2) Killed at arbitrary moments (start-up, mid-variant, mid-write), then finished.
  const std::string db2 = path("r2.db");
  for (int delay_ms : {5, 40, 90, 15, 150, 60}) {
    const pid_t p = spawn_run(spec, db2, "");
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(p, SIGKILL);
    ::waitpid(p, &status, 0);
  }
  EXPECT_TRUE(no_processes_left());
  const Result done = dlas("study run " + spec + " --db " + db2);
  ASSERT_EQ(done.code, 0) << done.err;
  std::vector<std::string> got2;
  for (const auto& [id, row] : rows_by_id(db2)) {
    got2.push_back(id);
    EXPECT_EQ(row.text("status"), "ok") << id;
    EXPECT_EQ(row.integer("attempts"), 1) << id;  // a killed variant never left a row
  }
  EXPECT_EQ(got2, ids);
}

TEST_F(StudyCli, ShardsMergedEqualTheUnshardedRun) {
  // Five variants: the shards are uneven (3 + 2).
  const std::string spec = write_spec(
      "models = [\"tiny-a.onnx\", \"tiny-b.onnx\"]\nconv_algo = [\"direct\", \"gemm\", "
      "\"winograd\"]\nthreads = [1]",
      "spec.toml", "[[exclude]]\nmodel = \"tiny-b.onnx\"\nconv_algo = \"winograd\"\n");
  ASSERT_EQ(expected_ids(spec).size(), 5u);
  Result r = dlas("study run " + spec + " --db " + path("all.db"));
  ASSERT_EQ(r.code, 0) << r.err;
  // Shard 0 from the flag, shard 1 from a Slurm array's variables; "{shard}" names the files.
  r = dlas("study run " + spec + " --shard 0/2 --db " + path("shard-{shard}.db"));
  ASSERT_EQ(r.code, 0) << r.err;
  r = dlas("study run " + spec + " --db " + path("shard-{shard}.db") + " --json",
           "SLURM_ARRAY_TASK_ID=6 SLURM_ARRAY_TASK_MIN=5 SLURM_ARRAY_TASK_COUNT=2");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["shard"]["index"], 1);
  EXPECT_EQ(j["shard"]["source"], "slurm");
  const auto s0 = rows_by_id(path("shard-0.db")), s1 = rows_by_id(path("shard-1.db"));
  EXPECT_EQ(s0.size(), 3u);
  EXPECT_EQ(s1.size(), 2u);
  for (const auto& [id, row] : s0) EXPECT_FALSE(s1.count(id)) << "in both shards: " << id;

  r = dlas("study merge " + path("shard-0.db") + " " + path("shard-1.db") + " -o " +
           path("merged.db"));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto all = rows_by_id(path("all.db")), merged = rows_by_id(path("merged.db"));
  ASSERT_EQ(merged.size(), all.size());
  for (const auto& [id, row] : all) {
    ASSERT_TRUE(merged.count(id)) << id;
    EXPECT_EQ(without_timings(merged.at(id)).cells, without_timings(row).cells) << id;
    EXPECT_EQ(merged.at(id).cells.at("median_ms"),
              (s0.count(id) ? s0 : s1).at(id).cells.at("median_ms"));
  }
}

TEST_F(StudyCli, ExportWritesEveryRowAsStored) {
  const std::string spec = write_spec(kTwoByTwo), db = path("r.db");
  // One crashed row: its reason and stderr hold spaces, parentheses, quotes-free text and a
  // newline, which CSV must quote.
  Result r = dlas("study run " + spec + " --db " + db,
                  "DLAS_STUDY_FAULT='crash:model=tiny-b.onnx;batch=1;compress=dense;backend=dlas;"
                  "conv=gemm'");
  ASSERT_EQ(r.code, 0) << r.err;
  r = dlas("study export " + db + " --format csv -o " + path("r.csv"));
  ASSERT_EQ(r.code, 0) << r.err;
  const Result js = dlas("study export " + db + " --format json");
  ASSERT_EQ(js.code, 0) << js.err;
  const auto rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
  const auto csv = parse_csv(slurp(path("r.csv")));
  const auto json = nlohmann::json::parse(js.out);
  ASSERT_EQ(rows.size(), 4u);
  ASSERT_EQ(csv.size(), rows.size() + 1);
  ASSERT_EQ(json.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    EXPECT_TRUE(rows_equal_export(rows[i], csv[0], csv[i + 1], json[i])) << i;
  int crashed = 0;
  for (const auto& o : json) crashed += o["status"] == "crashed";
  EXPECT_EQ(crashed, 1);
  // A failed export leaves no file behind.
  r = dlas("study export " + db + " -o " + path("no/such/dir/r.csv"));
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(fs::exists(path("no/such/dir")));
}

TEST_F(StudyCli, MeasurementsWaitForTheMachineLock) {
  const std::string spec = write_spec("models = [\"tiny-a.onnx\"]\nthreads = [1]"),
                    db = path("r.db");
  // O_CLOEXEC: the runner must not inherit (and so hold) the test's lock.
  const int fd = ::open(lock_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // "another measurement" is running
  const pid_t pid = spawn_run(spec, db, "");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (slurp(path("runner.log")).find("waiting for another measurement") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_NE(slurp(path("runner.log")).find("waiting for another measurement"), std::string::npos);
  EXPECT_EQ(row_count(db), 0);  // nothing measured while the lock is held
  ::close(fd);                  // releases it
  EXPECT_TRUE(wait_exit_ok(pid, 120)) << slurp(path("runner.log"));
  EXPECT_EQ(row_count(db), 1);
}

TEST_F(StudyCli, BadInputExitsTwoAndKeepsStoredRows) {
  // Invalid spec: one line naming file, line and field.
  std::string spec = write_spec("models = [\"tiny-a.onnx\"]\nconv_algo = [\"fft\"]", "bad.toml");
  Result r = dlas("study run " + spec + " --db " + path("r.db"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("dlas: error: " + spec + ":7:", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("[space].conv_algo[0]"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(path("r.db")));
  r = dlas("study run " + write_spec("models = [\"nosuchnet\"]", "bad2.toml") + " --db " +
           path("r.db"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown model 'nosuchnet'"), std::string::npos) << r.err;
  EXPECT_EQ(dlas("study run " + path("missing.toml") + " --db " + path("r.db")).code, 2);

  // A database from a newer dlas: refused, untouched.
  spec = write_spec("models = [\"tiny-a.onnx\"]\nthreads = [1]");
  const std::string db = path("r.db");
  ASSERT_EQ(dlas("study run " + spec + " --db " + db).code, 0);
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  const std::string newer = "PRAGMA user_version = " + std::to_string(kStoreSchemaVersion + 1);
  ASSERT_EQ(sqlite3_exec(h, newer.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(h);
  r = dlas("study run " + spec + " --db " + db);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("newer dlas"), std::string::npos) << r.err;
  EXPECT_EQ(dlas("study export " + db).code, 2);
  const std::string copy = path("copy.db");
  fs::copy_file(db, copy);
  r = dlas("study merge " + copy + " -o " + path("merged.db"));
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(fs::exists(path("merged.db")));
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, "PRAGMA user_version = 2", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(h);
  EXPECT_EQ(row_count(db), 1);  // the stored row survived every refusal

  // A read-only database.
  if (make_read_only(db)) {
    r = dlas("study run " + spec + " --db " + db);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("read-only"), std::string::npos) << r.err;
    EXPECT_EQ(dlas("study export " + db).code, 0);  // reading it is fine
    undo_read_only(db);
  }

  // Not a database; a folder that does not exist; a bad shard; a missing subcommand.
  std::ofstream(path("text.db")) << "hello, this is not SQLite at all, not even a little bit";
  r = dlas("study run " + spec + " --db " + path("text.db"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not a SQLite database"), std::string::npos) << r.err;
  EXPECT_EQ(dlas("study run " + spec + " --db " + path("no/dir/r.db")).code, 2);
  EXPECT_EQ(dlas("study run " + spec + " --db " + db + " --shard 2/2").code, 2);
  EXPECT_EQ(dlas("study export " + path("missing.db")).code, 2);
  EXPECT_EQ(dlas("study").code, 2);
  EXPECT_EQ(dlas("study export " + db + " --format xml").code, 2);
}

TEST_F(StudyCli, DiskFullStopsWithAClearMessageAndKeepsRows) {
  const std::string spec = write_spec(kTwoByTwo), db = path("r.db");
  // A file-size limit stands in for a full disk: writes past it fail (SIGXFSZ ignored, so
  // write() returns an error instead of killing the process). 40 KiB hold a few rows only.
  const std::string cmd = "bash -c \"trap '' XFSZ; ulimit -f 40; DLAS_MEASURE_LOCK='" + lock_ +
                          "' exec " + DLAS_CLI_PATH + " study run " + spec + " --db " + db +
                          "\" 2>" + path("err.txt");
  const int status = std::system(cmd.c_str());
  const std::string err = slurp(path("err.txt"));
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 2) << err;
  const std::string last = err.substr(err.rfind("dlas: error: "));
  EXPECT_NE(last.find(db), std::string::npos) << last;
  EXPECT_NE(last.find("disk full"), std::string::npos) << last;
  // What was stored before the disk filled is intact; rerun with room finishes the rest.
  const auto before = rows_by_id(db);
  EXPECT_GE(before.size(), 1u);
  EXPECT_LT(before.size(), 4u);
  const Result r = dlas("study run " + spec + " --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto after = rows_by_id(db);
  EXPECT_EQ(after.size(), 4u);
  for (const auto& [id, row] : before) EXPECT_EQ(after.at(id).cells, row.cells) << id;
}

}  // namespace
}  // namespace dlas::study
