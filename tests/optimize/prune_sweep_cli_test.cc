// `dlas prune-sweep` bad input that bin/dlas rejects before it execs bin/dlas-train (so these
// hold without libtorch too): exit 2 with one line naming the culprit, nothing written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "optimize/cli_test_util.h"

namespace dlas::test {
namespace {

class PruneSweepCli : public CliTest {
 protected:
  void expect_bad(const std::string& args, const std::string& needle) {
    SCOPED_TRACE(args);
    const CliResult r = dlas("prune-sweep " + args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
};

TEST_F(PruneSweepCli, BadInputIsExit2BeforeTraining) {
  const std::string out = path("sweep");
  const std::string zoo = "resnet18-cifar --train-epochs 1 --dataset synthetic:1,8,8:4:32 ";
  expect_bad(zoo + "--method block -o " + out, "--method 'block'");
  expect_bad(zoo + "--method wieght -o " + out, "--method 'wieght'");
  expect_bad("resnet18-cifar --method weight -o " + out, "--train-epochs");
  expect_bad(zoo + "--method weight --levels 0.5,0.4 -o " + out, "ascending");
  expect_bad(zoo + "--method channel --levels 0.5,1 -o " + out, "outside (0, 1)");
  expect_bad(zoo + "--method channel --levels 0,0.5 -o " + out, "outside (0, 1)");
  expect_bad(zoo + "--method weight --levels 0.5,x -o " + out, "'x' is not a number");
  expect_bad(path("missing.onnx") + " --method weight -o " + out, "missing.onnx");
  expect_bad(path("missing.onnx") + " --train-epochs 2 --method weight -o " + out,
             "--train-epochs applies to zoo models only");
  EXPECT_FALSE(std::filesystem::exists(out));
  // A non-empty output directory needs --force.
  std::filesystem::create_directories(out);
  std::ofstream(out + "/old.txt") << "x";
  expect_bad(zoo + "--method weight -o " + out, "--force");
}

}  // namespace
}  // namespace dlas::test
