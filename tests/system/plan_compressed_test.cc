// Compressed zoo models stay on the fast path: every zoo model in int8, fp16 and bf16
// compiles with no step on a reference kernel (the guard against a quantized variant
// falling off a cliff), the 16-bit plans -- 16-bit convs plus the ops that run their f32
// step on widened copies, in NCHW and on 16-bit channel blocks -- agree with the reference
// runtime on the same 16-bit graph, and the int8 plans on 8-bit blocks equal the NCHW plan
// bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "dlas/algo/fully_connected.h"
#include "dlas/algo/qconv.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/compress_spec.h"
#include "dlas/system/compress.h"
#include "dlas/system/executor.h"
#include "dlas/system/plan.h"
#include "system/plan_test_util.h"

namespace dlas {
namespace {

// Every zoo model's layer pattern at a fraction of the cost: quarter width, small images.
Graph tiny_zoo_model(const std::string& name) {
  ZooOptions o;
  o.width_mult = 0.25;
  o.image_size = 32;
  return build_zoo_model(name, o);
}

std::string reference_steps(const Plan& plan) {
  std::string out;
  for (const StepInfo& s : plan.steps())
    if (s.kernel == "reference") out += " " + s.node + " (" + s.op + ")";
  return out;
}

class CompressedZoo : public ::testing::TestWithParam<std::string> {};

// The plan of a 16-bit graph against the reference runtime on the same graph. Both round
// every stored activation to the 16-bit type, but they sum in different orders, so a value
// near a rounding boundary can round apart and the difference propagates: allow a few units
// in the last place of the type, growing as the square root of the depth (independent
// roundings), relative to the output scale -- and never below two of the type's smallest
// subnormal steps (`tiny`): outputs that underflow to subnormals round on that absolute grid.
void expect_half_plan_matches(const Graph& g, Plan& plan, double ulp, double tiny,
                              const std::string& what) {
  const auto in = seeded_inputs(g);
  const auto want = ReferenceExecutor(g).run(in);
  const auto got = plan.run(in);
  ASSERT_EQ(got.size(), want.size());
  int64_t layers = 0;
  for (const Node& n : g.nodes) layers += n.op == "Conv" || n.op == "Gemm";
  for (size_t i = 0; i < got.size(); ++i) {
    double scale = 0, worst = 0;
    for (int64_t j = 0; j < want[i].numel(); ++j) {
      scale = std::max(scale, std::fabs(want[i].get_as_double(j)));
      worst = std::max(worst, std::fabs(got[i].get_as_double(j) - want[i].get_as_double(j)));
    }
    EXPECT_LE(worst, std::max(4 * ulp * std::sqrt(static_cast<double>(layers)) * scale, 2 * tiny))
        << what << " output " << i << " (scale " << scale << ")";
  }
}

// int8 plans: every output element equal to the NCHW plan's.
void expect_same_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                         const std::string& label) {
  ASSERT_EQ(got.size(), want.size()) << label;
  for (size_t i = 0; i < got.size(); ++i)
    for (int64_t j = 0; j < got[i].numel(); ++j)
      ASSERT_EQ(got[i].get_as_double(j), want[i].get_as_double(j))
          << label << " output " << i << " element " << j << " differs from the NCHW plan";
}

TEST_P(CompressedZoo, NoReferenceStepAndHalfPlansMatchTheReference) {
  for (const char* spec : {"int8", "fp16", "bf16"}) {
    const std::string what = GetParam() + " " + spec;
    Graph g = tiny_zoo_model(GetParam());
    QuantSpec qs = parse_quant_spec(spec);
    qs.calib_samples = 2;
    quantize(g, qs);
    // int8 is exact on every path and layout: the NCHW plan is the yardstick of the others.
    std::vector<Tensor> nchw_out;
    const auto in = seeded_inputs(g);
    if (qs.type == QuantType::kInt8) {
      PlanOptions o;
      o.threads = 2;
      o.layout = LayoutMode::kNchw;
      nchw_out = Plan(g, o).run(in);
    }
    // auto, and every layer that has a blocked 16-bit or int8 kernel on blocks (nchwc: the
    // layout pass keeps 16-bit and int8 activations in nchw16c on AVX-512 paths).
    for (LayoutMode m : {LayoutMode::kAuto, LayoutMode::kNchwc}) {
      PlanOptions o;
      o.threads = 2;
      o.layout = m;
      Plan plan(g, o);
      const std::string label = what + " " + layout_mode_name(m);
      EXPECT_EQ(reference_steps(plan), "") << label;
      // (int8 only where the path has the blocked int8 kernels: AVX512-VNNI and above here;
      // the AVX2 path's nchw8c ones in the test below.)
      if (m == LayoutMode::kNchwc && native_blocked_layout(plan.isa()) == Layout::kNchw16c &&
          (qs.type != QuantType::kInt8 || int8_blocks_native(plan.isa()))) {
        int blocked_convs = 0;
        for (const StepInfo& s : plan.steps())
          blocked_convs += s.layout == Layout::kNchw16c && s.op.find("Conv") != std::string::npos;
        EXPECT_GT(blocked_convs, 0) << label;
      }
      if (qs.type == QuantType::kInt8) expect_same_outputs(plan.run(in), nchw_out, label);
      if (qs.type == QuantType::kF16)
        expect_half_plan_matches(g, plan, 1.0 / 1024, std::ldexp(1.0, -24), label);
      if (qs.type == QuantType::kBF16)
        expect_half_plan_matches(g, plan, 1.0 / 128, std::ldexp(1.0, -133), label);
    }
  }
}

// The AVX2 path keeps int8 activations in nchw8c bytes (the vpmaddwd tiles and the
// channels-as-lanes depthwise on blocks): under auto and nchwc its plans block int8 convs and
// equal the NCHW plan of the same path exactly.
TEST_P(CompressedZoo, Int8OnAvx2BlocksEqualsTheNchwPlan) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "avx2 not supported here";
  Graph g = tiny_zoo_model(GetParam());
  QuantSpec qs = parse_quant_spec("int8");
  qs.calib_samples = 2;
  quantize(g, qs);
  const auto in = seeded_inputs(g);
  PlanOptions o;
  o.threads = 2;
  o.isa = Isa::kAvx2;
  o.profile = "none";
  o.layout = LayoutMode::kNchw;
  const std::vector<Tensor> want = Plan(g, o).run(in);
  for (LayoutMode m : {LayoutMode::kAuto, LayoutMode::kNchwc}) {
    o.layout = m;
    Plan plan(g, o);
    const std::string label = GetParam() + " " + layout_mode_name(m);
    EXPECT_EQ(reference_steps(plan), "") << label;
    int blocked_convs = 0;
    for (const StepInfo& s : plan.steps())
      blocked_convs += s.layout == Layout::kNchw8c && s.op == "QFusedConv";
    EXPECT_GT(blocked_convs, 0) << label;
    expect_same_outputs(plan.run(in), want, label);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, CompressedZoo, zoo_model_params(), zoo_param_name);

// Binary ops on two 16-bit activations run natively (streamed through f32 chunks, not the
// widened step): the squeeze-and-excitation scale in both operand orders, same-shape ops,
// planes longer than a chunk (2048) and shorter -- bit for bit what the reference runtime
// computes (the f32 op on the widened values, rounded once).
TEST(HalfBinary, NativeStepsMatchTheReferenceBitForBit) {
  for (DType t : {DType::kBF16, DType::kF16})
    for (int64_t hw : {7, 50}) {  // 49 and 2500 pixels a plane
      Graph g;
      g.inputs.push_back({"xf", DType::kF32, {2, 5, hw, hw}});
      g.inputs.push_back({"sf", DType::kF32, {2, 5, 1, 1}});
      g.inputs.push_back({"zf", DType::kF32, {2, 5, hw, hw}});
      const int64_t to = t == DType::kBF16 ? 16 : 10;  // ONNX TensorProto types
      for (const char* v : {"x", "s", "z"}) {
        Node cast{std::string("cast_") + v, "Cast", {std::string(v) + "f"}, {v}, {}};
        cast.attrs["to"] = to;
        g.nodes.push_back(cast);
      }
      g.nodes.push_back({"m1", "Mul", {"x", "s"}, {"a"}, {}});
      g.nodes.push_back({"m2", "Sub", {"s", "a"}, {"b"}, {}});
      g.nodes.push_back({"m3", "Div", {"b", "s"}, {"c"}, {}});
      g.nodes.push_back({"m4", "Add", {"c", "z"}, {"d"}, {}});
      g.nodes.push_back({"m5", "Mul", {"d", "x"}, {"yh"}, {}});
      Node back{"cast_y", "Cast", {"yh"}, {"y"}, {}};
      back.attrs["to"] = int64_t{1};
      g.nodes.push_back(back);
      g.outputs = {"y"};
      g.infer();
      PlanOptions o;
      o.threads = 2;
      Plan plan(g, o);
      int native = 0;
      for (const StepInfo& s : plan.steps()) native += s.op != "Cast" && s.kernel == "fast";
      EXPECT_EQ(native, 5) << dtype_name(t);
      const auto in = seeded_inputs(g);
      const auto want = ReferenceExecutor(g).run(in);
      const auto got = plan.run(in);
      ASSERT_EQ(got.size(), 1u);
      int64_t bad = 0;
      for (int64_t j = 0; j < want[0].numel(); ++j) {
        const double w = want[0].get_as_double(j), v = got[0].get_as_double(j);
        bad += !(w == v || (std::isnan(w) && std::isnan(v)));
      }
      EXPECT_EQ(bad, 0) << dtype_name(t) << " " << hw << "x" << hw;
    }
}

// The other 16-bit elementwise ops of unseen models run natively too (not on widened
// copies): a constant vector along the trailing axis (a channels-last bias) and a constant
// scalar, either side; a per-row value of the leading axes (a channels-last LayerNorm's mean
// and deviation); Relu and Clip (bounds stored in the 16-bit type) -- all bit for bit the
// reference's, the f32 op rounded once; and Sigmoid within one unit in the last place of
// the type (the vector exp against the reference's).
TEST(HalfBinary, ConstantsRowValuesAndActivationsRunNatively) {
  for (DType t : {DType::kBF16, DType::kF16}) {
    const int64_t to = t == DType::kBF16 ? 16 : 10;
    Graph g;
    g.inputs.push_back({"xf", DType::kF32, {2, 5, 6, 40}});
    g.inputs.push_back({"sf", DType::kF32, {2, 5, 6, 1}});
    for (const char* v : {"x", "s"}) {
      Node cast{std::string("cast_") + v, "Cast", {std::string(v) + "f"}, {v}, {}};
      cast.attrs["to"] = to;
      g.nodes.push_back(cast);
    }
    std::vector<float> bias(40);
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i) - 2.f;
    g.initializers.emplace("bias", Tensor::from_vector<float>({40}, bias).cast(t));
    g.initializers.emplace("half", Tensor::scalar_f32(0.5f).cast(t));
    g.initializers.emplace("lo", Tensor::scalar_f32(-0.75f).cast(t));
    g.initializers.emplace("hi", Tensor::scalar_f32(1.25f).cast(t));
    g.nodes.push_back({"m1", "Add", {"x", "bias"}, {"a"}, {}});
    g.nodes.push_back({"m2", "Mul", {"half", "a"}, {"b"}, {}});
    g.nodes.push_back({"m3", "Sub", {"b", "s"}, {"c"}, {}});
    g.nodes.push_back({"m4", "Relu", {"s"}, {"r"}, {}});
    g.nodes.push_back({"m5", "Add", {"r", "half"}, {"d"}, {}});
    g.nodes.push_back({"m6", "Div", {"c", "d"}, {"e"}, {}});
    g.nodes.push_back({"m7", "Clip", {"e", "lo", "hi"}, {"f"}, {}});
    g.nodes.push_back({"m8", "Sigmoid", {"e"}, {"sg"}, {}});
    for (const char* v : {"f", "sg"}) {
      Node back{std::string("back_") + v, "Cast", {v}, {std::string(v) + "32"}, {}};
      back.attrs["to"] = int64_t{1};
      g.nodes.push_back(back);
    }
    g.outputs = {"f32", "sg32"};
    g.infer();
    PlanOptions o;
    o.threads = 2;
    Plan plan(g, o);
    for (const StepInfo& st : plan.steps())
      if (st.op != "Cast") EXPECT_EQ(st.kernel, "fast") << dtype_name(t) << " " << st.node;
    const auto in = seeded_inputs(g);
    const auto want = ReferenceExecutor(g).run(in);
    const auto got = plan.run(in);
    ASSERT_EQ(got.size(), 2u);
    const double ulp = t == DType::kBF16 ? 1.0 / 128 : 1.0 / 1024;
    int64_t bad = 0, far = 0;
    for (int64_t j = 0; j < want[0].numel(); ++j) {
      bad += want[0].get_as_double(j) != got[0].get_as_double(j);
      const double w = want[1].get_as_double(j), v = got[1].get_as_double(j);
      far += std::fabs(w - v) > ulp * std::fabs(w);
    }
    EXPECT_EQ(bad, 0) << dtype_name(t);
    EXPECT_EQ(far, 0) << dtype_name(t);
  }
}

