// External truth for export: ONNX's own checker (python3-onnx, full_check = with
// shape inference) accepts every zoo model dlas exports.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPython = "/usr/bin/python3";

bool onnx_python_available() {
  const std::string cmd = std::string(kPython) + " -c 'import onnx' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

TEST(OnnxChecker, AcceptsEveryExportedZooModel) {
  if (!onnx_python_available()) GTEST_SKIP() << "python3-onnx is not installed";
  const fs::path dir =
      fs::temp_directory_path() / ("dlas_onnx_checker_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string files;
  for (const ZooEntry& e : zoo_models()) {
    ZooOptions o;
    if (e.dataset == "imagenet") o.image_size = 64;  // same ops and attributes, smaller tensors
    const fs::path p = dir / (e.name + ".onnx");
    export_onnx_file(build_zoo_model(e.name, o), p.string());
    files += ' ';
    files += p.string();
  }
  const std::string script =
      "import onnx, sys\n"
      "for f in sys.argv[1:]:\n"
      "    onnx.checker.check_model(onnx.load(f), full_check=True)\n"
      "    print('onnx.checker ok:', f)\n";
  const fs::path py = dir / "check.py";
  {
    FILE* f = std::fopen(py.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(script.c_str(), f);
    std::fclose(f);
  }
  const int rc = std::system((std::string(kPython) + " " + py.string() + files).c_str());
  EXPECT_EQ(rc, 0) << "onnx.checker rejected an exported model (see its message above)";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dlas
