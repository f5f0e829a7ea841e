// The oneDNN backend: the only translation unit that sees dnnl headers. See
// include/dlas/system/onednn_backend.h for what is lowered to which primitive.
#include "dlas/system/onednn_backend.h"

#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <oneapi/dnnl/dnnl.hpp>

#include "dlas/core/error.h"

namespace dlas {

namespace {

using dnnl::algorithm;
using dnnl::memory;
using Tag = memory::format_tag;
using Dt = memory::data_type;

memory::dims to_dims(const Shape& s) {
  if (s.empty()) return {1};  // oneDNN has no rank-0 tensors; a scalar is one element
  return memory::dims(s.begin(), s.end());
}

Tag plain_tag(size_t rank) {
  switch (rank) {
    case 0:
    case 1:
      return Tag::a;
    case 2:
      return Tag::ab;
    case 3:
      return Tag::abc;
    case 4:
      return Tag::abcd;
    case 5:
      return Tag::abcde;
    case 6:
      return Tag::abcdef;
  }
  fail(ErrorKind::kUnsupported, "oneDNN backend: tensors of rank ", rank, " are not supported");
}

memory::desc plain_md(const Shape& s) {
  return memory::desc(to_dims(s), Dt::f32, plain_tag(s.size()));
}
memory::desc any_md(const memory::dims& d) { return memory::desc(d, Dt::f32, Tag::any); }

// Sets the calling thread's OpenMP thread count (which the OMP build of oneDNN reads when
// it creates and runs primitives) and restores it on exit.
class OmpThreads {
 public:
  explicit OmpThreads(int threads) : previous_(omp_get_max_threads()) {
    omp_set_num_threads(threads);
  }
  ~OmpThreads() { omp_set_num_threads(previous_); }

 private:
  int previous_;
};

struct Step {
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
  std::string what;
};

// One fused operation after a Conv / inner product / binary.
struct PostOp {
  bool sum = false;  // residual Add (sum post-op) instead of an eltwise
  algorithm alg = algorithm::undef;
  float alpha = 0, beta = 0;
  std::vector<size_t> nodes;  // graph nodes it replaces
  std::string out;            // value it produces
  std::string residual;       // sum: the other operand of the Add
};

}  // namespace

struct OnednnExecutor::Impl {
  Graph graph;  // as given (shares its tensors' storage)
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  int threads = 1;
  std::vector<Step> steps;
  std::vector<std::string> input_names;
  std::vector<Shape> input_shapes;
  std::vector<dnnl::memory> input_mems;
  std::vector<Shape> output_shapes;
  std::vector<dnnl::memory> output_mems;
  // Every buffer lowering created: views (Flatten, broadcast operands) point into buffers
  // that no primitive argument may own.
  std::vector<dnnl::memory> owned;
};

namespace {

class Lowering {
 public:
  Lowering(const Graph& g, OnednnExecutor::Impl& impl) : g_(g), im_(impl) {}

  void run() {
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      for (const std::string& v : g_.nodes[i].inputs)
        if (!v.empty()) consumers_[v].push_back(i);
    for (const std::string& o : g_.outputs) graph_outputs_.insert(o);
    done_.assign(g_.nodes.size(), false);
    for (const ValueInfo& in : g_.inputs) {
      DLAS_CHECK(in.dtype == DType::kF32, ErrorKind::kUnsupported, "oneDNN backend: input '",
                 in.name, "' is ", dtype_name(in.dtype), ", only f32 is supported");
      memory m(plain_md(in.shape), im_.engine);
      vals_[in.name] = m;
      im_.input_names.push_back(in.name);
      im_.input_shapes.push_back(in.shape);
      im_.input_mems.push_back(m);
      no_overwrite_.insert(in.name);
    }
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (!done_[i]) lower(i);
    for (const std::string& o : g_.outputs) {
      const Shape& s = shape(o);
      im_.output_shapes.push_back(s);
      im_.output_mems.push_back(in_layout(o, plain_md(s)));
    }
    for (auto& [name, m] : vals_) im_.owned.push_back(m);
    for (auto& [name, ms] : alternates_) im_.owned.insert(im_.owned.end(), ms.begin(), ms.end());
  }

 private:
  const Shape& shape(const std::string& v) const { return g_.value(v).shape; }

  [[noreturn]] void unsupported(const Node& n, const std::string& why) const {
    fail(ErrorKind::kUnsupported, n.label(), ": oneDNN backend: ", why);
  }

  // The node using `v` when it is the only consumer (and v is not a graph output), else -1.
  long single_consumer(const std::string& v) const {
    if (graph_outputs_.count(v)) return -1;
    auto it = consumers_.find(v);
    if (it == consumers_.end() || it->second.size() != 1) return -1;
    return static_cast<long>(it->second[0]);
  }

  // Memory of a value in whatever layout its producer wrote; constants are copied in once.
  memory get(const std::string& v) {
    auto it = vals_.find(v);
    if (it != vals_.end()) return it->second;
    const Tensor* c = g_.constant(v);
    DLAS_CHECK(c != nullptr, ErrorKind::kInternal, "oneDNN backend: value '", v,
               "' used before it is computed");
    DLAS_CHECK(c->dtype() == DType::kF32, ErrorKind::kUnsupported, "oneDNN backend: constant '", v,
               "' is ", dtype_name(c->dtype()), ", only f32 is supported");
    memory m(plain_md(c->shape()), im_.engine);
    std::memcpy(m.get_data_handle(), c->raw(), c->nbytes());
    vals_[v] = m;
    no_overwrite_.insert(v);
    return m;
  }

  // The value in layout `want`, reordering (once, cached) when its producer wrote another.
  memory in_layout(const std::string& v, const memory::desc& want) {
    memory m = get(v);
    if (m.get_desc() == want) return m;
    for (const memory& alt : alternates_[v])
      if (alt.get_desc() == want) return alt;
    memory r(want, im_.engine);
    add_step(dnnl::reorder(m, r), {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, r}}, "reorder " + v);
    alternates_[v].push_back(r);
    return r;
  }
  memory plain(const std::string& v) { return in_layout(v, plain_md(shape(v))); }

