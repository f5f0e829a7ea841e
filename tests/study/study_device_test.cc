// The device dimension of a study: the CPU and CUDA GPUs. Parsing and normalisation of
// `device` in [space], a study with a GPU variant on a machine without one (stored
// `unsupported` with the reason, the run and the report go on), the store's device column,
// and the report's platform comparison (observations VIII and XIII) on forged rows.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"
#include "dlas/study/report.h"
#include "dlas/study/runner.h"
#include "dlas/study/spec.h"
#include "study/study_test_util.h"

namespace dlas::study {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The kInvalidInput message parsing `text` throws ("" when none).
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

Expansion expand(const std::string& space) {
  return expand_study(
      parse_study_spec("[space]\nmodels = [\"resnet18-cifar\"]\n" + space, "s.toml"));
}

TEST(StudyDeviceSpec, DefaultsToTheCpuAndKeepsCpuIds) {
  const StudySpec s = parse_study_spec("[space]\nmodels = [\"resnet18-cifar\"]\n", "s.toml");
  EXPECT_EQ(s.space.device, (std::vector<std::string>{"cpu"}));
  const Expansion e = expand_study(s);
  ASSERT_EQ(e.points.size(), 1u);
  EXPECT_EQ(e.points[0].device, "cpu");
  EXPECT_EQ(e.points[0].value("device"), "cpu");
  // A CPU point's string (and so its variant id) is what it was before devices existed.
  EXPECT_EQ(e.points[0].str(),
            "model=resnet18-cifar;compress=dense;batch=1;backend=dlas;isa=native;opt=3;conv=auto;"
            "threads=1");
  EXPECT_FALSE(contains(resolve_variant(e.points[0], nullptr).str(), "device"));
  // `device` is a dimension like the others (an [[exclude]] key too).
  const auto& dims = study_dimensions();
  const auto backend = std::find(dims.begin(), dims.end(), "backend");
  ASSERT_NE(backend, dims.end());
  EXPECT_EQ(*std::next(backend), "device");
}

TEST(StudyDeviceSpec, CudaIsStoredAsCudaZeroAndBadValuesAreRefused) {
  const StudySpec s = parse_study_spec(
      "[space]\nmodels = [\"resnet18-cifar\"]\ndevice = [\"cpu\", \"cuda\", \"cuda:1\"]\n",
      "s.toml");
  EXPECT_EQ(s.space.device, (std::vector<std::string>{"cpu", "cuda:0", "cuda:1"}));
  // A single value is a one-element list, as for every dimension.
  EXPECT_EQ(
      parse_study_spec("[space]\nmodels = [\"resnet18-cifar\"]\ndevice = \"cuda\"\n", "s.toml")
          .space.device,
      (std::vector<std::string>{"cuda:0"}));

  std::string err =
      spec_error("[space]\nmodels = [\"resnet18-cifar\"]\ndevice = [\"cpu\", \"gpu\"]\n");
  EXPECT_TRUE(contains(err, "s.toml:3:")) << err;
  EXPECT_TRUE(contains(err, "[space].device[1]: 'gpu' is not a device (cpu, cuda or cuda:N)"))
      << err;
  err = spec_error("[space]\nmodels = [\"resnet18-cifar\"]\ndevice = [\"cuda\", \"cuda:0\"]\n");
  EXPECT_TRUE(contains(err, "[space].device[1]: 'cuda:0' is listed twice (as cuda:0)")) << err;
  err = spec_error("[space]\nmodels = [\"resnet18-cifar\"]\ndevice = [1]\n");
  EXPECT_TRUE(contains(err, "[space].device[0]: expected a string")) << err;
  err = spec_error("[space]\nmodels = [\"resnet18-cifar\"]\ndevice = []\n");
  EXPECT_TRUE(contains(err, "[space].device: empty list")) << err;
  // cudnn is a backend value now; a typo still is not.
  EXPECT_EQ(spec_error("[space]\nmodels = [\"resnet18-cifar\"]\nbackend = [\"cudnn\"]\n"), "");
  err = spec_error("[space]\nmodels = [\"resnet18-cifar\"]\nbackend = [\"cudn\"]\n");
  EXPECT_TRUE(contains(err, "'cudn' is not a backend (dlas, onednn, cudnn")) << err;
}

TEST(StudyDeviceSpec, GpuPointsCollapseIsaThreadsAndLayout) {
  const Expansion e = expand(
      "device = [\"cpu\", \"cuda\"]\nisa = [\"native\", \"avx2\"]\nthreads = [1, 2]\n"
      "layout = [\"nchw\", \"auto\"]\nconv_algo = [\"direct\", \"gemm\"]\n");
  // 2 devices x 2 isa x 2 threads x 2 layouts x 2 algorithms.
  EXPECT_EQ(e.total, 32u);
  EXPECT_EQ(e.excluded, 0u);
  std::vector<StudyPoint> gpu;
  for (const StudyPoint& p : e.points)
    if (p.device != "cpu") gpu.push_back(p);
  // The CPU keeps all 16; the GPU one per algorithm.
  EXPECT_EQ(e.points.size(), 16u + 2u);
  EXPECT_EQ(e.collapsed, 14u);
  ASSERT_EQ(gpu.size(), 2u);
  for (const StudyPoint& p : gpu) {
    EXPECT_EQ(p.device, "cuda:0");
    EXPECT_EQ(p.isa, "cuda:0");
    EXPECT_EQ(p.threads, 1);
    EXPECT_EQ(p.layout, "auto");
    EXPECT_EQ(p.value("device"), "cuda:0");
    EXPECT_TRUE(contains(p.str(), ";device=cuda:0")) << p.str();
  }
  EXPECT_EQ(gpu[0].conv_algo, "direct");
  EXPECT_EQ(gpu[1].conv_algo, "gemm");
  // The device loop sits next to the backend's: per model and compression, CPU points first.
  EXPECT_EQ(e.points.back().device, "cuda:0");
}

TEST(StudyDeviceSpec, CudnnRunsOnTheGpuAndCpuOnlyCombinationsAreExcluded) {
  // cudnn on the CPU becomes cuda:0, and then equals cudnn on cuda:0: one point.
  Expansion e = expand(
      "backend = [\"dlas\", \"cudnn\"]\ndevice = [\"cpu\", \"cuda\"]\n"
      "conv_algo = [\"auto\", \"gemm\"]\ntuning = [\"untuned\", \"tuned:60s\"]\n");
  std::map<std::string, int> by;
  for (const StudyPoint& p : e.points) {
    ++by[p.backend + "@" + p.device];
    if (p.backend == "cudnn") {
      EXPECT_EQ(p.device, "cuda:0");
      EXPECT_EQ(p.conv_algo, "cudnn");
      EXPECT_EQ(p.tuning, "untuned");  // cuDNN searches its own algorithms
      EXPECT_EQ(p.opt_level, 3);       // the graph passes still apply
    }
  }
  EXPECT_EQ(by,
            (std::map<std::string, int>{{"dlas@cpu", 4}, {"dlas@cuda:0", 4}, {"cudnn@cuda:0", 1}}));
  EXPECT_EQ(e.excluded, 0u);
  EXPECT_EQ(e.collapsed, 16u - 9u);

  // oneDNN and the ONNX peers run on the CPU only; int8 models and the CPU-only algorithms
  // are not GPU variants. Pruned and 16-bit ones are.
  e = expand(
      "backend = [\"dlas\", \"onednn\", \"onnxruntime\"]\ndevice = [\"cpu\", \"cuda\"]\n"
      "compress = [\"dense\", \"wp:0.9\", \"int8\", \"fp16\", \"wp:0.9+int8\"]\n"
      "conv_algo = [\"gemm\", \"spatial-pack\"]\n");
  std::set<std::string> gpu;
  for (const StudyPoint& p : e.points)
    if (p.device != "cpu") gpu.insert(p.backend + "/" + p.compress + "/" + p.conv_algo);
  EXPECT_EQ(gpu, (std::set<std::string>{"dlas/dense/gemm", "dlas/wp:0.9/gemm", "dlas/fp16/gemm"}));
  // On cuda: onednn and onnxruntime (5 x 2 each), dlas int8/wp+int8 (2 x 2) and dlas
  // spatial-pack on dense, wp and fp16 (3) are excluded; on the CPU oneDNN's 3 quantized x 2.
  EXPECT_EQ(e.excluded, 10u + 10u + 4u + 3u + 6u);
  for (const StudyPoint& p : e.points)
    if (p.device == "cpu") {
      EXPECT_FALSE(contains(p.str(), "device")) << p.str();
    }

  // cuDNN runs 16-bit models too; int8 ones stay on the CPU.
  e = expand(
      "backend = [\"cudnn\"]\ndevice = [\"cuda\"]\ncompress = [\"dense\", \"fp16\", "
      "\"bf16\", \"int8\"]\n");
  std::set<std::string> cudnn;
  for (const StudyPoint& p : e.points) cudnn.insert(p.compress);
  EXPECT_EQ(cudnn, (std::set<std::string>{"dense", "fp16", "bf16"}));
  EXPECT_EQ(e.excluded, 1u);
}

TEST(StudyDeviceSpec, ExcludeRulesNameDevicesAsWritten) {
  const StudySpec s = parse_study_spec(R"([space]
models = ["resnet18-cifar", "mobilenetv1-cifar"]
device = ["cpu", "cuda"]
[[exclude]]
model = "mobilenetv1-cifar"
device = "cuda"
)",
                                       "s.toml");
  ASSERT_EQ(s.exclude.size(), 1u);
  EXPECT_EQ(s.exclude[0].match.at("device"), (std::vector<std::string>{"cuda:0"}));
  const Expansion e = expand_study(s);
  EXPECT_EQ(e.excluded, 1u);
  ASSERT_EQ(e.points.size(), 3u);
  for (const StudyPoint& p : e.points)
    EXPECT_FALSE(p.model == "mobilenetv1-cifar" && p.device != "cpu") << p.str();
  // A device the space does not list is a typo.
  const std::string err =
      spec_error("[space]\nmodels = [\"resnet18-cifar\"]\n[[exclude]]\ndevice = \"cuda:1\"\n");
  EXPECT_TRUE(
      contains(err, "[[exclude]][0].device: 'cuda:1' is not a value of [space].device (cpu)"))
      << err;
}

