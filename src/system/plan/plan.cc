#include "dlas/system/plan.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "dlas/algo/layout.h"
#include "dlas/core/error.h"
#include "dlas/core/file.h"
#include "dlas/hw/thread_pool.h"
#include "system/plan/memory_plan.h"
#include "system/plan/steps.h"

namespace dlas {

using plan::Step;

namespace {

// The one list of lowerings, tried in order: the native steps, then 16-bit ops on their f32
// step through widened copies, and the reference lowering takes the rest.
using Lowering = std::unique_ptr<Step> (*)(const plan::LowerContext&);
constexpr Lowering kLowerings[] = {
    plan::lower_conv,       plan::lower_quantize,   plan::lower_fc,        plan::lower_batchnorm,
    plan::lower_activation, plan::lower_binary,     plan::lower_pool,      plan::lower_concat,
    plan::lower_copy,       plan::lower_transpose,  plan::lower_slice,     plan::lower_pad,
    plan::lower_cast,       plan::lower_h16_binary, plan::lower_h16_unary, plan::lower_widened,
    plan::lower_reference,
};
constexpr size_t kNativeLowerings = 15;  // the ones before lower_widened

struct AlignedBuffer {
  void* p = nullptr;
  explicit AlignedBuffer(size_t bytes = 0) {
    if (bytes) {
      p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
      DLAS_CHECK(p, ErrorKind::kRuntime, "out of memory allocating a ", bytes, "-byte arena");
    }
  }
  ~AlignedBuffer() { std::free(p); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
};

}  // namespace

std::unique_ptr<Step> plan::lower_native(const plan::LowerContext& ctx) {
  static_assert(kLowerings[kNativeLowerings] == plan::lower_widened);
  for (size_t i = 0; i < kNativeLowerings; ++i)
    if (auto step = kLowerings[i](ctx)) return step;
  return nullptr;
}

LayerChoices read_layer_choices(const std::string& path) {
  const std::string text = read_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    fail(ErrorKind::kInvalidInput, path, ": not JSON: ", e.what());
  }
  DLAS_CHECK(j.is_object(), ErrorKind::kInvalidInput, path,
             ": expected an object mapping node names to {\"algo\": ..., \"knobs\": {...}}");
  LayerChoices out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& v = it.value();
    DLAS_CHECK(v.is_object() && v.contains("algo") && v["algo"].is_string(),
               ErrorKind::kInvalidInput, path, ": entry '", it.key(), "' needs a string \"algo\"");
    LayerChoice c;
    c.algo = v["algo"].get<std::string>();
    if (v.contains("knobs")) {
      try {
        c.knobs = knobs_from_json(v["knobs"].dump());
      } catch (const Error& e) {
        fail(ErrorKind::kInvalidInput, path, ": entry '", it.key(), "': ", e.what());
      }
    }
    if (v.contains("layout")) {
      DLAS_CHECK(v["layout"].is_string(), ErrorKind::kInvalidInput, path, ": entry '", it.key(),
                 "': \"layout\" must be a string (nchw, nchw8c or nchw16c)");
      c.layout = v["layout"].get<std::string>();
      try {
        parse_layout(c.layout);
      } catch (const Error& e) {
        fail(ErrorKind::kInvalidInput, path, ": entry '", it.key(), "': ", e.what());
      }
    }
    for (auto k = v.begin(); k != v.end(); ++k)
      DLAS_CHECK(k.key() == "algo" || k.key() == "knobs" || k.key() == "layout",
                 ErrorKind::kInvalidInput, path, ": entry '", it.key(), "': unknown field '",
                 k.key(), "'");
    out[it.key()] = std::move(c);
  }
  return out;
}

void write_layer_choices(const std::string& path, const LayerChoices& choices) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [node, choice] : choices) {
    nlohmann::ordered_json k = nlohmann::ordered_json::object();
    for (const auto& [name, v] : choice.knobs) k[name] = v;
    j[node] = {{"algo", choice.algo}, {"knobs", k}};
    if (!choice.layout.empty()) j[node]["layout"] = choice.layout;
  }
  write_file_atomic(path, j.dump(2) + "\n");
}

struct Plan::Impl {
  Graph graph;
  PassReport report;
  Isa isa = Isa::kScalar;
  std::shared_ptr<ThreadPool> pool;  // ThreadPool::shared
  std::vector<std::unique_ptr<Step>> steps;
  std::vector<StepInfo> infos;
  std::unique_ptr<AlignedBuffer> arena, workspace;
  std::unordered_map<std::string, void*> addr;
  std::vector<std::pair<void*, size_t>> input_slots, output_slots;  // address, bytes
  MemoryReport memory;