// Linear layers in bf16 on the native bf16 GEMM tiles where the path has them: a MatMul of
// channels-last activations (rows not a multiple of the tile's, an odd reduction length,
// columns over several panels with a ragged last one) and a Gemm with transB and a bias --
// each output the f32 sum of the bf16 products rounded once, so within one bf16 unit of
// the reference's (which sums in another order) -- while a batch-1 classifier keeps the
// widened f32 kernels.
TEST(HalfFc, LinearLayersRunOnTheNativeBf16Tiles) {
  if (!PreparedFullyConnectedBf16::available(active_isa()))
    GTEST_SKIP() << "no bf16 dot products on this ISA path";
  std::mt19937 rng(3);
  struct Case {
    std::string what, op;
    Shape x, w;
    bool trans_b, bias;
    std::string kernel;
  };
  const Case cases[] = {
      {"MatMul channels-last", "MatMul", {1, 5, 7, 23}, {23, 70}, false, false, "fc[native-bf16]"},
      {"Gemm transB bias", "Gemm", {31, 64}, {40, 64}, true, true, "fc[native-bf16]"},
      {"batch-1 classifier", "Gemm", {1, 64}, {64, 10}, false, true, "fc[widened]"},
  };
  for (const Case& c : cases) {
    Graph g = linear_layer_graph(c.op, c.x, c.w, c.trans_b, c.bias, false, rng);
    quantize(g, parse_quant_spec("bf16"));
    PlanOptions o;
    o.threads = 2;
    Plan plan(g, o);
    for (const StepInfo& st : plan.steps())
      if (st.node == "fc") EXPECT_EQ(st.kernel, c.kernel) << c.what;
    const auto in = seeded_inputs(g);
    const Tensor want = ReferenceExecutor(g).run(in)[0], got = plan.run(in)[0];
    ASSERT_EQ(got.shape(), want.shape()) << c.what;
    // One bf16 unit of the value, plus the f32 sums' rounding against the output's scale
    // (sums near zero cancel).
    EXPECT_EQ(count_far(want, got, 1.0 / 128, 1e-5), 0) << c.what;
  }
}

