// The results store: schema, upsert rules, refusal of foreign/newer/read-only files, merge,
// export.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dlas/core/error.h"
#include "dlas/study/store.h"
#include "study/study_test_util.h"

namespace dlas::study {
namespace {

namespace fs = std::filesystem;

Row make_row(const std::string& variant, const std::string& status, double median,
             const std::string& finished = "2024-01-01T00:00:00Z",
             const std::string& hardware = "cpu-test") {
  Row r;
  r.set("variant_id", variant);
  r.set("hardware_id", hardware);
  r.set("status", status);
  r.set("model", std::string("resnet18-cifar"));
  r.set("threads", int64_t{2});
  r.set("attempts", int64_t{1});
  r.set("finished_at", finished);
  if (status == kStatusOk) r.set("median_ms", median);
  r.set("reason", status == kStatusOk ? std::string() : std::string("boom, \"quoted\"\nline 2"));
  return r;
}

// Runs one SQL statement on a file directly (to forge databases the store must refuse).
void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// The first column of the first row of a query on a file directly ("" when no row).
std::string raw_query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

// The declared type of the results table's column `name`, and the file's schema version.
std::string column_type(const std::string& path, const std::string& name) {
  return raw_query(path,
                   "SELECT type FROM pragma_table_info('results') WHERE name = '" + name + "'");
}
std::string user_version(const std::string& path) { return raw_query(path, "PRAGMA user_version"); }

class StudyStore : public TempDirTest {};

TEST_F(StudyStore, CreatesWalDatabaseWithSchemaVersion) {
  const std::string db = path("r.db");
  {
    ResultStore s(db);
    EXPECT_EQ(s.count(), 0);
  }
  EXPECT_EQ(user_version(db), std::to_string(kStoreSchemaVersion));
  EXPECT_EQ(raw_query(db, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw_query(db, "PRAGMA application_id"), std::to_string(0x646c6173));
}

TEST_F(StudyStore, OkRowIsNeverReplacedByAFailure) {
  ResultStore s(path("r.db"));
  s.put(make_row("v1", kStatusFailed, 0));
  s.put(make_row("v1", kStatusOk, 5.0));     // a rerun that worked replaces the failure
  s.put(make_row("v1", kStatusCrashed, 0));  // ...and a later failure does not replace it
  s.put(make_row("v2", kStatusOk, 7.0));
  s.put(make_row("v2", kStatusOk, 7.0, "2024-01-01T00:00:00Z", "cpu-other"));  // other hardware
  const auto rows = s.rows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].text("variant_id"), "v1");
  EXPECT_EQ(rows[0].text("status"), "ok");
  EXPECT_DOUBLE_EQ(rows[0].real("median_ms"), 5.0);
  EXPECT_EQ(rows[0].integer("attempts"), 2);  // the refused write did not count
  EXPECT_EQ(s.ok_variants("cpu-test"), (std::vector<std::string>{"v1", "v2"}));
  EXPECT_EQ(s.ok_variants("cpu-other"), (std::vector<std::string>{"v2"}));
  EXPECT_TRUE(s.ok_variants("cpu-none").empty());
}

TEST_F(StudyStore, RefusesNewerSchemaForeignAndBrokenFiles) {
  auto refused = [&](const std::string& db, const std::string& why, ResultStore::Mode mode) {
    try {
      ResultStore s(db, mode);
      ADD_FAILURE() << db << " was opened";
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), 2) << e.what();
      EXPECT_NE(std::string(e.what()).find(db), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  for (auto mode : {ResultStore::Mode::kReadWrite, ResultStore::Mode::kReadOnly}) {
    const std::string newer = path("newer.db");
    {
      ResultStore s(newer);
      s.put(make_row("v1", kStatusOk, 1.0));
    }
    raw_sql(newer, "PRAGMA user_version = 99");
    refused(newer, "newer dlas", mode);
    raw_sql(newer, "PRAGMA user_version = " + std::to_string(kStoreSchemaVersion));
    EXPECT_EQ(ResultStore(newer).count(), 1);  // nothing lost

    const std::string foreign = path("foreign.db");
    raw_sql(foreign, "CREATE TABLE IF NOT EXISTS t (x)");
    refused(foreign, "not a dlas results database", mode);

    const std::string junk = path("junk.db");
    std::ofstream(junk) << "this is not a database, just text long enough to have a header";
    refused(junk, "not a SQLite database", mode);
  }
  refused(path("missing.db"), "no such results database", ResultStore::Mode::kReadOnly);
  refused(path("no/such/dir/r.db"), "does not exist", ResultStore::Mode::kReadWrite);
}

TEST_F(StudyStore, ReadOnlyFileIsRefusedForWriting) {
  const std::string db = path("ro.db");
  { ResultStore(db).put(make_row("v1", kStatusOk, 1.0)); }
  if (!make_read_only(db)) GTEST_SKIP() << "cannot make a file read-only here";
  try {
    ResultStore s(db);
    ADD_FAILURE() << "opened a read-only file for writing";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ResultStore(db, ResultStore::Mode::kReadOnly).count(), 1);
  undo_read_only(db);
}

TEST_F(StudyStore, MergePrefersOkThenNewest) {
  const std::string a = path("a.db"), b = path("b.db"), out = path("all.db");
  {
    ResultStore s(a);
    s.put(make_row("v1", kStatusOk, 1.0, "2024-01-01T00:00:00Z"));
    s.put(make_row("v2", kStatusFailed, 0, "2024-01-03T00:00:00Z"));
    s.put(make_row("v3", kStatusOk, 3.0, "2024-01-01T00:00:00Z"));
  }
  {
    ResultStore s(b);
    s.put(make_row("v1", kStatusTimeout, 0, "2024-01-05T00:00:00Z"));  // newer but not ok
    s.put(make_row("v2", kStatusOk, 2.0, "2024-01-02T00:00:00Z"));     // ok beats failed
    s.put(make_row("v3", kStatusOk, 3.5, "2024-01-02T00:00:00Z"));     // newer ok wins
    s.put(make_row("v4", kStatusOk, 4.0));
  }
  EXPECT_EQ(merge_stores({a, b}, out), 4);
  const auto rows = ResultStore(out, ResultStore::Mode::kReadOnly).rows();
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_DOUBLE_EQ(rows[0].real("median_ms"), 1.0);
  EXPECT_EQ(rows[1].text("status"), "ok");
  EXPECT_DOUBLE_EQ(rows[2].real("median_ms"), 3.5);
  EXPECT_EQ(rows[3].text("variant_id"), "v4");
  // Same result in the other order.
  EXPECT_EQ(merge_stores({b, a}, out), 4);
  const auto again = ResultStore(out, ResultStore::Mode::kReadOnly).rows();
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].cells, again[i].cells) << i;
  // The output is one self-contained file: no temporaries or WAL files left over.
  for (const auto& e : fs::directory_iterator(dir()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  EXPECT_FALSE(fs::exists(out + "-wal"));
}

TEST_F(StudyStore, MergeRefusesMismatchedSchemaAndWritesNothing) {
  const std::string a = path("a.db"), b = path("b.db"), out = path("all.db");
  { ResultStore(a).put(make_row("v1", kStatusOk, 1.0)); }
  { ResultStore(b).put(make_row("v2", kStatusOk, 1.0)); }
  raw_sql(b, "PRAGMA user_version = " + std::to_string(kStoreSchemaVersion + 1));
  EXPECT_THROW(merge_stores({a, b}, out), Error);
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

// Schema 1 (before the tuning_* columns): read as NULLs read-only, upgraded in place by a
// read-write open, rows kept.
TEST_F(StudyStore, UpgradesASchemaOneDatabase) {
  const std::string db = path("old.db");
  { ResultStore(db).put(make_row("v1", kStatusOk, 1.5)); }
  for (const char* c :
       {"tuning_trials", "tuning_failures", "tuning_cold_share", "tuning_stop", "dataset", "top5",
        "accuracy_samples", "accuracy_s", "nonzero_params", "layout", "profile"})
    raw_sql(db, std::string("ALTER TABLE results DROP COLUMN ") + c);
  raw_sql(db, "PRAGMA user_version = 1");
  {
    const std::vector<Row> rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_FALSE(rows[0].has("tuning_trials"));
    EXPECT_DOUBLE_EQ(rows[0].real("median_ms"), 1.5);
  }
  {
    ResultStore s(db);
    Row r = make_row("v2", kStatusOk, 2.0);
    r.set("tuning_trials", int64_t{17});
    s.put(r);
    EXPECT_EQ(s.count(), 2);
  }
  EXPECT_EQ(user_version(db), std::to_string(kStoreSchemaVersion));
  const std::vector<Row> rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].integer("tuning_trials"), 17);
}

// Schema 2 (before the accuracy columns): the same in-place upgrade.
TEST_F(StudyStore, UpgradesASchemaTwoDatabase) {
  const std::string db = path("v2.db");
  {
    Row r = make_row("v1", kStatusOk, 1.5);
    r.set("tuning_trials", int64_t{5});
    ResultStore(db).put(r);
  }
  const char* const added[] = {"dataset",        "top5",   "accuracy_samples", "accuracy_s",
                               "nonzero_params", "layout", "profile"};
  for (const char* c : added) raw_sql(db, std::string("ALTER TABLE results DROP COLUMN ") + c);
  raw_sql(db, "PRAGMA user_version = 2");
  {
    const std::vector<Row> rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_FALSE(rows[0].has("top5"));
    EXPECT_EQ(rows[0].integer("tuning_trials"), 5);
  }
  {
    ResultStore s(db);
    Row r = make_row("v2", kStatusOk, 2.0);
    r.set("dataset", std::string("fashion-mnist"));
    r.set("accuracy", 0.91);
    r.set("top5", 0.995);
    r.set("accuracy_samples", int64_t{10000});
    r.set("nonzero_params", int64_t{1234});
    s.put(r);
  }
  EXPECT_EQ(user_version(db), std::to_string(kStoreSchemaVersion));
  const std::vector<Row> rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[0].has("dataset"));  // the old row: NULL in the new columns
  EXPECT_EQ(rows[0].integer("tuning_trials"), 5);
  EXPECT_EQ(rows[1].text("dataset"), "fashion-mnist");
  EXPECT_DOUBLE_EQ(rows[1].real("top5"), 0.995);
  EXPECT_EQ(rows[1].integer("accuracy_samples"), 10000);
  EXPECT_EQ(rows[1].integer("nonzero_params"), 1234);
}

