// Inside the study layer: the measuring child processes the study runner and `dlas explore`
// share (runner.cc). Each runs isolated (own process group, killed after its time limit or
// with its parent) and one at a time per machine (the measure lock of dlas/study/runner.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dlas/study/runner.h"
#include "dlas/study/store.h"

namespace dlas::study {

struct ChildOutcome {
  std::string status;    // kStatusOk (exit 0), kStatusFailed, kStatusTimeout or kStatusCrashed
  std::string reason;    // why not ok, one line
  std::string out_line;  // ok: the last line it printed on stdout
  std::string err_tail;  // the end of its stderr
  int64_t max_rss_bytes = 0;
};
// Runs argv `args` (args[0]: the executable) under the measure lock (`lock_path`; empty:
// $DLAS_MEASURE_LOCK or /tmp/dlas-measure.lock) with a time limit (0: none).
ChildOutcome run_measuring_child(const std::vector<std::string>& args, double timeout_s,
                                 const std::string& lock_path);

// `dlas study exec-variant` for `request` in a measuring child: sets the row's status,
// reason, stderr tail, peak RSS and measured columns.
void measure_request_in_child(const MeasureRequest& request, const std::string& exe,
                              const std::string& lock_path, double timeout_s, Row& row);

// The columns a result row has before its variant is measured: the variant's own, the
// study's name, the timing settings and the host's.
Row variant_columns(const Variant& v, const std::string& study_name, int repeat, int warmup,
                    const HostInfo& host);

}  // namespace dlas::study
