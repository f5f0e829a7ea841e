// Any op with a reference kernel: the fallback step, run on views of the arena.
#include <cstring>

#include "dlas/core/error.h"
#include "dlas/system/reference.h"
#include "system/plan/steps.h"

namespace dlas::plan {
namespace {

class ReferenceStep : public Step {
 public:
  ReferenceStep(const Graph& g, const Node& n, reference::KernelFn fn) : node_(n), fn_(fn) {
    for (const std::string& in : n.inputs)
      in_info_.push_back(in.empty() ? ValueInfo{} : g.value(in));
    for (const std::string& out : n.outputs)
      out_info_.push_back(out.empty() ? ValueInfo{} : g.value(out));
  }
  void bind(const Binder& b) override {
    inputs_.clear();
    outputs_.clear();
    for (const ValueInfo& v : in_info_)
      inputs_.push_back(v.name.empty() ? Tensor()
                                       : Tensor::view(v.dtype, v.shape, b.value(v.name)));
    for (const ValueInfo& v : out_info_)
      outputs_.push_back(v.name.empty() ? Tensor()
                                        : Tensor::view(v.dtype, v.shape, b.value(v.name)));
  }
  void run(ThreadPool&) override {
    // Reference kernels expect zero-filled outputs; arena slots are reused.
    for (Tensor& t : outputs_)
      if (t.defined()) std::memset(t.raw(), 0, t.nbytes());
    fn_(node_, inputs_, outputs_);
  }
  std::string kernel() const override { return "reference"; }

 private:
  Node node_;
  reference::KernelFn fn_;
  std::vector<ValueInfo> in_info_, out_info_;
  std::vector<Tensor> inputs_, outputs_;
};

}  // namespace

std::unique_ptr<Step> lower_reference(const LowerContext& ctx) {
  const reference::KernelFn fn = reference::find_kernel(ctx.node.op);
  DLAS_CHECK(fn != nullptr, ErrorKind::kUnsupported, ctx.node.label(), ": no kernel for op ",
             ctx.node.op);
  return std::make_unique<ReferenceStep>(ctx.graph, ctx.node, fn);
}

}  // namespace dlas::plan
