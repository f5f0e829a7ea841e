// int8 packing kernels (qs8_pack.h) compiled for the scalar path.
#include "algo/microkernels/qs8-pack/qs8_pack.h"
#include "algo/microkernels/qs8-pack/qs8_pack_template.h"

namespace dlas::ukernel {

void qs8_pack__scalar_quads(const uint8_t* const* r, size_t n, uint8_t flip, uint8_t* dst) {
  qs8_pack_quads(r, n, flip, dst);
}
void qs8_pack__scalar_pairs(const uint8_t* const* r, size_t n, uint8_t flip, uint8_t* dst) {
  qs8_pack_pairs(r, n, flip, dst);
}
void qs8_pack__scalar_copy(const uint8_t* src, size_t stride, size_t n, uint8_t flip,
                           uint8_t* dst) {
  qs8_pack_copy(src, stride, n, flip, dst);
}

}  // namespace dlas::ukernel
