// Tasks of a compiled model and their measurement in isolation.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "algo/reference/quant_kernels.h"
#include "dlas/core/dtype.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/system/conv_shapes.h"
#include "dlas/system/passes.h"
#include "dlas/system/tune.h"

namespace dlas::tune {

namespace {

// Below this share of nonzeros a layer counts as pruned: its key carries the density.
constexpr double kDenseThreshold = 0.95;

std::string density_suffix(double density) {
  if (density >= kDenseThreshold) return {};
  char buf[32];
  std::snprintf(buf, sizeof buf, "d%.2f", density);
  return buf;
}

double density_of(const float* w, int64_t n) {
  if (n <= 0) return 1.0;
  int64_t nz = 0;
  for (int64_t i = 0; i < n; ++i) nz += w[i] != 0.f;
  return static_cast<double>(nz) / static_cast<double>(n);
}

int resolve_threads(int threads) {
  if (threads > 0) return threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

std::string layer_key(const ConvProblem& p, double density) {
  std::string s = p.key();
  // The fused epilogue changes the work a little (residual reads, activation cost).
  if (p.epilogue.act != Activation::kNone) s += std::string("_") + activation_name(p.epilogue.act);
  if (p.epilogue.residual) s += "_res";
  if (!p.has_bias) s += "_nobias";
  const std::string d = density_suffix(density);
  if (!d.empty()) s += "_" + d;
  return s;
}

std::string task_key(const ConvProblem& p, std::string_view algo, Isa isa, int threads,
                     double density) {
  return str("conv2d|", layer_key(p, density), "|", algo, "|nchw|f32|", isa_name(isa), "|t",
             threads);
}

std::string qlayer_key(const QConvProblem& p) {
  std::string s = p.key();
  if (p.conv.epilogue.act != Activation::kNone)
    s += std::string("_") + activation_name(p.conv.epilogue.act);
  if (!p.conv.has_bias) s += "_nobias";
  return s;
}

std::string qtask_key(const QConvProblem& p, std::string_view algo, Isa isa, int threads) {
  return str("conv2d|", qlayer_key(p), "|", algo, "|nchw|int8|", isa_name(isa), "|t", threads);
}

std::string hlayer_key(const HConvProblem& p) {
  std::string s = p.key();
  if (p.conv.epilogue.act != Activation::kNone)
    s += std::string("_") + activation_name(p.conv.epilogue.act);
  if (p.conv.epilogue.residual) s += "_res";
  if (!p.conv.has_bias) s += "_nobias";
  return s;
}

std::string htask_key(const HConvProblem& p, std::string_view algo, Isa isa, int threads) {
  return str("conv2d|", hlayer_key(p), "|", algo, "|nchw|", dtype_name(p.type), "|", isa_name(isa),
             "|t", threads);
}

namespace {

// Adds `node` to the task with `key` when there is one (its weight = its node count).
bool join_task(std::vector<Task>& tasks, const std::map<std::string, size_t>& by_key,
               const std::string& key, const std::string& node) {
  auto it = by_key.find(key);
  if (it == by_key.end()) return false;
  Task& t = tasks[it->second];
  t.nodes.push_back(node);
  t.weight = static_cast<int>(t.nodes.size());
  return true;
}

// The tasks of one conv node: one per algorithm of `algos` (ConvAlgorithm, QConvAlgorithm
// or HConvAlgorithm) that supports `p`, keyed by key_of(name); a known key gains the node,
// a new task gets the fields common to every type here and its own from fill(task).
template <class Algo, class Problem, class KeyOf, class Fill>
void add_tasks(const std::vector<const Algo*>& algos, const Problem& p, const std::string& layer,
               Isa isa, int threads, const std::string& node, KeyOf key_of, Fill fill,
               std::vector<Task>& tasks, std::map<std::string, size_t>& by_key) {
  for (const Algo* a : algos) {
    if (!a->supports(p)) continue;
    const std::string key = key_of(a->name());
    if (join_task(tasks, by_key, key, node)) continue;
    Task t;
    t.key = key;
    t.layer = layer;
    t.algo = std::string(a->name());
    t.isa = isa;
    t.threads = threads;
    t.space = a->knob_space(p, isa);
    t.defaults = a->default_knobs(p, isa);
    t.nodes = {node};
    fill(t);
    by_key[key] = tasks.size();
    tasks.push_back(std::move(t));
  }
}

// The int8 tasks of one QFusedConv (as lower_qconv compiles it); none when its weights or
// bias are not constants (the reference kernel runs it).
void add_qconv_tasks(const Graph& g, const Node& n, Isa isa, int threads, std::vector<Task>& tasks,
                     std::map<std::string, size_t>& by_key) {
  const Tensor* w = g.constant(n.inputs[1]);
  const bool has_bias = n.inputs.size() > 2 && !n.inputs[2].empty();
  const bool has_res = n.inputs.size() > 3 && !n.inputs[3].empty();
  const Tensor* b = has_bias ? g.constant(n.inputs[2]) : nullptr;
  if (!w || w->dtype() != DType::kS8 || (has_bias && (!b || b->dtype() != DType::kS32))) return;
  const QConvProblem p = reference::qfused_conv_problem(
      n, g.value(n.inputs[0]).shape, w->shape(), g.value(n.inputs[0]).dtype, has_bias,
      has_res ? g.value(n.inputs[3]).dtype : DType::kU8, has_res);
  std::shared_ptr<const std::vector<int8_t>> wv;  // copied once, by the first new task
  std::shared_ptr<const std::vector<float>> sv;
  std::shared_ptr<const std::vector<int32_t>> bv;
  add_tasks(
      qconv_algorithms(), p, qlayer_key(p), isa, threads, n.name,
      [&](std::string_view algo) { return qtask_key(p, algo, isa, threads); },
      [&](Task& t) {
        if (!wv) {
          const auto* w8 = w->data<int8_t>();
          wv = std::make_shared<const std::vector<int8_t>>(w8, w8 + w->numel());
          sv = std::make_shared<const std::vector<float>>(
              reference::qfused_conv_w_scales(n, p.conv.k));
          const auto* b32 = b ? b->data<int32_t>() : nullptr;
          bv = std::make_shared<const std::vector<int32_t>>(b32, b32 ? b32 + b->numel() : b32);
        }
        t.dtype = "int8";
        t.problem = p.conv;
        t.qproblem = p;
        t.qweights = wv;
        t.w_scale = sv;
        t.qbias = bv;
      },
      tasks, by_key);
}

// The 16-bit tasks of one Conv / FusedConv on f16 / bf16 values (as lower_half_conv
// compiles it); none when its weights or bias are not constants of the type.
void add_hconv_tasks(const Graph& g, const Node& n, const ConvProblem& p, DType type, Isa isa,
                     int threads, std::vector<Task>& tasks, std::map<std::string, size_t>& by_key) {
  const Tensor* w = g.constant(n.inputs[1]);
  const Tensor* b = p.has_bias ? g.constant(n.inputs[2]) : nullptr;
  if (!w || w->dtype() != type || (p.has_bias && !b)) return;
  const HConvProblem hp{p, type};
  std::shared_ptr<const std::vector<uint16_t>> wv;  // copied once, by the first new task
  std::shared_ptr<const std::vector<float>> bv;
  add_tasks(
      hconv_algorithms(), hp, hlayer_key(hp), isa, threads, n.name,
      [&](std::string_view algo) { return htask_key(hp, algo, isa, threads); },
      [&](Task& t) {
        if (!wv) {
          const auto* w16 = static_cast<const uint16_t*>(w->raw());
          wv = std::make_shared<const std::vector<uint16_t>>(w16, w16 + w->numel());
          std::vector<float> bf;  // f32, widened exactly
          for (int64_t i = 0; b && i < b->numel(); ++i)
            bf.push_back(static_cast<float>(b->get_as_double(i)));
          bv = std::make_shared<const std::vector<float>>(std::move(bf));
        }
        t.dtype = dtype_name(type);
        t.problem = p;
        t.hproblem = hp;
        t.hweights = wv;
        t.bias = bv;
      },
      tasks, by_key);
}

// The f32 tasks of one Conv / FusedConv (sparse algorithms too when its density is at most
// max_sparse_density); none when its weights or bias are not f32 constants.
void add_conv_tasks(const Graph& g, const Node& n, const ConvProblem& p, Isa isa, int threads,
                    double max_sparse_density, std::vector<Task>& tasks,
                    std::map<std::string, size_t>& by_key) {
  const Tensor* w = g.constant(n.inputs[1]);
  const Tensor* b = p.has_bias ? g.constant(n.inputs[2]) : nullptr;
  if (!w || w->dtype() != DType::kF32 || (p.has_bias && (!b || b->dtype() != DType::kF32))) return;
  const double density = density_of(w->data<float>(), w->numel());
  std::vector<const ConvAlgorithm*> algos = conv_algorithms();
  if (density <= max_sparse_density)
    for (const ConvAlgorithm* a : sparse_conv_algorithms()) algos.push_back(a);
  std::shared_ptr<const std::vector<float>> wv, bv;  // copied once, by the first new task
  add_tasks(
      algos, p, layer_key(p, density), isa, threads, n.name,
      [&](std::string_view algo) { return task_key(p, algo, isa, threads, density); },
      [&](Task& t) {
        if (!wv) {
          const float* w32 = w->data<float>();
          wv = std::make_shared<const std::vector<float>>(w32, w32 + w->numel());
          const float* b32 = b ? b->data<float>() : nullptr;
          bv = std::make_shared<const std::vector<float>>(b32, b32 ? b32 + b->numel() : b32);
        }
        t.problem = p;
        t.density = density;
        t.weights = wv;
        t.bias = bv;
      },
      tasks, by_key);
}

}  // namespace

std::vector<Task> extract_tasks(const Graph& graph, const PlanOptions& options,
                                double max_sparse_density) {
  Graph g = graph;
  optimize_graph(g, options.opt_level);
  const Isa isa = options.isa.value_or(active_isa());
  const int threads = resolve_threads(options.threads);
  std::vector<Task> tasks;
  std::map<std::string, size_t> by_key;
  for (const Node& n : g.nodes) {
    if (n.op == "QFusedConv") {
      add_qconv_tasks(g, n, isa, threads, tasks, by_key);
      continue;
    }
    if (n.op != "Conv" && n.op != "FusedConv") continue;
    const std::optional<ConvProblem> problem = conv_problem_of(g, n);
    if (!problem) continue;
    const DType in_type = g.value(n.inputs[0]).dtype;
    if (in_type == DType::kF16 || in_type == DType::kBF16)
      add_hconv_tasks(g, n, *problem, in_type, isa, threads, tasks, by_key);
    else if (in_type == DType::kF32)
      add_conv_tasks(g, n, *problem, isa, threads, max_sparse_density, tasks, by_key);
  }
  return tasks;
}

// ---- measurement ------------------------------------------------------------------------

double MeasureResult::cost() const {
  if (!ok()) return INFINITY;
  std::vector<double> c = costs;
  std::nth_element(c.begin(), c.begin() + c.size() / 2, c.end());
  return c[c.size() / 2];
}

namespace {

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using AlignedPtr = std::unique_ptr<void, AlignedFree>;
AlignedPtr aligned_bytes(size_t bytes) {
  return AlignedPtr(std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64)));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class ConvMeasurer : public Measurer {
 public:
  explicit ConvMeasurer(const MeasureOptions& o) : o_(o) {}

  MeasureResult measure(const Task& task, const Knobs& knobs) override {
    MeasureResult r;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      Ready c = ready(task, knobs);
      const auto start = std::chrono::steady_clock::now();
      for (int rep = 0; rep < o_.repeat; ++rep) {
        r.costs.push_back(c.repeat(ws_.get()));
        DLAS_CHECK(seconds_since(start) <= o_.timeout_seconds * o_.repeat, ErrorKind::kRuntime,
                   "timeout: repeats took longer than ", o_.timeout_seconds * o_.repeat, " s");
      }
    } catch (const std::exception& e) {
      r.costs.clear();
      r.error = e.what();
      if (r.error.empty()) r.error = "failed";
    }
    r.seconds = seconds_since(t0);
    return r;
  }

  std::vector<MeasureResult> measure_interleaved(const std::vector<const Task*>& tasks,
                                                 const std::vector<Knobs>& knobs,
                                                 int rounds) override {
    std::vector<MeasureResult> r(tasks.size());
    std::vector<std::optional<Ready>> c(tasks.size());
    pinned_ = true;  // the Ready's point into buffers_: no clearing until they are done
    struct Unpin {
      bool& p;
      ~Unpin() { p = false; }
    } unpin{pinned_};
    for (size_t i = 0; i < tasks.size(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      try {
        c[i].emplace(ready(*tasks[i], knobs[i]));
      } catch (const std::exception& e) {
        r[i].error = e.what();
        if (r[i].error.empty()) r[i].error = "failed";
      }
      r[i].seconds += seconds_since(t0);
    }
    // Each round times every candidate once (the median of 3 repeats), in a rotated order.
    for (int round = 0; round < rounds; ++round)
      for (size_t j = 0; j < tasks.size(); ++j) {
        const size_t i = (j + static_cast<size_t>(round)) % tasks.size();
        if (!c[i]) continue;
        const auto t0 = std::chrono::steady_clock::now();
        double v[3];
        for (double& x : v) x = c[i]->repeat(ws_.get());
        std::sort(v, v + 3);
        r[i].costs.push_back(v[1]);
        r[i].seconds += seconds_since(t0);
      }
    return r;
  }

 private:
  struct Buffers {
    std::vector<float> in, out, out2;
    std::vector<uint8_t> qin, qout, qres;   // int8 tasks: uniform random bytes
    std::vector<uint16_t> hin, hout, hres;  // 16-bit tasks: N(0,1) rounded to the type
  };
  // A candidate ready to time: its prepared copies (one, or enough to exceed
  // o_.reuse_bytes), its layer's buffers, and runs per repeat.
  struct Ready {
    std::vector<std::unique_ptr<PreparedConv>> f32;
    std::vector<std::unique_ptr<PreparedQConv>> q8;
    std::vector<std::unique_ptr<PreparedHConv>> h16;
    Buffers* b = nullptr;
    ThreadPool* pool = nullptr;
    bool residual = false;
    size_t next = 0;
    int number = 1;
    void once(void* ws) {
      const size_t i = next;
      next = next + 1 == copies() ? 0 : next + 1;
      if (!f32.empty())
        f32[i]->run(b->in.data(), b->out.data(), residual ? b->out2.data() : nullptr, ws, *pool);
      else if (!q8.empty())
        q8[i]->run(b->qin.data(), b->qout.data(), residual ? b->qres.data() : nullptr, ws, *pool);
      else
        h16[i]->run(b->hin.data(), b->hout.data(), residual ? b->hres.data() : nullptr, ws, *pool);
    }
    size_t copies() const { return std::max({f32.size(), q8.size(), h16.size()}); }
    size_t workspace_bytes() const {
      const int t = pool->threads();
      return !f32.empty()  ? f32[0]->workspace_bytes(t)
             : !q8.empty() ? q8[0]->workspace_bytes(t)
                           : h16[0]->workspace_bytes(t);
    }
    // Seconds per run over one repeat of `number` runs.
    double repeat(void* ws) {
      const auto t = std::chrono::steady_clock::now();
      for (int i = 0; i < number; ++i) once(ws);
      return seconds_since(t) / number;
    }
  };

  Ready ready(const Task& task, const Knobs& knobs) {
    task.space.validate(knobs, task.key);
    const ConvProblem& p = task.problem;
    Ready c;
    c.b = &buffers(task);
    c.pool = &pool(task.threads);
    c.residual = p.epilogue.residual;
    auto prepare_one = [&] {
      if (task.int8()) {
        const QConvAlgorithm* algo = find_qconv_algorithm(task.algo);
        DLAS_CHECK(algo, ErrorKind::kInvalidInput, "unknown int8 algorithm '", task.algo, "'");
        const int32_t* bias = task.qbias && !task.qbias->empty() ? task.qbias->data() : nullptr;
        c.q8.push_back(algo->prepare(task.qproblem, task.qweights->data(), task.w_scale->data(),
                                     bias, knobs, task.isa));
        return c.q8.back()->packed_bytes();
      }
      const float* bias = task.bias && !task.bias->empty() ? task.bias->data() : nullptr;
      if (task.half()) {
        const HConvAlgorithm* algo = find_hconv_algorithm(task.algo);
        DLAS_CHECK(algo, ErrorKind::kInvalidInput, "unknown 16-bit algorithm '", task.algo, "'");
        c.h16.push_back(algo->prepare(task.hproblem, task.hweights->data(), bias, knobs, task.isa));
        return c.h16.back()->packed_bytes();
      }
      const ConvAlgorithm* algo = find_conv_algorithm(task.algo);
      DLAS_CHECK(algo, ErrorKind::kInvalidInput, "unknown algorithm '", task.algo, "'");
      c.f32.push_back(algo->prepare(p, task.weights->data(), bias, knobs, task.isa));
      return c.f32.back()->packed_bytes();
    };
    const size_t packed = std::max<size_t>(prepare_one(), 4096);
    const int copies =
        o_.reuse_bytes > 0
            ? std::clamp(static_cast<int>(std::ceil(o_.reuse_bytes / static_cast<double>(packed))),
                         1, std::max(1, o_.max_copies))
            : 1;
    for (int i = 1; i < copies; ++i) prepare_one();
    const size_t ws = c.workspace_bytes();
    if (ws > ws_bytes_) {
      ws_ = aligned_bytes(ws);
      ws_bytes_ = ws;
    }
    const auto t = std::chrono::steady_clock::now();
    c.once(ws_.get());  // the first run also pays cold caches: it checks the timeout only
    const double first = seconds_since(t);
    DLAS_CHECK(first <= o_.timeout_seconds, ErrorKind::kRuntime, "timeout: one run took ", first,
               " s > ", o_.timeout_seconds, " s");
    for (int i = 1; i < std::max(o_.warmup, copies); ++i) c.once(ws_.get());
    c.number = std::clamp(static_cast<int>(o_.min_repeat_seconds / std::max(first, 1e-7)), 1, 1000);
    return c;
  }

  Buffers& buffers(const Task& t) {
    auto it = buffers_.find(t.layer);
    if (it != buffers_.end()) return it->second;
    const ConvProblem& p = t.problem;
    Buffers b;
    std::mt19937_64 rng(o_.seed);
    const size_t in_n = static_cast<size_t>(p.n * p.c * p.h * p.w);
    const size_t out_n = static_cast<size_t>(p.n * p.k * p.oh() * p.ow());
    std::uniform_int_distribution<int> byte(0, 255);
    std::normal_distribution<float> dist(0.f, 1.f);
    const bool bf = t.half() && t.hproblem.type == DType::kBF16;
    auto fill = [&](auto& v, size_t n) {
      v.resize(n);
      for (auto& x : v) {
        if constexpr (sizeof(x) == 1)
          x = static_cast<uint8_t>(byte(rng));
        else if constexpr (sizeof(x) == 2)
          x = bf ? f32_to_bf16(dist(rng)) : f32_to_f16(dist(rng));
        else
          x = dist(rng);
      }
    };
    if (t.int8()) {
      fill(b.qin, in_n);
      b.qout.resize(out_n);
      fill(b.qres, out_n);
    } else if (t.half()) {
      fill(b.hin, in_n);
      b.hout.resize(out_n);
      fill(b.hres, out_n);
    } else {
      fill(b.in, in_n);
      b.out.resize(out_n);
      fill(b.out2, out_n);
    }
    if (buffers_.size() > 64 && !pinned_) buffers_.clear();  // bound memory on huge models
    return buffers_.emplace(t.layer, std::move(b)).first->second;
  }
  ThreadPool& pool(int threads) {
    if (!pool_ || pool_->threads() != threads) pool_ = ThreadPool::shared(threads);
    return *pool_;
  }

  MeasureOptions o_;
  std::map<std::string, Buffers> buffers_;
  bool pinned_ = false;
  std::shared_ptr<ThreadPool> pool_;  // the plans' (ThreadPool::shared)
  AlignedPtr ws_;
  size_t ws_bytes_ = 0;
};

}  // namespace

std::vector<MeasureResult> Measurer::measure_interleaved(const std::vector<const Task*>& tasks,
                                                         const std::vector<Knobs>& knobs,
                                                         int rounds) {
  std::vector<MeasureResult> r(tasks.size());
  for (int round = 0; round < rounds; ++round)
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (round > 0 && !r[i].ok()) continue;
      const MeasureResult one = measure(*tasks[i], knobs[i]);
      r[i].seconds += one.seconds;
      if (!one.ok()) {
        r[i].costs.clear();
        r[i].error = one.error.empty() ? "failed" : one.error;
        continue;
      }
      r[i].costs.push_back(one.cost());
    }
  return r;
}

std::unique_ptr<Measurer> make_conv_measurer(const MeasureOptions& options) {
  return std::make_unique<ConvMeasurer>(options);
}

MeasureResult measure_safely(Measurer& m, const Task& task, const Knobs& knobs,
                             double timeout_seconds) {
  MeasureResult r;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    r = m.measure(task, knobs);
  } catch (const std::exception& e) {
    r = MeasureResult{};
    r.error = e.what();
    if (r.error.empty()) r.error = "failed";
  } catch (...) {
    r = MeasureResult{};
    r.error = "failed (unknown exception)";
  }
  const double wall = seconds_since(t0);
  r.seconds = std::max(r.seconds, wall);
  if (r.ok() && timeout_seconds > 0 && r.cost() > timeout_seconds) {
    r.error = str("timeout: ", r.cost(), " s per run > ", timeout_seconds, " s");
    r.costs.clear();
  }
  if (!r.ok() && r.error.empty()) r.error = "no measurement";
  return r;
}

}  // namespace dlas::tune
