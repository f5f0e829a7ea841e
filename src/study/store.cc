#include "dlas/study/store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "dlas/core/error.h"
#include "dlas/core/file.h"

namespace dlas::study {
namespace {

namespace fs = std::filesystem;

// PRAGMA application_id: "dlas" in ASCII, so `file` and we can tell our databases apart.
constexpr int32_t kApplicationId = 0x646c6173;

using enum ColumnType;
const std::vector<ColumnDef> kColumns = {
    // key
    {"variant_id", kText, "canonical variant string (dlas::Variant::str())"},
    {"hardware_id", kText, "hash of the CPU description: same hardware, same id"},
    {"variant_hash", kText, "FNV-1a 64 of variant_id, 16 hex digits"},
    {"study", kText, "[study].name of the spec that produced the row"},
    // parameters
    {"model", kText, "zoo name or .onnx path as written in the spec"},
    {"batch", kInteger, "batch size"},
    {"compress", kText, "compression spec (dense)"},
    {"backend", kText, "dlas | onednn | cudnn | an ONNX peer (onnxruntime, openvino, tvm, ...)"},
    {"device", kText, "where the variant ran: cpu | cuda:N (rows before schema 7: cpu)", "'cpu'"},
    {"gpu", kText, "the GPU's name on a cuda device (NULL on the CPU, or where it was missing)"},
    {"conv_algo", kText, "convolution algorithm for every layer (onednn: onednn)"},
    {"layout", kText,
     "activation layout: nchw | nchwc | auto (blocked where the auto rule expects it to win); "
     "onednn: auto (it picks its own)"},
    {"schedule", kText, "default (untuned knobs) | tuned:<budget> (auto-tuned first)"},
    {"opt_level", kInteger, "graph optimization level 0..3"},
    {"isa", kText, "ISA path the kernels ran (onednn: onednn; on a GPU its architecture, sm_90)"},
    {"isa_emulated", kInteger, "1 when the ISA path was forced below the detected one"},
    {"threads", kInteger, "worker threads (1 on a GPU)"},
    {"profile", kText,
     "machine profile the dlas plan followed: its file, builtin:<name>, or none (the built-in "
     "rule); NULL for other backends"},
    {"repeat", kInteger, "timed repeats"},
    {"warmup", kInteger, "discarded warm-up runs"},
    // outcome
    {"status", kText, "ok | failed | timeout | crashed | skipped | unsupported"},
    {"reason", kText, "why a variant is not ok (empty when ok)"},
    {"stderr_tail", kText, "last lines the measuring process wrote to stderr"},
    // latency (ms)
    {"median_ms", kReal, "median latency of the repeats (the headline)"},
    {"mean_ms", kReal, "mean latency"},
    {"p10_ms", kReal, "10th percentile"},
    {"p90_ms", kReal, "90th percentile"},
    {"min_ms", kReal, "fastest repeat"},
    {"max_ms", kReal, "slowest repeat"},
    {"std_ms", kReal, "sample standard deviation"},
    {"cv", kReal, "coefficient of variation std/mean"},
    {"first_ms", kReal, "first (cold) run"},
    {"compile_ms", kReal, "plan compile time (passes, weight packing)"},
    // model and memory
    {"params", kInteger, "trainable parameters (before quantization)"},
    {"macs", kInteger, "multiply-accumulates per inference (after the graph passes)"},
    {"weight_bytes", kInteger, "weights (initializers) after the graph passes"},
    {"packed_weight_bytes", kInteger, "weights as packed by the chosen algorithms"},
    {"peak_activation_bytes", kInteger, "planned activation arena (peak activation memory)"},
    {"workspace_bytes", kInteger, "largest per-layer scratch"},
    {"peak_rss_bytes", kInteger, "peak resident memory of the measuring process"},
    // measured only by some variants (NULL otherwise)
    {"accuracy", kReal, "top-1 accuracy on the dataset's test split (fraction; the deployed plan)"},
    {"tuning_s", kReal, "auto-tuning time in seconds (tuned schedules)"},
    {"tuning_trials", kInteger, "candidates measured while tuning"},
    {"tuning_failures", kInteger, "candidates that failed (error or timeout) while tuning"},
    {"tuning_cold_share", kReal, "share of measuring time spent on cold or failed candidates"},
    {"tuning_stop", kText, "why tuning stopped: phi, goal, trials, seconds, exhausted, no-tasks"},
    {"dataset", kText, "dataset the model was built for and scored on (NULL: latency only)"},
    {"top5", kReal, "top-5 accuracy on the dataset's test split (fraction)"},
    {"accuracy_samples", kInteger, "test images top-1/top-5 were measured on"},
    {"accuracy_s", kReal, "seconds spent scoring the test images"},
    {"nonzero_params", kInteger, "parameters that are not zero (pruning leaves zeros)"},
    // provenance
    {"dlas_version", kText, "dlas version"},
    {"git_sha", kText, "git revision dlas was built from"},
    {"hostname", kText, "host that measured"},
    {"cpu_vendor", kText, "CPU vendor"},
    {"cpu_model", kText, "CPU model name"},
    {"detected_isa", kText, "best ISA path of the CPU"},
    {"cpu_features", kText, "ISA features present, space separated"},
    {"cores", kInteger, "physical cores"},
    {"logical_cpus", kInteger, "logical processors"},
    {"l1d_bytes", kInteger, "L1 data cache per core"},
    {"l2_bytes", kInteger, "L2 cache per instance"},
    {"l3_bytes", kInteger, "L3 cache per instance"},
    {"started_at", kText, "UTC ISO 8601, measurement start"},
    {"finished_at", kText, "UTC ISO 8601, measurement end"},
    {"duration_s", kReal, "wall time of the whole variant (process start to exit)"},
    {"attempts", kInteger, "times this row was written (reruns of non-ok variants)"},
};

const char* sql_type(ColumnType t) {
  switch (t) {
    case kText:
      return "TEXT";
    case kInteger:
      return "INTEGER";
    case kReal:
      return "REAL";
  }
  return "BLOB";
}

// The results table's DDL under `name`: every column, the key, and the status check.
std::string create_table_sql(const std::string& name) {
  std::string sql = "CREATE TABLE IF NOT EXISTS " + name + " (";
  for (const auto& c : kColumns) {
    const std::string n = c.name;
    sql += n + " " + sql_type(c.type);
    if (c.default_sql) sql += std::string(" DEFAULT ") + c.default_sql;
    if (n == "variant_id" || n == "hardware_id" || n == "status") sql += " NOT NULL";
    if (n == "status")
      sql += " CHECK (status IN ('ok', 'failed', 'timeout', 'crashed', 'skipped', 'unsupported'))";
    sql += ", ";
  }
  return sql + "PRIMARY KEY (variant_id, hardware_id)); ";
}

std::string column_list(const char* prefix = "") {
  std::string s;
  for (const auto& c : kColumns) s += (s.empty() ? "" : ", ") + std::string(prefix) + c.name;
  return s;
}

struct Statement {
  sqlite3_stmt* stmt = nullptr;
  ~Statement() { sqlite3_finalize(stmt); }
};

}  // namespace

struct ResultStore::Impl {
  std::string path;
  sqlite3* db = nullptr;
  // Columns of kColumns the table lacks: a database of an older schema opened read-only
  // (read-write opens add them). Reads select NULL for them.
  std::set<std::string> missing;
  ~Impl() { sqlite3_close_v2(db); }

