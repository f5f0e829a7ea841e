// Accuracy in studies: the dataset dimension, [accuracy], `elbow` levels
// resolved from prune-sweep folders, and the accuracy columns the measuring child fills,
// checked against evaluate_accuracy of the same deployed variant in this process.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <tuple>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dlas/core/error.h"
#include "dlas/data/dataset.h"
#include "dlas/hw/isa.h"
#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/prune.h"
#include "dlas/optimize/prune_sweep.h"
#include "dlas/study/report.h"
#include "dlas/study/runner.h"
#include "dlas/study/spec.h"
#include "dlas/study/store.h"
#include "dlas/system/accuracy.h"
#include "dlas/system/loader.h"
#include "dlas/system/variant.h"
#include "data/nearest_mean_model.h"
#include "dlas/system/preprocess_meta.h"
#include "study/study_test_util.h"

namespace dlas::study {
namespace {

namespace fs = std::filesystem;

// 1x8x8 images, 4 classes, 64 records per split: a variant scores in milliseconds.
constexpr const char* kData = "synthetic:1,8,8:4:64";

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class StudyAccuracy : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    const auto ds = data::open_dataset(kData, data::Split::kTest);
    ZooOptions z;
    z.width_mult = 0.125;
    z = zoo_options_for(ds->info(), z);
    const Graph base = build_zoo_model("resnet18-cifar", z);
    export_onnx_file(base, path("base.onnx"));
    // Two "fine-tuned" levels per method (no training here: pruned copies stand in).
    write_fixture_sweep("sw-weight", PruneMethod::kWeight, base, {"wp:0.5", "wp:0.8"}, 1, kData);
    write_fixture_sweep("sw-channel", PruneMethod::kChannel, base, {"cp:0.25", "cp:0.5"}, 1, kData);
  }

  // A prune-sweep folder as `dlas prune-sweep` leaves it: sweep.json and one model a level.
  void write_fixture_sweep(const std::string& name, PruneMethod method, const Graph& base,
                           const std::vector<std::string>& specs, int elbow,
                           const std::string& dataset) {
    const fs::path d = dir() / name;
    fs::create_directories(d);
    SweepResult r;
    r.model = "base.onnx";
    r.dataset = dataset;
    r.method = method;
    r.baseline.spec = "dense";
    r.baseline.top1 = 0.9;
    r.baseline.params = base.param_count();
    for (size_t i = 0; i < specs.size(); ++i) {
      Graph g = base;
      prune(g, parse_prune_spec(specs[i]));
      SweepPoint p;
      p.spec = specs[i];
      p.level = parse_prune_spec(specs[i]).sparsity;
      p.top1 = 0.9 - 0.004 * static_cast<double>(i);
      p.top5 = 1.0;
      p.params = g.param_count();
      p.macs = g.macs();
      p.model = "level-" + std::to_string(i) + ".onnx";
      export_onnx_file(g, (d / p.model).string());
      r.points.push_back(p);
    }
    r.elbow = elbow;
    write_sweep(d / "sweep.json", r);
  }

  std::string spec_text(const std::string& space, const std::string& extra = "") const {
    return std::string("[study]\nname = \"acc\"\nrepeat = 2\nwarmup = 0\n[space]\n") + space +
           "\n" + extra;
  }
  StudySpec parse(const std::string& text) const {
    return parse_study_spec(text, path("s.toml"), dir().string());
  }
  std::string error_of(const std::string& text) const {
    try {
      parse(text);
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), 2);
      return e.what();
    }
    return "";
  }
};