// --- a study with a GPU variant, on this machine -------------------------------------

class StudyDeviceCli : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    export_tiny_zoo_model("resnet18-cifar", 8, path("tiny.onnx"));
  }

  struct Result {
    int code;
    std::string err;
  };
  Result dlas(const std::string& args) {
    const std::string err = path("stderr.txt");
    const std::string cmd = "env DLAS_MEASURE_LOCK='" + path("measure.lock") + "' " +
                            std::string(DLAS_CLI_PATH) + " " + args + " >/dev/null 2>" + err;
    const int status = std::system(cmd.c_str());
    std::ifstream in(err);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
            std::string(std::istreambuf_iterator<char>(in), {})};
  }
};

TEST_F(StudyDeviceCli, TheChildIsToldItsDevice) {
  MeasureRequest req;
  req.variant.device = "cuda:0";
  const std::vector<std::string> args = exec_variant_args(req);
  const auto flag = std::find(args.begin(), args.end(), "--device");
  ASSERT_NE(flag, args.end());
  ASSERT_NE(std::next(flag), args.end());
  EXPECT_EQ(*std::next(flag), "cuda:0");
}

TEST_F(StudyDeviceCli, AGpuVariantWithoutAGpuIsUnsupportedAndTheStudyGoesOn) {
  if (!list_gpus().empty()) GTEST_SKIP() << "this machine has a CUDA GPU";
  const std::string reason = gpu_unavailable_reason();
  ASSERT_FALSE(reason.empty());

  // The measuring child itself: a row that says why, never an error.
  MeasureRequest req;
  req.variant.model = "tiny.onnx";
  req.variant.device = "cuda:0";
  req.variant.isa = "cuda:0";
  req.model_path = path("tiny.onnx");
  req.repeat = 1;
  const Row child = measure_variant(req);
  EXPECT_EQ(child.text("status"), "unsupported");
  EXPECT_TRUE(contains(child.text("reason"), reason)) << child.text("reason");

  const std::string spec = path("gpu.toml"), db = path("r.db");
  std::ofstream(spec) << "[study]\nname = \"tiny-gpu\"\nrepeat = 2\nwarmup = 0\n[space]\n"
                         "models = [\"tiny.onnx\"]\ndevice = [\"cpu\", \"cuda\"]\n"
                         "backend = [\"dlas\", \"cudnn\"]\nconv_algo = [\"gemm\"]\n";
  const Result r = dlas("study run " + spec + " --db " + db);
  ASSERT_EQ(r.code, 0) << r.err;  // as with any other unsupported row
  EXPECT_TRUE(
      contains(r.err, "ran 3: 1 ok, 0 failed, 0 timeout, 0 crashed, 0 skipped, 2 unsupported"))
      << r.err;
  std::map<std::string, Row> by;
  for (Row& row : ResultStore(db, ResultStore::Mode::kReadOnly).rows())
    by[row.text("backend") + "@" + row.text("device")] = std::move(row);
  ASSERT_EQ(by.size(), 3u);
  const Row& cpu = by["dlas@cpu"];
  EXPECT_EQ(cpu.text("status"), "ok") << cpu.text("reason") << cpu.text("stderr_tail");
  EXPECT_FALSE(contains(cpu.text("variant_id"), "device")) << cpu.text("variant_id");
  for (const char* key : {"dlas@cuda:0", "cudnn@cuda:0"}) {
    const Row& gpu = by[key];
    EXPECT_EQ(gpu.text("status"), "unsupported") << key;
    EXPECT_TRUE(contains(gpu.text("reason"), "--device cuda:0: " + reason)) << gpu.text("reason");
    EXPECT_TRUE(contains(gpu.text("variant_id"), ";device=cuda:0")) << gpu.text("variant_id");
    EXPECT_EQ(gpu.integer("threads"), 1);
    EXPECT_FALSE(gpu.has("median_ms"));
    EXPECT_FALSE(gpu.has("gpu"));
  }
  EXPECT_EQ(by["cudnn@cuda:0"].text("conv_algo"), "cudnn");

  // A rerun retries the unsupported rows (they are not ok) and stores them again.
  const Result again = dlas("study run " + spec + " --db " + db);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_TRUE(contains(again.err, "ran 2: 0 ok")) << again.err;

  // The report renders from the CPU rows; XIII says the GPU side needs GPU rows.
  const Result rep = dlas("study report " + db + " -o " + path("rep") + " --no-plots");
  ASSERT_EQ(rep.code, 0) << rep.err;
  EXPECT_TRUE(fs::exists(path("rep/report.html")));
  const std::vector<Observation> os = observe(ResultStore(db, ResultStore::Mode::kReadOnly).rows());
  for (const Observation& o : os)
    if (o.id == "VIII" || o.id == "XIII") {
      EXPECT_EQ(o.verdict, "not testable") << o.id;
    }
}

