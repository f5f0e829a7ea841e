// Internal: the figures of a study report, in report order.
#pragma once

#include <vector>

#include "dlas/optimize/prune_sweep.h"
#include "study/analysis.h"
#include "study/plots.h"

namespace dlas::study {

// Per platform (in context order) the speedup-over-dense heatmap (algorithm x compression,
// a panel per model; none without compressed variants); top-1 against compression ratio
// (when accuracy was measured); the prune-sweep curves (with `sweeps`); the platform
// comparison (two platforms or more); per platform the latency heatmap; MACs against the
// fastest dense latency (two models or more).
std::vector<plots::Figure> report_figures(const std::vector<analysis::Context>& contexts,
                                          const std::vector<SweepResult>& sweeps);

}  // namespace dlas::study
