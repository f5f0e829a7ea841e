// Scalar FLOP/s probe: built with the baseline flags (no FMA), so each step is a multiply
// and an add -- what the scalar path's kernels can issue.
#include "hw/peak/peak_fma.h"

namespace dlas::peak_detail {

float fma_probe_scalar(int64_t iters) { return fma_probe<float>(iters); }

}  // namespace dlas::peak_detail