// --- the store ---------------------------------------------------------------------

class StudyDeviceStore : public TempDirTest {};

// Schema 6 (before the device column): its rows read as CPU rows, read-only and after the
// in-place upgrade a write makes; new rows keep their device.
TEST_F(StudyDeviceStore, RowsBeforeTheDeviceColumnAreCpuRows) {
  const std::string db = path("v6.db");
  Row old;
  old.set("variant_id", std::string("v1"));
  old.set("hardware_id", std::string("hw"));
  old.set("status", std::string(kStatusOk));
  old.set("median_ms", 1.0);
  { ResultStore(db).put(old); }
  for (const char* sql : {"ALTER TABLE results DROP COLUMN device",
                          "ALTER TABLE results DROP COLUMN gpu", "PRAGMA user_version = 6"}) {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(h, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
    sqlite3_close(h);
  }
  {
    const std::vector<Row> rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].text("device"), "cpu");
    EXPECT_FALSE(rows[0].has("gpu"));
  }
  {
    ResultStore s(db);
    Row gpu = old;
    gpu.set("variant_id", std::string("v2;device=cuda:0"));
    gpu.set("device", std::string("cuda:0"));
    gpu.set("gpu", std::string("Test GPU"));
    s.put(gpu);
  }
  const std::vector<Row> rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].text("device"), "cpu");  // the old row, upgraded
  EXPECT_EQ(rows[1].text("device"), "cuda:0");
  EXPECT_EQ(rows[1].text("gpu"), "Test GPU");
  const auto& cols = result_columns();
  const auto device = std::find_if(
      cols.begin(), cols.end(), [](const ColumnDef& c) { return std::string(c.name) == "device"; });
  ASSERT_NE(device, cols.end());
  EXPECT_EQ(device->type, ColumnType::kText);
  EXPECT_TRUE(contains(device->doc, "cuda:N"));
}

