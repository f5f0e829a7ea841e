// What every latency measurement of a model shares (`dlas bench`, `dlas profile`,
// `dlas run` and the study's measuring child): its seeded inputs and its statistics.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "dlas/core/tensor.h"
#include "dlas/model/graph.h"

namespace dlas {

// Seeded random input for a graph input: N(0, 1) for floats, integers in [0, 10) otherwise.
Tensor random_input(const ValueInfo& vi, uint64_t seed);

// The q-quantile of `v` (q in [0, 1]) by linear interpolation between closest ranks
// (numpy's default); v must not be empty.
double percentile(std::vector<double> v, double q);

// Milliseconds since t0 on the steady clock.
double ms_since(std::chrono::steady_clock::time_point t0);

}  // namespace dlas
