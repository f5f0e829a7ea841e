// The one list of convolution algorithms (conv_algorithms.inc, sparse_conv_algorithms.inc)
// and the documented `auto` rule, for every element type.
#include <algorithm>
#include <array>
#include <string>

#include "algo/conv/conv_impl.h"
#include "algo/conv/qs8_common.h"
#include "algo/conv/sparse_conv_common.h"
#include "algo/microkernels/h16-gemm/h16_gemm.h"
#include "dlas/algo/conv.h"
#include "dlas/core/error.h"

namespace dlas {

// The accessors the rows name, each defined in its implementation's file.
#define X(name, f32, int8, half, nchwc) \
  const ConvAlgorithm& f32();           \
  const ConvAlgorithm& int8();          \
  const ConvAlgorithm& half();          \
  const ConvAlgorithm& nchwc();
#include "algo/conv/conv_algorithms.inc"
#include "algo/conv/sparse_conv_algorithms.inc"
#undef X

namespace {

// A list row: one algorithm, dispatching to the implementation for the problem's types and
// layouts (blocked f32: the NCHWc implementation; blocked 16-bit and int8: the 16-bit and
// int8 ones).
class ConvAlgorithmRow final : public ConvAlgorithm {
 public:
  ConvAlgorithmRow(std::string_view name, std::array<const ConvAlgorithm*, kConvTypesCount> impls,
                   const ConvAlgorithm* nchwc)
      : name_(name), impls_(impls), nchwc_(nchwc) {}

  bool has_blocked() const { return nchwc_ != nullptr; }

  std::string_view name() const override { return name_; }
  bool supports(const ConvProblem& p) const override {
    const ConvAlgorithm* a = impl(p);
    return a && a->supports(p);
  }
  KnobSpace knob_space(const ConvProblem& p, Isa isa) const override {
    return checked(p).knob_space(p, isa);
  }
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    return checked(p).default_knobs(p, isa);
  }
  Knobs fit_class_knobs(const ConvProblem& p, Isa isa, Knobs knobs) const override {
    return checked(p).fit_class_knobs(p, isa, std::move(knobs));
  }
  std::vector<Knobs> survey_knobs(const ConvProblem& p, Isa isa, int extra) const override {
    return checked(p).survey_knobs(p, isa, extra);
  }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
    p.validate();
    return checked(p).prepare(p, w, knobs, isa);
  }

 private:
  const ConvAlgorithm* impl(const ConvProblem& p) const {
    // Blocked 16-bit and int8 problems go to the 16-bit and int8 implementations, which
    // take the layouts they have kernels for.
    if (p.is_blocked() && p.types() == ConvTypes::kF32) return nchwc_;
    return impls_[static_cast<size_t>(p.types())];
  }
  const ConvAlgorithm& checked(const ConvProblem& p) const {
    const ConvAlgorithm* a = impl(p);
    DLAS_CHECK(a != nullptr, ErrorKind::kUnsupported, "algorithm '", name_, "' has no ",
               conv_types_name(p.types()), p.is_blocked() ? " blocked-layout" : "",
               " implementation (", p.key(), ")");
    return *a;
  }

  std::string_view name_;
  std::array<const ConvAlgorithm*, kConvTypesCount> impls_;
  const ConvAlgorithm* nchwc_;
};

std::vector<const ConvAlgorithm*> make_list(std::initializer_list<ConvAlgorithmRow> rows) {
  static std::vector<std::unique_ptr<ConvAlgorithmRow>> storage;  // lives as long as the lists
  std::vector<const ConvAlgorithm*> list;
  for (const ConvAlgorithmRow& r : rows) {
    storage.push_back(std::make_unique<ConvAlgorithmRow>(r));
    list.push_back(storage.back().get());
  }
  return list;
}

}  // namespace

namespace {
// The sentinel a row names where the algorithm has no implementation for those types.
class NoConvImpl final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "none"; }
  bool supports(const ConvProblem&) const override { return false; }
  KnobSpace knob_space(const ConvProblem& p, Isa) const override { unsupported(p); }
  Knobs default_knobs(const ConvProblem& p, Isa) const override { unsupported(p); }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights&, const Knobs&,
                                        Isa) const override {
    unsupported(p);
  }

 private:
  [[noreturn]] static void unsupported(const ConvProblem& p) {
    fail(ErrorKind::kUnsupported, "no implementation for ", p.key());
  }
};
}  // namespace