// --- the report on CPU and GPU rows ----------------------------------------------------

Row gpu_row(const std::string& model, const std::string& algo, double ms,
            const std::string& schedule = "default", const std::string& backend = "dlas",
            const std::string& compress = "dense") {
  Row r;
  r.set("variant_id", "model=" + model + ";algo=" + algo + ";" + backend + ";" + compress + ";" +
                          schedule + ";device=cuda:0");
  r.set("hardware_id", std::string("hw0"));
  r.set("status", std::string(kStatusOk));
  r.set("model", model);
  r.set("batch", int64_t{1});
  r.set("compress", compress);
  r.set("backend", backend);
  r.set("device", std::string("cuda:0"));
  r.set("gpu", std::string("Test GPU"));
  r.set("conv_algo", backend == "dlas" ? algo : backend);
  r.set("schedule", schedule);
  r.set("opt_level", int64_t{3});
  r.set("isa", std::string("sm_90"));
  r.set("detected_isa", std::string("avx2"));
  r.set("threads", int64_t{1});
  r.set("cpu_model", std::string("Test CPU"));
  r.set("median_ms", ms);
  r.set("p10_ms", ms * 0.9);
  r.set("p90_ms", ms * 1.1);
  r.set("macs", int64_t{1000});
  r.set("params", int64_t{10});
  return r;
}