  // One clear line naming the file; disk full and read-only spelled out.
  [[noreturn]] void fail_sqlite(int rc, const std::string& what) const {
    const int primary = rc & 0xff;
    std::string why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    if (primary == SQLITE_FULL) why = "disk full";
    if (primary == SQLITE_READONLY) why = "the database is read-only (" + why + ")";
    if (primary == SQLITE_NOTADB) why = "not a SQLite database";
    if (primary == SQLITE_IOERR) why = "I/O error (disk full or failing?): " + why;
    if (primary == SQLITE_CORRUPT) why = "the database is corrupt (" + why + ")";
    fail(ErrorKind::kInvalidInput, path, ": ", what, ": ", why);
  }
  void exec(const std::string& sql, const std::string& what) const {
    char* msg = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
    sqlite3_free(msg);
    if (rc != SQLITE_OK) fail_sqlite(rc, what);
  }
  void prepare(Statement& s, const std::string& sql) const {
    const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s.stmt, nullptr);
    if (rc != SQLITE_OK) fail_sqlite(rc, "preparing a statement");
  }
  int64_t pragma_int(const char* name) const {
    Statement s;
    prepare(s, std::string("PRAGMA ") + name);
    const int rc = sqlite3_step(s.stmt);
    if (rc != SQLITE_ROW) fail_sqlite(rc, std::string("reading PRAGMA ") + name);
    return sqlite3_column_int64(s.stmt, 0);
  }
  void bind_row(Statement& s, const Row& row) const {
    int i = 1;
    for (const auto& c : kColumns) {
      auto it = row.cells.find(c.name);
      const Cell cell = it == row.cells.end() ? Cell{} : it->second;
      int rc = SQLITE_OK;
      if (const auto* v = std::get_if<int64_t>(&cell))
        rc = sqlite3_bind_int64(s.stmt, i, *v);
      else if (const auto* d = std::get_if<double>(&cell))
        rc = sqlite3_bind_double(s.stmt, i, *d);
      else if (const auto* t = std::get_if<std::string>(&cell))
        rc = sqlite3_bind_text(s.stmt, i, t->data(), static_cast<int>(t->size()), SQLITE_TRANSIENT);
      else
        rc = sqlite3_bind_null(s.stmt, i);
      if (rc != SQLITE_OK) fail_sqlite(rc, "binding a value");
      ++i;
    }
  }
  // Upsert statement. `merge`: the newer of two equally-ok rows wins (merging stores);
  // otherwise the new row wins unless it would replace an ok row by a non-ok one.
  std::string upsert_sql(bool merge) const {
    std::string sql = "INSERT INTO results (" + column_list() + ") VALUES (";
    for (size_t i = 0; i < kColumns.size(); ++i) sql += i ? ", ?" : "?";
    sql += ") ON CONFLICT (variant_id, hardware_id) DO UPDATE SET ";
    bool first = true;
    for (const auto& c : kColumns) {
      const std::string n = c.name;
      if (n == "variant_id" || n == "hardware_id") continue;
      sql += (first ? "" : ", ") + n + " = ";
      first = false;
      if (n == "attempts")
        sql += merge ? "max(results.attempts, excluded.attempts)" : "results.attempts + 1";
      else
        sql += "excluded." + n;
    }
    if (merge)
      sql +=
          " WHERE (excluded.status = 'ok' AND results.status != 'ok') OR ((excluded.status = 'ok') "
          "= (results.status = 'ok') AND excluded.finished_at > results.finished_at)";
    else
      sql += " WHERE results.status != 'ok' OR excluded.status = 'ok'";
    return sql;
  }
  void put(const Row& row, bool merge) const {
    Statement s;
    prepare(s, upsert_sql(merge));
    bind_row(s, row);
    const int rc = sqlite3_step(s.stmt);
    if (rc != SQLITE_DONE) fail_sqlite(rc, "writing a result");
  }
};

