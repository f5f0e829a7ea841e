// Dispatch from a family's X-macro list to the entry of the best ISA path that
// may run: the highest listed ISA <= the requested one that the CPU supports (avx2-vnni
// sits below avx512 but a CPU with avx512 may lack it). Families build an
// IsaEntry array from their .inc list and call best_for_isa once per ISA.
#pragma once

#include <cstddef>

#include "dlas/core/error.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

template <class T>
struct IsaEntry {
  T value;
  Isa isa;
};

template <class T, size_t N>
T best_for_isa(const IsaEntry<T> (&list)[N], Isa isa, const char* family) {
  const IsaEntry<T>* best = nullptr;
  for (const IsaEntry<T>& e : list)
    if (e.isa <= isa && (e.isa == base_isa(e.isa) || isa_supported(e.isa)) &&
        (!best || e.isa > best->isa))
      best = &e;
  DLAS_CHECK(best != nullptr, ErrorKind::kInternal, "no ", family, " kernel for ", isa_name(isa));
  return best->value;
}

}  // namespace dlas::ukernel