// Schema 3 (before the layout column): its rows read with no layout, the file gains the column
// when written to; the old rows keep NULL there.
TEST_F(StudyStore, UpgradesASchemaThreeDatabaseWithTheLayoutColumn) {
  const std::string db = path("v3.db");
  { ResultStore(db).put(make_row("v1", kStatusOk, 1.5)); }
  raw_sql(db, "ALTER TABLE results DROP COLUMN layout");
  raw_sql(db, "ALTER TABLE results DROP COLUMN profile");
  raw_sql(db, "PRAGMA user_version = 3");
  {
    const std::vector<Row> rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_FALSE(rows[0].has("layout"));
    EXPECT_DOUBLE_EQ(rows[0].real("median_ms"), 1.5);
  }
  {
    ResultStore s(db);
    Row r = make_row("v2;layout=nchwc", kStatusOk, 1.0);
    r.set("layout", std::string("nchwc"));
    s.put(r);
  }
  EXPECT_EQ(column_type(db, "layout"), "TEXT");
  EXPECT_EQ(user_version(db), std::to_string(kStoreSchemaVersion));
  const std::vector<Row> rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[0].has("layout"));  // the old row: NULL
  EXPECT_EQ(rows[1].text("layout"), "nchwc");
  // The column is documented with the others.
  const auto& cols = result_columns();
  EXPECT_TRUE(std::any_of(cols.begin(), cols.end(), [](const ColumnDef& c) {
    return std::string(c.name) == "layout" && c.type == ColumnType::kText;
  }));
}

