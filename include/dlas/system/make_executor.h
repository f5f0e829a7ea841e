// One factory from a Variant to the Executor that runs it (DLAS layer 5): `dlas bench`,
// `dlas run` and the study's measuring child all compile their model here, so a new
// backend is one more Executor plus one line in make_executor.cc's table -- never a new
// branch in the CLI or the study (docs/engine-executors.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dlas/model/graph.h"
#include "dlas/system/executor.h"
#include "dlas/system/plan.h"
#include "dlas/system/variant.h"

namespace dlas {

// What a Variant's string does not carry.
struct ExecutorOptions {
  // dlas: per-layer choices on top of Variant::conv_algo -- a tuned schedule's choices,
  // `--layers`, `--records` (they win over a "layers:<path>" file's). Backends that choose
  // their own kernels ignore them.
  LayerChoices layers;
  std::string profile;  // dlas: PlanOptions::profile (a machine profile's path, "none", empty)
};

// Builds the Executor of `variant` for `graph` (inferred). Variant::backend picks it:
// - "dlas": a Plan with plan_options_for(variant, options);
// - "onednn": OnednnExecutor with the Variant's threads (<= 0: one per logical processor);
//   conv_algo, opt_level and isa do not apply (oneDNN fuses and dispatches on its own);
// - "reference": the reference runtime (single-threaded);
// - "torch": LibtorchRunner, where register_torch_executor() (dlas_torch) ran.
// Variant::schedule is a label here: a tuned schedule's choices come in options.layers.
// Unknown backend: kInvalidInput naming the known ones.
std::unique_ptr<Executor> make_executor(const Graph& graph, const Variant& variant,
                                        const ExecutorOptions& options = {});

// The dlas backend's PlanOptions for `variant`: conv_algo (an algorithm spec, or
// "layers:<path>" for a per-layer choices file with the auto rule elsewhere), the layers of
// `options`, threads, opt_level, and isa (empty: the active ISA).
PlanOptions plan_options_for(const Variant& variant, const ExecutorOptions& options = {});

// How a backend makes its Executor.
using ExecutorFactory = std::function<std::unique_ptr<Executor>(
    const Graph& graph, const Variant& variant, const ExecutorOptions& options)>;
// Adds (or replaces) a backend that lives outside the core library (the libtorch runner,
// in dlas_torch). Backends of the core library belong in make_executor.cc's table.
void register_executor(const std::string& backend, ExecutorFactory factory);
// The backends make_executor knows now, sorted.
std::vector<std::string> executor_backends();

}  // namespace dlas
