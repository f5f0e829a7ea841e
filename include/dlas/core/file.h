// Files in and out: every output dlas writes goes through the one atomic writer here, so a
// reader (or a user after a crash, Ctrl-C or a full disk) sees the old file or the new one,
// never half of one (DESIGN.md section 6). The bytes go to a temporary file in the target's
// folder (same filesystem, so the final rename is atomic) which replaces the target at the end.
//
//   write_file_atomic("y.npy", bytes);
//   write_file_atomic("r.jsonl", [&](std::ostream& out) { for (...) out << line << "\n"; });
//   write_file_atomic_via("m.db", [&](const std::filesystem::path& tmp) { sqlite_write(tmp); });
//
// Errors name the target: kInvalidInput when its folder is missing or it cannot be opened
// (the path given is at fault), kRuntime when writing or renaming fails (disk full, I/O).
// On any failure the temporary file is removed and the target is left as it was.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace dlas {

// Reads a whole file; kInvalidInput naming it when it does not exist or cannot be read.
std::string read_file(const std::filesystem::path& path);

// FNV-1a 64 of a file's bytes as 16 hex digits: a cheap identity of an input file (e.g. to
// refuse resuming work on another model file). kInvalidInput when it cannot be read.
std::string file_hash_hex(const std::filesystem::path& path);

// kInvalidInput "PATH: folder 'DIR' does not exist" unless the folder `path` would be
// written into exists: lets a command fail before long work instead of after it.
void check_output_folder(const std::filesystem::path& path);

// Writes `bytes` to `target` atomically.
void write_file_atomic(const std::filesystem::path& target, std::string_view bytes);

// Writes what `write` streams to `target` atomically (the stream is binary; a failed stream
// state after `write` returns counts as a write error).
void write_file_atomic(const std::filesystem::path& target,
                       const std::function<void(std::ostream&)>& write);

// For writers that take a path (ONNX export, SQLite, a copy): `write(tmp)` writes the whole
// file at `tmp`, which then replaces `target`. When `write` throws, or leaves no file at
// `tmp`, the temporary file is removed and the error is thrown.
void write_file_atomic_via(const std::filesystem::path& target,
                           const std::function<void(const std::filesystem::path&)>& write);

// The two halves of the above, for a tool that writes several files in one go (gnuplot draws
// every plot of a report in one run). temp_path_for is a hidden name in the target's folder,
// the same for a target within one process (".NAME.tmp-PID"); commit_temp_file renames it onto
// the target, and on failure removes it and throws kRuntime naming the target (also when the
// temporary file was never written).
std::filesystem::path temp_path_for(const std::filesystem::path& target);
void commit_temp_file(const std::filesystem::path& tmp, const std::filesystem::path& target);

}  // namespace dlas
