// Tasks of a compiled model and their measurement in isolation.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "dlas/algo/layout.h"
#include "dlas/algo/machine_profile.h"
#include "dlas/algo/qconv.h"
#include "dlas/core/dtype.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/system/conv_shapes.h"
#include "dlas/system/passes.h"
#include "dlas/system/plan.h"
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

int resolve_threads(int threads) {
  if (threads > 0) return threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

std::string layer_key(const ConvProblem& p, double density) {
  std::string s = p.key();
  // The fused epilogue changes the work a little (residual reads, activation cost).
  if (p.epilogue.act != Activation::kNone) s += std::string("_") + activation_name(p.epilogue.act);
  if (p.epilogue.residual && !p.is_int8()) s += "_res";  // an int8 key names its residual
  if (!p.has_bias) s += "_nobias";
  const std::string d = density_suffix(density);
  if (!d.empty()) s += "_" + d;
  return s;
}

std::string task_key(const ConvProblem& p, std::string_view algo, Isa isa, int threads,
                     double density, Layout between) {
  const char* dtype = p.is_int8() ? "int8" : dtype_name(p.w_type);
  const std::string format = p.is_blocked()        ? layout_name(p.y_layout)
                             : is_blocked(between) ? str("nchw@", layout_name(between))
                                                   : std::string("nchw");
  return str("conv2d|", layer_key(p, density), "|", algo, "|", format, "|", dtype, "|",
             isa_name(isa), "|t", threads);
}

std::string Task::dtype() const { return problem.is_int8() ? "int8" : dtype_name(problem.w_type); }

ConvWeights TaskWeights::view() const {
  ConvWeights w;
  w.data = data.data();
  w.bias = bias.empty() ? nullptr : bias.data();
  w.bias_s32 = bias_s32.empty() ? nullptr : bias_s32.data();
  w.w_scale = w_scale.empty() ? nullptr : w_scale.data();
  return w;
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

// A copy of a conv node's weights (and bias, scales) for its tasks.
std::shared_ptr<const TaskWeights> copy_weights(const ConvNode& c) {
  auto w = std::make_shared<TaskWeights>();
  const auto* bytes = static_cast<const uint8_t*>(c.w->raw());
  w->data.assign(bytes, bytes + c.w->numel() * static_cast<int64_t>(dtype_size(c.w->dtype())));
  const ConvWeights v = c.weights();
  const int64_t k = c.problem.k;
  if (v.bias) w->bias.assign(v.bias, v.bias + k);
  if (v.bias_s32) w->bias_s32.assign(v.bias_s32, v.bias_s32 + k);
  if (v.w_scale) w->w_scale.assign(v.w_scale, v.w_scale + k);
  return w;
}

// The tasks of one conv node on problem p (the node's, or its blocked twin): one per
// algorithm of `algos` that supports p; a known key gains the node. `weights` is copied by
// the first new task of the node.
void add_tasks(const std::vector<const ConvAlgorithm*>& algos, const ConvNode& c,
               const ConvProblem& p, Layout between, const std::string& node, Isa isa, int threads,
               std::vector<Task>& tasks, std::map<std::string, size_t>& by_key,
               std::shared_ptr<const TaskWeights>& weights, bool reads_image = false) {
  const double density = c.density();
  for (const ConvAlgorithm* a : algos) {
    if (!a->supports(p)) continue;
    const std::string key = task_key(p, a->name(), isa, threads, density, between);
    if (join_task(tasks, by_key, key, node)) continue;
    if (!weights) weights = copy_weights(c);
    Task t;
    t.key = key;
    t.layer = layer_key(c.problem, density);
    t.algo = std::string(a->name());
    t.problem = p;
    t.between = between;
    t.reads_image = reads_image;
    t.isa = isa;
    t.threads = threads;
    t.space = a->knob_space(p, isa);
    t.defaults = a->default_knobs(p, isa);
    t.nodes = {node};
    t.density = density;
    t.weights = weights;
    by_key[key] = tasks.size();
    tasks.push_back(std::move(t));
  }
}

// The node's problem on blocked layout L as the layout pass runs it (a stem, <= 4 channels
// per group reading the NCHW image, keeps its input NCHW), when some algorithm has a
// blocked kernel for it (16-bit: nchw16c only; int8: the path's int8 blocks).
std::optional<ConvProblem> blocked_twin(const ConvProblem& p, bool reads_image, Layout L, Isa isa) {
  if (!is_blocked(L) || (p.is_half() && L != Layout::kNchw16c) ||
      (p.is_int8() && L != int8_blocked_layout(isa)))
    return std::nullopt;
  ConvProblem b = p;
  b.set_layouts(p.c_per_group() <= 4 && reads_image ? Layout::kNchw : L, L);
  for (const ConvAlgorithm* a : conv_algorithms())
    if (a->supports(b)) return b;
  return std::nullopt;
}

}  // namespace

std::vector<Task> extract_tasks(const Graph& graph, const PlanOptions& options,
                                double max_sparse_density) {
  Graph g = graph;
  optimize_graph(g, options.opt_level);
  const Isa isa = options.isa.value_or(active_isa());
  const int threads = resolve_threads(options.threads);
  const Layout L = native_blocked_layout(isa);
  // The plan's machine profile: its int8 entries say which int8 layers run blocked.
  const std::shared_ptr<const MachineProfile> profile =
      active_machine_profile(options.profile, isa, threads).profile;
  std::vector<Task> tasks;
  std::map<std::string, size_t> by_key;
  for (const Node& n : g.nodes) {
    // The convs lower_conv compiles: constant weights of the node's types.
    const std::optional<ConvNode> c = conv_node_of(g, n);
    if (!c) continue;
    std::vector<const ConvAlgorithm*> algos = conv_algorithms();
    if (c->density() <= max_sparse_density)
      for (const ConvAlgorithm* a : sparse_conv_algorithms()) algos.push_back(a);
    std::shared_ptr<const TaskWeights> weights;
    bool reads_image = false;  // the model's input, NCHW
    for (const ValueInfo& in : g.inputs) reads_image |= in.name == n.inputs[0];
    std::optional<ConvProblem> twin = options.layout == LayoutMode::kNchw
                                          ? std::nullopt
                                          : blocked_twin(c->problem, reads_image, L, isa);
    // A 16-bit or int8 layer is tuned on the one layout the plan runs it on (no NCHW
    // alternative between blocked neighbours: the reorder costs are counted for f32 only).
    if (c->problem.is_half() || c->problem.is_int8()) {
      const bool blocked =
          c->problem.is_half()
              ? half_conv_runs_blocked(c->problem, options.layout, isa)
              : !(c->problem.groups == 1 && c->problem.c <= 4) &&
                    int8_conv_runs_blocked(c->problem, options.layout, isa, profile.get());
      if (twin && blocked) {
        add_tasks(conv_algorithms(), *c, *twin, Layout::kNchw, n.name, isa, threads, tasks, by_key,
                  weights, reads_image);
        continue;
      }
      twin.reset();
    }
    if (!twin) {
      add_tasks(algos, *c, c->problem, Layout::kNchw, n.name, isa, threads, tasks, by_key, weights);
      continue;
    }
    add_tasks(conv_algorithms(), *c, *twin, Layout::kNchw, n.name, isa, threads, tasks, by_key,
              weights, reads_image);
    if (options.layout == LayoutMode::kAuto)
      add_tasks(algos, *c, c->problem, L, n.name, isa, threads, tasks, by_key, weights,
                reads_image);
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
  // One layer's input, output and residual bytes, of the problem's element types, each
  // large enough for the layer's NCHW and blocked layouts; and the NCHW copies a task timed
  // between blocked neighbours (Task::between) reorders into.
  struct Buffers {
    std::vector<uint8_t> in, out, res;
    std::vector<float> x_nchw, y_nchw, r_nchw;
  };
  // A candidate ready to time: its prepared copies (one, or enough to exceed
  // o_.reuse_bytes), its layer's buffers, and runs per repeat.
  struct Ready {
    std::vector<std::unique_ptr<PreparedConv>> copies;
    Buffers* b = nullptr;
    ThreadPool* pool = nullptr;
    bool residual = false;
    size_t next = 0;
    int number = 1;
    // Task::between: the reorders around the NCHW layer (its input unless it reads the
    // image, its residual, its output), in the plan's reorder kernel.
    Layout between = Layout::kNchw;
    bool reorder_input = false;
    int64_t n = 0, c = 0, k = 0, x_hw = 0, y_hw = 0;
    void once(void* ws) {
      const size_t i = next;
      next = next + 1 == copies.size() ? 0 : next + 1;
      if (!is_blocked(between)) {
        copies[i]->run(b->in.data(), b->out.data(), residual ? b->res.data() : nullptr, ws, *pool);
        return;
      }
      const float* x = reinterpret_cast<const float*>(b->in.data());
      if (reorder_input) {
        reorder(x, between, b->x_nchw.data(), Layout::kNchw, n, c, x_hw, *pool);
        x = b->x_nchw.data();
      }
      if (residual)
        reorder(reinterpret_cast<const float*>(b->res.data()), between, b->r_nchw.data(),
                Layout::kNchw, n, k, y_hw, *pool);
      copies[i]->run(x, b->y_nchw.data(), residual ? b->r_nchw.data() : nullptr, ws, *pool);
      reorder(b->y_nchw.data(), Layout::kNchw, reinterpret_cast<float*>(b->out.data()), between, n,
              k, y_hw, *pool);
    }
    size_t workspace_bytes() const { return copies[0]->workspace_bytes(pool->threads()); }
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
    const ConvAlgorithm* algo = find_conv_algorithm(task.algo);
    DLAS_CHECK(algo, ErrorKind::kInvalidInput, "unknown algorithm '", task.algo, "'");
    DLAS_CHECK(task.weights, ErrorKind::kInvalidInput, "task ", task.key, " has no weights");
    const ConvWeights weights = task.weights->view();
    Ready c;
    c.b = &buffers(task);
    c.pool = &pool(task.threads);
    c.residual = p.epilogue.residual;
    if (is_blocked(task.between)) {
      DLAS_CHECK(!p.is_blocked() && p.types() == ConvTypes::kF32, ErrorKind::kInvalidInput, "task ",
                 task.key, ": only f32 NCHW tasks run between blocked neighbours");
      c.between = task.between;
      c.reorder_input = !task.reads_image;
      c.n = p.n, c.c = p.c, c.k = p.k, c.x_hw = p.h * p.w, c.y_hw = p.oh() * p.ow();
      Buffers& b = *c.b;
      b.x_nchw.resize(static_cast<size_t>(p.input_count()));
      b.y_nchw.resize(static_cast<size_t>(p.output_count()));
      if (c.residual) b.r_nchw.resize(static_cast<size_t>(p.output_count()));
    }
    auto prepare_one = [&] {
      c.copies.push_back(algo->prepare(p, weights, knobs, task.isa));
      return c.copies.back()->packed_bytes();
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

  // n random elements of `type`: N(0, 1) for f32 (rounded for f16 / bf16), uniform bytes
  // for the 8-bit types.
  static std::vector<uint8_t> random_bytes(DType type, size_t n, std::mt19937_64& rng) {
    std::vector<uint8_t> v(n * dtype_size(type));
    std::uniform_int_distribution<int> byte(0, 255);
    std::normal_distribution<float> dist(0.f, 1.f);
    for (size_t i = 0; i < n; ++i) {
      if (type == DType::kF32) {
        const float x = dist(rng);
        std::memcpy(v.data() + 4 * i, &x, 4);
      } else if (type == DType::kF16 || type == DType::kBF16) {
        const uint16_t h = type == DType::kBF16 ? f32_to_bf16(dist(rng)) : f32_to_f16(dist(rng));
        std::memcpy(v.data() + 2 * i, &h, 2);
      } else {
        v[i] = static_cast<uint8_t>(byte(rng));
      }
    }
    return v;
  }

  Buffers& buffers(const Task& t) {
    auto it = buffers_.find(t.layer);
    if (it != buffers_.end()) return it->second;
    const ConvProblem& p = t.problem;
    std::mt19937_64 rng(o_.seed);
    // Room for the layer's blocked layout too (whole blocks), which its tasks share.
    const Layout L = native_blocked_layout(t.isa);
    const size_t in_n = static_cast<size_t>(layout_numel(p.n, p.c, p.h * p.w, L));
    const size_t out_n = static_cast<size_t>(layout_numel(p.n, p.k, p.oh() * p.ow(), L));
    Buffers b;
    b.in = random_bytes(p.x_type, in_n, rng);
    b.out.resize(out_n * dtype_size(p.y_type));
    b.res = random_bytes(p.is_int8() ? p.quant.r.type : p.y_type, out_n, rng);
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
