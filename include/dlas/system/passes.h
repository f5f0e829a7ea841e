// Graph passes (DLAS layer 5). One file per pass under src/system/passes/.
#pragma once

#include "dlas/model/graph.h"

namespace dlas {

// Evaluates every node whose inputs are all constants (and Shape of a statically
// shaped value) with the reference kernels, turning its outputs into
// initializers; then removes nodes and initializers that no output depends on.
// Leaves the graph inferred. This is how exporter patterns such as
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape collapse to static shapes.
void fold_constants(Graph& graph);

// Removes nodes and initializers that no graph output depends on.
void eliminate_dead_code(Graph& graph);

}  // namespace dlas
