#include "dlas/hw/amx.h"

#include <mutex>

#include "dlas/core/error.h"
#include "dlas/hw/cpu.h"

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace dlas {

bool amx_permitted() {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [] {
#if defined(__linux__) && defined(__x86_64__)
    constexpr long kArchReqXcompPerm = 0x1023;  // <asm/prctl.h> ARCH_REQ_XCOMP_PERM
    constexpr long kXfeatureXtiledata = 18;
    ok = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#endif
  });
  return ok;
}

void amx_require(const char* what) {
  const CpuFeatures& f = cpu_info().features;
  DLAS_CHECK(f.amx_tile && f.amx_int8, ErrorKind::kUnsupported, what, ": this CPU has no AMX-INT8");
  DLAS_CHECK(amx_permitted(), ErrorKind::kUnsupported, what,
             ": the OS refused the AMX tile-data permission (arch_prctl ARCH_REQ_XCOMP_PERM)");
}

}  // namespace dlas
