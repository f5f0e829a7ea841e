// One latency protocol for every Executor (DLAS layer 5): `dlas bench`, `dlas profile`,
// `dlas run`, the study's measuring child and the tuner's whole-model timing all time
// models here -- TVM's time_evaluator and TFLite's benchmark_model: the first run timed on
// its own, warm-up runs discarded, then `repeat` repeats of `number` back-to-back runs each
// (number grown until a repeat lasts min_repeat_ms); the median is the headline. Also the
// seeded inputs and the statistics they share.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "dlas/core/tensor.h"
#include "dlas/model/graph.h"
#include "dlas/system/executor.h"

namespace dlas {

// Seeded random input for a graph input: N(0, 1) for floats, integers in [0, 10) otherwise.
Tensor random_input(const ValueInfo& vi, uint64_t seed);
// One per graph input, input i seeded with seed + i.
std::vector<Tensor> random_inputs(const Graph& graph, uint64_t seed);

// The q-quantile of `v` (q in [0, 1]) by linear interpolation between closest ranks
// (numpy's default); v must not be empty.
double percentile(std::vector<double> v, double q);

// Milliseconds since t0 on the steady clock.
double ms_since(std::chrono::steady_clock::time_point t0);

// What measurements read the time from: empty means std::chrono::steady_clock::now; tests
// inject a fake one, so the protocol can be checked exactly.
using Clock = std::function<std::chrono::steady_clock::time_point()>;

// Back-to-back runs of an executor on fixed inputs, into outputs it owns (made once by
// make_outputs): the unit every measurement is made of.
class RunTimer {
 public:
  RunTimer(Executor& executor, std::vector<Tensor> inputs, Clock clock = {});
  // Runs `number` times, untimed.
  void run(int number = 1);
  // Milliseconds of `number` back-to-back runs (their sum).
  double time_ms(int number = 1);
  Executor& executor() { return exec_; }
  // The last run's results.
  const std::vector<Tensor>& outputs() const { return outputs_; }

 private:
  std::chrono::steady_clock::time_point now() const;

  Executor& exec_;
  std::vector<Tensor> inputs_, outputs_;
  Clock clock_;
};

struct LatencyOptions {
  int warmup = 1;            // discarded runs after the first, timed one (>= 0)
  int repeat = 150;          // timed repeats (>= 1): the paper's 150
  int number = 1;            // runs per repeat (>= 1); each repeat reports their mean
  double min_repeat_ms = 0;  // > 0: grow number until one repeat lasts this long (TVM's rule)
  // Called after every repeat (bench's "bench: i/n repeats" on a TTY).
  std::function<void(int done, int total)> progress;
  Clock clock;  // empty: the steady clock
};

struct LatencyStats {
  std::vector<double> times_ms;  // every repeat's time: the mean of its `number` runs
  double median_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0, p10_ms = 0, p90_ms = 0;
  double std_ms = 0;  // sample standard deviation (n - 1); 0 for one repeat
  double cv = 0;      // std_ms / mean_ms (0 when the mean is 0)
  double first_ms = 0;
  int number = 1;  // runs per repeat, after min_repeat_ms grew it
  // On an accelerator (Executor::last_device_ms): the kernel time of each repeat's last run,
  // copies excluded -- median, p10, p90; -1 on the CPU.
  double device_median_ms = -1, device_p10_ms = -1, device_p90_ms = -1;
};

// The statistics of repeat times (times_ms not empty); first_ms stays 0 and number 1.
LatencyStats latency_stats(std::vector<double> times_ms);

// An executor that runs in another process (the ONNX peers, peer_executor.h) times its
// runs there, so no timing pays the inter-process hop: measure_latency hands it the
// protocol (warmup, repeat, number; its own seeded inputs of the graph's shapes).
class RemoteTimedExecutor : public Executor {
 public:
  virtual LatencyStats measure_remote(const LatencyOptions& options) = 0;
};

// Measures `executor` on `inputs` (a RemoteTimedExecutor: in its process): the first run timed alone (first_ms), `warmup` runs
// discarded, then -- with min_repeat_ms > 0 -- number doubled (at least; scaled by
// min_repeat_ms / the last repeat's time x 1.1) until one repeat of it lasts min_repeat_ms
// or number reaches 2^20, then `repeat` repeats of `number` runs. kInvalidInput for
// repeat < 1, number < 1 or warmup < 0.
LatencyStats measure_latency(Executor& executor, const std::vector<Tensor>& inputs,
                             const LatencyOptions& options = {});

}  // namespace dlas
