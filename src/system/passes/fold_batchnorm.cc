#include <cmath>

#include "dlas/system/passes.h"
#include "system/passes/pass_util.h"

namespace dlas {

int fold_batchnorm(Graph& graph) {
  auto uses = passes::use_counts(graph);
  auto prod = passes::producers(graph);
  std::vector<bool> dead(graph.nodes.size(), false);
  int folded = 0;
  for (size_t bi = 0; bi < graph.nodes.size(); ++bi) {
    Node& bn = graph.nodes[bi];
    if (bn.op != "BatchNormalization" || bn.outputs.size() != 1) continue;
    auto it = prod.find(bn.inputs[0]);
    if (it == prod.end()) continue;
    Node& conv = graph.nodes[it->second];
    if (!passes::conv_without_epilogue(conv) || uses[conv.outputs[0]] != 1) continue;
    const Tensor* w = graph.constant(conv.inputs[1]);
    const Tensor* b = conv.inputs.size() > 2 && !conv.inputs[2].empty()
                          ? graph.constant(conv.inputs[2])
                          : nullptr;
    const Tensor *scale = graph.constant(bn.inputs[1]), *shift = graph.constant(bn.inputs[2]),
                 *mean = graph.constant(bn.inputs[3]), *var = graph.constant(bn.inputs[4]);
    if (!w || !scale || !shift || !mean || !var || w->dtype() != DType::kF32 ||
        scale->dtype() != DType::kF32 || (conv.inputs.size() > 2 && !conv.inputs[2].empty() && !b))
      continue;
    const double eps = bn.attr_float("epsilon", 1e-5f);
    const int64_t k = w->dim(0), per = w->numel() / k;
    Tensor nw = w->clone(), nb(DType::kF32, {k});
    float* wp = nw.data<float>();
    float* bp = nb.data<float>();
    for (int64_t o = 0; o < k; ++o) {
      const double s = scale->data<float>()[o] / std::sqrt(double(var->data<float>()[o]) + eps);
      for (int64_t i = 0; i < per; ++i) wp[o * per + i] = float(wp[o * per + i] * s);
      const double b0 = b ? b->data<float>()[o] : 0.0;
      bp[o] = float((b0 - mean->data<float>()[o]) * s + shift->data<float>()[o]);
    }
    const std::string wn = graph.unique_value_name(conv.name + ".weight_bn");
    graph.initializers[wn] = nw;
    const std::string bname = graph.unique_value_name(conv.name + ".bias_bn");
    graph.initializers[bname] = nb;
    conv.inputs[1] = wn;
    if (conv.inputs.size() < 3) conv.inputs.resize(3);
    conv.inputs[2] = bname;
    conv.outputs[0] = bn.outputs[0];
    dead[bi] = true;
    ++folded;
  }
  passes::erase_nodes(graph, dead);
  eliminate_dead_code(graph);  // drops the unfolded weights and BN statistics
  graph.infer();
  return folded;
}

}  // namespace dlas