  void copy_inputs(const std::vector<Tensor>& inputs) {
    DLAS_CHECK(inputs.size() == graph.inputs.size(), ErrorKind::kInvalidInput, "the model takes ",
               graph.inputs.size(), " inputs, got ", inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ValueInfo& v = graph.inputs[i];
      DLAS_CHECK(inputs[i].dtype() == v.dtype && inputs[i].shape() == v.shape,
                 ErrorKind::kInvalidInput, "input '", v.name, "' must be ", dtype_name(v.dtype),
                 " ", shape_str(v.shape), ", got ", inputs[i].describe());
      std::memcpy(input_slots[i].first, inputs[i].raw(), input_slots[i].second);
    }
  }
  void copy_outputs(std::vector<Tensor>& outputs) const {
    DLAS_CHECK(outputs.size() == output_slots.size(), ErrorKind::kInternal, "wrong output count");
    for (size_t i = 0; i < outputs.size(); ++i)
      std::memcpy(outputs[i].raw(), output_slots[i].first, output_slots[i].second);
  }
};

Plan::Plan(Graph graph, const PlanOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.graph = std::move(graph);
  m.report = optimize_graph(m.graph, options.opt_level);
  m.isa = options.isa.value_or(active_isa());
  DLAS_CHECK(isa_supported(m.isa), ErrorKind::kUnsupported, "ISA ", isa_name(m.isa),
             " is not supported by this CPU");
  m.pool = ThreadPool::shared(options.threads);
  const int threads = m.pool->threads();
  const Graph& g = m.graph;

  // Per-layer choices must name conv nodes of the optimized graph.
  for (const auto& [name, choice] : options.layers) {
    const Node* found = nullptr;
    for (const Node& n : g.nodes)
      if (n.name == name) found = &n;
    DLAS_CHECK(found, ErrorKind::kInvalidInput, "layer choice for '", name,
               "': no such node in the optimized graph");
    DLAS_CHECK(found->op == "Conv" || found->op == "FusedConv" || found->op == "QFusedConv",
               ErrorKind::kInvalidInput, "layer choice for '", name, "': node is a ", found->op,
               ", not a convolution");
  }

  // 1. Decide layouts, then lower every node, each preceded by the reorders it needs.
  plan::LayoutPlan lp = plan::plan_layouts(m.graph, options, m.isa);
  std::unordered_map<std::string, std::string> alias;  // view output -> the buffer it shares
  size_t workspace = 0;
  std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> io;  // per step
  auto add_reorders = [&](const std::vector<plan::LayoutPlan::Reorder>& list) {
    for (const plan::LayoutPlan::Reorder& r : list) {
      m.steps.push_back(std::make_unique<plan::ReorderStep>(g, r));
      m.infos.push_back({r.to, "Reorder", "fast", "", 0, r.to_layout});
      io.push_back({{r.from}, {r.to}});
    }
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    add_reorders(lp.before[i]);
    const Node& n = lp.nodes[i];
    plan::LowerContext ctx{g,
                           n,
                           options,
                           m.isa,
                           threads,
                           n.inputs.empty() ? Layout::kNchw : lp.of(n.inputs[0]),
                           lp.node_layout[i]};
    std::unique_ptr<Step> step;
    for (Lowering lower : kLowerings)
      if ((step = lower(ctx))) break;
    DLAS_CHECK(!is_blocked(ctx.y_layout) || step->kernel() != "reference", ErrorKind::kInternal,
               n.label(), ": the layout pass made it blocked but no blocked kernel took it");
    // A view op (Reshape, Flatten, ...) on an NCHW activation: its output shares the input's
    // buffer (the copy step then does nothing).
    if (plan::is_view_op(n.op) && step->kernel() == "fast" && !n.inputs.empty() &&
        n.outputs.size() == 1 && !g.constant(n.inputs[0]) && g.has_value(n.inputs[0]) &&
        ctx.x_layout == Layout::kNchw && ctx.y_layout == Layout::kNchw &&
        plan::value_bytes(g, n.inputs[0], Layout::kNchw) ==
            plan::value_bytes(g, n.outputs[0], Layout::kNchw))
      alias[n.outputs[0]] = alias.count(n.inputs[0]) ? alias[n.inputs[0]] : n.inputs[0];
    workspace = std::max(workspace, step->workspace_bytes(threads));
    m.memory.packed_weight_bytes += static_cast<int64_t>(step->packed_bytes());
    m.infos.push_back({n.name, n.op, step->kernel(), step->knobs(), g.node_macs(g.nodes[i]),
                       ctx.y_layout, step->compute()});
    m.steps.push_back(std::move(step));
    io.push_back({n.inputs, n.outputs});
  }
  add_reorders(lp.before[g.nodes.size()]);

  // 2. Lifetimes of every non-constant value: graph inputs from step 0, outputs to the end.
  std::vector<std::string> names;
  std::vector<BufferLifetime> life;
  std::unordered_map<std::string, size_t> index;
  auto touch = [&](const std::string& value, int step) {
    if (value.empty() || g.constant(value)) return;
    auto a = alias.find(value);
    const std::string& name = a == alias.end() ? value : a->second;
    auto [it, fresh] = index.emplace(name, names.size());
    if (fresh) {
      names.push_back(name);
      life.push_back({plan::value_bytes(g, name, lp.of(name)), step, step});
    }
    BufferLifetime& l = life[it->second];
    l.first = std::min(l.first, step);
    l.last = std::max(l.last, step);
  };
  const int last_step = static_cast<int>(io.size());
  for (const ValueInfo& v : g.inputs) touch(v.name, 0);
  for (size_t i = 0; i < io.size(); ++i) {
    for (const std::string& in : io[i].first) touch(in, static_cast<int>(i));
    for (const std::string& out : io[i].second) touch(out, static_cast<int>(i));
  }
  for (const std::string& o : lp.outputs) touch(o, last_step);
  const MemoryPlan mp = plan_memory(life, options.opt_level >= 1);
  m.memory.arena_bytes = static_cast<int64_t>(mp.arena_bytes);
  for (const BufferLifetime& l : life) m.memory.unplanned_bytes += static_cast<int64_t>(l.bytes);
  m.memory.weight_bytes = g.weight_bytes();
  m.memory.workspace_bytes = static_cast<int64_t>(workspace);

  // 3. Allocate and bind.
  m.arena = std::make_unique<AlignedBuffer>(std::max<size_t>(mp.arena_bytes, 64));
  m.workspace = std::make_unique<AlignedBuffer>(std::max<size_t>(workspace, 64));
  for (size_t i = 0; i < names.size(); ++i)
    m.addr[names[i]] = static_cast<char*>(m.arena->p) + mp.offsets[i];
  for (const auto& [view, base] : alias) m.addr[view] = m.addr.at(base);
  plan::Binder binder;
  binder.workspace = m.workspace->p;
  binder.value = [&m](const std::string& name) -> void* {
    auto it = m.addr.find(name);
    if (it != m.addr.end()) return it->second;
    const Tensor* t = m.graph.constant(name);
    DLAS_CHECK(t, ErrorKind::kInternal, "plan: value '", name, "' has no address");
    return const_cast<void*>(t->raw());
  };
  for (auto& s : m.steps) s->bind(binder);
  for (const ValueInfo& v : g.inputs)
    m.input_slots.push_back(
        {m.addr.at(v.name), static_cast<size_t>(shape_numel(v.shape)) * dtype_size(v.dtype)});
  for (const std::string& o : lp.outputs)
    m.output_slots.push_back({binder.value(o), plan::value_bytes(g, o, Layout::kNchw)});
}

Plan::~Plan() = default;
Plan::Plan(Plan&&) noexcept = default;
Plan& Plan::operator=(Plan&&) noexcept = default;

void Plan::run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  Impl& m = *impl_;
  m.copy_inputs(inputs);
  for (auto& s : m.steps) s->run(*m.pool);
  m.copy_outputs(outputs);
}

void Plan::run_profiled(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
                        std::vector<double>& step_seconds) {
  Impl& m = *impl_;
  step_seconds.resize(m.steps.size(), 0.0);
  m.copy_inputs(inputs);
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    m.steps[i]->run(*m.pool);
    step_seconds[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  m.copy_outputs(outputs);
}

const Graph& Plan::graph() const { return impl_->graph; }
const PassReport& Plan::pass_report() const { return impl_->report; }
const std::vector<StepInfo>& Plan::steps() const { return impl_->infos; }
MemoryReport Plan::memory() const { return impl_->memory; }
Isa Plan::isa() const { return impl_->isa; }
int Plan::threads() const { return impl_->pool->threads(); }

}  // namespace dlas