// Schema 4 (before the profile column): read as is, upgraded in place when written to; the old
// rows keep NULL there, and the export carries the column.
TEST_F(StudyStore, UpgradesASchemaFourDatabaseWithTheProfileColumn) {
  const std::string db = path("v4.db");
  {
    Row r = make_row("v1", kStatusOk, 1.5);
    r.set("layout", std::string("nchw"));
    ResultStore(db).put(r);
  }
  raw_sql(db, "ALTER TABLE results DROP COLUMN profile");
  raw_sql(db, "PRAGMA user_version = 4");
  {
    const std::vector<Row> rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_FALSE(rows[0].has("profile"));
    EXPECT_EQ(rows[0].text("layout"), "nchw");
  }
  {
    ResultStore s(db);
    Row r = make_row("v2", kStatusOk, 1.0);
    r.set("profile", std::string("/cache/dlas/profile-cpu-avx2-t2.json"));
    s.put(r);
    Row n = make_row("v3", kStatusOk, 1.0);
    n.set("profile", std::string("none"));
    s.put(n);
  }
  EXPECT_EQ(column_type(db, "profile"), "TEXT");
  EXPECT_EQ(user_version(db), std::to_string(kStoreSchemaVersion));
  const std::vector<Row> rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FALSE(rows[0].has("profile"));  // the old row: NULL
  EXPECT_EQ(rows[1].text("profile"), "/cache/dlas/profile-cpu-avx2-t2.json");
  EXPECT_EQ(rows[2].text("profile"), "none");
  const auto& cols = result_columns();
  EXPECT_TRUE(std::any_of(cols.begin(), cols.end(), [](const ColumnDef& c) {
    return std::string(c.name) == "profile" && c.type == ColumnType::kText;
  }));
  // Both exports carry it: NULL as an empty field and null.
  const auto csv = parse_csv(export_rows(rows, ExportFormat::kCsv));
  ASSERT_EQ(csv.size(), 4u);
  const size_t at =
      static_cast<size_t>(std::find(csv[0].begin(), csv[0].end(), "profile") - csv[0].begin());
  ASSERT_LT(at, csv[0].size());
  EXPECT_EQ(csv[1][at], "");
  EXPECT_EQ(csv[2][at], "/cache/dlas/profile-cpu-avx2-t2.json");
  const auto json = nlohmann::json::parse(export_rows(rows, ExportFormat::kJson));
  EXPECT_TRUE(json[0]["profile"].is_null());
  EXPECT_EQ(json[2]["profile"], "none");
}