std::vector<Knobs> ConvAlgorithm::survey_knobs(const ConvProblem& p, Isa isa, int extra) const {
  const KnobSpace space = knob_space(p, isa);
  std::vector<Knobs> out{default_knobs(p, isa)};
  const int64_t n = space.size();
  for (int i = 1; i <= extra && n > 1; ++i) {
    const int64_t at = std::min<int64_t>(n - 1, n * i / (extra + 1));
    Knobs k = space.point(at);
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(std::move(k));
  }
  return out;
}

const ConvAlgorithm& no_conv_impl() {
  static const NoConvImpl none;
  return none;
}

namespace {
const ConvAlgorithm* impl_of(const ConvAlgorithm& a) {
  return &a == &no_conv_impl() ? nullptr : &a;
}
}  // namespace

const std::vector<const ConvAlgorithm*>& conv_algorithms() {
  static const std::vector<const ConvAlgorithm*> list = make_list({
#define X(name, f32, int8, half, nchwc) \
  ConvAlgorithmRow(name, {impl_of(f32()), impl_of(int8()), impl_of(half())}, impl_of(nchwc())),
#include "algo/conv/conv_algorithms.inc"
#undef X
  });
  return list;
}

const std::vector<const ConvAlgorithm*>& sparse_conv_algorithms() {
  static const std::vector<const ConvAlgorithm*> list = make_list({
#define X(name, f32, int8, half, nchwc) \
  ConvAlgorithmRow(name, {impl_of(f32()), impl_of(int8()), impl_of(half())}, impl_of(nchwc())),
#include "algo/conv/sparse_conv_algorithms.inc"
#undef X
  });
  return list;
}

const ConvAlgorithm* find_conv_algorithm(std::string_view name) {
  for (const ConvAlgorithm* a : conv_algorithms())
    if (a->name() == name) return a;
  for (const ConvAlgorithm* a : sparse_conv_algorithms())
    if (a->name() == name) return a;
  return nullptr;
}

bool conv_algorithm_has_blocked(std::string_view name) {
  const auto* row = dynamic_cast<const ConvAlgorithmRow*>(find_conv_algorithm(name));
  return row != nullptr && row->has_blocked();
}

std::string conv_algorithm_names() {
  std::string s;
  for (const ConvAlgorithm* a : conv_algorithms()) {
    if (!s.empty()) s += '|';
    s += a->name();
  }
  return s;
}