  void add_step(dnnl::primitive p, std::unordered_map<int, memory> args, std::string what) {
    im_.steps.push_back({std::move(p), std::move(args), std::move(what)});
  }
  template <class PD>
  static std::string impl_of(const PD& pd) {
    return std::string(" [") + pd.impl_info_str() + "]";
  }

  // A view of the value's plain buffer with another shape (Flatten, Reshape, ...).
  void define_view(const std::string& src, const std::string& out) {
    memory p = plain(src);
    vals_[out] = memory(plain_md(shape(out)), im_.engine, p.get_data_handle());
    // Neither buffer may be overwritten in place: the other name still reads it.
    no_overwrite_.insert(src);
    no_overwrite_.insert(out);
  }

  // Constant f32 data of a node input, or an error naming the node.
  std::vector<float> const_floats(const Node& n, size_t input, const char* what) const {
    if (input >= n.inputs.size() || n.inputs[input].empty())
      unsupported(n, str(what, " is absent"));
    const Tensor* t = g_.constant(n.inputs[input]);
    if (!t) unsupported(n, str(what, " '", n.inputs[input], "' must be a constant"));
    if (t->dtype() != DType::kF32) unsupported(n, str(what, " must be f32"));
    return t->to_float_vector();
  }
  bool is_const(const Node& n, size_t input) const {
    return input < n.inputs.size() && !n.inputs[input].empty() &&
           g_.constant(n.inputs[input]) != nullptr;
  }

  // ---- post-op matching ---------------------------------------------------------------

  // Whether an activation follows `cur` that can run as an eltwise post-op.
  bool match_activation(const std::string& cur, PostOp& op) const {
    if (graph_outputs_.count(cur)) return false;
    auto it = consumers_.find(cur);
    if (it == consumers_.end()) return false;
    const std::vector<size_t>& cs = it->second;
    // SiLU written as x * Sigmoid(x): swish with alpha 1.
    if (cs.size() == 2) {
      for (int k = 0; k < 2; ++k) {
        const Node& s = g_.nodes[cs[k]];
        const Node& m = g_.nodes[cs[1 - k]];
        if (s.op != "Sigmoid" || m.op != "Mul" || m.inputs.size() != 2) continue;
        const std::string& so = s.outputs[0];
        const bool pair =
            (m.inputs[0] == cur && m.inputs[1] == so) || (m.inputs[1] == cur && m.inputs[0] == so);
        if (!pair || single_consumer(so) != static_cast<long>(cs[1 - k])) continue;
        op = PostOp{false, algorithm::eltwise_swish, 1.0f, 0.0f, {cs[k], cs[1 - k]}, m.outputs[0],
                    ""};
        return true;
      }
      return false;
    }
    const long j = single_consumer(cur);
    if (j < 0) return false;
    const Node& n = g_.nodes[static_cast<size_t>(j)];
    if (n.inputs.empty() || n.inputs[0] != cur || n.outputs.size() != 1) return false;
    op = PostOp{};
    op.nodes = {static_cast<size_t>(j)};
    op.out = n.outputs[0];
    return activation_of(n, op.alg, op.alpha, op.beta);
  }

  // The eltwise algorithm of an activation node (false: not an activation we map).
  bool activation_of(const Node& n, algorithm& alg, float& alpha, float& beta) const {
    alpha = beta = 0;
    if (n.op == "Relu") {
      alg = algorithm::eltwise_relu;
    } else if (n.op == "LeakyRelu") {
      alg = algorithm::eltwise_relu;
      alpha = n.attr_float("alpha", 0.01f);
    } else if (n.op == "Sigmoid") {
      alg = algorithm::eltwise_logistic;
    } else if (n.op == "HardSwish") {
      alg = algorithm::eltwise_hardswish;
    } else if (n.op == "Tanh") {
      alg = algorithm::eltwise_tanh;
    } else if (n.op == "Clip") {
      float lo = -FLT_MAX, hi = FLT_MAX;
      for (size_t k = 1; k <= 2; ++k) {
        if (k >= n.inputs.size() || n.inputs[k].empty()) continue;
        const Tensor* t = g_.constant(n.inputs[k]);
        if (!t || t->numel() != 1 || t->dtype() != DType::kF32) return false;
        (k == 1 ? lo : hi) = static_cast<float>(t->get_as_double(0));
      }
      lo = n.attr_float("min", lo);
      hi = n.attr_float("max", hi);
      alg = algorithm::eltwise_clip;
      alpha = lo;
      beta = hi;
    } else {
      return false;
    }
    return true;
  }

  // A residual Add of `cur` and an already computed value of the same shape.
  bool match_residual(const std::string& cur, PostOp& op) const {
    const long j = single_consumer(cur);
    if (j < 0) return false;
    const Node& n = g_.nodes[static_cast<size_t>(j)];
    if (n.op != "Add" || n.inputs.size() != 2) return false;
    const std::string& other = n.inputs[0] == cur ? n.inputs[1] : n.inputs[0];
    if (other == cur || !vals_.count(other)) return false;
    if (shape(other) != shape(cur) || shape(n.outputs[0]) != shape(cur)) return false;
    op = PostOp{true, algorithm::undef, 0, 0, {static_cast<size_t>(j)}, n.outputs[0], other};
    return true;
  }

  std::vector<PostOp> collect_post_ops(std::string cur, bool allow_sum) const {
    std::vector<PostOp> ops;
    bool have_sum = false;
    for (;;) {
      PostOp op;
      if (match_activation(cur, op)) {
      } else if (allow_sum && !have_sum && match_residual(cur, op)) {
        have_sum = true;
      } else {
        break;
      }
      cur = op.out;
      ops.push_back(std::move(op));
    }
    return ops;
  }

