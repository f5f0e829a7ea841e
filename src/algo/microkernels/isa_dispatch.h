// Dispatch from a family's X-macro list to the entry of the best ISA path that
// may run: the highest listed ISA <= the requested one that the CPU supports (avx2-vnni
// sits below avx512 but a CPU with avx512 may lack it). Families build an
// IsaEntry array from their .inc list and call best_for_isa once per ISA.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <utility>
#include <vector>

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

// A family's table read from its list: {false, row} for an X row (production), {true, row}
// for a T row (test-only: run by the tests, never selected).
template <class U>
struct ListRows {
  std::vector<U> production, test_only;
  ListRows(std::initializer_list<std::pair<bool, U>> rows) {
    for (const auto& [is_test_only, u] : rows) (is_test_only ? test_only : production).push_back(u);
  }
};

}  // namespace dlas::ukernel
