// The report as a reader sees it: a tiny study (two tiny models scored on a synthetic
// dataset, dense and weight-pruned, two algorithms, the native and the scalar ISA
// path: every figure kind) is measured and reported by the CLI, then headless Chromium renders
// report.html. The page must load (Chromium exits 0 and writes a screenshot that is not one flat
// colour), every plot file written must be linked from the page and every local link must resolve.
// Skipped, saying why, where Chromium or gnuplot is not installed.
#include <gtest/gtest.h>
#include <png.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "dlas/data/dataset.h"
#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"
#include "dlas/system/accuracy.h"
#include "study/study_test_util.h"

namespace dlas::study {
namespace {

namespace fs = std::filesystem;

constexpr const char* kData = "synthetic:1,16,16:4:64";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The first of `names` on PATH, or "".
std::string find_program(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (std::system(("command -v " + std::string(n) + " > /dev/null 2>&1").c_str()) == 0) return n;
  return "";
}

class StudyReportScreenshot : public TempDirTest {};

TEST_F(StudyReportScreenshot, PageLoadsAndLinksEveryPlot) {
  const std::string chromium = find_program({"chromium", "chromium-browser"});
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (bash scripts/setup.sh installs it): the "
                    "report's page is not rendered";
  if (find_program({"gnuplot"}).empty())
    GTEST_SKIP() << "gnuplot is not installed (bash scripts/setup.sh installs it): no plots";

  // Two tiny models built for the dataset's 1x16x16 images and 4 classes.
  const auto ds = data::open_dataset(kData, data::Split::kTest);
  for (const char* name : {"resnet18-cifar", "mobilenetv1-cifar"}) {
    ZooOptions z;
    z.width_mult = 0.125;
    export_onnx_file(build_zoo_model(name, zoo_options_for(ds->info(), z)),
                     path(std::string(name) + ".onnx"));
  }
  std::ofstream(path("s.toml"))
      << "[study]\nrepeat = 2\nwarmup = 0\ntimeout = 60\n[space]\n"
         "models = [\"resnet18-cifar.onnx\", \"mobilenetv1-cifar.onnx\"]\n"
         "dataset = [\""
      << kData
      << "\"]\ncompress = [\"dense\", \"wp:0.9\"]\nconv_algo = [\"direct\", \"gemm\"]\n"
         "isa = [\"native\", \"scalar\"]\n[accuracy]\nlimit = 16\n";
  const std::string cli =
      std::string("env DLAS_MEASURE_LOCK='") + path("lock") + "' " + DLAS_CLI_PATH;
  ASSERT_EQ(std::system((cli + " study run " + path("s.toml") + " --db " + path("s.db") + " 2>" +
                         path("run.log"))
                            .c_str()),
            0)
      << slurp(path("run.log"));
  ASSERT_EQ(std::system((cli + " study report " + path("s.db") + " -o " + path("report") +
                         " --json > " + path("report.json") + " 2>" + path("report.log"))
                            .c_str()),
            0)
      << slurp(path("report.log"));
  const auto j = nlohmann::json::parse(slurp(path("report.json")));
  const fs::path report = dir() / "report";
  const std::string html = slurp(report / "report.html");

  // The summary comes first, then the observations, the plots and the tables.
  const size_t summary = html.find("id=\"summary\""), obs = html.find("id=\"observations\""),
               plots = html.find("id=\"plots\""), tables = html.find("id=\"tables\"");
  ASSERT_NE(summary, std::string::npos);
  EXPECT_LT(summary, obs);
  EXPECT_LT(obs, plots);
  EXPECT_LT(plots, tables);

  // Every plot written is inlined and linked; every local link resolves.
  std::set<std::string> linked;
  const std::regex link(R"re((?:href|src)="([^"#][^"]*)")re");
  for (std::sregex_iterator it(html.begin(), html.end(), link), end; it != end; ++it) {
    const std::string target = (*it)[1];
    if (target.find("://") != std::string::npos) continue;
    linked.insert(target);
    EXPECT_TRUE(fs::exists(report / target)) << "report.html links a missing file: " << target;
  }
  int svgs = 0;
  for (const auto& f : j["files"]) {
    const std::string name = f;
    const std::string ext = fs::path(name).extension().string();
    if (ext != ".svg" && ext != ".png") continue;
    svgs += ext == ".svg";
    EXPECT_TRUE(linked.count(name)) << "plot " << name << " is not linked from report.html";
  }
  // Speedup and latency heatmaps per ISA path, accuracy, platforms, MACs.
  EXPECT_EQ(svgs, 7) << j["files"].dump();
  EXPECT_EQ(j["plots"], svgs);
  size_t inlined = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1))
    ++inlined;
  EXPECT_EQ(inlined, static_cast<size_t>(svgs));

  // Chromium renders the page.
  const fs::path shot = dir() / "page.png";
  const std::string cmd = "timeout 90 " + chromium +
                          " --headless --no-sandbox --disable-gpu --hide-scrollbars "
                          "--user-data-dir=" +
                          path("chromium-profile") + " --screenshot=" + shot.string() +
                          " --window-size=1400,3000 file://" + (report / "report.html").string() +
                          " > " + path("chromium.log") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(path("chromium.log"));
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&img, shot.c_str())) << img.message;
  img.format = PNG_FORMAT_RGB;
  std::vector<unsigned char> px(PNG_IMAGE_SIZE(img));
  ASSERT_TRUE(png_image_finish_read(&img, nullptr, px.data(), 0, nullptr)) << img.message;
  EXPECT_EQ(img.width, 1400u);
  // Not blank: a page of text, tables and plots has many colours and little of it is
  // the background.
  std::set<unsigned> colours;
  size_t background = 0;
  for (size_t i = 0; i + 2 < px.size(); i += 3) {
    const unsigned c = (px[i] << 16) | (px[i + 1] << 8) | px[i + 2];
    colours.insert(c);
    background += c == 0xffffff;
  }
  EXPECT_GT(colours.size(), 50u) << "the screenshot is (nearly) one colour";
  EXPECT_LT(background, px.size() / 3 * 98 / 100) << "the screenshot is (nearly) blank";
}

}  // namespace
}  // namespace dlas::study