  static dnnl::primitive_attr attr_of(const std::vector<PostOp>& ops) {
    dnnl::post_ops po;
    for (const PostOp& op : ops) {
      if (op.sum)
        po.append_sum(1.0f);
      else
        po.append_eltwise(1.0f, op.alg, op.alpha, op.beta);
    }
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    return attr;
  }

  // Creates the primitive descriptor with as many post-ops as oneDNN accepts (dropping
  // from the end; dropped ones are lowered as their own primitives later).
  template <class PD, class Make>
  PD create_with_post_ops(const Node& n, std::vector<PostOp>& ops, Make&& make) {
    for (;;) {
      try {
        return make(attr_of(ops));
      } catch (const dnnl::error& e) {
        if (ops.empty()) unsupported(n, str("no oneDNN implementation (", e.what(), ")"));
        ops.pop_back();
      }
    }
  }

  // Marks the fused nodes done and returns the value the fused chain ends in.
  std::string finish_chain(const std::string& first, const std::vector<PostOp>& ops) {
    std::string out = first;
    for (const PostOp& op : ops) {
      for (size_t k : op.nodes) done_[k] = true;
      out = op.out;
    }
    return out;
  }

  // Destination for a primitive whose chain may end in a sum post-op: the residual's own
  // buffer when nothing else reads it later (in place), else a copy of it made just before.
  // `src` is the primitive's own input: never its destination too (y = conv(x) + x).
  memory dst_for(const std::vector<PostOp>& ops, const memory::desc& dst_desc,
                 const std::string& src) {
    for (const PostOp& op : ops) {
      if (!op.sum) continue;
      const std::string& r = op.residual;
      bool free = r != src && !no_overwrite_.count(r) && !graph_outputs_.count(r);
      for (size_t k : consumers_.at(r))
        if (!done_[k] && std::find(op.nodes.begin(), op.nodes.end(), k) == op.nodes.end())
          free = false;
      memory rm = get(r);
      if (free && rm.get_desc() == dst_desc) return rm;
      memory d(dst_desc, im_.engine);
      add_step(dnnl::reorder(rm, d), {{DNNL_ARG_FROM, rm}, {DNNL_ARG_TO, d}},
               "reorder " + r + " (residual into the sum destination)");
      return d;
    }
    return memory(dst_desc, im_.engine);
  }

  static std::string chain_names(const Graph& g, const std::vector<PostOp>& ops) {
    std::string s;
    for (const PostOp& op : ops)
      for (size_t k : op.nodes) s += "+" + g.nodes[k].op;
    return s;
  }

  // ---- window geometry ------------------------------------------------------------------

  struct Geometry {
    memory::dims kernel, strides, dilations, pad_l, pad_r;
    bool pad_r_grown = false;  // pad_r exceeds the ONNX end padding (ceil_mode)
  };

  Geometry geometry(const Node& n, const Shape& in, const Shape& out,
                    const std::vector<int64_t>& kernel) const {
    const size_t sp = in.size() - 2;
    Geometry geo;
    geo.kernel = memory::dims(kernel.begin(), kernel.end());
    const auto strides = n.attr_ints("strides", std::vector<int64_t>(sp, 1));
    const auto dil = n.attr_ints("dilations", std::vector<int64_t>(sp, 1));
    const auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
    std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
    for (size_t i = 0; i < sp; ++i) {
      const int64_t eff = (kernel[i] - 1) * dil[i] + 1;
      const int64_t ih = in[i + 2], oh = out[i + 2], s = strides[i];
      int64_t pl = pads[i], pe = pads[i + sp];
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        const int64_t total = std::max<int64_t>(0, (oh - 1) * s + eff - ih);
        pl = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pe = total - pl;
      } else if (auto_pad == "VALID") {
        pl = pe = 0;
      }
      // oneDNN derives the output size as (ih - eff + pl + pr) / s + 1 (floor): choose pr so
      // it equals the inferred size (ceil_mode grows it; extra end padding shrinks it).
      const int64_t pr = std::max<int64_t>(0, (oh - 1) * s + eff - ih - pl);
      geo.strides.push_back(s);
      geo.dilations.push_back(dil[i] - 1);  // oneDNN counts dilation from 0
      geo.pad_l.push_back(pl);
      geo.pad_r.push_back(pr);
      if (pr > pe) geo.pad_r_grown = true;
    }
    return geo;
  }

  // ---- lowering per op ------------------------------------------------------------------

