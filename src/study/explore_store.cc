// The explore table beside the results table (explore_store.h).
#include "explore_store.h"

#include <sqlite3.h>

#include "dlas/core/error.h"

namespace dlas::study {

struct ExploreStore::Impl {
  sqlite3* db = nullptr;
  std::string path;

  [[noreturn]] void fail_sqlite(const char* what) const {
    fail(ErrorKind::kInvalidInput, path, ": ", what, ": ", sqlite3_errmsg(db));
  }
  void exec(const char* sql, const char* what) const {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail_sqlite(what);
  }
  // A prepared statement, finalized when it goes out of scope.
  struct Stmt {
    sqlite3_stmt* s = nullptr;
    ~Stmt() { sqlite3_finalize(s); }
  };
  void prepare(Stmt& st, const char* sql) const {
    if (sqlite3_prepare_v2(db, sql, -1, &st.s, nullptr) != SQLITE_OK) fail_sqlite("preparing");
  }
};

ExploreStore::ExploreStore(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  if (sqlite3_open_v2(path.c_str(), &impl_->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK)
    impl_->fail_sqlite("opening");
  sqlite3_busy_timeout(impl_->db, 60000);
  impl_->exec(
      "CREATE TABLE IF NOT EXISTS explore_hits (hardware_id TEXT NOT NULL, grp TEXT NOT NULL, "
      "begin_record INTEGER NOT NULL, end_record INTEGER NOT NULL, hits BLOB NOT NULL, "
      "seconds REAL NOT NULL, PRIMARY KEY (hardware_id, grp, begin_record, end_record)); "
      "CREATE TABLE IF NOT EXISTS explore_final (hardware_id TEXT NOT NULL, variant_id TEXT NOT "
      "NULL, round INTEGER NOT NULL, median_ms REAL NOT NULL, PRIMARY KEY (hardware_id, "
      "variant_id, round)); "
      "CREATE TABLE IF NOT EXISTS explore_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
      "creating the explore tables");
}

ExploreStore::~ExploreStore() {
  if (impl_ && impl_->db) sqlite3_close(impl_->db);
}

std::optional<std::vector<uint8_t>> ExploreStore::hits(const std::string& hw,
                                                       const std::string& group, int64_t begin,
                                                       int64_t end) const {
  Impl::Stmt st;
  impl_->prepare(st,
                 "SELECT hits FROM explore_hits WHERE hardware_id = ? AND grp = ? AND "
                 "begin_record = ? AND end_record = ?");
  sqlite3_bind_text(st.s, 1, hw.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.s, 2, group.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st.s, 3, begin);
  sqlite3_bind_int64(st.s, 4, end);
  if (sqlite3_step(st.s) != SQLITE_ROW) return std::nullopt;
  const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(st.s, 0));
  const int n = sqlite3_column_bytes(st.s, 0);
  if (n != end - begin) return std::nullopt;  // not what was asked: score again
  return std::vector<uint8_t>(p, p + n);
}

void ExploreStore::put_hits(const std::string& hw, const std::string& group, int64_t begin,
                            int64_t end, const std::vector<uint8_t>& hits, double seconds) {
  Impl::Stmt st;
  impl_->prepare(st, "INSERT OR REPLACE INTO explore_hits VALUES (?, ?, ?, ?, ?, ?)");
  sqlite3_bind_text(st.s, 1, hw.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.s, 2, group.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st.s, 3, begin);
  sqlite3_bind_int64(st.s, 4, end);
  sqlite3_bind_blob(st.s, 5, hits.data(), static_cast<int>(hits.size()), SQLITE_TRANSIENT);
  sqlite3_bind_double(st.s, 6, seconds);
  if (sqlite3_step(st.s) != SQLITE_DONE) impl_->fail_sqlite("storing scored records");
}

double ExploreStore::seconds(const std::string& hw, const std::string& group) const {
  Impl::Stmt st;
  impl_->prepare(st, "SELECT total(seconds) FROM explore_hits WHERE hardware_id = ? AND grp = ?");
  sqlite3_bind_text(st.s, 1, hw.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.s, 2, group.c_str(), -1, SQLITE_TRANSIENT);
  return sqlite3_step(st.s) == SQLITE_ROW ? sqlite3_column_double(st.s, 0) : 0.0;
}

std::optional<double> ExploreStore::final_median(const std::string& hw, const std::string& id,
                                                 int round) const {
  Impl::Stmt st;
  impl_->prepare(st,
                 "SELECT median_ms FROM explore_final WHERE hardware_id = ? AND variant_id = ? "
                 "AND round = ?");
  sqlite3_bind_text(st.s, 1, hw.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.s, 2, id.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st.s, 3, round);
  if (sqlite3_step(st.s) != SQLITE_ROW) return std::nullopt;
  return sqlite3_column_double(st.s, 0);
}

void ExploreStore::put_final_median(const std::string& hw, const std::string& id, int round,
                                    double median_ms) {
  Impl::Stmt st;
  impl_->prepare(st, "INSERT OR REPLACE INTO explore_final VALUES (?, ?, ?, ?)");
  sqlite3_bind_text(st.s, 1, hw.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.s, 2, id.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st.s, 3, round);
  sqlite3_bind_double(st.s, 4, median_ms);
  if (sqlite3_step(st.s) != SQLITE_DONE) impl_->fail_sqlite("storing a final timing");
}

std::optional<std::string> ExploreStore::setting(const std::string& key) const {
  Impl::Stmt st;
  impl_->prepare(st, "SELECT value FROM explore_settings WHERE key = ?");
  sqlite3_bind_text(st.s, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st.s) != SQLITE_ROW) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(sqlite3_column_text(st.s, 0)));
}

void ExploreStore::put_setting(const std::string& key, const std::string& value) {
  Impl::Stmt st;
  impl_->prepare(st, "INSERT OR REPLACE INTO explore_settings VALUES (?, ?)");
  sqlite3_bind_text(st.s, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.s, 2, value.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st.s) != SQLITE_DONE) impl_->fail_sqlite("storing a setting");
}

}  // namespace dlas::study
