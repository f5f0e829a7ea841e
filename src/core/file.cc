#include "dlas/core/file.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "dlas/core/error.h"

namespace dlas {

namespace fs = std::filesystem;

namespace {

// A fresh hidden name beside `target` for one write: the pid keeps processes apart, the
// counter keeps threads (and a retry after a failed write) apart.
fs::path unique_temp_path(const fs::path& target) {
  static std::atomic<uint64_t> counter{0};
  fs::path tmp = target;
  tmp.replace_filename(str(".", target.filename().string(), ".tmp-", ::getpid(), "-", counter++));
  return tmp;
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

}  // namespace

std::string read_file(const fs::path& path) {
  std::error_code ec;
  DLAS_CHECK(fs::exists(path, ec), ErrorKind::kInvalidInput, path.string(), ": no such file");
  DLAS_CHECK(!fs::is_directory(path, ec), ErrorKind::kInvalidInput, path.string(),
             ": is a directory, expected a file");
  std::ifstream in(path, std::ios::binary);
  DLAS_CHECK(in.good(), ErrorKind::kInvalidInput, path.string(), ": cannot open for reading");
  std::ostringstream os;
  os << in.rdbuf();
  DLAS_CHECK(!in.bad(), ErrorKind::kInvalidInput, path.string(), ": read error");
  return os.str();
}

std::string file_hash_hex(const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  DLAS_CHECK(f != nullptr, ErrorKind::kInvalidInput, path.string(), ": cannot read");
  uint64_t h = 0xcbf29ce484222325ull;
  unsigned char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
    for (size_t i = 0; i < n; ++i) h = (h ^ buf[i]) * 0x100000001b3ull;
  std::fclose(f);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

void check_output_folder(const fs::path& path) {
  const fs::path dir = path.parent_path();
  std::error_code ec;
  DLAS_CHECK(dir.empty() || fs::is_directory(dir, ec), ErrorKind::kInvalidInput, path.string(),
             ": folder '", dir.string(), "' does not exist");
}

fs::path temp_path_for(const fs::path& target) {
  fs::path tmp = target;
  tmp.replace_filename(str(".", target.filename().string(), ".tmp-", ::getpid()));
  return tmp;
}

void commit_temp_file(const fs::path& tmp, const fs::path& target) {
  std::error_code ec;
  if (!fs::is_regular_file(tmp, ec)) {
    remove_quietly(tmp);
    fail(ErrorKind::kRuntime, target.string(), ": was not written (no temporary file '",
         tmp.filename().string(), "')");
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    remove_quietly(tmp);
    fail(ErrorKind::kRuntime, target.string(), ": cannot replace it with the temporary file (",
         ec.message(), ")");
  }
}

void write_file_atomic_via(const fs::path& target,
                           const std::function<void(const fs::path&)>& write) {
  check_output_folder(target);
  const fs::path tmp = unique_temp_path(target);
  try {
    write(tmp);
  } catch (...) {
    remove_quietly(tmp);
    throw;
  }
  commit_temp_file(tmp, target);
}

void write_file_atomic(const fs::path& target, const std::function<void(std::ostream&)>& write) {
  write_file_atomic_via(target, [&](const fs::path& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    DLAS_CHECK(out.good(), ErrorKind::kInvalidInput, target.string(), ": cannot open '",
               tmp.string(), "' for writing");
    write(out);
    out.flush();
    DLAS_CHECK(out.good(), ErrorKind::kRuntime, target.string(), ": write failed (disk full?)");
    out.close();
    DLAS_CHECK(!out.fail(), ErrorKind::kRuntime, target.string(), ": write failed (disk full?)");
  });
}

void write_file_atomic(const fs::path& target, std::string_view bytes) {
  write_file_atomic(target, [&](std::ostream& out) {
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  });
}

}  // namespace dlas
