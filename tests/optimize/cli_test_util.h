// A fresh temp folder per test and `dlas ARGS` run through the shell with stdout and stderr
// captured: what the pruning CLI tests share.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace dlas::test {

struct CliResult {
  int code;
  std::string out, err;
};

class CliTest : public ::testing::Test {
 protected:
  std::filesystem::path dir_;
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("dlas_cli_") + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  CliResult dlas(const std::string& args) {
    const auto out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string cmd =
        std::string(DLAS_CLI_PATH) + " " + args + " >" + out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    CliResult r{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(out),
                slurp(err)};
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return r;
  }
  std::string path(const std::string& name) { return (dir_ / name).string(); }
};

}  // namespace dlas::test
