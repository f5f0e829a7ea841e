// Helpers shared by the study tests: a fresh temp folder per test, an RFC 4180 CSV
// reader, and a check that an exported row says what the database holds.
#pragma once

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"
#include "dlas/study/store.h"

namespace dlas::study {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("dlas_study_") + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

// Writes a tiny version of zoo model `name` (width x0.125, image_size x image_size inputs) as
// ONNX: a study variant of it runs in milliseconds.
inline void export_tiny_zoo_model(const std::string& name, int64_t image_size,
                                  const std::string& path) {
  ZooOptions z;
  z.width_mult = 0.125;
  z.image_size = image_size;
  export_onnx_file(build_zoo_model(name, z), path);
}

// Makes a file read-only even for root (who ignores permission bits): chmod for users,
// the immutable attribute for root. False when that is not possible here.
inline bool make_read_only(const std::string& path) {
  if (::geteuid() != 0) return ::chmod(path.c_str(), 0444) == 0;
  return std::system(("chattr +i '" + path + "' 2>/dev/null").c_str()) == 0;
}
inline void undo_read_only(const std::string& path) {
  if (::geteuid() == 0) std::system(("chattr -i '" + path + "' 2>/dev/null").c_str());
  ::chmod(path.c_str(), 0644);
}

// Records of an RFC 4180 CSV text (quoted fields may hold commas, quotes and newlines).
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      any = true;
    } else if (c == '\n') {
      row.push_back(field);
      rows.push_back(row);
      row.clear();
      field.clear();
      any = false;
    } else if (c != '\r') {
      field += c;
      any = true;
    }
  }
  if (any) {
    row.push_back(field);
    rows.push_back(row);
  }
  return rows;
}

// Every column of `row` against its CSV field (under `header`) and its JSON value.
inline ::testing::AssertionResult rows_equal_export(const Row& row,
                                                    const std::vector<std::string>& header,
                                                    const std::vector<std::string>& csv,
                                                    const nlohmann::json& json) {
  if (csv.size() != header.size())
    return ::testing::AssertionFailure() << "CSV record has " << csv.size() << " fields";
  for (size_t c = 0; c < header.size(); ++c) {
    const std::string& name = header[c];
    auto it = row.cells.find(name);
    const Cell cell = it == row.cells.end() ? Cell{} : it->second;
    const nlohmann::json& j = json.at(name);
    const std::string& f = csv[c];
    bool ok = true;
    if (std::holds_alternative<std::monostate>(cell)) {
      ok = f.empty() && j.is_null();
    } else if (const auto* v = std::get_if<int64_t>(&cell)) {
      ok = f == std::to_string(*v) && j.is_number_integer() && j.get<int64_t>() == *v;
    } else if (const auto* d = std::get_if<double>(&cell)) {
      double parsed = 0;
      std::from_chars(f.data(), f.data() + f.size(), parsed);
      ok = parsed == *d && j.is_number() && j.get<double>() == *d;
    } else {
      const auto& s = std::get<std::string>(cell);
      ok = f == s && j.is_string() && j.get<std::string>() == s;
    }
    if (!ok)
      return ::testing::AssertionFailure() << "column " << name << ": CSV '" << f << "', JSON "
                                           << j.dump() << " disagree with the DB";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace dlas::study