TEST_F(StudyAccuracy, ElbowLevelsResolveFromTheSweeps) {
  const StudySpec s = parse(
      spec_text("models = [\"base.onnx\"]\ndataset = [\"" + std::string(kData) +
                    "\"]\ncompress = [\"dense\", \"wp:elbow\", \"cp:elbow+int8\"]\n",
                "[accuracy]\nlimit = 48\nsweeps = [\"sw-weight\", \"sw-channel/sweep.json\"]\n"));
  EXPECT_EQ(s.accuracy.limit, 48);
  ASSERT_EQ(s.accuracy.loaded.size(), 2u);
  ASSERT_EQ(s.elbows.size(), 2u);
  const Expansion e = expand_study(s);
  ASSERT_EQ(e.points.size(), 3u);
  EXPECT_EQ(e.points[0].compress, "dense");
  EXPECT_EQ(e.points[0].model_path, (dir() / "base.onnx").string());
  EXPECT_EQ(e.points[1].compress, "wp:elbow=0.8");
  EXPECT_EQ(e.points[1].model_path, (dir() / "sw-weight" / "level-1.onnx").string());
  EXPECT_EQ(e.points[2].compress, "cp:elbow=0.5+int8");
  EXPECT_EQ(e.points[2].model_path, (dir() / "sw-channel" / "level-1.onnx").string());
  for (const StudyPoint& p : e.points) {
    EXPECT_EQ(p.dataset, kData);
    EXPECT_EQ(p.accuracy_limit, 48);
    EXPECT_NE(p.str().find(";dataset=" + std::string(kData) + ";limit=48"), std::string::npos)
        << p.str();
  }
  // What the child applies to the elbow model: the weight level again (its zeros are
  // already there; the spec keeps the sparse algorithms on), no further channel pruning.
  EXPECT_EQ(deployed_compress("wp:elbow=0.8"), "wp:0.8");
  EXPECT_EQ(deployed_compress("cp:elbow=0.5+int8"), "int8");
  EXPECT_EQ(deployed_compress("cp:elbow=0.5"), "dense");
  EXPECT_EQ(deployed_compress("wp:0.9+fp16"), "wp:0.9+fp16");

  // Exclusions match the level as written; an excluded elbow needs no sweep.
  const StudySpec x = parse(spec_text(
      "models = [\"base.onnx\", \"mobilenetv1-cifar\"]\ncompress = [\"dense\", \"wp:elbow\"]\n"
      "[[exclude]]\nmodel = \"mobilenetv1-cifar\"\ncompress = \"wp:elbow\"\n",
      "[accuracy]\nsweeps = [\"sw-weight\"]\n"));
  const Expansion ex = expand_study(x);
  ASSERT_EQ(ex.points.size(), 3u);
  EXPECT_EQ(ex.excluded, 1u);
  // Without a dataset dimension the sweep's model is matched on name alone, and points
  // (and their variant ids) carry no dataset.
  EXPECT_EQ(ex.points[1].compress, "wp:elbow=0.8");
  EXPECT_EQ(ex.points[0].str().find("dataset"), std::string::npos);
  EXPECT_EQ(ex.points[0].str().find("limit"), std::string::npos);
}

TEST_F(StudyAccuracy, VariantIdsWithoutADatasetAreUnchanged) {
  Variant v;
  v.model = "resnet18-cifar";
  v.isa = "avx2";
  v.threads = 2;
  // The id (and so the hash keying every stored row) of a study without datasets.
  EXPECT_EQ(v.str(),
            "model=resnet18-cifar;batch=1;compress=dense;backend=dlas;conv=auto;schedule=default;"
            "opt=3;isa=avx2;threads=2");
  EXPECT_EQ(v.hash_hex(), "ba8f4e92ecb23be7");
  v.accuracy_limit = 200;  // no dataset: no accuracy, so not part of the id
  EXPECT_EQ(v.hash_hex(), "ba8f4e92ecb23be7");
  v.dataset = "fashion-mnist";
  EXPECT_EQ(v.str().substr(v.str().size() - 32), ";dataset=fashion-mnist;limit=200");
  const std::string few = v.hash_hex();
  v.accuracy_limit = 10000;
  EXPECT_EQ(v.str().substr(v.str().size() - 34), ";dataset=fashion-mnist;limit=10000");
  EXPECT_NE(v.hash_hex(), few);  // 200 and 10,000 images are not the same variant
}

