// Calibration: times every dense candidate per shape class, f32 and int8, with the tuner's
// conv measurer (its protocol: warm-up, runs per repeat grown to a minimum duration, median
// of repeats).
#include "dlas/system/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "dlas/algo/layout.h"
#include "dlas/algo/qconv.h"
#include "dlas/core/error.h"
#include "dlas/hw/cpu.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/system/tune.h"

namespace dlas {
namespace {

// Layer shapes of the zoo models (bench/shapes/*.txt), one per class, on 224x224 and 32x32
// inputs.
// clang-format off
constexpr const char* kShapes[] = {
    // stems
    "c3_h224_w224_k64_7x7_s2x2_p3x3x3x3_d1x1_g1",  // resnet50
    "c3_h224_w224_k32_3x3_s2x2_p1x1x1x1_d1x1_g1",  // mobilenetv2
    "c3_h32_w32_k64_3x3_s1x1_p1x1x1x1_d1x1_g1",    // resnet18-cifar
    // depthwise
    "c32_h112_w112_k32_3x3_s1x1_p1x1x1x1_d1x1_g32",
    "c144_h56_w56_k144_3x3_s1x1_p1x1x1x1_d1x1_g144",
    "c384_h14_w14_k384_3x3_s1x1_p1x1x1x1_d1x1_g384",
    "c960_h7_w7_k960_3x3_s1x1_p1x1x1x1_d1x1_g960",
    "c96_h112_w112_k96_3x3_s2x2_p1x1x1x1_d1x1_g96",
    "c144_h56_w56_k144_3x3_s2x2_p1x1x1x1_d1x1_g144",
    "c576_h14_w14_k576_3x3_s2x2_p1x1x1x1_d1x1_g576",
    // dense 3x3
    "c64_h56_w56_k64_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c128_h28_w28_k128_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c256_h14_w14_k256_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c512_h7_w7_k512_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c64_h32_w32_k64_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c128_h56_w56_k128_3x3_s2x2_p1x1x1x1_d1x1_g1",
    "c256_h28_w28_k256_3x3_s2x2_p1x1x1x1_d1x1_g1",
    "c512_h14_w14_k512_3x3_s2x2_p1x1x1x1_d1x1_g1",
    // dense 1x1
    "c64_h56_w56_k256_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c256_h56_w56_k64_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c128_h28_w28_k512_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c512_h28_w28_k128_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c256_h14_w14_k1024_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c1024_h14_w14_k256_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c2048_h7_w7_k512_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c256_h56_w56_k512_1x1_s2x2_p0x0x0x0_d1x1_g1",
    "c1024_h14_w14_k2048_1x1_s2x2_p0x0x0x0_d1x1_g1",
    // the small outputs of the 32x32 models
    "c32_h32_w32_k32_3x3_s1x1_p1x1x1x1_d1x1_g32",
    "c144_h32_w32_k144_3x3_s1x1_p1x1x1x1_d1x1_g144",
    "c128_h16_w16_k128_3x3_s1x1_p1x1x1x1_d1x1_g128",
    "c256_h8_w8_k256_3x3_s1x1_p1x1x1x1_d1x1_g256",
    "c1024_h2_w2_k1024_3x3_s1x1_p1x1x1x1_d1x1_g1024",
    "c64_h32_w32_k64_3x3_s2x2_p1x1x1x1_d1x1_g64",
    "c144_h32_w32_k144_3x3_s2x2_p1x1x1x1_d1x1_g144",
    "c128_h16_w16_k128_3x3_s2x2_p1x1x1x1_d1x1_g128",
    "c256_h8_w8_k256_3x3_s2x2_p1x1x1x1_d1x1_g256",
    "c512_h4_w4_k512_3x3_s2x2_p1x1x1x1_d1x1_g512",
    "c64_h16_w16_k128_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c128_h16_w16_k128_3x3_s1x1_p1x1x1x1_d1x1_g1",  // resnet18-cifar x3, vgg16-cifar
    "c256_h8_w8_k256_3x3_s1x1_p1x1x1x1_d1x1_g1",    // resnet18-cifar x3, vgg16-cifar x2
    "c256_h4_w4_k512_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c512_h4_w4_k512_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c512_h2_w2_k512_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c64_h32_w32_k128_3x3_s2x2_p1x1x1x1_d1x1_g1",
    "c128_h16_w16_k256_3x3_s2x2_p1x1x1x1_d1x1_g1",
    "c256_h8_w8_k512_3x3_s2x2_p1x1x1x1_d1x1_g1",
    "c16_h32_w32_k96_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c32_h16_w16_k192_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c64_h8_w8_k384_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c128_h8_w8_k256_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c160_h4_w4_k320_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c1024_h2_w2_k1024_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c64_h32_w32_k128_1x1_s2x2_p0x0x0x0_d1x1_g1",
    "c128_h16_w16_k256_1x1_s2x2_p0x0x0x0_d1x1_g1",
    "c256_h8_w8_k512_1x1_s2x2_p0x0x0x0_d1x1_g1",
    // densenet161: few output channels (its 3x3 growth convs), wide 1x1 inputs
    "c192_h56_w56_k48_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c192_h28_w28_k48_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c192_h14_w14_k48_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c192_h7_w7_k48_3x3_s1x1_p1x1x1x1_d1x1_g1",
    "c288_h56_w56_k192_1x1_s1x1_p0x0x0x0_d1x1_g1",
    "c1056_h7_w7_k192_1x1_s1x1_p0x0x0x0_d1x1_g1",
    // the classes no shape above reaches, each at its costliest zoo layer: 1x1 convs by
    // plane, input and output channels; depthwise 3x3 on 4x4 planes and 5x5. Not the
    // squeeze-and-excitation convs on 1x1 planes: timed alone, NCHW gemm beat blocked direct
    // there by a fraction of a microsecond, which the two reorder steps around it lose in a
    // model (mobilenet_v3_small 1.09x, regnet_y_400mf 1.05x slower; AMD EPYC Zen 5)
    "c128_h16_w16_k128_1x1_s1x1_p0x0x0x0_d1x1_g1",  // mobilenetv1-cifar layers.2.conv2
    "c192_h16_w16_k32_1x1_s1x1_p0x0x0x0_d1x1_g1",  // mobilenetv2-cifar layers.4.conv3
    "c64_h14_w14_k384_1x1_s1x1_p0x0x0x0_d1x1_g1",  // mobilenetv2 features.8.conv.0.0
    "c384_h14_w14_k64_1x1_s1x1_p0x0x0x0_d1x1_g1",  // mobilenetv2 features.8.conv.2
    "c2112_h14_w14_k1056_1x1_s1x1_p0x0x0x0_d1x1_g1",  // densenet161 features.transition3.conv
    "c240_h28_w28_k192_1x1_s1x1_p0x0x0x0_d1x1_g1",  // densenet161
    "c192_h28_w28_k32_1x1_s1x1_p0x0x0x0_d1x1_g1",  // mobilenetv2 features.5.conv.2
    "c32_h32_w32_k64_1x1_s1x1_p0x0x0x0_d1x1_g1",  // mobilenetv1-cifar layers.0.conv2
    "c768_h28_w28_k384_1x1_s1x1_p0x0x0x0_d1x1_g1",  // densenet161 features.transition2.conv
    "c960_h4_w4_k160_1x1_s1x1_p0x0x0x0_d1x1_g1",  // mobilenetv2-cifar layers.14.conv3
    "c512_h4_w4_k512_1x1_s1x1_p0x0x0x0_d1x1_g1",  // mobilenetv1-cifar layers.6.conv2
    "c192_h8_w8_k64_1x1_s1x1_p0x0x0x0_d1x1_g1",  // mobilenetv2-cifar layers.6.conv3
    "c192_h7_w7_k1152_1x1_s1x1_p0x0x0x0_d1x1_g1",  // efficientnetb0 features.6.1.block.0.0
    "c64_h8_w8_k96_1x1_s1x1_p0x0x0x0_d1x1_g1",  // mobilenetv2-cifar layers.10.shortcut.0
    "c384_h8_w8_k64_1x1_s1x1_p0x0x0x0_d1x1_g1",  // mobilenetv2-cifar layers.7.conv3
    "c240_h56_w56_k192_1x1_s1x1_p0x0x0x0_d1x1_g1",  // densenet161
    "c64_h56_w56_k64_1x1_s1x1_p0x0x0x0_d1x1_g1",  // resnet50 layer1.0.conv1
    "c512_h28_w28_k1024_1x1_s2x2_p0x0x0x0_d1x1_g1",  // resnet50 layer3.0.downsample.0
    "c960_h4_w4_k960_3x3_s1x1_p1x1x1x1_d1x1_g960",  // mobilenetv2-cifar layers.14.conv2
    "c576_h8_w8_k576_3x3_s2x2_p1x1x1x1_d1x1_g576",  // mobilenetv2-cifar layers.13.conv2
    "c672_h14_w14_k672_5x5_s1x1_p2x2x2x2_d1x1_g672",  // efficientnetb0 features.5.1.block.1.0
    "c240_h28_w28_k240_5x5_s1x1_p2x2x2x2_d1x1_g240",  // efficientnetb0 features.3.1.block.1.0
    "c1152_h7_w7_k1152_5x5_s1x1_p2x2x2x2_d1x1_g1152",  // efficientnetb0 features.6.1.block.1.0
    "c144_h56_w56_k144_5x5_s2x2_p2x2x2x2_d1x1_g144",  // efficientnetb0 features.3.0.block.1.0
    "c672_h14_w14_k672_5x5_s2x2_p2x2x2x2_d1x1_g672",  // efficientnetb0 features.6.0.block.1.0
};
// clang-format on

std::shared_ptr<tune::TaskWeights> random_weights(const ConvProblem& p) {
  auto w = std::make_shared<tune::TaskWeights>();
  std::mt19937 rng(7);
  const auto n = static_cast<size_t>(p.weight_count());
  if (p.is_int8()) {
    // s8 weights with per-channel scales and an s32 bias, as quantization writes them.
    std::uniform_int_distribution<int> d(-127, 127);
    w->data.resize(n);
    for (uint8_t& b : w->data) b = static_cast<uint8_t>(static_cast<int8_t>(d(rng)));
    w->w_scale.assign(static_cast<size_t>(p.k), 0.01f);
    if (p.has_bias) w->bias_s32.assign(static_cast<size_t>(p.k), 100);
    return w;
  }
  std::normal_distribution<float> d(0.f, 0.1f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  w->data.resize(v.size() * sizeof(float));
  std::memcpy(w->data.data(), v.data(), w->data.size());
  if (p.has_bias) w->bias.assign(static_cast<size_t>(p.k), 0.01f);
  return w;
}

// The reorders that running blocked problem p's layer in NCHW costs between blocked
// neighbours: its input to NCHW (none for a stem, whose input is the NCHW image) and its
// output back to the blocked layout, on T-sized values (f32, or int8's bytes); the median of
// `repeat` timings, microseconds.
template <class T>
double reorder_us(const ConvProblem& p, ThreadPool& pool, int repeat) {
  const Layout L = p.y_layout;
  const int64_t x_hw = p.h * p.w, y_hw = p.oh() * p.ow();
  std::vector<T> xb(static_cast<size_t>(layout_numel(p.n, p.c, x_hw, L)), T(1));
  std::vector<T> xn(static_cast<size_t>(p.n * p.c * x_hw));
  std::vector<T> yn(static_cast<size_t>(p.n * p.k * y_hw), T(1));
  std::vector<T> yb(static_cast<size_t>(layout_numel(p.n, p.k, y_hw, L)));
  auto once = [&] {
    if (is_blocked(p.x_layout))
      reorder(xb.data(), L, xn.data(), Layout::kNchw, p.n, p.c, x_hw, pool);
    reorder(yn.data(), Layout::kNchw, yb.data(), L, p.n, p.k, y_hw, pool);
  };
  once();  // warm-up
  std::vector<double> t;
  for (int r = 0; r < std::max(repeat, 3); ++r) {
    // Runs per timing grown to about 0.2 ms, as the measurer does for the candidates.
    int runs = 1;
    double s = 0;
    for (;;) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < runs; ++i) once();
      s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s >= 2e-4 || runs >= 1024) break;
      runs *= 2;
    }
    t.push_back(s / runs * 1e6);
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

// The int8 twin of f32 calibration shape p: u8 input and output (the activations after a
// ReLU), s8 weights.
ConvProblem int8_twin(const ConvProblem& p) {
  ConvProblem q = p;
  q.set_int8({0.05f, 0, DType::kU8}, {0.1f, 0, DType::kU8});
  return q;
}

// The layouts `base` (NCHW) is measured in on `isa`: NCHW, and the blocked layout L where a
// kernel can hold its channels -- f32: blocked buffers hold whole blocks, so only channel
// counts the block divides (a stem reads its NCHW image); int8: 8-bit blocks on the paths
// with the blocked int8 kernels on L, u8 input, never a stem (the layout pass keeps those NCHW).
std::vector<ConvProblem> layout_variants(const ConvProblem& base, Isa isa, Layout L) {
  std::vector<ConvProblem> out{base};
  if (!is_blocked(L)) return out;
  const bool stem = base.groups == 1 && base.c <= 4;
  if (base.is_int8() && (stem || L != int8_blocked_layout(isa) || base.quant.x.type != DType::kU8))
    return out;
  ConvProblem b = base;
  b.set_layouts(stem ? Layout::kNchw : L, L);
  if ((b.x_layout == Layout::kNchw || base.c % layout_block(L) == 0) &&
      base.k % layout_block(L) == 0)
    out.push_back(b);
  return out;
}

double since_seconds(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A task the survey ran, with the fastest of its points (us, and as the task's defaults:
// where the search starts) and its row in the result.
struct Surveyed {
  tune::Task task;
  double us = 0;
  size_t row = 0;
};

// The search stage: the tuner (evolutionary search ranked by its cost model, Trimmer's cold
// filter, survey rounds until the budget or phi) over each class's leading tasks -- per
// layout family its fastest algorithm, and the runner-up when within kSearchLead of it: a
// survey of a few points can rank an algorithm with a large knob space (Winograd's tile and
// register blocks) behind one it beats once tuned. Each row then takes the fastest point
// measured, per family, by either stage.
constexpr double kSearchLead = 2.5;

// At most this many prepared copies per candidate (tune::MeasureOptions::max_copies): the
// layers whose weights decide between algorithms, the large ones, reach the reuse distance
// with a few; small ones, cheap from any cache, are not worth hundreds of weight packs.
constexpr int kMaxCopies = 8;

void search(CalibrateResult& r, std::vector<Surveyed>& survey, const CalibrateOptions& o,
            double seconds, const tune::MeasureOptions& mo) {
  std::stable_sort(survey.begin(), survey.end(), [](const Surveyed& a, const Surveyed& b) {
    return std::make_tuple(a.row, is_blocked(a.task.problem.y_layout), a.us) <
           std::make_tuple(b.row, is_blocked(b.task.problem.y_layout), b.us);
  });
  std::vector<tune::Task> tasks;
  std::map<std::string, size_t> row_of;  // task key -> row
  for (size_t i = 0; i < survey.size();) {
    size_t j = i;
    const bool blocked = is_blocked(survey[i].task.problem.y_layout);
    while (j < survey.size() && survey[j].row == survey[i].row &&
           is_blocked(survey[j].task.problem.y_layout) == blocked)
      ++j;
    for (size_t k = i; k < j && k < i + 2; ++k)
      if (k == i || survey[k].us <= kSearchLead * survey[i].us) {
        row_of[survey[k].task.key] = survey[k].row;
        tasks.push_back(survey[k].task);
      }
    i = j;
  }
  tune::TuneOptions to;
  // The confirmation after the search re-times each class's finalists in 2 rounds: 5-7 s on
  // 122 classes at 2 threads whatever the search took, kept inside `seconds` (at 0.8 and 3
  // rounds, the AVX2 path's calibration took 60.0 s on a Zen 5).
  to.budget_seconds = 0.6 * seconds;
  to.confirm_rounds = 2;
  to.timeout_seconds = mo.timeout_seconds;
  const auto t0 = std::chrono::steady_clock::now();
  to.on_round = [&](const tune::CurvePoint& p, int round) {
    if (o.search_progress) o.search_progress(p.seconds, seconds, p.trials, round);
  };
  const auto measurer = tune::make_conv_measurer(mo);
  const tune::TuneReport rep = tune::tune(tasks, *measurer, to);
  r.search_trials = rep.trials;
  r.search_seconds = since_seconds(t0);
  r.search_stop = rep.stop_reason;
  for (const tune::Record& rec : rep.records) {
    auto it = row_of.find(rec.task);
    if (it != row_of.end()) ++r.rows[it->second].searched;
  }
  // Per row and family, the fastest point either stage measured.
  for (const tune::Record& rec : tune::best_records(rep.records)) {
    auto it = row_of.find(rec.task);
    if (it == row_of.end() || !rec.ok()) continue;
    const tune::Task* t = nullptr;
    for (const tune::Task& x : tasks)
      if (x.key == rec.task) t = &x;
    CalibrateRow& row = r.rows[it->second];
    const MachineProfile::Choice c{t->algo, t->problem.y_layout, rec.knobs, rec.cost() * 1e6};
    MachineProfile::Entry& e = row.best;
    if (is_blocked(c.layout) == is_blocked(e.layout)) {
      if (c.us < e.us) {
        e.algo = c.algo;
        e.knobs = c.knobs;
        e.us = c.us;
      }
    } else if (e.other && c.us < e.other->us) {
      e.other = c;
    }
  }
  // Where the other family now leads, it becomes the entry's best.
  for (size_t i = 0; i < r.rows.size(); ++i) {
    MachineProfile::Entry& e = r.rows[i].best;
    if (e.other && e.other->us < e.us) {
      const MachineProfile::Choice was = e.best();
      e.algo = e.other->algo;
      e.layout = e.other->layout;
      e.knobs = e.other->knobs;
      e.us = e.other->us;
      e.other = was;
    }
    r.profile.entries[i] = e;
  }
}

}  // namespace

std::vector<ConvProblem> calibration_shapes() {
  std::vector<ConvProblem> out;
  for (const char* key : kShapes) {
    ConvProblem p = ConvProblem::from_key(key);
    p.has_bias = true;
    p.epilogue.act = Activation::kRelu;
    out.push_back(p);
  }
  return out;
}

CalibrateResult calibrate(const CalibrateOptions& o) {
  DLAS_CHECK(o.threads >= 1, ErrorKind::kInvalidInput, "calibrate: threads must be >= 1");
  DLAS_CHECK(o.repeat >= 1 && o.extra_knob_points >= 0, ErrorKind::kInvalidInput,
             "calibrate: repeat must be >= 1 and extra_knob_points >= 0");
  const auto t0 = std::chrono::steady_clock::now();
  CalibrateResult r;
  r.profile.cpu = cpu_info().model_name;
  r.profile.cpuid = cpu_info().signature();
  r.profile.isa = o.isa;
  r.profile.threads = o.threads;
  r.profile.source = "dlas hw --calibrate";
  const Layout L = native_blocked_layout(o.isa);
  // The f32 shapes, then (with int8) their int8 twins.
  std::vector<ConvProblem> shapes;
  for (ConvProblem p : o.shapes.empty() ? calibration_shapes() : o.shapes) {
    p.set_layouts(Layout::kNchw, Layout::kNchw);
    p.validate();
    DLAS_CHECK(p.types() == ConvTypes::kF32, ErrorKind::kInvalidInput,
               "calibrate: shapes must be f32 (", p.key(), ")");
    shapes.push_back(p);
  }
  if (o.int8) {
    const size_t n = shapes.size();
    for (size_t i = 0; i < n; ++i) shapes.push_back(int8_twin(shapes[i]));
  }

  tune::MeasureOptions mo;
  mo.repeat = o.repeat;
  mo.warmup = 1;
  mo.min_repeat_seconds = 1e-3;
  mo.timeout_seconds = 2.0;
  mo.reuse_bytes = o.reuse_bytes;
  if (mo.reuse_bytes < 0) {
    const uint64_t llc = cpu_info().l3_bytes ? cpu_info().l3_bytes : cpu_info().l2_bytes;
    mo.reuse_bytes = 2.0 * (llc ? static_cast<double>(llc) : 32.0 * (1 << 20));
  }
  mo.max_copies = kMaxCopies;

  // The measurers' pool (ThreadPool::shared), kept for the whole calibration.
  const std::shared_ptr<ThreadPool> pool = ThreadPool::shared(o.threads);
  std::set<std::string> done;
  std::vector<Surveyed> survey;
  int index = 0;
  for (const ConvProblem& base : shapes) {
    if (o.budget_seconds > 0 && since_seconds(t0) >= o.budget_seconds) {
      r.skipped_shapes = static_cast<int>(shapes.size()) - index;
      break;
    }
    ++index;
    const std::string cls = conv_shape_class(base);
    if (!done.insert(cls).second) continue;
    const auto row_t0 = std::chrono::steady_clock::now();
    CalibrateRow row;
    row.shape_class = cls;
    row.shape = base.key();
    row.best.shape_class = cls;
    row.best.us = -1;
    const auto weights = random_weights(base);
    const ConvAlgorithm& rule = auto_conv_algorithm(base, o.isa);
    row.rule_algo = std::string(rule.name());

    const std::vector<ConvProblem> variants = layout_variants(base, o.isa, L);
    MachineProfile::Choice best_nchw, best_blocked;
    std::vector<Surveyed> surveyed;  // this class's tasks that ran, with their best
    for (const ConvProblem& p : variants) {
      for (const ConvAlgorithm* a : conv_algorithms()) {
        if (!a->supports(p)) continue;
        tune::Task t;
        t.problem = p;
        t.algo = std::string(a->name());
        t.isa = o.isa;
        t.threads = o.threads;
        t.key = tune::task_key(p, t.algo, o.isa, o.threads);
        t.layer = p.key();
        t.space = a->knob_space(p, o.isa);
        t.defaults = a->default_knobs(p, o.isa);
        t.nodes = {"calibrate"};
        t.weights = weights;
        const std::vector<Knobs> points = a->survey_knobs(p, o.isa, o.extra_knob_points);
        double task_us = -1;
        Knobs task_best;
        for (size_t i = 0; i < points.size(); ++i) {
          // A candidate whose first run takes 10x the best so far (and 20 ms) will not win: it
          // stops there (the measurer's timeout), so bad knob points cost one run.
          tune::MeasureOptions mi = mo;
          if (row.best.us > 0) mi.timeout_seconds = std::max(1e-5 * row.best.us, 0.02);
          const auto measurer = tune::make_conv_measurer(mi);
          const tune::MeasureResult m =
              tune::measure_safely(*measurer, t, points[i], mi.timeout_seconds * (o.repeat + 2));
          if (!m.ok()) continue;
          ++row.candidates;
          const double us = m.cost() * 1e6;
          if (task_us < 0 || us < task_us) task_us = us, task_best = points[i];
          if (i == 0 && a == &rule && p.y_layout == Layout::kNchw) row.rule_us = us;
          MachineProfile::Choice& fam = is_blocked(p.y_layout) ? best_blocked : best_nchw;
          if (fam.algo.empty() || us < fam.us) fam = {t.algo, p.y_layout, points[i], us};
          if (row.best.us < 0 || us < row.best.us) {
            row.best.algo = t.algo;
            row.best.layout = p.y_layout;
            row.best.knobs = points[i];
            row.best.us = us;
          }
        }
        if (task_us > 0) {
          t.defaults = task_best;  // the search starts from the survey's best point
          surveyed.push_back({std::move(t), task_us, 0});
        }
      }
    }
    if (row.candidates > 0 && !best_nchw.algo.empty() && !best_blocked.algo.empty()) {
      row.best.other = is_blocked(row.best.layout) ? best_nchw : best_blocked;
      row.best.reorder_us = base.is_int8() ? reorder_us<uint8_t>(variants.back(), *pool, o.repeat)
                                           : reorder_us<float>(variants.back(), *pool, o.repeat);
    }
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - row_t0).count();
    row.survey_us = row.best.us;
    if (row.candidates > 0) {
      for (Surveyed& c : surveyed) {
        c.row = r.rows.size();
        c.task.layer = cls;  // one layer per class: the search compares its tasks
        survey.push_back(std::move(c));
      }
      r.profile.entries.push_back(row.best);
      r.rows.push_back(std::move(row));
    }
    if (o.progress) o.progress(index, static_cast<int>(shapes.size()), cls);
  }
  double search_budget = o.search_seconds;
  if (o.budget_seconds > 0)
    search_budget = std::min(search_budget, o.budget_seconds - since_seconds(t0));
  if (search_budget >= 1 && !survey.empty()) search(r, survey, o, search_budget, mo);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dlas