const std::vector<ColumnDef>& result_columns() { return kColumns; }

void Row::set(const std::string& column, Cell value) { cells[column] = std::move(value); }
bool Row::has(const std::string& column) const {
  auto it = cells.find(column);
  return it != cells.end() && !std::holds_alternative<std::monostate>(it->second);
}
std::string Row::text(const std::string& column) const {
  auto it = cells.find(column);
  if (it == cells.end()) return "";
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return std::to_string(*v);
  if (const auto* d = std::get_if<double>(&it->second)) return std::to_string(*d);
  return "";
}
int64_t Row::integer(const std::string& column) const {
  auto it = cells.find(column);
  if (it == cells.end()) return 0;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  if (const auto* d = std::get_if<double>(&it->second)) return static_cast<int64_t>(*d);
  return 0;
}
double Row::real(const std::string& column) const {
  auto it = cells.find(column);
  if (it == cells.end()) return 0;
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  return 0;
}

ResultStore::ResultStore(const std::string& path, Mode mode) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.path = path;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (mode == Mode::kReadOnly) {
    DLAS_CHECK(exists, ErrorKind::kInvalidInput, path, ": no such results database");
  }
  if (exists) {
    DLAS_CHECK(fs::is_regular_file(path, ec), ErrorKind::kInvalidInput, path,
               ": not a results database (not a regular file)");
    DLAS_CHECK(::access(path.c_str(), R_OK) == 0, ErrorKind::kInvalidInput, path,
               ": cannot read the results database (permission denied)");
    if (mode == Mode::kReadWrite) {
      // SQLite would open a read-only file read-only without a word and fail at the first
      // write; say so up front. WAL also needs to create files next to the database.
      DLAS_CHECK(::access(path.c_str(), W_OK) == 0, ErrorKind::kInvalidInput, path,
                 ": the results database is read-only");
    }
  }
  if (mode == Mode::kReadWrite) {
    fs::path dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
    DLAS_CHECK(fs::is_directory(dir, ec), ErrorKind::kInvalidInput, path, ": folder '",
               dir.string(), "' does not exist");
    DLAS_CHECK(::access(dir.c_str(), W_OK) == 0, ErrorKind::kInvalidInput, path, ": folder '",
               dir.string(), "' is not writable (the database needs its -wal file there)");
  }
  const int flags =
      mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(path.c_str(), &im.db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) im.fail_sqlite(rc, "cannot open");
  sqlite3_extended_result_codes(im.db, 1);
  // Several shards may share one database on a local disk; wait for each other's writes.
  sqlite3_busy_timeout(im.db, 60000);

  const int64_t app_id = im.pragma_int("application_id");  // SQLITE_NOTADB surfaces here
  const int64_t version = im.pragma_int("user_version");
  if (app_id != kApplicationId) {
    Statement s;
    im.prepare(s, "SELECT count(*) FROM sqlite_master");
    if (sqlite3_step(s.stmt) != SQLITE_ROW) im.fail_sqlite(sqlite3_errcode(im.db), "reading");
    const int64_t objects = sqlite3_column_int64(s.stmt, 0);
    DLAS_CHECK(app_id == 0 && objects == 0, ErrorKind::kInvalidInput, path,
               ": not a dlas results database (it holds other tables)");
    DLAS_CHECK(mode == Mode::kReadWrite, ErrorKind::kInvalidInput, path,
               ": an empty database, not a dlas results database");
  } else {
    DLAS_CHECK(version <= kStoreSchemaVersion, ErrorKind::kInvalidInput, path,
               ": written by a newer dlas (results schema ", version, "; this dlas knows up to ",
               kStoreSchemaVersion, "); use a newer dlas");
    DLAS_CHECK(version >= 1, ErrorKind::kInvalidInput, path, ": unknown results schema version ",
               version);
    // Schemas 2 to 5 and 7 only added columns (tuning_*; dataset, top5, accuracy_samples,
    // accuracy_s, nonzero_params; layout; profile; device, gpu): find the ones an older table
    // lacks.
    Statement s;
    im.prepare(s, "PRAGMA table_info(results)");
    std::set<std::string> have;
    while (sqlite3_step(s.stmt) == SQLITE_ROW)
      have.insert(reinterpret_cast<const char*>(sqlite3_column_text(s.stmt, 1)));
    for (const auto& c : kColumns)
      if (!have.count(c.name)) im.missing.insert(c.name);
  }
  if (mode == Mode::kReadOnly) return;
  if (app_id == kApplicationId && (version < kStoreSchemaVersion || !im.missing.empty())) {
    // Migrate in one transaction: add the new columns (NULL in old rows, or the column's
    // default: device 'cpu'); before schema 6,
    // rebuild the table under the current status check (SQLite cannot alter a CHECK);
    // bump the version.
    std::string sql = "BEGIN IMMEDIATE; ";
    for (const auto& c : kColumns)
      if (im.missing.count(c.name))
        sql += "ALTER TABLE results ADD COLUMN " + std::string(c.name) + " " + sql_type(c.type) +
               (c.default_sql ? std::string(" DEFAULT ") + c.default_sql : std::string()) + "; ";
    if (version < 6) {
      std::string cols;
      for (const auto& c : kColumns) cols += (cols.empty() ? "" : ", ") + std::string(c.name);
      sql += create_table_sql("results_rebuilt") + "INSERT INTO results_rebuilt (" + cols +
             ") SELECT " + cols +
             " FROM results; DROP TABLE results; "
             "ALTER TABLE results_rebuilt RENAME TO results; ";
    }
    sql += "PRAGMA user_version = " + std::to_string(kStoreSchemaVersion) + "; COMMIT;";
    try {
      im.exec(sql, "upgrading the results table to schema " + std::to_string(kStoreSchemaVersion));
    } catch (...) {
      sqlite3_exec(im.db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    im.missing.clear();
  }

  im.exec("PRAGMA journal_mode = WAL", "switching to WAL mode");
  // FULL: a committed result survives a power cut too, not only a killed process; one
  // fsync per variant is nothing next to measuring it.
  im.exec("PRAGMA synchronous = FULL", "setting synchronous");
  if (app_id != kApplicationId) {
    std::string sql = "BEGIN IMMEDIATE; " + create_table_sql("results");
    sql += "PRAGMA application_id = " + std::to_string(kApplicationId) + "; ";
    sql += "PRAGMA user_version = " + std::to_string(kStoreSchemaVersion) + "; COMMIT;";
    try {
      im.exec(sql, "creating the results table");
    } catch (...) {
      sqlite3_exec(im.db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
}

ResultStore::~ResultStore() = default;
ResultStore::ResultStore(ResultStore&&) noexcept = default;
ResultStore& ResultStore::operator=(ResultStore&&) noexcept = default;

const std::string& ResultStore::path() const { return impl_->path; }

std::vector<std::string> ResultStore::ok_variants(const std::string& hardware_id) const {
  Statement s;
  impl_->prepare(s,
                 "SELECT variant_id FROM results WHERE hardware_id = ? AND status = 'ok' "
                 "ORDER BY variant_id");
  sqlite3_bind_text(s.stmt, 1, hardware_id.c_str(), -1, SQLITE_TRANSIENT);
  std::vector<std::string> out;
  int rc;
  while ((rc = sqlite3_step(s.stmt)) == SQLITE_ROW)
    out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s.stmt, 0)));
  if (rc != SQLITE_DONE) impl_->fail_sqlite(rc, "reading results");
  return out;
}

void ResultStore::put(const Row& row) {
  DLAS_CHECK(row.has("variant_id") && row.has("hardware_id") && row.has("status"),
             ErrorKind::kInternal, "result row without variant_id, hardware_id or status");
  impl_->put(row, /*merge=*/false);  // one statement: its own transaction
}

std::vector<Row> ResultStore::rows() const {
  Statement s;
  std::string cols;
  for (const auto& c : kColumns)
    cols += (cols.empty() ? "" : ", ") +
            (impl_->missing.count(c.name)
                 ? std::string(c.default_sql ? c.default_sql : "NULL") + " AS " + c.name
                 : std::string(c.name));
  impl_->prepare(s, "SELECT " + cols + " FROM results ORDER BY variant_id, hardware_id");
  std::vector<Row> out;
  int rc;
  while ((rc = sqlite3_step(s.stmt)) == SQLITE_ROW) {
    Row r;
    for (int i = 0; i < static_cast<int>(kColumns.size()); ++i) {
      const char* name = kColumns[static_cast<size_t>(i)].name;
      switch (sqlite3_column_type(s.stmt, i)) {
        case SQLITE_INTEGER:
          r.cells[name] = static_cast<int64_t>(sqlite3_column_int64(s.stmt, i));
          break;
        case SQLITE_FLOAT:
          r.cells[name] = sqlite3_column_double(s.stmt, i);
          break;
        case SQLITE_TEXT:
        case SQLITE_BLOB:
          r.cells[name] = std::string(reinterpret_cast<const char*>(sqlite3_column_blob(s.stmt, i)),
                                      static_cast<size_t>(sqlite3_column_bytes(s.stmt, i)));
          break;
        default:
          r.cells[name] = std::monostate{};
      }
    }
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) impl_->fail_sqlite(rc, "reading results");
  return out;
}

int64_t ResultStore::count() const {
  Statement s;
  impl_->prepare(s, "SELECT count(*) FROM results");
  const int rc = sqlite3_step(s.stmt);
  if (rc != SQLITE_ROW) impl_->fail_sqlite(rc, "counting results");
  return static_cast<int64_t>(sqlite3_column_int64(s.stmt, 0));
}

int64_t merge_stores(const std::vector<std::string>& inputs, const std::string& output) {
  DLAS_CHECK(!inputs.empty(), ErrorKind::kUsage, "merge: no input databases");
  // Read every input first: a bad one fails the merge before anything is written.
  std::vector<std::vector<Row>> all;
  for (const std::string& in : inputs)
    all.push_back(ResultStore(in, ResultStore::Mode::kReadOnly).rows());

  int64_t written = 0;
  // SQLite writes the merged database at a temporary path; it replaces `output` when done.
  write_file_atomic_via(output, [&](const fs::path& tmp_path) {
    const std::string tmp = tmp_path.string();
    std::error_code ec;
    try {
      {
        ResultStore out(tmp);
        ResultStore::Impl& im = *out.impl_;
        im.exec("BEGIN IMMEDIATE", "starting the merge");
        for (const auto& rows : all)
          for (const Row& r : rows) im.put(r, /*merge=*/true);
        im.exec("COMMIT", "committing the merge");
        written = out.count();
        // One self-contained file to rename: no -wal beside it.
        im.exec("PRAGMA journal_mode = DELETE", "leaving WAL mode");
      }
      for (const char* suffix : {"-wal", "-shm"}) fs::remove(output + suffix, ec);
    } catch (...) {
      for (const char* suffix : {"-wal", "-shm", "-journal"}) fs::remove(tmp + suffix, ec);
      throw;
    }
  });
  return written;
}

namespace {

std::string number_text(double d) {
  char buf[64];
  auto [end, errc] = std::to_chars(buf, buf + sizeof buf, d);  // shortest round-trip form
  return errc == std::errc() ? std::string(buf, end) : std::to_string(d);
}

std::string csv_field(const Cell& c) {
  if (const auto* v = std::get_if<int64_t>(&c)) return std::to_string(*v);
  if (const auto* d = std::get_if<double>(&c)) return number_text(*d);
  if (const auto* s = std::get_if<std::string>(&c)) {
    if (s->find_first_of(",\"\r\n") == std::string::npos) return *s;
    std::string q = "\"";
    for (char ch : *s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  }
  return "";
}

}  // namespace

std::string row_to_json(const Row& row) {
  nlohmann::ordered_json o = nlohmann::ordered_json::object();
  for (const auto& [name, cell] : row.cells) {
    if (const auto* v = std::get_if<int64_t>(&cell))
      o[name] = *v;
    else if (const auto* d = std::get_if<double>(&cell))
      o[name] = *d;
    else if (const auto* s = std::get_if<std::string>(&cell))
      o[name] = *s;
    else
      o[name] = nullptr;
  }
  return o.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Row row_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  DLAS_CHECK(j.is_object(), ErrorKind::kInvalidInput, "result is not a JSON object: '",
             text.substr(0, 200), "'");
  Row row;
  for (const auto& [name, value] : j.items()) {
    if (value.is_number_integer())
      row.set(name, value.get<int64_t>());
    else if (value.is_number())
      row.set(name, value.get<double>());
    else if (value.is_string())
      row.set(name, value.get<std::string>());
    else if (value.is_null())
      row.set(name, std::monostate{});
    else
      fail(ErrorKind::kInvalidInput, "result column '", name, "' is not a scalar");
  }
  return row;
}

std::string export_rows(const std::vector<Row>& rows, ExportFormat format) {
  if (format == ExportFormat::kCsv) {
    std::string out;
    for (size_t i = 0; i < kColumns.size(); ++i)
      out += (i ? "," : "") + std::string(kColumns[i].name);
    out += "\n";
    for (const Row& r : rows) {
      for (size_t i = 0; i < kColumns.size(); ++i) {
        auto it = r.cells.find(kColumns[i].name);
        out += (i ? "," : "") + (it == r.cells.end() ? std::string() : csv_field(it->second));
      }
      out += "\n";
    }
    return out;
  }
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const Row& r : rows) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (const auto& c : kColumns) {
      auto it = r.cells.find(c.name);
      const Cell cell = it == r.cells.end() ? Cell{} : it->second;
      if (const auto* v = std::get_if<int64_t>(&cell))
        o[c.name] = *v;
      else if (const auto* d = std::get_if<double>(&cell))
        o[c.name] = *d;
      else if (const auto* s = std::get_if<std::string>(&cell))
        o[c.name] = *s;
      else
        o[c.name] = nullptr;
    }
    arr.push_back(std::move(o));
  }
  // stderr tails may hold invalid UTF-8: replace it rather than fail the export.
  return arr.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace dlas::study
