// The study results store: one SQLite file in WAL mode, one row per variant
// and hardware, keyed by (variant_id = Variant::str(), hardware_id). Every
// write is one transaction, so killing a study at any moment leaves each
// variant either fully stored or absent, and a rerun only redoes the absent
// (and the failed) ones.
//
// The schema is one list of columns (result_columns()); its version is in
// PRAGMA user_version and the file is marked with PRAGMA application_id. A file
// of a newer schema, a non-dlas database or a non-SQLite file is refused
// (kInvalidInput), never modified.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dlas::study {

// 2: tuning_* columns; 3: dataset, top5, accuracy_samples, accuracy_s, nonzero_params;
// 4: layout; 5: profile; 6: the status 'unsupported'; 7: device (older rows: 'cpu'), gpu.
// Older files are upgraded in place (columns added, NULL in old rows or the column's default;
// the table rebuilt under the new status check from schema 6 on).
inline constexpr int kStoreSchemaVersion = 7;

enum class ColumnType { kText, kInteger, kReal };

struct ColumnDef {
  const char* name;
  ColumnType type;
  const char* doc;  // one line, for README/export consumers
  // SQL default of the column (what rows stored before it existed read as); nullptr: NULL.
  const char* default_sql = nullptr;
};
// Every column of the results table, in table order.
const std::vector<ColumnDef>& result_columns();

// A cell: NULL, integer, real or text.
using Cell = std::variant<std::monostate, int64_t, double, std::string>;

// One result row: column name -> cell (absent columns are NULL).
struct Row {
  std::map<std::string, Cell> cells;

  void set(const std::string& column, Cell value);
  bool has(const std::string& column) const;          // present and not NULL
  std::string text(const std::string& column) const;  // "" when NULL
  int64_t integer(const std::string& column) const;   // 0 when NULL
  double real(const std::string& column) const;       // 0 when NULL
};

// Status values (the `status` column).
inline constexpr const char* kStatusOk = "ok";
inline constexpr const char* kStatusFailed = "failed";    // exited non-zero (an error)
inline constexpr const char* kStatusTimeout = "timeout";  // killed after the time limit
inline constexpr const char* kStatusCrashed = "crashed";  // killed by a signal (segfault, OOM)
inline constexpr const char* kStatusSkipped = "skipped";  // not runnable here (e.g. ISA missing)
// A peer engine that is not installed, or cannot run this variant's model (its reason).
inline constexpr const char* kStatusUnsupported = "unsupported";

class ResultStore {
 public:
  enum class Mode { kReadWrite, kReadOnly };
  // kReadWrite creates the file (and schema) when missing. Throws kInvalidInput
  // for an unreadable, read-only (in kReadWrite), corrupt, foreign or newer-schema file.
  explicit ResultStore(const std::string& path, Mode mode = Mode::kReadWrite);
  ~ResultStore();
  ResultStore(ResultStore&&) noexcept;
  ResultStore& operator=(ResultStore&&) noexcept;

  const std::string& path() const;
  // Variant ids stored with status ok for this hardware.
  std::vector<std::string> ok_variants(const std::string& hardware_id) const;
  // Inserts or updates the row for (variant_id, hardware_id) in one transaction.
  // An ok row is never replaced by a non-ok one; `attempts` counts the writes.
  void put(const Row& row);
  // Every row, ordered by (variant_id, hardware_id).
  std::vector<Row> rows() const;
  int64_t count() const;

 private:
  friend int64_t merge_stores(const std::vector<std::string>& inputs, const std::string& output);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Merges the rows of `inputs` into a new database at `output`: written to a
// temporary file in the same folder, then renamed (never a half-written output).
// On a key in several inputs an ok row wins over a non-ok one, then the one
// finished last. Inputs must have this schema version (kInvalidInput otherwise).
// Returns the number of rows written.
int64_t merge_stores(const std::vector<std::string>& inputs, const std::string& output);

// A row as one JSON object (column -> value or null) and back; how the measuring child
// hands its columns to the runner. row_from_json throws kInvalidInput on malformed text.
std::string row_to_json(const Row& row);
Row row_from_json(const std::string& text);

enum class ExportFormat { kCsv, kJson };
// One line/object per row, every column in result_columns() order; CSV quoting per
// RFC 4180, NULL as an empty field; JSON an array of objects with null for NULL.
std::string export_rows(const std::vector<Row>& rows, ExportFormat format);

}  // namespace dlas::study
