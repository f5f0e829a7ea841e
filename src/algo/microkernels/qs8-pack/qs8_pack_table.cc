// The int8 packing kernel table, derived from qs8_pack.inc.
#include "algo/microkernels/isa_dispatch.h"
#include "algo/microkernels/qs8-pack/qs8_pack.h"

namespace dlas::ukernel {
namespace {
constexpr QS8PackUkernels kSets[] = {
#define X(name, isa) {#name, Isa::isa, &name##_quads, &name##_pairs, &name##_copy},
#include "algo/microkernels/qs8-pack/qs8_pack.inc"
#undef X
};
constexpr size_t kCount = sizeof(kSets) / sizeof(kSets[0]);
}  // namespace

const QS8PackUkernels& qs8_pack_for(Isa isa) {
  IsaEntry<const QS8PackUkernels*> entries[kCount];
  for (size_t i = 0; i < kCount; ++i) entries[i] = {&kSets[i], kSets[i].isa};
  return *best_for_isa(entries, isa, "qs8 pack");
}

const QS8PackUkernels* qs8_pack_all(size_t* count) {
  *count = kCount;
  return kSets;
}

}  // namespace dlas::ukernel