namespace {

// The algorithm `name` when it supports p, else nullptr.
const ConvAlgorithm* pick(std::string_view name, const ConvProblem& p) {
  const ConvAlgorithm* a = find_conv_algorithm(name);
  return a && a->supports(p) ? a : nullptr;
}

// The f32 rule without the weights (conv.h), each choice falling through to the next when
// its algorithm does not support p. Also the 16-bit rule where the path widens to f32.
const ConvAlgorithm* dense_f32_choice(const ConvProblem& p) {
  const ConvAlgorithm* a = nullptr;
  if (p.is_depthwise()) a = pick("depthwise", p);
  // Winograd on 3x3 stride-1 layers from 14x14 outputs up; on 7x7..13x13 outputs only
  // when the pixel count leaves gemm's 16-pixel panels partly empty (7x7: 49 pixels).
  // Measured with dlas_bench_conv (docs/engine.md "Choosing an algorithm").
  const int64_t pixels = p.oh() * p.ow();
  const bool wino_size =
      (p.oh() >= 14 && p.ow() >= 14) || (p.oh() >= 7 && p.ow() >= 7 && pixels % 16 != 0);
  if (!a && p.kh == 3 && p.kw == 3 && p.stride_h == 1 && p.stride_w == 1 && p.groups == 1 &&
      p.c >= 16 && p.k >= 16 && wino_size)
    a = pick("winograd", p);
  // Stems (<= 4 input channels per group: RGB, grey) run direct: im2col there copies
  // KH*KW values per pixel for a reduction of only C*KH*KW rows, and direct was 1.0-2.6x
  // faster on every zoo stem at 1 and 2 threads (ResNet-50's 7x7: 2.7 vs 5.4 ms).
  if (!a && p.c_per_group() <= 4) a = pick("direct", p);
  return a;
}

// The sparse part of the f32 rule (conv.h): a sparse algorithm for pruned weights, or null.
const char* sparse_f32_choice(const ConvProblem& p, const float* weights) {
  if (weights == nullptr || p.groups != 1 || p.c_per_group() <= 4) return nullptr;
  const int64_t n = p.weight_count();
  int64_t nonzero = 0;
  for (int64_t i = 0; i < n; ++i) nonzero += weights[i] != 0.f;
  const double density = static_cast<double>(nonzero) / static_cast<double>(n);
  const bool one_by_one = p.kh == 1 && p.kw == 1;
  const bool plain_1x1 = one_by_one && p.stride_h == 1 && p.stride_w == 1 && p.pad_t == 0 &&
                         p.pad_l == 0 && p.pad_b == 0 && p.pad_r == 0;
  double max_density;
  if (one_by_one)
    max_density = plain_1x1 ? kSparse1x1MaxDensity : kSparse1x1StridedMaxDensity;
  else
    max_density = dense_f32_choice(p) == find_conv_algorithm("winograd")
                      ? kSparseDirectVsWinogradMaxDensity
                      : kSparseDirectMaxDensity;
  if (density > max_density) return nullptr;
  if (one_by_one) return "sparse-1x1";
  // Block-pruned weights (8x1 blocks along output channels >= 80% full: bp:8x1) on small
  // planes: sparse-spatial-pack, one weight vector per block and broadcast pixels.
  if (p.oh() * p.ow() <= kSparseSpatialMaxPixels &&
      conv_detail::sparse_block_for(0, p, weights) == SparseBlock{8, 1})
    return "sparse-spatial-pack";
  return "sparse-direct";
}

// Measured on AVX2 (Zen 3, 2 threads, dlas_bench_qconv; docs/engine.md "int8 kernels"): on
// KxK convs with >= 16 input channels per group the register-tiled algorithms beat gemm's
// im2col -- direct (image packed once) on stride-1 convs (equal to spatial-pack within
// noise on 4x4 and smaller maps, up to 1.2x ahead on 14x14 .. 56x56), spatial-pack (tiles
// packed in L1: no image columns skipped by the stride are packed) on strided ones; 1x1
// convs (gemm packs each pixel's channels once, the tiled layouts stream the image per
// tile), stems with few channels and grouped convs stay on gemm. On the amx path direct's
// AMX implicit GEMM takes every conv it covers (stride <= 2, >= 8 input channels, one
// group): on Sapphire Rapids it beat gemm's AMX tiles on every such layer of resnet18-cifar
// and resnet50, 1x1 included (1.3-7x, one thread), and on mobilenetv2's 16- and 24-channel
// 1x1 convs (1.7-1.8x). On the 16-lane paths off AMX, 1x1 convs on planes of at most 16
// pixels run spatial-pack too: gemm's lanes run over pixels, so a 4x4 plane fills half of
// its 32-pixel tile and a 2x2 one an eighth, while spatial-pack's run over output channels.
// Measured on a Zen 4 (avx512-vnni, 2 threads, mobilenetv1-cifar int8 in `dlas profile`):
// 1.6-1.9x on the 512-channel 4x4 convs, 2.3x on the 1024-channel 2x2 ones; gemm stays ahead
// from 8x8 up.
const ConvAlgorithm* int8_choice(const ConvProblem& p, Isa isa) {
  if (const ConvAlgorithm* a = pick("depthwise", p)) return a;
  // On blocks: direct's tiles (direct_nchwc_qs8.cc) take every conv they cover, but the
  // 3x3 stride-1 convs on the AVX2 path's 8-channel blocks with outputs of at least 4x4,
  // which run the exact int8 winograd (winograd_qs8.cc). Measured on the AVX2 path on a
  // Zen 4 (2 threads, `dlas profile MODEL --compress int8 --isa avx2 --conv-algo C`):
  // winograd took 0.55-0.87x of direct's time on every such layer of resnet18-cifar,
  // vgg16-cifar and resnet50 (4x4 to 56x56 outputs, 64 to 512 channels), and 1.8-1.9x on
  // vgg16-cifar's 2x2 ones (one tile, 16/9 x the weights to stream).
  if (p.is_blocked()) {
    if (p.kh == 3 && p.kw == 3 && p.stride_h == 1 && p.stride_w == 1 && p.oh() >= 4 && p.ow() >= 4)
      if (const ConvAlgorithm* a = pick("winograd", p)) return a;
    return pick("direct", p);
  }
  if (qconv_detail::amx_direct_applies(p, isa)) return pick("direct", p);
  if (p.groups == 1 && p.kh * p.kw > 1 && p.c_per_group() >= 16)
    return pick(p.stride_h == 1 && p.stride_w == 1 ? "direct" : "spatial-pack", p);
  if (p.groups == 1 && p.kh * p.kw == 1 && p.c_per_group() >= 16 && p.oh() * p.ow() <= 16 &&
      base_isa(isa) == Isa::kAvx512 && isa < Isa::kAmx)
    return pick("spatial-pack", p);
  return nullptr;
}

// Where the algorithms compute in f32 after widening (half_choice_problem), the f32 rule's
// choice for the problem they run is the right one. Where the path has bf16 arithmetic
// (AVX512-BF16, AMX), gemm runs it natively: it takes every layer but
// depthwise ones (memory-bound), stems (<= 4 input channels per group, where the f32 rule
// picks direct because im2col dominates) and, on the amx path, the bf16 layers direct's AMX
// implicit GEMM covers (the im2col pack costs more than gemm's AMX tiles there).
const ConvAlgorithm* half_choice(const ConvProblem& p, Isa isa) {
  const ConvProblem q = half_choice_problem(p, isa);
  if (!q.is_half()) return pick(auto_conv_algorithm(q, isa).name(), p);
  const ConvAlgorithm* a = nullptr;
  if (p.is_depthwise()) a = pick("depthwise", p);
  if (!a && p.c_per_group() <= 4) a = pick("direct", p);
  // AMX bf16: the convs direct's implicit GEMM covers run it (no im2col); outputs of fewer
  // pixels than one tile row (squeeze-and-excitation convs on 1x1 planes) run direct's f32
  // twin on blocks.
  if (!a && p.w_type == DType::kBF16 && hconv_detail::amx_direct_applies(p, isa))
    a = pick("direct", p);
  if (!a && isa >= Isa::kAmx && p.oh() * p.ow() < hconv_detail::kAmxDirectMinPixels)
    a = pick("direct", p);
  return a;
}

}  // namespace