Row cpu_row(const std::string& model, const std::string& algo, double ms,
            const std::string& compress = "dense") {
  Row r = gpu_row(model, algo, ms, "default", "dlas", compress);
  r.set("variant_id", "model=" + model + ";algo=" + algo + ";" + compress + ";cpu");
  r.cells.erase("gpu");
  r.cells.erase("device");  // as rows stored before the device column read
  r.set("isa", std::string("avx2"));
  r.set("threads", int64_t{2});
  return r;
}

const Observation& find_obs(const std::vector<Observation>& os, const std::string& id) {
  for (const Observation& o : os)
    if (o.id == id) return o;
  throw std::runtime_error("no observation " + id);
}

const Table& find_table(const std::vector<Table>& ts, const std::string& id) {
  for (const Table& t : ts)
    if (t.id == id) return t;
  throw std::runtime_error("no table " + id);
}

TEST(StudyDeviceReport, PlatformsNameTheDevice) {
  EXPECT_EQ(platform_of(gpu_row("m", "gemm", 1)), "Test GPU / cuda:0 / default");
  Row unnamed = gpu_row("m", "gemm", 1);
  unnamed.cells.erase("gpu");
  EXPECT_EQ(platform_of(unnamed), "GPU / cuda:0 / default");
  EXPECT_EQ(platform_of(cpu_row("m", "gemm", 1)), "Test CPU / avx2 / 2T / default");
}

