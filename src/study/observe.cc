// The paper's 13 observations (DLAS Sec. 6) checked on a results database. Each check
// says which rows it needs; when the study has none it is "not testable" and says what
// dimension (and which issue) would make it testable.
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

// Majority vote over the cases; a tie is "mixed".
std::string verdict_of(int holds, int total) {
  if (total == 0) return "not testable";
  if (2 * holds > total) return "holds";
  if (2 * holds == total) return "mixed";
  return "fails";
}
std::string count_of(int holds, int total, const std::string& what) {
  return "holds for " + std::to_string(holds) + "/" + std::to_string(total) + " " + what;
}

Observation untestable(const std::string& id, const std::string& claim, const std::string& why) {
  return {id, claim, "not testable", why, {}};
}

// The paper's three dense primitives (Winograd, depthwise and vendor libraries are
// dlas's additions): VII and IX compare only these.
const std::set<std::string> kPaperAlgorithms = {"direct", "gemm", "spatial-pack"};

// Best of the paper's primitives for one compression in a context; nullptr if none.
const Variant* best_paper_algo(const Context& c, const std::string& compress_prefix) {
  return c.fastest([&](const auto& k) {
    return kPaperAlgorithms.count(k.first) && k.second.rfind(compress_prefix, 0) == 0;
  });
}

Observation algorithm_winner(const std::string& id, const std::string& claim,
                             const std::vector<Context>& contexts, const std::string& winner,
                             const std::string& compress_prefix, const std::string& needs) {
  // Prefer tuned contexts (the paper's claim); fall back to untuned ones, saying so.
  int holds = 0, total = 0;
  bool any_tuned = false;
  for (const Context& c : contexts) any_tuned = any_tuned || is_tuned(c.schedule);
  Observation o{id, claim, "", "", {}};
  for (const Context& c : contexts) {
    if (is_tuned(c.schedule) != any_tuned) continue;
    std::set<std::string> present;
    for (const auto& [k, v] : c.variants)
      if (kPaperAlgorithms.count(k.first) && k.second.rfind(compress_prefix, 0) == 0)
        present.insert(k.first);
    if (present.size() < 2 || !present.count(winner)) continue;
    const Variant* best = best_paper_algo(c, compress_prefix);
    ++total;
    if (best->algorithm == winner) ++holds;
    o.evidence.push_back(c.platform + " / " + c.model + ": " + best->algorithm + " (" +
                         fmt(best->median_ms, 3) + " ms)");
  }
  if (total == 0) return untestable(id, claim, needs);
  o.verdict = verdict_of(holds, total);
  o.detail = count_of(holds, total, "contexts") +
             (any_tuned ? " (tuned schedules)"
                        : " (untuned default schedules only: the paper's claim is for tuned "
                          "code, issue 8)");
  return o;
}

}  // namespace

