#include "dlas/system/measure.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "dlas/core/error.h"

namespace dlas {

Tensor random_input(const ValueInfo& vi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor f(DType::kF32, vi.shape);
  float* p = f.data<float>();
  if (is_float(vi.dtype)) {
    std::normal_distribution<float> dist(0.f, 1.f);
    for (int64_t i = 0; i < f.numel(); ++i) p[i] = dist(rng);
  } else {
    std::uniform_int_distribution<int> dist(0, 9);
    for (int64_t i = 0; i < f.numel(); ++i) p[i] = static_cast<float>(dist(rng));
  }
  return f.cast(vi.dtype);
}

std::vector<Tensor> random_inputs(const Graph& graph, uint64_t seed) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    in.push_back(random_input(graph.inputs[i], seed + i));
  return in;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

RunTimer::RunTimer(Executor& executor, std::vector<Tensor> inputs, Clock clock)
    : exec_(executor),
      inputs_(std::move(inputs)),
      outputs_(executor.make_outputs()),
      clock_(std::move(clock)) {}

std::chrono::steady_clock::time_point RunTimer::now() const {
  return clock_ ? clock_() : std::chrono::steady_clock::now();
}

void RunTimer::run(int number) {
  for (int i = 0; i < number; ++i) exec_.run_into(inputs_, outputs_);
}

double RunTimer::time_ms(int number) {
  const auto t0 = now();
  run(number);
  return std::chrono::duration<double, std::milli>(now() - t0).count();
}

LatencyStats latency_stats(std::vector<double> times) {
  DLAS_CHECK(!times.empty(), ErrorKind::kInternal, "latency_stats: no times");
  LatencyStats s;
  const double n = static_cast<double>(times.size());
  double var = 0;
  for (double t : times) s.mean_ms += t;
  s.mean_ms /= n;
  for (double t : times) var += (t - s.mean_ms) * (t - s.mean_ms);
  s.std_ms = times.size() > 1 ? std::sqrt(var / (n - 1)) : 0.0;
  s.cv = s.mean_ms > 0 ? s.std_ms / s.mean_ms : 0.0;
  s.median_ms = percentile(times, 0.5);
  s.min_ms = *std::min_element(times.begin(), times.end());
  s.max_ms = *std::max_element(times.begin(), times.end());
  s.p10_ms = percentile(times, 0.1);
  s.p90_ms = percentile(times, 0.9);
  s.times_ms = std::move(times);
  return s;
}

namespace {

// TVM's rule: scale `number` until one repeat of it lasts min_repeat_ms.
int grown_number(RunTimer& timer, int number, double min_repeat_ms) {
  if (min_repeat_ms <= 0) return number;
  for (;;) {
    const double ms = timer.time_ms(number);
    if (ms >= min_repeat_ms || number >= (1 << 20)) return number;
    number =
        std::max(number * 2, static_cast<int>(number * min_repeat_ms / std::max(ms, 1e-3) * 1.1));
  }
}

}  // namespace

LatencyStats measure_latency(Executor& executor, const std::vector<Tensor>& inputs,
                             const LatencyOptions& o) {
  DLAS_CHECK(o.repeat >= 1 && o.number >= 1 && o.warmup >= 0, ErrorKind::kInvalidInput,
             "latency: repeat and number must be >= 1 and warmup >= 0 (got repeat ", o.repeat,
             ", number ", o.number, ", warmup ", o.warmup, ")");
  if (auto* remote = dynamic_cast<RemoteTimedExecutor*>(&executor))
    return remote->measure_remote(o);
  RunTimer timer(executor, inputs, o.clock);
  const double first_ms = timer.time_ms();
  timer.run(o.warmup);
  const int number = grown_number(timer, o.number, o.min_repeat_ms);
  std::vector<double> times, device_times;
  times.reserve(static_cast<size_t>(o.repeat));
  for (int r = 0; r < o.repeat; ++r) {
    times.push_back(timer.time_ms(number) / number);
    if (const double d = executor.last_device_ms(); d >= 0) device_times.push_back(d);
    if (o.progress) o.progress(r + 1, o.repeat);
  }
  LatencyStats s = latency_stats(std::move(times));
  if (!device_times.empty()) {
    s.device_median_ms = percentile(device_times, 0.5);
    s.device_p10_ms = percentile(device_times, 0.1);
    s.device_p90_ms = percentile(device_times, 0.9);
  }
  s.first_ms = first_ms;
  s.number = number;
  return s;
}

}  // namespace dlas
