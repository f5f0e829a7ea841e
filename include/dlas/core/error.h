// The one error type of dlas. Every failure is an Error carrying a kind and a
// one-line message that names the file, field or node at fault. Only the CLI
// turns kinds into exit codes (bad input / usage -> 2, everything else -> 1).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace dlas {

enum class ErrorKind {
  kInvalidInput,  // corrupt/truncated file, wrong shape or dtype, invalid spec -> exit 2
  kUnsupported,   // valid input that dlas cannot handle (op, dtype, attribute) -> exit 2
  kUsage,         // bad command line -> exit 2
  kRuntime,       // environment or system failure (I/O, resources) -> exit 1
  kInternal,      // a dlas bug (violated invariant) -> exit 1
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  // 2 for bad usage or bad input, 1 for runtime failures.
  int exit_code() const;

 private:
  ErrorKind kind_;
};

// Concatenates anything streamable into a string: str("node '", name, "': ", n).
template <class... Args>
std::string str(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <class... Args>
[[noreturn]] void fail(ErrorKind kind, Args&&... args) {
  throw Error(kind, str(std::forward<Args>(args)...));
}

}  // namespace dlas

// Throws dlas::Error(kind, message...) when cond is false.
#define DLAS_CHECK(cond, kind, ...)                       \
  do {                                                    \
    if (!(cond)) ::dlas::fail(::dlas::kind, __VA_ARGS__); \
  } while (0)