TEST(StudyDeviceReport, BestConfigurationPerDeviceIsObservationThirteen) {
  std::vector<Row> rows;
  // a: spatial-pack on the CPU, winograd on the GPU (differs); b: gemm on both (the same).
  for (const auto& [algo, ms] :
       {std::pair<const char*, double>{"spatial-pack", 3}, {"gemm", 4}, {"direct", 5}})
    rows.push_back(cpu_row("a", algo, ms));
  rows.push_back(gpu_row("a", "winograd", 0.4));
  rows.push_back(gpu_row("a", "gemm", 0.6));
  rows.push_back(gpu_row("a", "x", 0.5, "default", "cudnn"));
  rows.push_back(cpu_row("b", "gemm", 2));
  rows.push_back(cpu_row("b", "direct", 2.5));
  rows.push_back(gpu_row("b", "gemm", 0.3));
  rows.push_back(gpu_row("b", "direct", 0.35));
  const std::vector<Observation> os = observe(rows);
  const Observation& xiii = find_obs(os, "XIII");
  // The GPU is faster on both models (1/1 platform pairs); the best configuration differs
  // for 1/2 models: 2/3 cases hold.
  EXPECT_EQ(xiii.verdict, "holds") << xiii.detail;
  EXPECT_TRUE(contains(xiii.detail, "holds for 2/3 cases")) << xiii.detail;
  EXPECT_TRUE(contains(xiii.detail, "differs between CPU and GPU for 1/2 models")) << xiii.detail;
  const auto line = std::find_if(xiii.evidence.begin(), xiii.evidence.end(),
                                 [](const std::string& e) { return e.rfind("a dense:", 0) == 0; });
  ASSERT_NE(line, xiii.evidence.end());
  EXPECT_TRUE(contains(*line, "CPU spatial-pack")) << *line;
  EXPECT_TRUE(contains(*line, "cuda:0 winograd (Test GPU / cuda:0 / default, 0.400 ms): differs"))
      << *line;
  // Untuned GPU rows: VIII still needs tuning.
  EXPECT_EQ(find_obs(os, "VIII").verdict, "not testable");
  EXPECT_TRUE(contains(find_obs(os, "VIII").detail, "GPU study with tuning"));

  // The summary: one row per model and device, the device named.
  const std::vector<Table> tables = report_tables(rows);
  const Table& summary = find_table(tables, "summary");
  const auto col = std::find(summary.header.begin(), summary.header.end(), "device");
  ASSERT_NE(col, summary.header.end());
  const size_t c = static_cast<size_t>(col - summary.header.begin());
  const size_t d =
      static_cast<size_t>(std::find(summary.header.begin(), summary.header.end(), "deployment") -
                          summary.header.begin());
  std::map<std::string, std::string> deployment;
  for (const auto& r : summary.cells) deployment[r[0] + "@" + r[c]] = r[d];
  EXPECT_EQ(deployment,
            (std::map<std::string, std::string>{{"a@cpu", "dense + spatial-pack"},
                                                {"a@cuda:0 (Test GPU)", "dense + winograd"},
                                                {"b@cpu", "dense + gemm"},
                                                {"b@cuda:0 (Test GPU)", "dense + gemm"}}));
  // The algorithm tables name the GPU platform; cuDNN sits in the GPU's context.
  const Table& fastest = find_table(tables, "fastest_algorithm");
  bool gpu_context = false;
  for (const auto& r : fastest.cells)
    gpu_context = gpu_context || (r[0] == "Test GPU / cuda:0 / default" && r[1] == "a");
  EXPECT_TRUE(gpu_context);
}

TEST(StudyDeviceReport, TheCpuAlgorithmObservationsReadCpuRowsOnly) {
  // IX (GEMM is the best sparse algorithm on CPU): gemm on the CPU, direct on the GPU.
  const std::vector<Row> rows = {cpu_row("a", "gemm", 1.0, "wp:0.9"),
                                 cpu_row("a", "direct", 2.0, "wp:0.9"),
                                 gpu_row("a", "gemm", 0.5, "default", "dlas", "wp:0.9"),
                                 gpu_row("a", "direct", 0.2, "default", "dlas", "wp:0.9")};
  const std::vector<Observation> os = observe(rows);
  const Observation& ix = find_obs(os, "IX");
  EXPECT_EQ(ix.verdict, "holds") << ix.detail;
  EXPECT_TRUE(contains(ix.detail, "holds for 1/1 contexts")) << ix.detail;
}

TEST(StudyDeviceReport, DirectOnATunedGpuIsObservationEight) {
  std::vector<Row> rows;
  for (const char* m : {"a", "b", "c"}) {
    rows.push_back(gpu_row(m, "direct", 1.0, "tuned:60s"));
    rows.push_back(gpu_row(m, "gemm", m[0] == 'c' ? 0.8 : 1.2, "tuned:60s"));
    rows.push_back(gpu_row(m, "winograd", 1.5, "tuned:60s"));
    // Untuned rows and the CPU do not count.
    rows.push_back(gpu_row(m, "direct", 9.0));
    rows.push_back(gpu_row(m, "gemm", 0.1));
    rows.push_back(cpu_row(m, "direct", 0.01));
  }
  const std::vector<Observation> os = observe(rows);
  const Observation& viii = find_obs(os, "VIII");
  EXPECT_EQ(viii.verdict, "holds") << viii.detail;
  EXPECT_TRUE(contains(viii.detail, "holds for 2/3 tuned GPU contexts")) << viii.detail;
  ASSERT_EQ(viii.evidence.size(), 3u);
  EXPECT_TRUE(contains(viii.evidence[2], "c: gemm (0.800 ms), direct 1.000 ms"))
      << viii.evidence[2];
}

}  // namespace
}  // namespace dlas::study
