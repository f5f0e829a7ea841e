// The paper's 13 observations (DLAS Sec. 6) checked on a results database: one table row
// per observation (id, claim, what the study needs to test it, and its check) and one loop.
// A check counts the cases that show the claim; with none it is "not testable", and the
// row says which [space] values of the study spec would make it testable.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "study/analysis.h"

namespace dlas::study {

namespace {

using analysis::Context;
using analysis::fmt;
using analysis::is_tuned;
using analysis::Variant;

bool is_pruned(const std::string& c) {
  return c.rfind("wp:", 0) == 0 || c.rfind("cp:", 0) == 0 || c.rfind("bp:", 0) == 0;
}
bool is_quantized(const std::string& c) {
  return c.find("int8") != std::string::npos || c.find("fp16") != std::string::npos ||
         c.find("bf16") != std::string::npos;
}
bool is_cifar(const std::string& model) { return model.find("cifar") != std::string::npos; }
bool is_dense(const std::pair<std::string, std::string>& k) { return k.second == "dense"; }

// The results the checks read: the contexts and the statistics several checks share.
// Speedups point into `contexts`, so a Results is built in place and never copied.
struct Results {
  explicit Results(const std::vector<Row>& rows)
      : contexts(analysis::contexts_of(rows)),
        speedups(analysis::speedups(contexts)),
        correlations(analysis::correlations(contexts)) {}
  Results(const Results&) = delete;
  Results& operator=(const Results&) = delete;

  const std::vector<Context> contexts;
  const std::vector<analysis::Speedup> speedups;
  const std::vector<analysis::Correlation> correlations;
};

// What a check found. An empty verdict means no case in the data: not testable.
struct Finding {
  std::string verdict, detail;
  std::vector<std::string> evidence;
};

// The cases a check counted; the verdict is a majority vote (a tie is "mixed").
struct Tally {
  int holds = 0, total = 0;
  std::vector<std::string> evidence;