std::vector<Observation> observe(const std::vector<Row>& rows) {
  const std::vector<Context> contexts = analysis::contexts_of(rows);
  std::vector<Observation> out;

  // I: MACs, accuracy and latency not strongly correlated (|Spearman| < 0.8).
  {
    Observation o{"I", "MACs, accuracy and inference time are not strongly correlated", "", "", {}};
    int holds = 0, total = 0;
    for (const auto& c : analysis::correlations(contexts)) {
      const bool relevant = (c.x == "macs" && (c.y == "latency_ms" || c.y == "accuracy")) ||
                            (c.x == "accuracy" && c.y == "latency_ms");
      if (!relevant || std::isnan(c.spearman)) continue;
      ++total;
      if (std::fabs(c.spearman) < 0.8) ++holds;
      o.evidence.push_back(c.platform + ": spearman(" + c.x + ", " + c.y + ") = " +
                           fmt(c.spearman, 2) + " over " + std::to_string(c.n) + " models");
    }
    if (total == 0) {
      out.push_back(untestable(o.id, o.claim, "needs 3 or more models on one platform"));
    } else {
      o.verdict = verdict_of(holds, total);
      o.detail = count_of(holds, total, "model-level correlations (strong: |rho| >= 0.8)");
      out.push_back(o);
    }
  }

  // II: tuned sparse CIFAR models faster than dense; not ImageNet ones.
  {
    Observation o{
        "II", "tuned sparse CIFAR-10 models beat dense; ImageNet ones do not", "", "", {}};
    int holds = 0, total = 0;
    for (const Context& c : contexts) {
      if (!is_tuned(c.schedule)) continue;
      const Variant* dense = c.fastest([](const auto& k) { return k.second == "dense"; });
      const Variant* sparse =
          c.fastest([](const auto& k) { return k.second.rfind("wp:", 0) == 0; });
      if (!dense || !sparse) continue;
      const bool faster = sparse->median_ms < dense->median_ms;
      ++total;
      if (faster == is_cifar(c.model)) ++holds;
      o.evidence.push_back(c.model + ": sparse " + fmt(sparse->median_ms, 3) + " vs dense " +
                           fmt(dense->median_ms, 3) + " ms");
    }
    if (total == 0) {
      out.push_back(untestable(o.id, o.claim,
                               "needs tuned weight-pruned and dense variants (issues 5 and 8)"));
    } else {
      o.verdict = verdict_of(holds, total);
      o.detail = count_of(holds, total, "models");
      out.push_back(o);
    }
  }

  // III: model size not strongly correlated with accuracy.
  {
    Observation o{"III", "model size is not strongly correlated with accuracy", "", "", {}};
    int holds = 0, total = 0;
    for (const auto& c : analysis::correlations(contexts)) {
      if (c.x != "params" || c.y != "accuracy" || std::isnan(c.spearman)) continue;
      ++total;
      if (std::fabs(c.spearman) < 0.8) ++holds;
      o.evidence.push_back(c.platform + ": spearman(params, accuracy) = " + fmt(c.spearman, 2));
    }
    if (total == 0) {
      out.push_back(untestable(o.id, o.claim,
                               "needs measured accuracy ([space].dataset) of 3 or more models "
                               "on one platform"));
    } else {
      o.verdict = verdict_of(holds, total);
      o.detail = count_of(holds, total, "platforms");
      out.push_back(o);
    }
  }

  // IV: weight pruning faster than channel pruning but a lower share of its expected speedup.
  {
    Observation o{"IV",
                  "weight pruning is faster than channel pruning but reaches less of its "
                  "expected speedup",
                  "",
                  "",
                  {}};
    int holds = 0, total = 0;
    const auto sps = analysis::speedups(contexts);
    for (const Context& c : contexts) {
      const analysis::Speedup *wp = nullptr, *cp = nullptr;
      for (const auto& s : sps) {
        if (s.context != &c) continue;
        const auto better = [](const analysis::Speedup* a, const analysis::Speedup& b) {
          return !a || b.ms < a->ms;
        };
        if (s.compress.rfind("wp:", 0) == 0 && better(wp, s)) wp = &s;
        if (s.compress.rfind("cp:", 0) == 0 && better(cp, s)) cp = &s;
      }
      if (!wp || !cp) continue;
      ++total;
      const bool h = wp->ms < cp->ms && wp->achieved / wp->expected < cp->achieved / cp->expected;
      if (h) ++holds;
      o.evidence.push_back(c.platform + " / " + c.model + ": wp " + fmt(wp->ms, 3) + " ms (" +
                           fmt(100 * wp->achieved / wp->expected, 0) + "% of expected), cp " +
                           fmt(cp->ms, 3) + " ms (" + fmt(100 * cp->achieved / cp->expected, 0) +
                           "%)");
    }
    if (total == 0) {
      out.push_back(
          untestable(o.id, o.claim, "needs weight- and channel-pruned variants (issue 5)"));
    } else {
      o.verdict = verdict_of(holds, total);
      o.detail = count_of(holds, total, "contexts");
      out.push_back(o);
    }
  }

  // V: quantization's speedup varies by platform and data type.
  {
    Observation o{
        "V", "quantization's speedup varies by hardware platform and data type", "", "", {}};
    std::map<std::string, double> best;  // "platform | dtype" -> best speedup over dense
    for (const auto& s : analysis::speedups(contexts)) {
      if (!is_quantized(s.compress) || is_pruned(s.compress)) continue;
      const std::string key = s.context->platform + " | " + s.compress;
      best[key] = std::max(best[key], s.achieved);
    }
    if (best.size() < 2) {
      out.push_back(untestable(
          o.id, o.claim, "needs quantized variants on two platforms or data types (issue 6)"));
    } else {
      double lo = 1e30, hi = 0;
      for (const auto& [k, v] : best) {
        lo = std::min(lo, v), hi = std::max(hi, v);
        o.evidence.push_back(k + ": best speedup " + fmt(v, 2) + "x");
      }
      o.verdict = hi > 1.25 * lo ? "holds" : "fails";
      o.detail = "best speedups range " + fmt(lo, 2) + "x to " + fmt(hi, 2) +
                 "x (varies: a spread over 25%)";
      out.push_back(o);
    }
  }

  // VI: fp16 negligible accuracy impact; int8 loses more.
  {
    Observation o{
        "VI", "fp16 has a negligible accuracy impact; calibrated int8 loses more", "", "", {}};
    int holds = 0, total = 0;
    for (const Context& c : contexts) {
      const Variant* dense = c.fastest([](const auto& k) { return k.second == "dense"; });
      if (!dense || !dense->has_accuracy) continue;
      double fp16 = NAN, int8 = NAN;
      for (const auto& [k, v] : c.variants) {
        if (!v.has_accuracy) continue;
        if (k.second == "fp16") fp16 = dense->accuracy - v.accuracy;
        if (k.second.rfind("int8", 0) == 0) int8 = dense->accuracy - v.accuracy;
      }
      if (std::isnan(fp16) || std::isnan(int8)) continue;
      ++total;
      if (std::fabs(fp16) < 0.005 && int8 >= fp16) ++holds;
      o.evidence.push_back(c.model + ": fp16 loses " + fmt(100 * fp16, 2) + " points, int8 " +
                           fmt(100 * int8, 2));
    }
    if (total == 0) {
      out.push_back(untestable(o.id, o.claim,
                               "needs accuracy of dense, fp16 and int8 variants "
                               "([space].dataset)"));
    } else {
      o.verdict = verdict_of(holds, total);
      o.detail = count_of(holds, total, "models");
      out.push_back(o);
    }
  }

  out.push_back(algorithm_winner("VII", "spatial pack is the best dense algorithm on CPU (tuned)",
                                 contexts, "spatial-pack", "dense",
                                 "needs dense direct, gemm and spatial-pack variants"));
  out.push_back(untestable("VIII", "direct is the best dense algorithm on GPU (tuned)",
                           "dlas has no GPU backend yet: no GPU platform in the data"));
  out.push_back(algorithm_winner("IX", "GEMM is the best sparse algorithm on CPU", contexts, "gemm",
                                 "wp:",
                                 "needs weight-pruned direct, gemm and spatial-pack variants "
                                 "(issue 5)"));

  // X: pruning rarely reaches its expected speedup (here: under half of the expected).
  {
    Observation o{"X", "pruning rarely reaches its expected speedup", "", "", {}};
    int holds = 0, total = 0;
    for (const auto& s : analysis::speedups(contexts)) {
      if (!is_pruned(s.compress)) continue;
      ++total;
      if (s.achieved < 0.5 * s.expected) ++holds;
      o.evidence.push_back(s.context->model + " " + s.compress + " " + s.algorithm + ": " +
                           fmt(s.achieved, 2) + "x of " + fmt(s.expected, 2) + "x");
    }
    if (total == 0) {
      out.push_back(untestable(o.id, o.claim, "needs pruned variants (issue 5)"));
    } else {
      o.verdict = verdict_of(holds, total);
      o.detail = count_of(holds, total, "pruned variants (below half the expected speedup)");
      out.push_back(o);
    }
  }

  // XI and XII: tuned vs untuned twins (same platform apart from the schedule).
  {
    Observation xi{
        "XI", "auto-tuning accelerates inference and can change the best algorithm", "", "", {}};
    Observation xii{"XII", "pruned models see a lower relative speedup when tuned", "", "", {}};
    std::map<std::string, const Context*> untuned;
    auto strip = [](const Context& c) { return analysis::untuned_twin_key(c); };
    for (const Context& c : contexts)
      if (!is_tuned(c.schedule)) untuned[strip(c)] = &c;
    int xi_h = 0, xi_t = 0, xii_h = 0, xii_t = 0;
    for (const Context& c : contexts) {
      if (!is_tuned(c.schedule)) continue;
      auto it = untuned.find(strip(c));
      if (it == untuned.end()) continue;
      const Context& u = *it->second;
      const Variant* bt = c.fastest([](const auto& k) { return k.second == "dense"; });
      const Variant* bu = u.fastest([](const auto& k) { return k.second == "dense"; });
      if (bt && bu) {
        ++xi_t;
        if (bt->median_ms < bu->median_ms) ++xi_h;
        xi.evidence.push_back(c.model + ": tuned " + bt->algorithm + " " + fmt(bt->median_ms, 3) +
                              " ms vs untuned " + bu->algorithm + " " + fmt(bu->median_ms, 3) +
                              " ms");
        const Variant* pt = c.fastest([](const auto& k) { return is_pruned(k.second); });
        const Variant* pu = u.fastest([](const auto& k) { return is_pruned(k.second); });
        if (pt && pu) {
          ++xii_t;
          const double rel_t = bt->median_ms / pt->median_ms, rel_u = bu->median_ms / pu->median_ms;
          if (rel_t < rel_u) ++xii_h;
          xii.evidence.push_back(c.model + ": pruned speedup tuned " + fmt(rel_t, 2) +
                                 "x vs untuned " + fmt(rel_u, 2) + "x");
        }
      }
    }
    if (xi_t == 0) {
      out.push_back(untestable(xi.id, xi.claim, "needs tuned and untuned twins (issue 8)"));
    } else {
      xi.verdict = verdict_of(xi_h, xi_t);
      xi.detail = count_of(xi_h, xi_t, "models (tuned faster)");
      out.push_back(xi);
    }
    if (xii_t == 0) {
      out.push_back(untestable(xii.id, xii.claim,
                               "needs tuned and untuned pruned variants (issues 5 and 8)"));
    } else {
      xii.verdict = verdict_of(xii_h, xii_t);
      xii.detail = count_of(xii_h, xii_t, "models");
      out.push_back(xii);
    }
  }

  // XIII: the more capable platform is generally faster: between every two platforms
  // (CPU, ISA path, threads; same schedule) sharing models, one wins most of them.
  {
    Observation o{"XIII", "the more capable platform is generally the faster one", "", "", {}};
    std::map<std::string, std::map<std::string, double>> best;  // platform -> model -> ms
    for (const Context& c : contexts) {
      const Variant* b = c.fastest([](const auto& k) { return k.second == "dense"; });
      if (!b) continue;
      const std::string m =
          c.model + "|" + std::to_string(c.batch) + "|" + std::to_string(c.opt_level);
      auto& slot = best[c.platform];
      if (!slot.count(m) || b->median_ms < slot[m]) slot[m] = b->median_ms;
    }
    int holds = 0, total = 0;
    for (auto a = best.begin(); a != best.end(); ++a)
      for (auto b = std::next(a); b != best.end(); ++b) {
        int wins_a = 0, shared = 0;
        for (const auto& [m, ms] : a->second) {
          auto it = b->second.find(m);
          if (it == b->second.end()) continue;
          ++shared;
          if (ms < it->second) ++wins_a;
        }
        if (shared == 0) continue;
        ++total;
        const int top = std::max(wins_a, shared - wins_a);
        if (4 * top >= 3 * shared) ++holds;
        o.evidence.push_back((wins_a * 2 >= shared ? a->first : b->first) + " faster than " +
                             (wins_a * 2 >= shared ? b->first : a->first) + " on " +
                             std::to_string(top) + "/" + std::to_string(shared) + " models");
      }
    if (total == 0) {
      out.push_back(untestable(o.id, o.claim,
                               "needs two platforms (CPUs, ISA paths or thread counts) sharing "
                               "models"));
    } else {
      o.verdict = verdict_of(holds, total);
      o.detail = count_of(holds, total,
                          "platform pairs (one platform faster on at least 3/4 of the models)");
      out.push_back(o);
    }
  }
  return out;
}

}  // namespace dlas::study
