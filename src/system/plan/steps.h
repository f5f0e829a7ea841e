// Plan steps: what one graph node lowers to. A lowering is tried per node in the
// order of the list in plan.cc; the reference lowering is last and takes any op
// with a reference kernel. Steps are built in two phases: lowered (algorithms
// chosen, weights packed, workspace sized) before memory planning, then bound
// to fixed arena addresses.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/eltwise.h"
#include "dlas/algo/knobs.h"
#include "dlas/algo/layout.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/model/graph.h"
#include "dlas/system/plan.h"

namespace dlas::plan {

struct Binder {
  std::function<void*(const std::string&)> value;  // address of a value (arena or initializer)
  void* workspace = nullptr;                       // shared scratch, 64-byte aligned
};

class Step {
 public:
  virtual ~Step() = default;
  virtual void bind(const Binder& b) = 0;
  virtual void run(ThreadPool& pool) = 0;
  virtual size_t workspace_bytes(int threads) const { return 0; }
  virtual size_t packed_bytes() const { return 0; }
  virtual std::string kernel() const = 0;  // algorithm name, "fast" or "reference"
  virtual std::string knobs() const { return {}; }
  // The arithmetic it runs (StepInfo::compute).
  virtual std::string compute() const { return "f32"; }
};

// One prepared convolution of any element type (dlas/algo/conv.h). Inputs: x = node input 0,
// the residual = input 3 when present; output 0. `label` is what profile shows as the
// kernel.
class PreparedConvStep : public Step {
 public:
  PreparedConvStep(const Node& n, std::string label, Knobs knobs,
                   std::unique_ptr<PreparedConv> prepared)
      : x_name_(n.inputs[0]),
        y_name_(n.outputs[0]),
        r_name_(n.inputs.size() > 3 ? n.inputs[3] : std::string()),
        label_(std::move(label)),
        knobs_(std::move(knobs)),
        prepared_(std::move(prepared)) {}
  void bind(const Binder& b) override {
    x_ = b.value(x_name_);
    y_ = b.value(y_name_);
    r_ = r_name_.empty() ? nullptr : b.value(r_name_);
    ws_ = b.workspace;
  }
  void run(ThreadPool& pool) override { prepared_->run(x_, y_, r_, ws_, pool); }
  size_t workspace_bytes(int threads) const override { return prepared_->workspace_bytes(threads); }
  size_t packed_bytes() const override { return prepared_->packed_bytes(); }
  std::string kernel() const override { return label_; }
  std::string knobs() const override { return knobs_to_string(knobs_); }
  std::string compute() const override { return conv_compute_name(prepared_->compute()); }

 private:
  std::string x_name_, y_name_, r_name_, label_;
  Knobs knobs_;
  std::unique_ptr<PreparedConv> prepared_;
  const void* x_ = nullptr;
  void* y_ = nullptr;
  const void* r_ = nullptr;
  void* ws_ = nullptr;
};

struct LowerContext {
  const Graph& graph;
  const Node& node;  // inputs renamed to the copies the layout pass made for it
  const PlanOptions& options;
  Isa isa;
  int threads;
  Layout x_layout = Layout::kNchw;  // of input 0
  Layout y_layout = Layout::kNchw;  // the node's: its outputs and its other activation inputs
};

// The layout pass (layout_pass.cc): which layout every value is written in, and the reorders
// the plan runs so that each node reads its inputs in the layout it runs in. Only where a
// value's layout differs from what a consumer needs is a copy made, once per (value,
// layout), before its first such consumer.
struct LayoutPlan {
  struct Reorder {
    std::string from, to;  // value names: the original and its copy ("<value>@<layout>")
    Layout from_layout, to_layout;
  };
  std::vector<Node> nodes;                         // the graph's, inputs renamed to their copies
  std::vector<Layout> node_layout;                 // per node: the layout its outputs are in
  std::vector<std::vector<Reorder>> before;        // per node (and one more: after the last)
  std::vector<std::string> outputs;                // graph outputs, NCHW (copies where needed)
  std::unordered_map<std::string, Layout> layout;  // blocked values (absent: NCHW)

  Layout of(const std::string& value) const {
    auto it = layout.find(value);
    return it == layout.end() ? Layout::kNchw : it->second;
  }
};
// Adds each copy's ValueInfo (the original's logical shape and type) to `graph`.
LayoutPlan plan_layouts(Graph& graph, const PlanOptions& options, Isa isa);

// One reorder the layout pass inserted: a value copied into another layout.
class ReorderStep : public Step {
 public:
  ReorderStep(const Graph& g, const LayoutPlan::Reorder& r) : r_(r) {
    const Shape& s = g.value(r.from).shape;
    n_ = s.size() > 0 ? s[0] : 1;
    c_ = s.size() > 1 ? s[1] : 1;
    hw_ = 1;
    for (size_t i = 2; i < s.size(); ++i) hw_ *= s[i];
    bytes_ = dtype_size(g.value(r.from).dtype);  // 4: f32, 2: f16 / bf16, 1: u8 / s8
  }
  void bind(const Binder& b) override {
    x_ = b.value(r_.from);
    y_ = b.value(r_.to);
  }
  void run(ThreadPool& pool) override {
    if (bytes_ == 2)
      reorder(static_cast<const uint16_t*>(x_), r_.from_layout, static_cast<uint16_t*>(y_),
              r_.to_layout, n_, c_, hw_, pool);
    else if (bytes_ == 1)
      reorder(static_cast<const uint8_t*>(x_), r_.from_layout, static_cast<uint8_t*>(y_),
              r_.to_layout, n_, c_, hw_, pool);
    else
      reorder(static_cast<const float*>(x_), r_.from_layout, static_cast<float*>(y_), r_.to_layout,
              n_, c_, hw_, pool);
  }
  std::string kernel() const override { return "fast"; }