TEST_F(StudyAccuracy, AccuracyLimitIsPartOfTheVariantIdWithADatasetOnly) {
  // Through the spec and the runner's resolution, as `dlas study run` keys stored rows.
  auto ids = [&](const std::string& space, const std::string& limit) {
    const StudySpec s = parse(spec_text(space, "[accuracy]\nlimit = " + limit + "\n"));
    std::vector<std::string> out;
    for (const StudyPoint& p : expand_study(s).points)
      out.push_back(resolve_variant(p, nullptr).str());
    return out;
  };
  const std::string with = "models = [\"base.onnx\"]\ndataset = [\"" + std::string(kData) + "\"]\n";
  const auto a = ids(with, "200"), b = ids(with, "10000"), c = ids(with, "0");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_NE(a[0], b[0]);
  EXPECT_NE(b[0], c[0]);
  EXPECT_NE(a[0].find(";limit=200"), std::string::npos) << a[0];
  EXPECT_NE(c[0].find(";limit=0"), std::string::npos) << c[0];  // 0: the whole split
  const std::string without = "models = [\"base.onnx\"]\n";
  const auto d = ids(without, "200"), e = ids(without, "10000");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], e[0]);
  EXPECT_EQ(d[0].find("limit"), std::string::npos) << d[0];
}

