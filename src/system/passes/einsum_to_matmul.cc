// An Einsum of two operands that is a batched matrix product -- every letter either kept by
// both operands and the output (a batch), or by one operand and the output (the one row
// letter of the first, the one column letter of the second), or by both operands alone
// (the one reduction letter) -- becomes Transposes to [batch..., M, K] and [batch..., K, N],
// a MatMul, and a Transpose to the output's order where it differs: MaxViT's attention
// ("BGHID,BGHJD->BGHIJ", "BGHIJ,BGHJD->BGHID") then runs on the batched GEMM instead of the
// reference interpreter's loops.
#include <algorithm>

#include "dlas/model/shape_math.h"
#include "dlas/system/passes.h"

namespace dlas {
namespace {

// The permutation that takes subscripts `from` to `to` (same letters).
std::vector<int64_t> perm_of(const std::string& from, const std::string& to) {
  std::vector<int64_t> p;
  for (char c : to) p.push_back(static_cast<int64_t>(from.find(c)));
  return p;
}

bool is_identity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

}  // namespace

int einsum_to_matmul(Graph& graph) {
  std::vector<Node> out;
  int rewritten = 0;
  for (Node& n : graph.nodes) {
    if (n.op != "Einsum" || n.inputs.size() != 2 || n.outputs.size() != 1 ||
        !graph.has_value(n.inputs[0]) || !graph.has_value(n.inputs[1])) {
      out.push_back(std::move(n));
      continue;
    }
    const shape_math::EinsumSpec s = shape_math::parse_einsum(
        n, {graph.value(n.inputs[0]).shape, graph.value(n.inputs[1]).shape});
    const std::string &a = s.inputs[0], &b = s.inputs[1], &y = s.output;
    std::string batch, m, k, nn;
    bool ok = true;
    for (const auto& [c, d] : s.sizes) {
      const bool in_a = a.find(c) != std::string::npos, in_b = b.find(c) != std::string::npos,
                 in_y = y.find(c) != std::string::npos;
      if (in_a && in_b && in_y)
        continue;  // a batch letter: taken in the output's order below
      else if (in_a && !in_b && in_y)
        m += c;
      else if (!in_a && in_b && in_y)
        nn += c;
      else if (in_a && in_b && !in_y)
        k += c;
      else
        ok = false;  // summed within one operand
    }
    for (char c : y)
      if (a.find(c) != std::string::npos && b.find(c) != std::string::npos) batch += c;
    if (!ok || m.size() != 1 || nn.size() != 1 || k.size() != 1) {
      out.push_back(std::move(n));
      continue;
    }
    const std::string base = n.name.empty() ? n.outputs[0] : n.name;
    auto transposed = [&](const std::string& value, const std::string& from, const std::string& to,
                          const char* tag) {
      const std::vector<int64_t> p = perm_of(from, to);
      if (is_identity(p)) return value;
      Node t{base + "/" + tag, "Transpose", {value}, {base + "/" + tag + "_out"}, {}};
      t.attrs["perm"] = p;
      out.push_back(t);
      return t.outputs[0];
    };
    const std::string a2 = transposed(n.inputs[0], a, batch + m + k, "a");
    const std::string b2 = transposed(n.inputs[1], b, batch + k + nn, "b");
    const std::string product = batch + m + nn;
    const std::vector<int64_t> back = perm_of(product, y);
    const std::string mm_out = is_identity(back) ? n.outputs[0] : base + "/matmul_out";
    out.push_back(Node{base + "/matmul", "MatMul", {a2, b2}, {mm_out}, {}});
    if (!is_identity(back)) {
      Node t{base + "/y", "Transpose", {mm_out}, {n.outputs[0]}, {}};
      t.attrs["perm"] = back;
      out.push_back(t);
    }
    ++rewritten;
  }
  graph.nodes = std::move(out);
  if (rewritten) graph.infer();
  return rewritten;
}

}  // namespace dlas