// A squeeze-and-excitation block on 16-bit channel blocks: the global average of a blocked
// 16-bit activation and every binary op of it with its [N,C,1,1] gate, in both operand
// orders, run on the blocks (no reorder around them), on channels that are not whole blocks
// and planes longer and shorter than the binary step's chunk, within the 16-bit plan
// tolerance of the reference runtime on the same graph.
TEST(HalfBinary, SqueezeAndExcitationRunsOnSixteenBitBlocks) {
  if (native_blocked_layout(active_isa()) != Layout::kNchw16c)
    GTEST_SKIP() << "no 16-bit blocks on this ISA path";
  std::mt19937 rng(11);
  // Small weights keep the conv's outputs within a few units, so the Sigmoid's values (the
  // divisors of Div) stay well away from zero.
  std::normal_distribution<float> dist(0.f, 0.05f);
  for (const char* spec : {"bf16", "fp16"})
    for (int64_t hw : {9, 60})
      for (const char* op : {"Add", "Sub", "Mul", "Div"})
        for (bool gate_first : {false, true}) {
          const std::string what = std::string(spec) + " " + op + " " + std::to_string(hw) + "x" +
                                   std::to_string(hw) + (gate_first ? " gate first" : "");
          Graph g;
          g.inputs.push_back({"x", DType::kF32, {2, 20, hw, hw}});
          std::vector<float> w(40 * 20 * 9), b(40);
          for (float& v : w) v = dist(rng);
          for (float& v : b) v = dist(rng);
          g.initializers.emplace("w", Tensor::from_vector<float>({40, 20, 3, 3}, w));
          g.initializers.emplace("b", Tensor::from_vector<float>({40}, b));
          Node conv{"conv", "Conv", {"x", "w", "b"}, {"c"}, {}};
          conv.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
          g.nodes = {
              conv,
              {"act", "Sigmoid", {"c"}, {"a"}, {}},
              {"pool", "GlobalAveragePool", {"a"}, {"p"}, {}},
              {"gate", "Sigmoid", {"p"}, {"s"}, {}},
              {"scale",
               op,
               gate_first ? std::vector<std::string>{"s", "a"} : std::vector<std::string>{"a", "s"},
               {"y"},
               {}}};
          g.outputs = {"y"};
          g.infer();
          QuantSpec qs = parse_quant_spec(spec);
          quantize(g, qs);
          PlanOptions o;
          o.threads = 2;
          o.layout = LayoutMode::kNchwc;
          Plan plan(g, o);
          int reorders = 0;
          for (const StepInfo& st : plan.steps()) {
            reorders += st.op == "Reorder";
            if (st.node == "pool" || st.node == "scale") {
              EXPECT_EQ(st.layout, Layout::kNchw16c) << what << " " << st.node;
              EXPECT_EQ(st.kernel, "fast") << what << " " << st.node;
            }
          }
          EXPECT_EQ(reorders, 2) << what;  // the input into blocks, the output back
          if (qs.type == QuantType::kF16)
            expect_half_plan_matches(g, plan, 1.0 / 1024, std::ldexp(1.0, -24), what);
          else
            expect_half_plan_matches(g, plan, 1.0 / 128, std::ldexp(1.0, -133), what);
        }
}

}  // namespace
}  // namespace dlas
