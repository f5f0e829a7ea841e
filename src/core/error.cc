#include "dlas/core/error.h"

namespace dlas {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidInput:
      return "invalid input";
    case ErrorKind::kUnsupported:
      return "unsupported";
    case ErrorKind::kUsage:
      return "usage";
    case ErrorKind::kRuntime:
      return "runtime";
    case ErrorKind::kInternal:
      return "internal";
  }
  return "unknown";
}

int Error::exit_code() const {
  switch (kind_) {
    case ErrorKind::kInvalidInput:
    case ErrorKind::kUnsupported:
    case ErrorKind::kUsage:
      return 2;
    default:
      return 1;
  }
}

}  // namespace dlas