TEST_F(StudyAccuracy, ElbowErrorsNameTheSpecField) {
  const std::string space = "models = [\"base.onnx\"]\ndataset = [\"" + std::string(kData) +
                            "\"]\ncompress = [\"dense\", \"wp:elbow\"]\n";
  // No sweep listed / none of this dataset.
  std::string msg = error_of(spec_text(space));
  EXPECT_NE(msg.find("[space].compress[1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs a weight sweep of base.onnx on " + std::string(kData)),
            std::string::npos)
      << msg;
  const Graph base = load_model(path("base.onnx"));
  write_fixture_sweep("sw-other", PruneMethod::kWeight, base, {"wp:0.5"}, 0, "synthetic");
  msg = error_of(spec_text(space, "[accuracy]\nsweeps = [\"sw-other\", \"sw-channel\"]\n"));
  EXPECT_NE(msg.find("needs a weight sweep"), std::string::npos) << msg;
  // A sweep without an elbow.
  write_fixture_sweep("sw-none", PruneMethod::kWeight, base, {"wp:0.5"}, -1, kData);
  msg = error_of(spec_text(space, "[accuracy]\nsweeps = [\"sw-none\"]\n"));
  EXPECT_NE(msg.find("[space].compress[1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("has no elbow"), std::string::npos) << msg;
  // Two matching sweeps.
  msg = error_of(spec_text(space, "[accuracy]\nsweeps = [\"sw-weight\", \"sw-none\"]\n"));
  EXPECT_NE(msg.find("several weight sweep"), std::string::npos) << msg;
  // The elbow's model is gone.
  fs::remove(dir() / "sw-weight" / "level-1.onnx");
  msg = error_of(spec_text(space, "[accuracy]\nsweeps = [\"sw-weight\"]\n"));
  EXPECT_NE(msg.find("is missing"), std::string::npos) << msg;
  // A malformed sweep.json names the file.
  std::ofstream(dir() / "sw-weight" / "sweep.json") << "{\"version\": 1}";
  msg = error_of(spec_text(space, "[accuracy]\nsweeps = [\"sw-weight\"]\n"));
  EXPECT_NE(msg.find("[accuracy].sweeps[0]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sweep.json"), std::string::npos) << msg;

  // The CLI: exit 2, one line, nothing created.
  std::ofstream(path("bad.toml")) << spec_text(space, "[accuracy]\nsweeps = [\"sw-none\"]\n");
  const std::string err = path("err.txt");
  const int status = std::system((std::string(DLAS_CLI_PATH) + " study run " + path("bad.toml") +
                                  " --db " + path("r.db") + " 2>" + err)
                                     .c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(slurp(err).find("has no elbow"), std::string::npos) << slurp(err);
  EXPECT_FALSE(fs::exists(path("r.db")));
}

// The study end to end: a zoo model built for the dataset and a sweep's elbow model, dense,
// [preprocess] reaches the measuring child: the rows' top-1 -- dense, and int8 calibrated
// on training images fed the same way -- is what evaluate_accuracy gives for the model
// carrying those flags as its metadata, and differs from the dataset default's.
TEST_F(StudyAccuracy, PreprocessTableFeedsTheAccuracyRunAndTheCalibration) {
  export_onnx_file(test::nearest_mean_model(kData), path("nm.onnx"));
  const std::string space = "models = [\"nm.onnx\"]\ndataset = [\"" + std::string(kData) +
                            "\"]\ncompress = [\"dense\", \"int8\"]\nthreads = [1]\n";
  std::ofstream(path("pre.toml")) << spec_text(space, "[accuracy]\nlimit = 48\n[preprocess]\nmean = 0\nstd = 1\n");
  std::ofstream(path("plain.toml")) << spec_text(space, "[accuracy]\nlimit = 48\n");
  auto run = [&](const std::string& spec, const std::string& db) {
    const int status = std::system((std::string("env DLAS_MEASURE_LOCK='") + path("lock") + "' " +
                                    DLAS_CLI_PATH + " study run " + path(spec) + " --db " +
                                    path(db) + " 2>" + path("log.txt"))
                                       .c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(path("log.txt"));
    return ResultStore(path(db), ResultStore::Mode::kReadOnly).rows();
  };
  const auto ds = data::open_dataset(kData, data::Split::kTest);
  PlanOptions o;
  o.threads = 1;
  o.isa = active_isa();
  auto expected = [&](const std::string& compress, bool flags) {
    Graph g = load_model(path("nm.onnx"));
    if (flags) {
      PreprocessFlags f;
      f.mean = std::vector<float>{0.f};
      f.std = std::vector<float>{1.f};
      set_preprocess_metadata(g, resolve_preprocess(ds->info(), f, &g).pre);
    }
    apply_compress_for_dataset(g, parse_compress(compress), kData);
    return evaluate_accuracy(g, o, kData, data::Split::kTest, 48).top1_rate();
  };
  ASSERT_NE(expected("dense", true), expected("dense", false));  // the flags matter here
  for (const auto& [spec, db, flags] : {std::tuple{"pre.toml", "pre.db", true},
                                        std::tuple{"plain.toml", "plain.db", false}}) {
    const std::vector<Row> rows = run(spec, db);
    ASSERT_EQ(rows.size(), 2u);
    for (const Row& r : rows) {
      ASSERT_EQ(r.text("status"), kStatusOk) << r.text("variant_id") << ": " << r.text("reason");
      EXPECT_EQ(r.text("variant_id").find(";preprocess=--mean 0 --std 1") != std::string::npos,
                flags)
          << r.text("variant_id");
      EXPECT_DOUBLE_EQ(r.real("accuracy"), expected(r.text("compress"), flags))
          << r.text("variant_id");
    }
  }
}

// A model at chance accuracy draws the chance-level warning once per model, not once per
// variant: a classifier that always answers class 0 scores exactly 1/4 on the balanced set.
TEST_F(StudyAccuracy, ChanceLevelIsWarnedOncePerModel) {
  Graph g = test::nearest_mean_model(kData);
  g.initializers["w"] = Tensor::from_vector<float>({4, 64}, std::vector<float>(4 * 64, 0.f));
  g.initializers["b"] = Tensor::from_vector<float>({4}, {1.f, 0.f, 0.f, 0.f});
  export_onnx_file(g, path("const.onnx"));
  std::ofstream(path("chance.toml")) << spec_text(
      "models = [\"const.onnx\"]\ndataset = [\"" + std::string(kData) +
          "\"]\ncompress = [\"dense\", \"fp16\"]\nthreads = [1]\n",
      "[accuracy]\nlimit = 48\n");
  const int status = std::system((std::string("env DLAS_MEASURE_LOCK='") + path("lock") + "' " +
                                  DLAS_CLI_PATH + " study run " + path("chance.toml") + " --db " +
                                  path("c.db") + " 2>" + path("log.txt"))
                                     .c_str());
  const std::string log = slurp(path("log.txt"));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;
  for (const Row& r : ResultStore(path("c.db"), ResultStore::Mode::kReadOnly).rows())
    EXPECT_DOUBLE_EQ(r.real("accuracy"), 0.25) << r.text("variant_id");
  size_t count = 0;
  for (size_t at = log.find("of chance"); at != std::string::npos; at = log.find("of chance", at + 1))
    ++count;
  EXPECT_EQ(count, 1u) << log;
  EXPECT_NE(log.find("study: const.onnx: warning: top-1 25.00% is within 2 points of chance"), std::string::npos)
      << log;
}

// int8 (calibrated on training images) and the elbow; every row's top-1 equals what
// evaluate_accuracy gives for the same deployed variant here.
TEST_F(StudyAccuracy, StudyRowsCarryTheDeployedVariantsAccuracy) {
  std::ofstream(path("study.toml")) << spec_text(
      "models = [\"resnet18-cifar\", \"base.onnx\"]\ndataset = [\"" + std::string(kData) +
          "\"]\ncompress = [\"dense\", \"int8\", \"wp:elbow\"]\nthreads = [1]\n"
          "[[exclude]]\nmodel = \"resnet18-cifar\"\ncompress = \"wp:elbow\"\n",
      "[accuracy]\nlimit = 48\nsweeps = [\"sw-weight\"]\n");
  const std::string db = path("r.db");
  const int status =
      std::system((std::string("env DLAS_MEASURE_LOCK='") + path("lock") + "' " + DLAS_CLI_PATH +
                   " study run " + path("study.toml") + " --db " + db + " 2>" + path("log.txt"))
                      .c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(path("log.txt"));
  const std::vector<Row> rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
  ASSERT_EQ(rows.size(), 5u);

  const auto ds = data::open_dataset(kData, data::Split::kTest);
  PlanOptions o;
  o.threads = 1;
  o.isa = active_isa();
  int checked = 0;
  for (const Row& r : rows) {
    ASSERT_EQ(r.text("status"), kStatusOk) << r.text("variant_id") << ": " << r.text("reason");
    EXPECT_EQ(r.text("dataset"), kData);
    ASSERT_TRUE(r.has("accuracy") && r.has("top5")) << r.text("variant_id");
    EXPECT_EQ(r.integer("accuracy_samples"), 48);
    EXPECT_GE(r.real("top5"), r.real("accuracy"));
    // The same variant, deployed here.
    const std::string compress = r.text("compress");
    Graph g;
    if (r.text("model") == "resnet18-cifar") {
      g = build_zoo_model("resnet18-cifar", zoo_options_for(ds->info()));
    } else if (compress.rfind("wp:elbow", 0) == 0) {
      EXPECT_EQ(compress, "wp:elbow=0.8");
      g = load_model(path("sw-weight/level-1.onnx"));
    } else {
      g = load_model(path("base.onnx"));
    }
    const bool pruned = compress.rfind("wp:elbow", 0) == 0;
    if (pruned) {
      EXPECT_LT(r.integer("nonzero_params"), r.integer("params") / 2);
    }
    apply_compress_for_dataset(g, parse_compress(deployed_compress(compress)), kData);
    const data::Accuracy a = evaluate_accuracy(g, o, kData, data::Split::kTest, 48);
    EXPECT_EQ(a.samples, 48);
    EXPECT_DOUBLE_EQ(r.real("accuracy"), a.top1_rate()) << r.text("variant_id");
    EXPECT_DOUBLE_EQ(r.real("top5"), a.top5_rate()) << r.text("variant_id");
    ++checked;
  }
  EXPECT_EQ(checked, 5);

  // The report from the command line, with the spec's sweeps: the accuracy summary (one
  // line per model, dataset and compression) and the sweep's curve, also in --json.
  const bool gnuplot = std::system("gnuplot --version > /dev/null 2>&1") == 0;
  const std::string out = path("report.json");
  ASSERT_EQ(std::system((std::string(DLAS_CLI_PATH) + " study report " + db + " -o " +
                         path("report") + " --spec " + path("study.toml") + " --json" +
                         (gnuplot ? "" : " --no-plots") + " >" + out + " 2>" + path("log.txt"))
                            .c_str()),
            0)
      << slurp(path("log.txt"));
  const auto j = nlohmann::json::parse(slurp(out));
  ASSERT_EQ(j["accuracy_summary"].size(), 5u) << j.dump(1);
  ASSERT_EQ(j["accuracy_curves"].size(), 3u) << j.dump(1);  // baseline + 2 levels
  EXPECT_EQ(j["accuracy_curves"][2]["elbow"], "elbow");
  EXPECT_EQ(j["accuracy_curves"][2]["spec"], "wp:0.8");
  if (gnuplot) {
    EXPECT_TRUE(fs::exists(path("report/prune-sweeps.svg")));
  }
  const std::string summary = slurp(path("report/accuracy_summary.csv"));
  const auto table = parse_csv(summary);
  ASSERT_EQ(table.size(), 6u) << summary;  // header + 5
  const std::vector<std::string> head = table[0];
  auto col = [&](const std::string& name) {
    const auto it = std::find(head.begin(), head.end(), name);
    EXPECT_NE(it, head.end()) << name;
    return static_cast<size_t>(it - head.begin());
  };
  // The elbow line of base.onnx: its top-1, the loss against its dense twin, and a
  // compression ratio from the nonzero parameters (80% pruned: about 5x on the convs).
  const Row* dense_row = nullptr;
  const Row* elbow_row = nullptr;
  for (const Row& r : rows) {
    if (r.text("model") != "base.onnx") continue;
    if (r.text("compress") == "dense") dense_row = &r;
    if (r.text("compress") == "wp:elbow=0.8") elbow_row = &r;
  }
  ASSERT_TRUE(dense_row && elbow_row);
  int found = 0;
  for (const auto& line : table) {
    if (line[col("model")] != "base.onnx" || line[col("compress")] != "wp:elbow=0.8") continue;
    ++found;
    EXPECT_EQ(line[col("dataset")], kData);
    EXPECT_DOUBLE_EQ(std::stod(line[col("top1")]),
                     std::round(10000 * elbow_row->real("accuracy")) / 100);
    EXPECT_NEAR(std::stod(line[col("top1_loss")]),
                100 * (dense_row->real("accuracy") - elbow_row->real("accuracy")), 0.011);
    EXPECT_GT(std::stod(line[col("ratio")]), 3.0);
    EXPECT_LT(std::stod(line[col("ratio")]), 5.1);
  }
  EXPECT_EQ(found, 1) << summary;
  const std::string curve = slurp(path("report/accuracy_curves.csv"));
  EXPECT_NE(curve.find("wp:0.8"), std::string::npos) << curve;
  EXPECT_NE(slurp(path("report/report.md")).find("Accuracy vs compression"), std::string::npos);
  // The speedup table reads the resolved elbow level: 1/(1-0.8) = 5x expected.
  const auto speedup = parse_csv(slurp(path("report/speedup.csv")));
  int elbow_lines = 0;
  for (const auto& line : speedup)
    if (std::find(line.begin(), line.end(), "wp:elbow=0.8") != line.end()) {
      ++elbow_lines;
      EXPECT_NE(std::find(line.begin(), line.end(), "5.00"), line.end());
    }
  EXPECT_EQ(elbow_lines, 1);
}

}  // namespace
}  // namespace dlas::study