  void lower(size_t i) {
    const Node& n = g_.nodes[i];
    for (const std::string& o : n.outputs)
      if (!o.empty() && g_.has_value(o) && g_.value(o).dtype != DType::kF32)
        unsupported(n, str("output '", o, "' is ", dtype_name(g_.value(o).dtype),
                           ", only f32 is supported"));
    done_[i] = true;
    const std::string& op = n.op;
    if (op == "Conv") return lower_conv(n);
    if (op == "Gemm" || op == "MatMul") return lower_gemm(n);
    if (op == "BatchNormalization") return lower_batch_norm(n);
    if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" ||
        op == "GlobalMaxPool")
      return lower_pool(n);
    if (op == "Add" || op == "Mul" || op == "Sub" || op == "Div") return lower_binary(n);
    if (op == "Concat") return lower_concat(n);
    if (op == "Softmax") return lower_softmax(n);
    if (op == "Flatten" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" ||
        op == "Identity" || op == "Dropout") {
      if (n.outputs.size() > 1 && !n.outputs[1].empty() && consumers_.count(n.outputs[1]))
        unsupported(n, "the dropout mask output is not supported");
      return define_view(n.inputs[0], n.outputs[0]);
    }
    if (op == "HardSigmoid") return lower_hard_sigmoid(n);
    if (op == "ReduceMean") return lower_reduce_mean(n);
    if (op == "Transpose") return lower_transpose(n);
    if (op == "Pad") return lower_pad(n);
    if (op == "Slice") return lower_slice(n);
    algorithm alg;
    float alpha, beta;
    if (activation_of(n, alg, alpha, beta)) return lower_eltwise(n, alg, alpha, beta);
    unsupported(n, "op " + op + " has no oneDNN lowering");
  }

  // Integers of a constant node input (ReduceMean's axes, Pad's pads), or an error.
  std::vector<int64_t> const_ints(const Node& n, size_t input, const char* what) const {
    const Tensor* t = g_.constant(n.inputs[input]);
    if (!t) unsupported(n, str(what, " '", n.inputs[input], "' must be a constant"));
    return t->to_int64_vector();
  }
  bool has_input(const Node& n, size_t input) const {
    return input < n.inputs.size() && !n.inputs[input].empty();
  }

  // HardSigmoid, max(0, min(1, alpha x + beta)): a linear eltwise, then a clip in place
  // (oneDNN 2.6 has no hard-sigmoid algorithm).
  void lower_hard_sigmoid(const Node& n) {
    memory src = get(n.inputs[0]);
    dnnl::eltwise_forward::primitive_desc lin(
        {dnnl::prop_kind::forward_inference, algorithm::eltwise_linear, src.get_desc(),
         n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)},
        im_.engine);
    memory dst(lin.dst_desc(), im_.engine);
    add_step(dnnl::eltwise_forward(lin), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
             "eltwise " + n.name + " (HardSigmoid: linear)" + impl_of(lin));
    dnnl::eltwise_forward::primitive_desc clip(
        {dnnl::prop_kind::forward_inference, algorithm::eltwise_clip, dst.get_desc(), 0.f, 1.f},
        im_.engine);
    add_step(dnnl::eltwise_forward(clip), {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}},
             "eltwise " + n.name + " (HardSigmoid: clip)" + impl_of(clip));
    vals_[n.outputs[0]] = dst;
  }

  // ReduceMean over constant axes: the reduction primitive into the kept-dims shape, viewed
  // as the output's shape when keepdims is 0.
  void lower_reduce_mean(const Node& n) {
    const Shape& xs = shape(n.inputs[0]);
    const int64_t r = static_cast<int64_t>(xs.size());
    std::vector<int64_t> axes =
        has_input(n, 1) ? const_ints(n, 1, "axes") : n.attr_ints("axes", std::vector<int64_t>{});
    if (axes.empty() && n.attr_int("noop_with_empty_axes", 0) != 0)
      return define_view(n.inputs[0], n.outputs[0]);
    Shape kept = xs;
    if (axes.empty()) std::fill(kept.begin(), kept.end(), 1);
    for (int64_t a : axes) kept[static_cast<size_t>(a < 0 ? a + r : a)] = 1;
    memory src = plain(n.inputs[0]);
    dnnl::reduction::primitive_desc pd(
        {algorithm::reduction_mean, src.get_desc(), plain_md(kept), 0.f, 0.f}, im_.engine);
    memory dst(pd.dst_desc(), im_.engine);
    add_step(dnnl::reduction(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
             "reduce_mean " + n.name + impl_of(pd));
    const std::string& out = n.outputs[0];
    if (shape(out) == kept) {
      vals_[out] = dst;
      return;
    }
    // keepdims = 0: the same buffer under the output's shape (the kept-dims memory, which
    // owns it, stays alive under a name no node uses).
    vals_[out + "\x01kept"] = dst;
    vals_[out] = memory(plain_md(shape(out)), im_.engine, dst.get_data_handle());
    no_overwrite_.insert(out);
  }

  // Transpose: a reorder from the input's plain buffer seen with its axes permuted.
  void lower_transpose(const Node& n) {
    const Shape& xs = shape(n.inputs[0]);
    const int r = static_cast<int>(xs.size());
    std::vector<int64_t> perm = n.attr_ints("perm", std::vector<int64_t>{});
    if (perm.empty())
      for (int i = r - 1; i >= 0; --i) perm.push_back(i);
    // permute_axes moves input axis perm[i] to output axis i.
    std::vector<int> to(static_cast<size_t>(r));
    for (int i = 0; i < r; ++i) to[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
    memory src = plain(n.inputs[0]);
    memory view(src.get_desc().permute_axes(to), im_.engine, src.get_data_handle());
    memory dst(plain_md(shape(n.outputs[0])), im_.engine);
    add_step(dnnl::reorder(view, dst), {{DNNL_ARG_FROM, view}, {DNNL_ARG_TO, dst}},
             "transpose " + n.name);
    vals_[n.outputs[0]] = dst;
  }

  // Slice with unit steps: a reorder from a sub-memory view of the input's plain buffer.
  void lower_slice(const Node& n) {
    const Shape& xs = shape(n.inputs[0]);
    const int64_t r = static_cast<int64_t>(xs.size());
    const bool inputs = has_input(n, 1);  // opset 10+: starts, ends, axes, steps as inputs
    const std::vector<int64_t> starts =
        inputs ? const_ints(n, 1, "starts") : n.attr_ints("starts", std::vector<int64_t>{});
    std::vector<int64_t> axes =
        inputs ? (has_input(n, 3) ? const_ints(n, 3, "axes") : std::vector<int64_t>{})
               : n.attr_ints("axes", std::vector<int64_t>{});
    if (axes.empty())
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    if (inputs && has_input(n, 4))
      for (int64_t step : const_ints(n, 4, "steps"))
        if (step != 1) unsupported(n, "only unit steps are supported");
    memory::dims offsets(static_cast<size_t>(r), 0);
    for (size_t k = 0; k < starts.size() && k < axes.size(); ++k) {
      const int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
      const int64_t dim = xs[static_cast<size_t>(a)];
      const int64_t s = starts[k] < 0 ? starts[k] + dim : starts[k];
      offsets[static_cast<size_t>(a)] = std::clamp<int64_t>(s, 0, dim);
    }
    const Shape& ys = shape(n.outputs[0]);
    memory src = plain(n.inputs[0]);
    memory view(src.get_desc().submemory_desc(to_dims(ys), offsets), im_.engine,
                src.get_data_handle());
    memory dst(plain_md(ys), im_.engine);
    add_step(dnnl::reorder(view, dst), {{DNNL_ARG_FROM, view}, {DNNL_ARG_TO, dst}},
             "slice " + n.name);
    vals_[n.outputs[0]] = dst;
  }

  // Pad, constant mode: the output buffer is filled with the constant once, when the plan
  // is built, and each run reorders the input into its interior (a sub-memory view). No
  // other step may write that buffer in place, or the border would be lost.
  void lower_pad(const Node& n) {
    const std::string mode = n.attr_string("mode", "constant");
    if (mode != "constant") unsupported(n, "only constant padding is supported, not " + mode);
    if (has_input(n, 3)) unsupported(n, "the axes input is not supported");
    const std::vector<int64_t> pads =
        has_input(n, 1) ? const_ints(n, 1, "pads") : n.attr_ints("pads", std::vector<int64_t>{});
    float value = 0.f;
    if (has_input(n, 2)) {
      const std::vector<float> v = const_floats(n, 2, "constant_value");
      value = v.at(0);
    }
    const Shape& xs = shape(n.inputs[0]);
    const size_t r = xs.size();
    memory::dims offsets(r);
    for (size_t i = 0; i < r; ++i) {
      if (pads[i] < 0 || pads[i + r] < 0) unsupported(n, "negative pads are not supported");
      offsets[i] = pads[i];
    }
    memory src = plain(n.inputs[0]);
    memory dst(plain_md(shape(n.outputs[0])), im_.engine);
    float* d = static_cast<float*>(dst.get_data_handle());
    std::fill(d, d + shape_numel(shape(n.outputs[0])), value);
    memory inner(dst.get_desc().submemory_desc(to_dims(xs), offsets), im_.engine,
                 dst.get_data_handle());
    add_step(dnnl::reorder(src, inner), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, inner}},
             "pad " + n.name);
    vals_[n.outputs[0]] = dst;
    no_overwrite_.insert(n.outputs[0]);
  }

  void lower_conv(const Node& n) {
    const Shape& xs = shape(n.inputs[0]);
    const Shape& ws = shape(n.inputs[1]);
    if (xs.size() != 4) unsupported(n, "only 2-D convolutions are supported");
    const int64_t groups = n.attr_int("group", 1);
    const int64_t k_out = ws[0];
    std::vector<float> w = const_floats(n, 1, "weight");
    std::vector<float> bias(static_cast<size_t>(k_out), 0.0f);
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) bias = const_floats(n, 2, "bias");

    std::string cur = n.outputs[0];
    std::vector<size_t> bn_nodes;
    // Fold a following BatchNormalization into the weights and bias.
    if (const long j = single_consumer(cur); j >= 0) {
      const Node& bn = g_.nodes[static_cast<size_t>(j)];
      if (bn.op == "BatchNormalization" && bn.inputs[0] == cur && is_const(bn, 1) &&
          is_const(bn, 2) && is_const(bn, 3) && is_const(bn, 4) &&
          (bn.outputs.size() == 1 || !consumers_.count(bn.outputs[1]))) {
        const std::vector<float> gamma = const_floats(bn, 1, "scale"),
                                 beta = const_floats(bn, 2, "B"),
                                 mean = const_floats(bn, 3, "mean"),
                                 var = const_floats(bn, 4, "var");
        const float eps = bn.attr_float("epsilon", 1e-5f);
        const size_t per_k = w.size() / static_cast<size_t>(k_out);
        for (size_t k = 0; k < static_cast<size_t>(k_out); ++k) {
          const float s = gamma[k] / std::sqrt(var[k] + eps);
          for (size_t e = 0; e < per_k; ++e) w[k * per_k + e] *= s;
          bias[k] = (bias[k] - mean[k]) * s + beta[k];
        }
        done_[static_cast<size_t>(j)] = true;
        bn_nodes.push_back(static_cast<size_t>(j));
        cur = bn.outputs[0];
      }
    }
    std::vector<PostOp> ops = collect_post_ops(cur, true);

    const Shape& ys = shape(n.outputs[0]);
    const Geometry geo = geometry(n, xs, ys, {ws[2], ws[3]});
    memory::dims wdims = groups == 1 ? memory::dims{ws[0], ws[1], ws[2], ws[3]}
                                     : memory::dims{groups, ws[0] / groups, ws[1], ws[2], ws[3]};
    const memory::desc src_md = any_md(to_dims(xs)), w_md = any_md(wdims),
                       b_md({k_out}, Dt::f32, Tag::a), dst_md = any_md(to_dims(ys));
    auto pd = create_with_post_ops<dnnl::convolution_forward::primitive_desc>(
        n, ops, [&](const dnnl::primitive_attr& attr) {
          dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                            algorithm::convolution_auto, src_md, w_md, b_md, dst_md,
                                            geo.strides, geo.dilations, geo.pad_l, geo.pad_r);
          return dnnl::convolution_forward::primitive_desc(d, attr, im_.engine);
        });

    memory src = in_layout(n.inputs[0], pd.src_desc());
    memory wm(pd.weights_desc(), im_.engine), bm(pd.bias_desc(), im_.engine);
    {
      memory user(memory::desc(wdims, Dt::f32, groups == 1 ? Tag::oihw : Tag::goihw), im_.engine,
                  w.data());
      dnnl::reorder(user, wm).execute(im_.stream, user, wm);
      im_.stream.wait();
      std::memcpy(bm.get_data_handle(), bias.data(), bias.size() * sizeof(float));
    }
    const std::string out_name = finish_chain(cur, ops);
    memory dst = dst_for(ops, pd.dst_desc(), n.inputs[0]);
    std::string what = "conv " + n.name + (bn_nodes.empty() ? "" : "+BatchNormalization") +
                       chain_names(g_, ops) + impl_of(pd);
    add_step(
        dnnl::convolution_forward(pd),
        {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, dst}},
        std::move(what));
    vals_[out_name] = dst;
  }

  // Gemm with a constant B: inner product (weights reordered once). MatMul, and Gemm with a
  // runtime B: matmul on plain layouts.
  void lower_gemm(const Node& n) {
    const bool gemm = n.op == "Gemm";
    const Shape& as = shape(n.inputs[0]);
    const Shape& bs = shape(n.inputs[1]);
    const Shape& ys = shape(n.outputs[0]);
    bool trans_b = false;
    if (gemm) {
      if (n.attr_int("transA", 0) != 0) unsupported(n, "transA = 1 is not supported");
      if (n.attr_float("alpha", 1.0f) != 1.0f) unsupported(n, "alpha != 1 is not supported");
      trans_b = n.attr_int("transB", 0) != 0;
    }
    const bool has_c = gemm && n.inputs.size() > 2 && !n.inputs[2].empty();
    if (has_c && n.attr_float("beta", 1.0f) != 1.0f) unsupported(n, "beta != 1 is not supported");

    if (gemm && is_const(n, 1) && (!has_c || is_const(n, 2))) {
      const int64_t m = as[0], k = as[1], nn = ys[1];
      std::vector<float> b = const_floats(n, 1, "B");
      std::vector<float> w(static_cast<size_t>(nn * k));  // [N][K]
      for (int64_t o = 0; o < nn; ++o)
        for (int64_t e = 0; e < k; ++e)
          w[static_cast<size_t>(o * k + e)] =
              trans_b ? b[static_cast<size_t>(o * k + e)] : b[static_cast<size_t>(e * nn + o)];
      std::vector<float> bias(static_cast<size_t>(nn), 0.0f);
      if (has_c) {
        std::vector<float> c = const_floats(n, 2, "C");
        if (c.size() == 1)
          std::fill(bias.begin(), bias.end(), c[0]);
        else if (static_cast<int64_t>(c.size()) == nn)
          bias = c;
        else
          unsupported(n, "C must be a scalar or have N elements");
      }
      std::vector<PostOp> ops = collect_post_ops(n.outputs[0], true);
      const memory::desc src_md = plain_md(as), w_md = any_md({nn, k}), b_md({nn}, Dt::f32, Tag::a),
                         dst_md = any_md({m, nn});
      auto pd = create_with_post_ops<dnnl::inner_product_forward::primitive_desc>(
          n, ops, [&](const dnnl::primitive_attr& attr) {
            dnnl::inner_product_forward::desc d(dnnl::prop_kind::forward_inference, src_md, w_md,
                                                b_md, dst_md);
            return dnnl::inner_product_forward::primitive_desc(d, attr, im_.engine);
          });
      memory src = in_layout(n.inputs[0], pd.src_desc());
      memory wm(pd.weights_desc(), im_.engine), bm(pd.bias_desc(), im_.engine);
      {
        memory user(memory::desc({nn, k}, Dt::f32, Tag::oi), im_.engine, w.data());
        dnnl::reorder(user, wm).execute(im_.stream, user, wm);
        im_.stream.wait();
        std::memcpy(bm.get_data_handle(), bias.data(), bias.size() * sizeof(float));
      }
      const std::string out_name = finish_chain(n.outputs[0], ops);
      memory dst = dst_for(ops, pd.dst_desc(), n.inputs[0]);
      add_step(
          dnnl::inner_product_forward(pd),
          {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, dst}},
          "inner_product " + n.name + chain_names(g_, ops) + impl_of(pd));
      vals_[out_name] = dst;
      return;
    }

    // matmul: equal ranks >= 2 (oneDNN broadcasts batch dimensions of size 1).
    if (as.size() < 2 || as.size() != bs.size() || as.size() > 5)
      unsupported(n, "matmul operands must have equal ranks between 2 and 5");
    memory a = plain(n.inputs[0]);
    memory b = plain(n.inputs[1]);
    memory::desc b_md = b.get_desc();
    if (trans_b) {  // B is stored [N][K]: view it as [K][N] with swapped strides
      const memory::dims d = {bs[1], bs[0]};
      b_md = memory::desc(d, Dt::f32, Tag::ba);
      im_.owned.push_back(b);
      b = memory(b_md, im_.engine, b.get_data_handle());
    }
    memory::desc bias_md;
    memory bias;
    if (has_c) {
      const Shape& cs = shape(n.inputs[2]);
      Shape c2 = cs;
      while (c2.size() < 2) c2.insert(c2.begin(), 1);
      if (c2.size() != 2) unsupported(n, "C must have rank <= 2");
      memory c = plain(n.inputs[2]);
      bias_md = plain_md(c2);
      im_.owned.push_back(c);
      bias = memory(bias_md, im_.engine, c.get_data_handle());
    }
    const memory::desc dst_md = plain_md(ys);
    dnnl::matmul::primitive_desc pd;
    try {
      dnnl::matmul::desc d = has_c ? dnnl::matmul::desc(a.get_desc(), b_md, bias_md, dst_md)
                                   : dnnl::matmul::desc(a.get_desc(), b_md, dst_md);
      pd = dnnl::matmul::primitive_desc(d, im_.engine);
    } catch (const dnnl::error& e) {
      unsupported(n, str("no oneDNN matmul for these shapes (", e.what(), ")"));
    }
    memory dst(pd.dst_desc(), im_.engine);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, dst}};
    if (has_c) args[DNNL_ARG_BIAS] = bias;
    add_step(dnnl::matmul(pd), std::move(args), "matmul " + n.name + impl_of(pd));
    vals_[n.outputs[0]] = dst;
  }

  void lower_batch_norm(const Node& n) {
    for (size_t k = 1; k <= 4; ++k)
      if (!is_const(n, k)) unsupported(n, "scale, B, mean and var must be constants");
    if (n.outputs.size() > 1 && !n.outputs[1].empty() && consumers_.count(n.outputs[1]))
      unsupported(n, "training-mode outputs are not supported");
    memory src = get(n.inputs[0]);
    const memory::desc md = src.get_desc();
    auto flags = dnnl::normalization_flags::use_global_stats |
                 dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    std::string out = n.outputs[0], what = "batch_norm " + n.name;
    if (const long j = single_consumer(out);
        j >= 0 && g_.nodes[static_cast<size_t>(j)].op == "Relu") {
      flags = flags | dnnl::normalization_flags::fuse_norm_relu;
      done_[static_cast<size_t>(j)] = true;
      out = g_.nodes[static_cast<size_t>(j)].outputs[0];
      what += "+Relu";
    }
    dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, md,
                                              n.attr_float("epsilon", 1e-5f), flags);
    dnnl::batch_normalization_forward::primitive_desc pd(d, im_.engine);
    auto param = [&](size_t k) {
      memory m(memory::desc({shape(n.inputs[0])[1]}, Dt::f32, Tag::a), im_.engine);
      const std::vector<float> v = const_floats(n, k, "parameter");
      std::memcpy(m.get_data_handle(), v.data(), v.size() * sizeof(float));
      return m;
    };
    memory dst(pd.dst_desc(), im_.engine);
    add_step(dnnl::batch_normalization_forward(pd),
             {{DNNL_ARG_SRC, src},
              {DNNL_ARG_SCALE, param(1)},
              {DNNL_ARG_SHIFT, param(2)},
              {DNNL_ARG_MEAN, param(3)},
              {DNNL_ARG_VARIANCE, param(4)},
              {DNNL_ARG_DST, dst}},
             what + impl_of(pd));
    vals_[out] = dst;
  }

  void lower_pool(const Node& n) {
    const Shape& xs = shape(n.inputs[0]);
    const Shape& ys = shape(n.outputs[0]);
    if (xs.size() < 3 || xs.size() > 5) unsupported(n, "pooling needs 1 to 3 spatial dims");
    if (n.outputs.size() > 1 && !n.outputs[1].empty())
      unsupported(n, "Indices output is not supported");
    const bool global = n.op == "GlobalAveragePool" || n.op == "GlobalMaxPool";
    const bool max = n.op == "MaxPool" || n.op == "GlobalMaxPool";
    std::vector<int64_t> kernel(xs.begin() + 2, xs.end());
    Geometry geo;
    if (global) {
      geo.kernel = memory::dims(kernel.begin(), kernel.end());
      geo.strides.assign(kernel.size(), 1);
      geo.pad_l.assign(kernel.size(), 0);
      geo.pad_r.assign(kernel.size(), 0);
    } else {
      kernel = n.attr_ints("kernel_shape", {});
      geo = geometry(n, xs, ys, kernel);
      for (int64_t d : geo.dilations)
        if (d != 0) unsupported(n, "dilated pooling is not supported");
    }
    algorithm alg = algorithm::pooling_max;
    if (!max) {
      const bool include = n.attr_int("count_include_pad", 0) != 0;
      if (include && geo.pad_r_grown)
        unsupported(n, "count_include_pad with ceil_mode windows past the padding");
      alg =
          include ? algorithm::pooling_avg_include_padding : algorithm::pooling_avg_exclude_padding;
    }
    memory src = get(n.inputs[0]);
    dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, src.get_desc(),
                                  any_md(to_dims(ys)), geo.strides, geo.kernel, geo.pad_l,
                                  geo.pad_r);
    dnnl::pooling_forward::primitive_desc pd(d, im_.engine);
    memory dst(pd.dst_desc(), im_.engine);
    add_step(dnnl::pooling_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
             "pooling " + n.name + impl_of(pd));
    vals_[n.outputs[0]] = dst;
  }

  void lower_eltwise(const Node& n, algorithm alg, float alpha, float beta) {
    std::string out = n.outputs[0];
    std::string what = "eltwise " + n.name;
    // SiLU written as x * Sigmoid(x) on a value no convolution produced.
    if (n.op == "Sigmoid") {
      PostOp op;
      if (match_activation(n.inputs[0], op) && op.alg == algorithm::eltwise_swish) {
        alg = op.alg;
        alpha = op.alpha;
        beta = op.beta;
        for (size_t k : op.nodes) done_[k] = true;
        out = op.out;
        what += "+Mul (swish)";
      }
    }
    memory src = get(n.inputs[0]);
    dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg, src.get_desc(), alpha,
                                  beta);
    dnnl::eltwise_forward::primitive_desc pd(d, im_.engine);
    memory dst(pd.dst_desc(), im_.engine);
    add_step(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
             what + impl_of(pd));
    vals_[out] = dst;
  }

  void lower_binary(const Node& n) {
    if (n.inputs.size() != 2) unsupported(n, "expects two inputs");
    const Shape& ys = shape(n.outputs[0]);
    std::string a = n.inputs[0], b = n.inputs[1];
    const bool commutative = n.op == "Add" || n.op == "Mul";
    // oneDNN broadcasts only src1: put the full-size operand first.
    if (shape(a) != ys) {
      if (!commutative || shape(b) != ys)
        unsupported(n, "the first operand must have the output shape");
      std::swap(a, b);
    }
    memory src0 = get(a);
    memory src1;
    if (shape(b) == ys) {
      src1 = in_layout(b, src0.get_desc());
    } else if (shape(b).size() == ys.size()) {
      // Broadcast operand of equal rank (SE blocks: [N, C, 1, 1] scales): keep the layout its
      // producer chose -- blocked like src0, which oneDNN's jit binary handles; a plain
      // operand next to a blocked src0 falls back to the slow reference implementation.
      src1 = get(b);
    } else {
      Shape bs = shape(b);
      if (bs.size() > ys.size()) unsupported(n, "operand rank exceeds the output rank");
      while (bs.size() < ys.size()) bs.insert(bs.begin(), 1);
      memory p = plain(b);
      src1 = memory(plain_md(bs), im_.engine, p.get_data_handle());
      im_.owned.push_back(p);
      no_overwrite_.insert(b);
    }
    const algorithm alg = n.op == "Add"   ? algorithm::binary_add
                          : n.op == "Mul" ? algorithm::binary_mul
                          : n.op == "Sub" ? algorithm::binary_sub
                                          : algorithm::binary_div;
    std::vector<PostOp> ops = collect_post_ops(n.outputs[0], false);
    auto pd = create_with_post_ops<dnnl::binary::primitive_desc>(
        n, ops, [&](const dnnl::primitive_attr& attr) {
          dnnl::binary::desc d(alg, src0.get_desc(), src1.get_desc(), src0.get_desc());
          return dnnl::binary::primitive_desc(d, attr, im_.engine);
        });
    const std::string out_name = finish_chain(n.outputs[0], ops);
    memory dst(pd.dst_desc(), im_.engine);
    add_step(dnnl::binary(pd),
             {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}},
             "binary " + n.name + chain_names(g_, ops) + impl_of(pd));
    vals_[out_name] = dst;
  }

  void lower_concat(const Node& n) {
    const int rank = static_cast<int>(shape(n.outputs[0]).size());
    int64_t axis = n.attr_int("axis", 1);
    if (axis < 0) axis += rank;
    std::vector<memory::desc> mds;
    std::vector<memory> srcs;
    for (const std::string& v : n.inputs) {
      srcs.push_back(get(v));
      mds.push_back(srcs.back().get_desc());
    }
    dnnl::concat::primitive_desc pd(static_cast<int>(axis), mds, im_.engine);
    memory dst(pd.dst_desc(), im_.engine);
    std::unordered_map<int, memory> args = {{DNNL_ARG_DST, dst}};
    for (size_t k = 0; k < srcs.size(); ++k)
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k)] = srcs[k];
    add_step(dnnl::concat(pd), std::move(args), "concat " + n.name + impl_of(pd));
    vals_[n.outputs[0]] = dst;
  }

  void lower_softmax(const Node& n) {
    const int rank = static_cast<int>(shape(n.inputs[0]).size());
    int64_t axis = n.attr_int("axis", -1);
    if (axis < 0) axis += rank;
    memory src = plain(n.inputs[0]);
    dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, src.get_desc(),
                                  static_cast<int>(axis));
    dnnl::softmax_forward::primitive_desc pd(d, im_.engine);
    memory dst(pd.dst_desc(), im_.engine);
    add_step(dnnl::softmax_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
             "softmax " + n.name + impl_of(pd));
    vals_[n.outputs[0]] = dst;
  }

  const Graph& g_;
  OnednnExecutor::Impl& im_;
  std::unordered_map<std::string, std::vector<size_t>> consumers_;
  std::unordered_set<std::string> graph_outputs_;
  std::vector<bool> done_;
  std::unordered_map<std::string, memory> vals_;
  std::unordered_map<std::string, std::vector<memory>> alternates_;
  // Values whose buffer must never be a sum post-op's in-place destination: graph inputs,
  // constants and buffers shared by views.
  std::unordered_set<std::string> no_overwrite_;
};

}  // namespace

