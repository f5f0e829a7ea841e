// Small CNNs trained by PyTorch itself on Fashion-MNIST (scripts/train_fmnist_torch.py), the
// foreign models the fidelity and int8 tests share. The script runs once per test process
// into build/test_artifacts/fmnist_torch (next to the test binary) and keeps models whose
// script and torch version are unchanged, so a rerun costs nothing.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace dlas::test {

struct FmnistTorchModels {
  std::filesystem::path dir;  // NAME.onnx and NAME.json for every model the script trains
  std::string skip_reason;    // non-empty: no python3 with torch, or no Fashion-MNIST
  int status = 0;             // the script's exit status
  std::filesystem::path log() const { return dir / "train.log"; }
};

inline const FmnistTorchModels& fmnist_torch_models() {
  static const FmnistTorchModels models = [] {
    namespace fs = std::filesystem;
    FmnistTorchModels m;
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    m.dir = (ec ? fs::current_path() : exe.parent_path()) / "test_artifacts" / "fmnist_torch";
    const char* env = std::getenv("DLAS_PYTHON");
    const std::string python = env && *env ? env : "/usr/bin/python3";
    if (!fs::exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")) {
      m.skip_reason = "Fashion-MNIST is not installed (Debian's dataset-fashion-mnist)";
      return m;
    }
    // find_spec only locates the packages (importing torch takes seconds).
    const std::string probe = "'" + python +
                              "' -c 'import importlib.util as u, sys; sys.exit(0 if all("
                              "u.find_spec(p) for p in (\"torch\", \"numpy\")) else 1)' "
                              ">/dev/null 2>&1";
    if (std::system(probe.c_str()) != 0) {
      m.skip_reason = python + " cannot import torch and numpy (install python3-torch)";
      return m;
    }
    fs::create_directories(m.dir);
    const std::string cmd = "'" + python + "' '" + DLAS_SOURCE_DIR +
                            "/scripts/train_fmnist_torch.py' --out '" + m.dir.string() +
                            "' >'" + m.log().string() + "' 2>&1";
    m.status = std::system(cmd.c_str());
    return m;
  }();
  return models;
}

}  // namespace dlas::test