  void add(bool holds_here, std::string line) {
    ++total;
    holds += holds_here ? 1 : 0;
    evidence.push_back(std::move(line));
  }
  // `what` names the cases: "holds for 2/3 <what>".
  Finding finding(const std::string& what) const {
    if (total == 0) return {};
    const std::string verdict = 2 * holds > total    ? "holds"
                                : 2 * holds == total ? "mixed"
                                                     : "fails";
    return {verdict,
            "holds for " + std::to_string(holds) + "/" + std::to_string(total) + " " + what,
            evidence};
  }
};

// A row of the table. `needs` is the reason given when the data has no case: what to add
// to the study spec, in its own keys and syntax.
struct ObservationRow {
  const char* id;
  const char* claim;  // the paper's words, shortened
  const char* needs;
  Finding (*check)(const Results&);
};

// I: MACs, accuracy and latency not strongly correlated (|Spearman| < 0.8).
Finding weak_model_correlations(const Results& res) {
  Tally t;
  for (const auto& c : res.correlations) {
    const bool relevant = (c.x == "macs" && (c.y == "latency_ms" || c.y == "accuracy")) ||
                          (c.x == "accuracy" && c.y == "latency_ms");
    if (!relevant || std::isnan(c.spearman)) continue;
    t.add(std::fabs(c.spearman) < 0.8, c.platform + ": spearman(" + c.x + ", " + c.y +
                                           ") = " + fmt(c.spearman, 2) + " over " +
                                           std::to_string(c.n) + " models");
  }
  return t.finding("model-level correlations (strong: |rho| >= 0.8)");
}

// II: tuned sparse CIFAR models faster than dense; not ImageNet ones.
Finding sparse_beats_dense_on_cifar(const Results& res) {
  Tally t;
  for (const Context& c : res.contexts) {
    if (!is_tuned(c.schedule)) continue;
    const Variant* dense = c.fastest(is_dense);
    const Variant* sparse = c.fastest([](const auto& k) { return k.second.rfind("wp:", 0) == 0; });
    if (!dense || !sparse) continue;
    t.add((sparse->median_ms < dense->median_ms) == is_cifar(c.model),
          c.model + ": sparse " + fmt(sparse->median_ms, 3) + " vs dense " +
              fmt(dense->median_ms, 3) + " ms");
  }
  return t.finding("models");
}

// III: model size not strongly correlated with accuracy.
Finding size_not_accuracy(const Results& res) {
  Tally t;
  for (const auto& c : res.correlations) {
    if (c.x != "params" || c.y != "accuracy" || std::isnan(c.spearman)) continue;
    t.add(std::fabs(c.spearman) < 0.8,
          c.platform + ": spearman(params, accuracy) = " + fmt(c.spearman, 2));
  }
  return t.finding("platforms");
}

// IV: weight pruning faster than channel pruning but a lower share of its expected speedup.
Finding weight_vs_channel_pruning(const Results& res) {
  Tally t;
  for (const Context& c : res.contexts) {
    const analysis::Speedup *wp = nullptr, *cp = nullptr;
    for (const auto& s : res.speedups) {
      if (s.context != &c) continue;
      const auto better = [&](const analysis::Speedup* a) { return !a || s.ms < a->ms; };
      if (s.compress.rfind("wp:", 0) == 0 && better(wp)) wp = &s;
      if (s.compress.rfind("cp:", 0) == 0 && better(cp)) cp = &s;
    }
    if (!wp || !cp) continue;
    t.add(wp->ms < cp->ms && wp->achieved / wp->expected < cp->achieved / cp->expected,
          c.platform + " / " + c.model + ": wp " + fmt(wp->ms, 3) + " ms (" +
              fmt(100 * wp->achieved / wp->expected, 0) + "% of expected), cp " + fmt(cp->ms, 3) +
              " ms (" + fmt(100 * cp->achieved / cp->expected, 0) + "%)");
  }
  return t.finding("contexts");
}

// V: quantization's speedup varies by platform and data type (a spread over 25%).
Finding quantization_varies(const Results& res) {
  std::map<std::string, double> best;  // "platform | dtype" -> best speedup over dense
  for (const auto& s : res.speedups) {
    if (!is_quantized(s.compress) || is_pruned(s.compress)) continue;
    const std::string key = s.context->platform + " | " + s.compress;
    best[key] = std::max(best[key], s.achieved);
  }
  if (best.size() < 2) return {};
  Finding f;
  double lo = 1e30, hi = 0;
  for (const auto& [k, v] : best) {
    lo = std::min(lo, v), hi = std::max(hi, v);
    f.evidence.push_back(k + ": best speedup " + fmt(v, 2) + "x");
  }
  f.verdict = hi > 1.25 * lo ? "holds" : "fails";
  f.detail =
      "best speedups range " + fmt(lo, 2) + "x to " + fmt(hi, 2) + "x (varies: a spread over 25%)";
  return f;
}

// VI: fp16 negligible accuracy impact; int8 loses more.
Finding fp16_keeps_accuracy(const Results& res) {
  Tally t;
  for (const Context& c : res.contexts) {
    const Variant* dense = c.fastest(is_dense);
    if (!dense || !dense->has_accuracy) continue;
    double fp16 = NAN, int8 = NAN;
    for (const auto& [k, v] : c.variants) {
      if (!v.has_accuracy) continue;
      if (k.second == "fp16") fp16 = dense->accuracy - v.accuracy;
      if (k.second.rfind("int8", 0) == 0) int8 = dense->accuracy - v.accuracy;
    }
    if (std::isnan(fp16) || std::isnan(int8)) continue;
    t.add(std::fabs(fp16) < 0.005 && int8 >= fp16,
          c.model + ": fp16 loses " + fmt(100 * fp16, 2) + " points, int8 " + fmt(100 * int8, 2));
  }
  return t.finding("models");
}

// The paper's three dense primitives (Winograd, depthwise and vendor libraries are
// dlas's additions): VII and IX compare only these.
const std::set<std::string> kPaperAlgorithms = {"direct", "gemm", "spatial-pack"};

bool on_cpu(const Context& c) { return c.device == "cpu"; }

// VII and IX: `winner` is the fastest of the paper's primitives for the compressions that
// start with `compress_prefix`, on the CPU. Prefers tuned contexts (the paper's claim); falls
// back to untuned ones, saying so.
Finding algorithm_winner(const Results& res, const std::string& winner,
                         const std::string& compress_prefix) {
  const auto paper_algo = [&](const std::pair<std::string, std::string>& k) {
    return kPaperAlgorithms.count(k.first) && k.second.rfind(compress_prefix, 0) == 0;
  };
  const bool any_tuned =
      std::any_of(res.contexts.begin(), res.contexts.end(),
                  [](const Context& c) { return on_cpu(c) && is_tuned(c.schedule); });
  Tally t;
  for (const Context& c : res.contexts) {
    if (!on_cpu(c) || is_tuned(c.schedule) != any_tuned) continue;
    std::set<std::string> present;
    for (const auto& [k, v] : c.variants)
      if (paper_algo(k)) present.insert(k.first);
    if (present.size() < 2 || !present.count(winner)) continue;
    const Variant* best = c.fastest(paper_algo);
    t.add(best->algorithm == winner, c.platform + " / " + c.model + ": " + best->algorithm + " (" +
                                         fmt(best->median_ms, 3) + " ms)");
  }
  Finding f = t.finding("contexts");
  if (!f.verdict.empty())
    f.detail += any_tuned ? " (tuned schedules)"
                          : " (untuned default schedules only: the paper's claim is for tuned "
                            "code; add tuning = [\"untuned\", \"tuned:120s\"] to [space])";
  return f;
}

Finding spatial_pack_best_dense(const Results& res) {
  return algorithm_winner(res, "spatial-pack", "dense");
}
Finding gemm_best_sparse(const Results& res) { return algorithm_winner(res, "gemm", "wp:"); }

// dlas's dense CUDA algorithms that VIII compares (depthwise runs depthwise layers only;
// auto and cuDNN are not one algorithm).
const std::set<std::string> kGpuDenseAlgorithms = {"direct", "gemm", "winograd"};

// VIII: direct is the fastest dense CUDA algorithm on a GPU once tuned: per tuned GPU context
// with direct and another of them, dense.
Finding direct_best_dense_on_gpu(const Results& res) {
  const auto gpu_algo = [](const std::pair<std::string, std::string>& k) {
    return kGpuDenseAlgorithms.count(k.first) && k.second == "dense";
  };
  Tally t;
  for (const Context& c : res.contexts) {
    if (on_cpu(c) || !is_tuned(c.schedule)) continue;
    std::set<std::string> present;
    for (const auto& [k, v] : c.variants)
      if (gpu_algo(k)) present.insert(k.first);
    if (present.size() < 2 || !present.count("direct")) continue;
    const Variant* best = c.fastest(gpu_algo);
    std::string line = c.platform + " / " + c.model + ": " + best->algorithm + " (" +
                       fmt(best->median_ms, 3) + " ms)";
    if (best->algorithm != "direct")
      line += ", direct " +
              fmt(c.variants.at({std::string("direct"), std::string("dense")}).median_ms, 3) +
              " ms";
    t.add(best->algorithm == "direct", line);
  }
  return t.finding("tuned GPU contexts");
}

// X: pruning rarely reaches its expected speedup (here: under half of the expected).
Finding pruning_below_expected(const Results& res) {
  Tally t;
  for (const auto& s : res.speedups) {
    if (!is_pruned(s.compress)) continue;
    t.add(s.achieved < 0.5 * s.expected, s.context->model + " " + s.compress + " " + s.algorithm +
                                             ": " + fmt(s.achieved, 2) + "x of " +
                                             fmt(s.expected, 2) + "x");
  }
  return t.finding("pruned variants (below half the expected speedup)");
}

// Tuned contexts and their untuned twins (same platform apart from the schedule), with the
// fastest dense variant of each.
struct TwinPair {
  const Context *tuned, *untuned;
  const Variant *tuned_dense, *untuned_dense;
};
std::vector<TwinPair> tuned_twins(const Results& res) {
  std::map<std::string, const Context*> untuned;
  for (const Context& c : res.contexts)
    if (!is_tuned(c.schedule)) untuned[analysis::untuned_twin_key(c)] = &c;
  std::vector<TwinPair> out;
  for (const Context& c : res.contexts) {
    if (!is_tuned(c.schedule)) continue;
    auto it = untuned.find(analysis::untuned_twin_key(c));
    if (it == untuned.end()) continue;
    const Variant* bt = c.fastest(is_dense);
    const Variant* bu = it->second->fastest(is_dense);
    if (bt && bu) out.push_back({&c, it->second, bt, bu});
  }
  return out;
}

// XI: auto-tuning accelerates inference.
Finding tuning_accelerates(const Results& res) {
  Tally t;
  for (const TwinPair& p : tuned_twins(res)) {
    const Variant *bt = p.tuned_dense, *bu = p.untuned_dense;
    t.add(bt->median_ms < bu->median_ms, p.tuned->model + ": tuned " + bt->algorithm + " " +
                                             fmt(bt->median_ms, 3) + " ms vs untuned " +
                                             bu->algorithm + " " + fmt(bu->median_ms, 3) + " ms");
  }
  return t.finding("models (tuned faster)");
}

// XII: pruned models see a lower relative speedup when tuned.
Finding tuning_helps_pruned_less(const Results& res) {
  Tally t;
  for (const TwinPair& p : tuned_twins(res)) {
    const auto pruned = [](const auto& k) { return is_pruned(k.second); };
    const Variant* pt = p.tuned->fastest(pruned);
    const Variant* pu = p.untuned->fastest(pruned);
    if (!pt || !pu) continue;
    const double rel_t = p.tuned_dense->median_ms / pt->median_ms;
    const double rel_u = p.untuned_dense->median_ms / pu->median_ms;
    t.add(rel_t < rel_u, p.tuned->model + ": pruned speedup tuned " + fmt(rel_t, 2) +
                             "x vs untuned " + fmt(rel_u, 2) + "x");
  }
  return t.finding("models");
}

// XIII, across devices: per model, batch and compression measured on the CPU and on a GPU,
// the best configuration (algorithm or backend) on each, over every platform, schedule and
// layout of the device. A case holds when they differ.
Tally best_configuration_per_device(const Results& res) {
  struct Best {
    const Context* context = nullptr;
    const Variant* variant = nullptr;
  };
  // "model|batch|compress" -> device -> its fastest variant
  std::map<std::string, std::map<std::string, Best>> best;
  for (const Context& c : res.contexts)
    for (const auto& [k, v] : c.variants) {
      Best& b = best[c.model + "|" + std::to_string(c.batch) + "|" + k.second][c.device];
      if (!b.variant || v.median_ms < b.variant->median_ms) b = {&c, &v};
    }
  Tally t;
  for (const auto& [key, devices] : best) {
    const auto cpu = devices.find("cpu");
    if (cpu == devices.end()) continue;
    const auto& [cc, cv] = cpu->second;
    for (const auto& [device, g] : devices) {
      if (device == "cpu") continue;
      const bool differs = g.variant->algorithm != cv->algorithm;
      std::string what = cc->model + " " + cv->compress;
      if (cc->batch != 1) what += " (batch " + std::to_string(cc->batch) + ")";
      t.add(differs, what + ": CPU " + cv->algorithm + " (" + cc->platform + ", " +
                         fmt(cv->median_ms, 3) + " ms), " + device + " " + g.variant->algorithm +
                         " (" + g.context->platform + ", " + fmt(g.variant->median_ms, 3) +
                         " ms): " + (differs ? "differs" : "the same"));
    }
  }
  return t;
}

// XIII: the more capable platform is generally faster: between every two platforms
// (CPU, ISA path, threads, or a GPU; same schedule) sharing models, one wins most of them;
// and where a study measured the CPU and a GPU, the best configuration differs between them.
Finding capable_platform_faster(const Results& res) {
  std::map<std::string, std::map<std::string, double>> best;  // platform -> model -> ms
  for (const Context& c : res.contexts) {
    const Variant* b = c.fastest(is_dense);
    if (!b) continue;
    const std::string m =
        c.model + "|" + std::to_string(c.batch) + "|" + std::to_string(c.opt_level);
    auto& slot = best[c.platform];
    if (!slot.count(m) || b->median_ms < slot[m]) slot[m] = b->median_ms;
  }
  Tally t;
  // A platform's schedule is its last part: tuned and untuned code on one machine are not two
  // platforms.
  const auto schedule_of = [](const std::string& p) { return p.substr(p.rfind(" / ") + 3); };
  for (auto a = best.begin(); a != best.end(); ++a)
    for (auto b = std::next(a); b != best.end(); ++b) {
      if (schedule_of(a->first) != schedule_of(b->first)) continue;
      int wins_a = 0, shared = 0;
      for (const auto& [m, ms] : a->second) {
        auto it = b->second.find(m);
        if (it == b->second.end()) continue;
        ++shared;
        if (ms < it->second) ++wins_a;
      }
      if (shared == 0) continue;
      const int top = std::max(wins_a, shared - wins_a);
      const bool a_wins = wins_a * 2 >= shared;
      t.add(4 * top >= 3 * shared,
            (a_wins ? a->first : b->first) + " faster than " + (a_wins ? b->first : a->first) +
                " on " + std::to_string(top) + "/" + std::to_string(shared) + " models");
    }
  const char* const pairs_what =
      "platform pairs (one platform faster on at least 3/4 of the models)";
  const Tally devices = best_configuration_per_device(res);
  if (devices.total == 0) {
    Finding f = t.finding(pairs_what);
    if (!f.verdict.empty())
      f.detail +=
          "; CPU against GPU not tested (no GPU rows beside the CPU's: add device = [\"cpu\", "
          "\"cuda\"] to [space])";
    return f;
  }
  // Both parts vote: each platform pair, and each model and compression on both devices.
  Tally all = t;
  all.holds += devices.holds;
  all.total += devices.total;
  all.evidence.insert(all.evidence.end(), devices.evidence.begin(), devices.evidence.end());
  Finding f = all.finding("cases");
  f.detail += ": " + std::to_string(t.holds) + "/" + std::to_string(t.total) + " " + pairs_what +
              "; the best configuration differs between CPU and GPU for " +
              std::to_string(devices.holds) + "/" + std::to_string(devices.total) +
              " models and compressions";
  return f;
}

// The observations, in the paper's order.
const ObservationRow kObservations[] = {
    {"I", "MACs, accuracy and inference time are not strongly correlated",
     "needs 3 or more models on one platform: add models = [\"resnet18-cifar\", "
     "\"mobilenetv1-cifar\", \"vgg16-cifar\"] to [space]",
     weak_model_correlations},
    {"II", "tuned sparse CIFAR-10 models beat dense; ImageNet ones do not",
     "needs tuned weight-pruned and dense variants: add compress = [\"dense\", \"wp:0.9\"] and "
     "tuning = [\"tuned:120s\"] to [space]",
     sparse_beats_dense_on_cifar},
    {"III", "model size is not strongly correlated with accuracy",
     "needs the measured accuracy of 3 or more models on one platform: add dataset = "
     "[\"fashion-mnist\"] and 3 or more models to [space]",
     size_not_accuracy},
    {"IV", "weight pruning is faster than channel pruning but reaches less of its expected speedup",
     "needs weight- and channel-pruned variants with a dense twin: add compress = [\"dense\", "
     "\"wp:0.9\", \"cp:0.5\"] to [space]",
     weight_vs_channel_pruning},
    {"V", "quantization's speedup varies by hardware platform and data type",
     "needs quantized variants on two platforms or data types, with a dense twin: add compress = "
     "[\"dense\", \"fp16\", \"int8\"] to [space]",
     quantization_varies},
    {"VI", "fp16 has a negligible accuracy impact; calibrated int8 loses more",
     "needs the accuracy of dense, fp16 and int8 variants: add compress = [\"dense\", \"fp16\", "
     "\"int8\"] and dataset = [\"fashion-mnist\"] to [space]",
     fp16_keeps_accuracy},
    {"VII", "spatial pack is the best dense algorithm on CPU (tuned)",
     "needs dense direct, gemm and spatial-pack variants: add conv_algo = [\"direct\", \"gemm\", "
     "\"spatial-pack\"] to [space]",
     spatial_pack_best_dense},
    {"VIII", "direct is the best dense algorithm on GPU (tuned)",
     "needs a GPU study with tuning: tuned dense direct, gemm and winograd variants on a CUDA "
     "GPU; add device = [\"cuda\"], conv_algo = [\"direct\", \"gemm\", \"winograd\"] and "
     "tuning = [\"tuned:120s\"] to [space] and run it on a machine with the GPU",
     direct_best_dense_on_gpu},
    {"IX", "GEMM is the best sparse algorithm on CPU",
     "needs weight-pruned direct, gemm and spatial-pack variants: add compress = [\"dense\", "
     "\"wp:0.9\"] and conv_algo = [\"direct\", \"gemm\", \"spatial-pack\"] to [space]",
     gemm_best_sparse},
    {"X", "pruning rarely reaches its expected speedup",
     "needs pruned variants with a dense twin: add compress = [\"dense\", \"wp:0.9\"] to [space]",
     pruning_below_expected},
    {"XI", "auto-tuning accelerates inference and can change the best algorithm",
     "needs tuned and untuned twins: add tuning = [\"untuned\", \"tuned:120s\"] to [space]",
     tuning_accelerates},
    {"XII", "pruned models see a lower relative speedup when tuned",
     "needs tuned and untuned pruned variants: add compress = [\"dense\", \"wp:0.9\"] and "
     "tuning = [\"untuned\", \"tuned:120s\"] to [space]",
     tuning_helps_pruned_less},
    {"XIII",
     "the more capable platform is generally the faster one, and the best configuration "
     "differs between platforms (CPU and GPU)",
     "needs two platforms sharing models: add threads = [1, 2], isa = [\"native\", "
     "\"scalar\"] or device = [\"cpu\", \"cuda\"] to [space]",
     capable_platform_faster},
};

}  // namespace

std::vector<Observation> observe(const std::vector<Row>& rows) {
  const Results res(rows);
  std::vector<Observation> out;
  for (const ObservationRow& row : kObservations) {
    Finding f = row.check(res);
    if (f.verdict.empty())
      out.push_back({row.id, row.claim, "not testable", row.needs, {}});
    else
      out.push_back({row.id, row.claim, f.verdict, f.detail, std::move(f.evidence)});
  }
  return out;
}

}  // namespace dlas::study