TEST_F(StudyStore, ExportCsvAndJsonMatchTheRows) {
  const std::string db = path("r.db");
  {
    ResultStore s(db);
    s.put(make_row("v1", kStatusOk, 1.25));
    s.put(make_row("v,2", kStatusFailed, 0));
  }
  const auto rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
  const auto csv = parse_csv(export_rows(rows, ExportFormat::kCsv));
  ASSERT_EQ(csv.size(), 3u);
  ASSERT_EQ(csv[0].size(), result_columns().size());
  for (size_t c = 0; c < csv[0].size(); ++c) EXPECT_EQ(csv[0][c], result_columns()[c].name);
  const auto json = nlohmann::json::parse(export_rows(rows, ExportFormat::kJson));
  ASSERT_EQ(json.size(), 2u);
  for (size_t r = 0; r < rows.size(); ++r) {
    EXPECT_TRUE(rows_equal_export(rows[r], csv[0], csv[r + 1], json[r]));
  }
  // Spot checks against what was put, so a wrong-but-consistent export cannot pass.
  EXPECT_EQ(json[0]["variant_id"], "v,2");
  EXPECT_EQ(json[0]["reason"], "boom, \"quoted\"\nline 2");
  EXPECT_TRUE(json[0]["median_ms"].is_null());
  EXPECT_EQ(json[1]["median_ms"], 1.25);
  EXPECT_EQ(json[1]["threads"], 2);
  EXPECT_EQ(csv[1][0], "v,2");
  EXPECT_EQ(csv[2][0], "v1");
}

TEST_F(StudyStore, RowJsonRoundTrip) {
  Row r = make_row("v1", kStatusOk, 1.5);
  r.set("accuracy", std::monostate{});
  const Row back = row_from_json(row_to_json(r));
  EXPECT_EQ(back.cells, r.cells);
  EXPECT_THROW(row_from_json("not json"), Error);
  EXPECT_THROW(row_from_json("[1, 2]"), Error);
}

// Schema 5 (before the 'unsupported' status): the table is rebuilt under the new status
// check when written to, keeping every old row and column.
TEST_F(StudyStore, UpgradesASchemaFiveDatabaseToTheUnsupportedStatus) {
  const std::string db = path("v5.db");
  {
    Row r = make_row("v1", kStatusOk, 1.5);
    r.set("profile", std::string("none"));
    ResultStore(db).put(r);
  }
  std::string ddl = raw_query(db, "SELECT sql FROM sqlite_master WHERE name = 'results'");
  const std::string now = "'skipped', 'unsupported'";
  ASSERT_NE(ddl.find(now), std::string::npos) << ddl;
  ddl.replace(ddl.find(now), now.size(), "'skipped'");
  raw_sql(db, "ALTER TABLE results RENAME TO old; " + ddl +
                  "; INSERT INTO results SELECT * FROM old; DROP TABLE old; "
                  "PRAGMA user_version = 5");
  {
    ResultStore s(db);
    Row u = make_row("v2", kStatusUnsupported, 0);
    u.set("reason", std::string("openvino is not installed"));
    s.put(u);
  }
  EXPECT_EQ(user_version(db), std::to_string(kStoreSchemaVersion));
  const std::vector<Row> rows = ResultStore(db, ResultStore::Mode::kReadOnly).rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].text("status"), "ok");
  EXPECT_EQ(rows[0].text("profile"), "none");
  EXPECT_DOUBLE_EQ(rows[0].real("median_ms"), 1.5);
  EXPECT_EQ(rows[1].text("status"), "unsupported");
  EXPECT_EQ(rows[1].text("reason"), "openvino is not installed");
}

}  // namespace
}  // namespace dlas::study