OnednnExecutor::OnednnExecutor(const Graph& graph, int threads) : impl_(std::make_unique<Impl>()) {
  DLAS_CHECK(threads >= 1, ErrorKind::kInvalidInput, "oneDNN backend: threads must be >= 1, got ",
             threads);
  impl_->threads = threads;
  impl_->graph = graph;
  OmpThreads scope(threads);
  try {
    Lowering(graph, *impl_).run();
  } catch (const dnnl::error& e) {
    fail(ErrorKind::kUnsupported, "oneDNN backend: ", e.what());
  }
}

OnednnExecutor::~OnednnExecutor() = default;
OnednnExecutor::OnednnExecutor(OnednnExecutor&&) noexcept = default;
OnednnExecutor& OnednnExecutor::operator=(OnednnExecutor&&) noexcept = default;

int OnednnExecutor::threads() const { return impl_->threads; }

std::vector<std::string> OnednnExecutor::describe() const {
  std::vector<std::string> v;
  for (const Step& s : impl_->steps) v.push_back(s.what);
  return v;
}

const Graph& OnednnExecutor::graph() const { return impl_->graph; }

MemoryReport OnednnExecutor::memory() const { return graph_weight_memory(impl_->graph); }

void OnednnExecutor::run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  Impl& im = *impl_;
  DLAS_CHECK(inputs.size() == im.input_mems.size(), ErrorKind::kInvalidInput,
             "oneDNN backend: expected ", im.input_mems.size(), " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    DLAS_CHECK(t.defined() && t.dtype() == DType::kF32 && t.shape() == im.input_shapes[i],
               ErrorKind::kInvalidInput, "input '", im.input_names[i], "': expected f32",
               shape_str(im.input_shapes[i]), ", got ", t.defined() ? t.describe() : "nothing");
    std::memcpy(im.input_mems[i].get_data_handle(), t.raw(), t.nbytes());
  }
  DLAS_CHECK(outputs.size() == im.output_mems.size(), ErrorKind::kInternal,
             "oneDNN backend: expected ", im.output_mems.size(), " outputs, got ", outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    DLAS_CHECK(outputs[i].defined() && outputs[i].dtype() == DType::kF32 &&
                   outputs[i].shape() == im.output_shapes[i],
               ErrorKind::kInternal, "oneDNN backend: output ", i, " must be f32",
               shape_str(im.output_shapes[i]));
  {
    OmpThreads scope(im.threads);
    for (Step& s : im.steps) s.primitive.execute(im.stream, s.args);
    im.stream.wait();
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    std::memcpy(outputs[i].raw(), im.output_mems[i].get_data_handle(), outputs[i].nbytes());
}

}  // namespace dlas