ConvProblem half_choice_problem(const ConvProblem& p, Isa isa) {
  if (!p.is_half() || p.is_blocked()) return p;
  const bool blocks = native_blocked_layout(base_isa(isa)) == Layout::kNchw16c;
  const bool widened =
      ukernel::h16_gemm_ukernels_for(p.w_type, isa).empty() || (p.w_type == DType::kF16 && blocks);
  if (!widened) return p;
  ConvProblem q = p.as_f32();
  if (!blocks) return q;
  // The layouts the widened twin runs (as WidenedHConvAlgorithm picks them): a stem's input
  // stays NCHW, and a conv no blocked algorithm supports (an 11x11 or 4x4 stride-4 stem) runs
  // NCHW.
  auto supported = [](const ConvProblem& b) {
    for (const ConvAlgorithm* a : conv_algorithms())
      if (a->supports(b)) return true;
    return false;
  };
  for (const Layout x : {Layout::kNchw, Layout::kNchw16c}) {
    if (x == Layout::kNchw && p.c >= 16) continue;
    ConvProblem b = q;
    b.set_layouts(x, Layout::kNchw16c);
    if (supported(b)) return b;
  }
  return q;
}

const ConvAlgorithm& auto_conv_algorithm(const ConvProblem& p, Isa isa,
                                         const ConvWeights& weights) {
  const ConvAlgorithm* a = nullptr;
  switch (p.types()) {
    case ConvTypes::kF32:
      if (const char* sparse = sparse_f32_choice(p, weights.f32_data())) a = pick(sparse, p);
      if (!a) a = dense_f32_choice(p);
      break;
    case ConvTypes::kInt8:
      a = int8_choice(p, isa);
      break;
    case ConvTypes::kHalf:
      a = half_choice(p, isa);
      break;
  }
  if (!a) a = pick("gemm", p);
  if (a) return *a;
  for (const ConvAlgorithm* a : conv_algorithms())
    if (a->supports(p)) return *a;
  fail(ErrorKind::kUnsupported, "no ", conv_types_name(p.types()),
       " convolution algorithm supports ", p.key());
}

}  // namespace dlas