 private:
  LayoutPlan::Reorder r_;
  int64_t n_ = 1, c_ = 1, hw_ = 1;
  size_t bytes_ = 4;
  const void* x_ = nullptr;
  void* y_ = nullptr;
};

// Bytes of value `name` in layout l: blocked layouts round dimension 1 (channels) up to the
// block.
size_t value_bytes(const Graph& g, const std::string& name, Layout l);

// Each returns nullptr when it does not handle the node.
std::unique_ptr<Step> lower_conv(const LowerContext& ctx);      // f32, int8 and 16-bit convs
std::unique_ptr<Step> lower_quantize(const LowerContext& ctx);  // Q / DQ per tensor, QLookup
// Whether lower_quantize runs node n on its elementwise steps with its input in layout l
// (per-tensor Q / DQ, QLookup, and QChannelScale on a [N,C,1,1] gate): the 8-bit ops that
// can follow a blocked input.
bool quantize_lowers_blocked(const Graph& g, const Node& n, const PlanOptions& o, Isa isa,
                             Layout l);
std::unique_ptr<Step> lower_fc(const LowerContext& ctx);
std::unique_ptr<Step> lower_batchnorm(const LowerContext& ctx);  // + LayerNormalization
std::unique_ptr<Step> lower_activation(const LowerContext& ctx);
// The Epilogue of activation node n (Relu, Sigmoid, HardSwish, Erf, HardSigmoid, Clip with
// constant scalar bounds of any float type); false for any other node.
bool activation_epilogue(const Graph& g, const Node& n, Epilogue& e);
std::unique_ptr<Step> lower_binary(const LowerContext& ctx);
std::unique_ptr<Step> lower_pool(const LowerContext& ctx);
// Whether lower_pool runs node n as f32 MaxPool / AveragePool / GlobalAveragePool (2-D,
// explicit pads): exactly the pools that can run on a blocked layout.
bool pool_lowers_f32(const Graph& g, const Node& n);
// ... or, on blocked layout l, a 16-bit GlobalAveragePool (nchw16c: the 16-bit blocks): the
// pools the layout pass runs blocked.
bool pool_lowers_blocked(const Graph& g, const Node& n, Layout l);
std::unique_ptr<Step> lower_concat(const LowerContext& ctx);  // channel Concat, any layout
std::unique_ptr<Step> lower_copy(const LowerContext& ctx);
// The ops whose output is their first input's bytes (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity, Dropout at inference): lower_copy's; the plan lets an NCHW one's output share
// its input's buffer.
bool is_view_op(const std::string& op);
// Data movement on NCHW values of any type (lower_movement.cc): box copies.
std::unique_ptr<Step> lower_transpose(const LowerContext& ctx);
// Whether Transpose node n (perm 0,2,3,1 of a 4-D value blocked layout l can hold) reads its
// input in l and writes channels-last rows: the layout pass keeps its input blocked.
bool transpose_reads_blocked(const Graph& g, const Node& n, Layout l);
// Whether Transpose node n (perm 0,3,1,2 of a 4-D channels-last value of a type layout l can
// hold) writes its output in l: the layout pass makes that output blocked.
bool transpose_writes_blocked(const Graph& g, const Node& n, Layout l);
std::unique_ptr<Step> lower_slice(const LowerContext& ctx);
std::unique_ptr<Step> lower_pad(const LowerContext& ctx);
// 16-bit floats (lower_h16.cc): Cast to and from f32; any other op on a 16-bit tensor run on
// its f32 step over widened copies ("<kernel>[widened]").
// The BinaryOp of an ONNX op name (Add, Sub, Mul, Div), or nullptr.
const BinaryOp* binary_op_of(const std::string& op);
std::unique_ptr<Step> lower_cast(const LowerContext& ctx);
std::unique_ptr<Step> lower_h16_binary(const LowerContext& ctx);
std::unique_ptr<Step> lower_h16_unary(const LowerContext& ctx);
std::unique_ptr<Step> lower_widened(const LowerContext& ctx);
// The native lowerings of plan.cc's list (all before lower_widened), in order.
std::unique_ptr<Step> lower_native(const LowerContext& ctx);
std::unique_ptr<Step> lower_reference(const LowerContext& ctx);  // throws kUnsupported

// True when value `name` is f32 (fast steps handle f32 only).
inline bool is_f32(const Graph& g, const std::string& name) {
  return g.value(name).dtype == DType::kF32;
}

}  // namespace dlas::plan
