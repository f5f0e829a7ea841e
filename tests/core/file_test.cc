// The atomic writer (dlas/core/file.h): the target holds the old bytes or the new ones, never
// a part; a failure leaves no temporary file behind and names the target.
#include "dlas/core/file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "dlas/core/error.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

class CoreFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("dlas_core_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path path(const std::string& name) const { return dir_ / name; }
  // Every file in the folder (temporaries included: they are hidden dot files).
  std::set<std::string> files() const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.insert(e.path().filename().string());
    return out;
  }
  // The message of the Error `f` throws (fails the test when it throws none).
  template <class F>
  Error thrown(F&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "no dlas::Error thrown";
    return Error(ErrorKind::kInternal, "");
  }

  fs::path dir_;
};

TEST_F(CoreFile, WritesAndReplaces) {
  const fs::path out = path("out.txt");
  write_file_atomic(out, "first");
  EXPECT_EQ(read_file(out), "first");
  write_file_atomic(out, std::string("second, longer"));
  EXPECT_EQ(read_file(out), "second, longer");
  write_file_atomic(out, [](std::ostream& s) { s << "third " << 3; });
  EXPECT_EQ(read_file(out), "third 3");
  write_file_atomic_via(out, [](const fs::path& tmp) { std::ofstream(tmp) << "fourth"; });
  EXPECT_EQ(read_file(out), "fourth");
  write_file_atomic(out, "");  // an empty file is a file
  EXPECT_EQ(read_file(out), "");
  EXPECT_EQ(files(), std::set<std::string>({"out.txt"}));  // no temporaries left
}

TEST_F(CoreFile, AFailedWriteKeepsTheOldFileAndLeavesNoTemporary) {
  const fs::path out = path("keep.txt");
  write_file_atomic(out, "old");
  // The writer throws half-way: the temporary (which holds "half") is removed.
  EXPECT_THROW(write_file_atomic(out,
                                 [](std::ostream& s) {
                                   s << "half";
                                   s.flush();
                                   fail(ErrorKind::kRuntime, "stop");
                                 }),
               Error);
  // The stream fails (as on a full disk): kRuntime naming the target.
  const Error bad = thrown(
      [&] { write_file_atomic(out, [](std::ostream& s) { s.setstate(std::ios::badbit); }); });
  EXPECT_EQ(bad.kind(), ErrorKind::kRuntime);
  EXPECT_NE(std::string(bad.what()).find(out.string()), std::string::npos) << bad.what();
  // A writer that takes a path and writes nothing there.
  const Error none = thrown([&] { write_file_atomic_via(out, [](const fs::path&) {}); });
  EXPECT_NE(std::string(none.what()).find(out.string()), std::string::npos) << none.what();
  // One that writes, then throws.
  EXPECT_THROW(write_file_atomic_via(out,
                                     [](const fs::path& tmp) {
                                       std::ofstream(tmp) << "partial";
                                       throw std::runtime_error("library failed");
                                     }),
               std::runtime_error);
  EXPECT_EQ(read_file(out), "old");
  EXPECT_EQ(files(), std::set<std::string>({"keep.txt"}));
}

TEST_F(CoreFile, ErrorsNameTheTarget) {
  // A folder that does not exist: bad input, before anything is written.
  const fs::path missing = path("no/such/dir/out.txt");
  const Error e = thrown([&] { write_file_atomic(missing, "x"); });
  EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
  EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  EXPECT_THROW(check_output_folder(missing), Error);
  EXPECT_NO_THROW(check_output_folder(path("fine.txt")));
  EXPECT_NO_THROW(check_output_folder("relative-name-in-the-working-folder.txt"));
  // The target is a non-empty folder: the rename fails; the temporary goes.
  fs::create_directories(path("taken/inside"));
  const Error r = thrown([&] { write_file_atomic(path("taken"), "x"); });
  EXPECT_EQ(r.kind(), ErrorKind::kRuntime);
  EXPECT_NE(std::string(r.what()).find(path("taken").string()), std::string::npos) << r.what();
  EXPECT_EQ(files(), std::set<std::string>({"taken"}));
  // Reading: missing file, folder.
  EXPECT_EQ(thrown([&] { read_file(path("nope")); }).kind(), ErrorKind::kInvalidInput);
  EXPECT_EQ(thrown([&] { read_file(dir_); }).kind(), ErrorKind::kInvalidInput);
}

TEST_F(CoreFile, TempPathAndCommitForToolsThatWriteSeveralFiles) {
  const fs::path a = path("a.svg"), b = path("b.png");
  const fs::path ta = temp_path_for(a);
  EXPECT_EQ(ta, temp_path_for(a));  // the same name for one target (gnuplot's script uses it)
  EXPECT_NE(ta, temp_path_for(b));
  EXPECT_EQ(ta.parent_path(), a.parent_path());  // same folder: the rename is atomic
  EXPECT_EQ(ta.filename().string()[0], '.');
  std::ofstream(ta) << "svg";
  commit_temp_file(ta, a);
  EXPECT_EQ(read_file(a), "svg");
  // Never written: kRuntime naming the target.
  const Error e = thrown([&] { commit_temp_file(temp_path_for(b), b); });
  EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
  EXPECT_NE(std::string(e.what()).find(b.string()), std::string::npos) << e.what();
  EXPECT_EQ(files(), std::set<std::string>({"a.svg"}));
}

TEST_F(CoreFile, HashOfAFile) {
  write_file_atomic(path("empty"), "");
  write_file_atomic(path("a"), "a");
  // FNV-1a 64: the offset basis for no bytes, and the published value for "a".
  EXPECT_EQ(file_hash_hex(path("empty")), "cbf29ce484222325");
  EXPECT_EQ(file_hash_hex(path("a")), "af63dc4c8601ec8c");
  EXPECT_THROW(file_hash_hex(path("missing")), Error);
}

}  // namespace
}  // namespace dlas
