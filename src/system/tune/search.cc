// The search: survey tuning over all tasks in rounds, each round giving small batches of
// trials to the tasks with the largest expected gain in model latency; candidates from
// random, grid or evolutionary (mutation + crossover ranked by the cost model) search,
// filtered Trimmer-style before they cost a measurement.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "dlas/core/error.h"
#include "dlas/system/tune.h"

namespace dlas::tune {

Strategy parse_strategy(std::string_view s) {
  if (s == "random") return Strategy::kRandom;
  if (s == "grid") return Strategy::kGrid;
  if (s == "evolutionary") return Strategy::kEvolutionary;
  fail(ErrorKind::kUsage, "unknown strategy '", s, "' (expected random|grid|evolutionary)");
}

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::kRandom:
      return "random";
    case Strategy::kGrid:
      return "grid";
    case Strategy::kEvolutionary:
      return "evolutionary";
  }
  return "?";
}

Mode parse_mode(std::string_view s) {
  if (s == "survey") return Mode::kSurvey;
  if (s == "sequential") return Mode::kSequential;
  fail(ErrorKind::kUsage, "unknown tuning mode '", s, "' (expected survey|sequential)");
}

const char* mode_name(Mode m) { return m == Mode::kSequential ? "sequential" : "survey"; }

bool should_stop_early(const std::vector<CurvePoint>& curve, double phi, int window,
                       int min_rounds) {
  if (phi <= 0 || window < 1) return false;
  // Point 0 is the untuned model (the scale of "relative"); the rule judges the tuned
  // points 1.. (after the survey of defaults), so the algorithm selection of point 1 is
  // neither counted as progress nor held against it.
  const int n = static_cast<int>(curve.size());
  if (n - 1 < 1 + std::max(min_rounds, window)) return false;
  const int a = n - 1 - window;
  const double base = curve.front().latency_s;
  const double dt = curve.back().seconds - curve[static_cast<size_t>(a)].seconds;
  if (base <= 0 || dt <= 0) return false;
  // The best latency so far at each end: a noisy re-timing must not look like progress.
  double best_a = INFINITY, best_b = INFINITY;
  for (int i = 1; i < n; ++i) {
    if (i <= a) best_a = std::min(best_a, curve[static_cast<size_t>(i)].latency_s);
    best_b = std::min(best_b, curve[static_cast<size_t>(i)].latency_s);
  }
  const double rate = (best_a - best_b) / base / dt;
  return rate < phi;
}

namespace {

using Clock = std::chrono::steady_clock;
// Sequential mode: a new best must beat the task's best by this share to reset patience.
constexpr double kSequentialMinGain = 0.01;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct TaskState {
  const Task* task = nullptr;
  size_t layer = 0;
  std::set<std::string> seen;                  // knobs_to_string of every candidate measured
  std::vector<std::pair<Knobs, double>> good;  // ok measurements
  std::vector<Knobs> cold;                     // measured cold (or failed)
  double best = INFINITY;
  double default_cost = INFINITY;
  int64_t grid_next = 0;
  double gain_rate = 0.3;  // expected relative improvement of the next batch
  int64_t trials = 0;
  bool exhausted = false;
};

struct LayerState {
  int weight = 1;
  std::vector<size_t> tasks;
  std::string auto_algo;
  double best() const { return best_cost; }
  double best_cost = INFINITY;
};

int hamming(const Knobs& a, const Knobs& b) {
  int d = 0;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    d += it == b.end() || it->second != v;
  }
  return d;
}

class Tuner {
 public:
  Tuner(const std::vector<Task>& tasks, Measurer& m, const TuneOptions& o)
      : tasks_(tasks), m_(m), o_(o), rng_(o.seed), model_(make_cost_model(o.cost_model, o.seed)) {
    std::map<std::string, size_t> layer_index;
    for (const Task& t : tasks_) {
      auto [it, fresh] = layer_index.emplace(t.layer, layers_.size());
      if (fresh) {
        LayerState l;
        l.weight = t.weight;
        if (t.weights)
          l.auto_algo =
              std::string(auto_conv_algorithm(t.problem, t.isa, t.weights->view()).name());
        layers_.push_back(l);
      }
      LayerState& l = layers_[it->second];
      l.weight = std::max(l.weight, t.weight);
      l.tasks.push_back(states_.size());
      TaskState s;
      s.task = &t;
      s.layer = it->second;
      states_.push_back(std::move(s));
    }
    report_.cost_model = model_->name();
  }

  TuneReport run() {
    t0_ = Clock::now();
    // Point 0 of the curve: the untuned model (the auto rule, default knobs).
    if (o_.model_latency) push_untuned();
    // Round 1: every task's default point (the survey's baseline; algorithm selection).
    for (size_t i = 0; i < states_.size() && !budget_hit(); ++i)
      measure(i, states_[i].task->defaults, false);
    retrain();
    if (!o_.model_latency) push_untuned();
    ++report_.rounds;
    push_point(1);
    if (o_.mode == Mode::kSequential) run_sequential();
    while (o_.mode == Mode::kSurvey && report_.stop_reason.empty()) {
      if (budget_hit()) break;
      const int64_t before = report_.trials;
      round();
      push_point(static_cast<int>(++report_.rounds));
      if (report_.stop_reason.empty() && budget_hit()) break;
      if (report_.stop_reason.empty() && report_.trials == before)
        report_.stop_reason = "exhausted";
      if (!report_.stop_reason.empty()) break;
      if (o_.latency_goal_s > 0 && report_.curve.back().latency_s <= o_.latency_goal_s)
        report_.stop_reason = "goal";
      else if (should_stop_early(report_.curve, o_.phi, o_.stop_window, o_.stop_min_rounds))
        report_.stop_reason = "phi";
    }
    if (o_.confirm_rounds > 0 && report_.trials > 0) {
      confirm();
      push_point(static_cast<int>(++report_.rounds));  // the confirmed per-layer choices
    }
    if (o_.model_latency) {
      // The choices of the fastest whole model timed, the untuned and the confirmed ones
      // included: layers timed alone do not always compose (mobilenetv1-cifar at 2
      // threads: confirmed per-layer bests 7% slower than untuned, in the tuner's paired
      // timing and in `dlas bench` alike).
      report_.choices = best_choices_;
      report_.tuned_latency_s = std::isfinite(best_latency_) ? best_latency_ : 0;
    } else {
      // No whole-model timing (the sum of layer bests is no judge of composition): the
      // last point's choices, confirmed when the confirmation ran.
      report_.choices = confirmed_choices_;
      report_.tuned_latency_s = report_.curve.empty() ? 0 : report_.curve.back().latency_s;
    }
    report_.seconds = since(t0_);
    return std::move(report_);
  }

 private:
  LayerChoices best_choices_;
  LayerChoices confirmed_choices_;  // the choices of the last curve point
  double best_latency_ = INFINITY;

  bool budget_hit() {
    if (!report_.stop_reason.empty()) return true;
    if (o_.budget_trials > 0 && report_.trials >= o_.budget_trials) report_.stop_reason = "trials";
    if (o_.budget_seconds > 0 && since(t0_) >= o_.budget_seconds) report_.stop_reason = "seconds";
    return !report_.stop_reason.empty();
  }

  // The whole-model latency of c; +inf when the timing threw (after the first).
  double timed(const LayerChoices& c) {
    const auto t = Clock::now();
    double l = INFINITY;
    try {
      l = o_.model_latency(c);
    } catch (const std::exception& e) {
      if (report_.curve.empty()) throw;  // the untuned model itself
      if (report_.retime_failures++ == 0) report_.retime_error = e.what();
    }
    report_.retime_seconds += since(t);
    return l;
  }
  double latency(const LayerChoices& c) {
    if (o_.model_latency) return timed(c);
    double s = 0;
    for (const LayerState& l : layers_) s += l.weight * (std::isfinite(l.best()) ? l.best() : 0);
    return s;
  }
  double untuned_latency() {
    if (o_.model_latency) return timed(LayerChoices{});
    double s = 0;
    for (const LayerState& l : layers_) {
      double c = INFINITY;
      for (size_t i : l.tasks)
        if (states_[i].task->algo == l.auto_algo) c = states_[i].default_cost;
      if (!std::isfinite(c))
        for (size_t i : l.tasks) c = std::min(c, states_[i].default_cost);
      s += l.weight * (std::isfinite(c) ? c : 0);
    }
    return s;
  }

  void push_untuned() {
    CurvePoint p;
    p.latency_s = untuned_latency();
    report_.untuned_latency_s = p.latency_s;
    best_latency_ = p.latency_s;  // empty choices: every layer on the auto rule's defaults
    report_.curve.push_back(p);
    if (o_.on_round) o_.on_round(p, 0);
  }

  void push_point(int round) {
    const LayerChoices c = choices_from_best(tasks_, best_records(report_.records));
    confirmed_choices_ = c;
    CurvePoint p;
    p.latency_s = latency(c);
    if (!std::isfinite(p.latency_s)) return;  // a timing that failed: no point
    if (p.latency_s < best_latency_) best_latency_ = p.latency_s, best_choices_ = c;
    p.seconds = since(t0_);
    p.trials = report_.trials;
    report_.curve.push_back(p);
    if (o_.on_round) o_.on_round(p, round);
  }

  void add_record(const Task& t, const Knobs& k, const MeasureResult& r) {
    Record rec;
    rec.task = t.key;
    rec.algo = t.algo;
    rec.knobs = k;
    rec.costs = r.ok() ? r.costs : std::vector<double>{};
    rec.error = r.ok() ? std::string() : r.error;
    rec.timestamp = now_iso8601();
    rec.version = dlas_version();
    rec.hardware = hardware_id(t.isa, t.threads);
    report_.records.push_back(rec);
    if (o_.on_record) o_.on_record(rec);
  }

  // The confirmation (TuneOptions::confirm_rounds): per layer, its finalists timed again,
  // interleaved; the records pool with the search's (best_records).
  void confirm() {
    const auto t = Clock::now();
    for (const LayerState& l : layers_) {
      struct Finalist {
        double cost;
        size_t task;
        Knobs knobs;
      };
      std::vector<Finalist> all;
      for (size_t i : l.tasks)
        for (const auto& [k, c] : states_[i].good) all.push_back({c, i, k});
      std::stable_sort(all.begin(), all.end(),
                       [](const Finalist& a, const Finalist& b) { return a.cost < b.cost; });
      std::vector<Finalist> fin;
      std::set<std::string> in;
      auto add = [&](const Finalist& f) {
        if (in.insert(states_[f.task].task->key + "\n" + knobs_to_string(f.knobs)).second)
          fin.push_back(f);
      };
      for (const Finalist& f : all) {
        if (static_cast<int>(fin.size()) >= std::max(1, o_.confirm_finalists)) break;
        add(f);
      }
      for (size_t i : l.tasks)  // the untuned choice always competes
        if (states_[i].task->algo == l.auto_algo && std::isfinite(states_[i].default_cost))
          add({states_[i].default_cost, i, states_[i].task->defaults});
      if (fin.size() < 2) continue;
      std::vector<const Task*> tasks;
      std::vector<Knobs> knobs;
      for (const Finalist& f : fin) tasks.push_back(states_[f.task].task), knobs.push_back(f.knobs);
      std::vector<MeasureResult> r;
      try {
        r = m_.measure_interleaved(tasks, knobs, o_.confirm_rounds);
      } catch (const std::exception&) {
        continue;  // the search's own records stand
      }
      for (size_t j = 0; j < fin.size() && j < r.size(); ++j) {
        if (!r[j].ok()) continue;  // failed now, fine before: keep the search's record
        add_record(*tasks[j], knobs[j], r[j]);
        ++report_.confirmed;
      }
    }
    report_.confirm_seconds = since(t);
  }

  // Measures one candidate; returns its cost (inf on failure).
  double measure(size_t i, const Knobs& k, bool count_cold) {
    TaskState& s = states_[i];
    const Task& t = *s.task;
    s.seen.insert(knobs_to_string(k));
    const MeasureResult r = measure_safely(m_, t, k, o_.timeout_seconds);
    add_record(t, k, r);
    ++report_.trials;
    ++s.trials;
    report_.measure_seconds += r.seconds;
    const double c = r.ok() ? r.cost() : INFINITY;
    if (!r.ok()) {
      ++report_.failures;
      s.cold.push_back(k);
      if (count_cold) report_.cold_seconds += r.seconds;
      return c;
    }
    // Cold: slower than the task's best so far by the margin (Trimmer's definition: the
    // candidate could not have become the best).
    const double ref = std::min(s.best, layers_[s.layer].best());
    if (count_cold && std::isfinite(ref) && c > ref * (1 + o_.cold_margin)) {
      report_.cold_seconds += r.seconds;
      s.cold.push_back(k);
    }
    if (&k == &t.defaults || s.good.empty()) s.default_cost = std::min(s.default_cost, c);
    s.good.push_back({k, c});
    x_.push_back(candidate_features(t, k));
    y_.push_back(std::log(std::max(c, 1e-12)));
    group_.push_back(static_cast<int>(s.layer));  // ranking matters within a layer
    s.best = std::min(s.best, c);
    LayerState& l = layers_[s.layer];
    l.best_cost = std::min(l.best_cost, c);
    return c;
  }

  void retrain() {
    // The model's pairwise ranking accuracy (within tasks) on a held-out fifth of the
    // measurements, from a model fitted on the rest: the batches the search picks are the
    // model's own favourites, too alike to judge it by.
    if (x_.size() >= 20) {
      std::vector<std::vector<float>> xtr, xte;
      std::vector<double> ytr, yte;
      std::vector<int> gte;
      for (size_t i = 0; i < x_.size(); ++i) {
        if (i % 5 == 2) {
          xte.push_back(x_[i]);
          yte.push_back(y_[i]);
          gte.push_back(group_[i]);
        } else {
          xtr.push_back(x_[i]);
          ytr.push_back(y_[i]);
        }
      }
      auto probe = make_cost_model(o_.cost_model, o_.seed);
      probe->fit(xtr, ytr);
      accuracy_ = ranking_accuracy(probe->predict(xte), yte, gte);
      report_.final_ranking_accuracy = accuracy_;
    }
    if (x_.size() >= 2) {
      model_->fit(x_, y_);
      trained_rows_ = x_.size();
    }
  }

  // Exploration rate: everything explores while the model ranks no better than chance,
  // down to 5% as its pairwise ranking accuracy approaches 1.
  double exploration() const {
    if (trained_rows_ == 0) return 1.0;
    return std::clamp(2.0 * (1.0 - accuracy_), 0.05, 1.0);
  }

  Knobs random_point(const Task& t) {
    Knobs k;
    for (const KnobSpec& spec : t.space.knobs) {
      std::uniform_int_distribution<size_t> d(0, spec.values.size() - 1);
      k[spec.name] = spec.values[d(rng_)];
    }
    return k;
  }
  Knobs mutate(const Task& t, Knobs k) {
    if (t.space.knobs.empty()) return k;
    std::uniform_int_distribution<size_t> which(0, t.space.knobs.size() - 1);
    const int changes = std::bernoulli_distribution(0.3)(rng_) ? 2 : 1;
    for (int c = 0; c < changes; ++c) {
      const KnobSpec& spec = t.space.knobs[which(rng_)];
      std::uniform_int_distribution<size_t> d(0, spec.values.size() - 1);
      k[spec.name] = spec.values[d(rng_)];
    }
    return k;
  }
  Knobs crossover(const Task& t, const Knobs& a, const Knobs& b) {
    Knobs k;
    std::bernoulli_distribution coin(0.5);
    for (const KnobSpec& spec : t.space.knobs) {
      const Knobs& from = coin(rng_) ? a : b;
      auto it = from.find(spec.name);
      k[spec.name] = it != from.end() ? it->second : spec.values.front();
    }
    return k;
  }
  bool fresh(const TaskState& s, const Knobs& k) const { return !s.seen.count(knobs_to_string(k)); }

  // Raw candidates of a strategy (unseen, distinct), up to n.
  std::vector<Knobs> propose(TaskState& s, size_t n) {
    const Task& t = *s.task;
    std::vector<Knobs> out;
    std::set<std::string> picked;
    auto add = [&](const Knobs& k) {
      if (out.size() >= n || !fresh(s, k)) return;
      if (picked.insert(knobs_to_string(k)).second) out.push_back(k);
    };
    const int64_t size = t.space.size();
    if (o_.strategy == Strategy::kGrid) {
      while (out.size() < n && s.grid_next < size) add(t.space.point(s.grid_next++));
      return out;
    }
    if (o_.strategy == Strategy::kRandom) {
      for (int tries = 0; out.size() < n && tries < 40 * static_cast<int>(n); ++tries)
        add(random_point(t));
      return out;
    }
    // Evolutionary: parents are the best measured points; children by mutation and
    // crossover, plus some random points; the cost model ranks a population of them.
    std::vector<std::pair<Knobs, double>> parents = s.good;
    std::sort(parents.begin(), parents.end(),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    if (parents.size() > 6) parents.resize(6);
    if (parents.empty()) parents.push_back({t.defaults, 0});
    std::vector<Knobs> pop;
    std::set<std::string> in_pop;
    const size_t pop_size = std::max<size_t>(48, 8 * n);
    std::uniform_int_distribution<size_t> pick(0, parents.size() - 1);
    std::uniform_real_distribution<double> u(0, 1);
    for (size_t tries = 0; pop.size() < pop_size && tries < 6 * pop_size; ++tries) {
      const double r = u(rng_);
      Knobs k;
      if (r < 0.6)
        k = mutate(t, parents[pick(rng_)].first);
      else if (r < 0.85)
        k = mutate(t, crossover(t, parents[pick(rng_)].first, parents[pick(rng_)].first));
      else
        k = random_point(t);
      if (!fresh(s, k)) continue;
      if (in_pop.insert(knobs_to_string(k)).second) pop.push_back(std::move(k));
    }
    if (pop.empty()) return out;
    std::vector<std::vector<float>> xs;
    for (const Knobs& k : pop) xs.push_back(candidate_features(t, k));
    const std::vector<double> pred =
        trained_rows_ ? model_->predict(xs) : std::vector<double>(pop.size(), 0);
    std::vector<size_t> order(pop.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return pred[a] < pred[b]; });
    for (size_t i : order) add(pop[i]);
    return out;
  }

  // Trimmer's filter: true when the candidate is predicted cold.
  bool is_cold(const TaskState& s, const Knobs& k) {
    if (!o_.filter_cold || trained_rows_ < 8) return false;
    if (std::uniform_real_distribution<double>(0, 1)(rng_) < exploration()) return false;
    const Task& t = *s.task;
    const double ref = std::min(s.best, layers_[s.layer].best());
    if (std::isfinite(ref)) {
      const double pred = model_->predict({candidate_features(t, k)})[0];
      if (pred > std::log(ref * (1 + o_.cold_margin))) return true;
    }
    const int near = static_cast<int>(t.space.knobs.size()) / 4;
    if (near > 0)
      for (const Knobs& c : s.cold)
        if (hamming(c, k) <= near) return true;
    return false;
  }

  // Up to n fresh candidates of the strategy; those predicted cold are skipped and replaced
  // by fresh samples. Empty: nothing left to propose (the task is marked exhausted when its
  // space is used up).
  std::vector<Knobs> next_batch(TaskState& s, size_t n) {
    std::vector<Knobs> batch;
    for (int attempt = 0; batch.size() < n && attempt < 8; ++attempt) {
      std::vector<Knobs> cand = propose(s, (n - batch.size()) * (attempt == 0 ? 1 : 2));
      if (cand.empty()) break;
      for (Knobs& k : cand) {
        if (batch.size() >= n) break;
        s.seen.insert(knobs_to_string(k));  // proposed once, whatever the verdict
        if (o_.strategy != Strategy::kGrid && is_cold(s, k)) {
          ++report_.skipped_cold;
          continue;
        }
        batch.push_back(std::move(k));
      }
    }
    if (batch.empty() && (static_cast<int64_t>(s.seen.size()) >= s.task->space.size() ||
                          (o_.strategy == Strategy::kGrid && s.grid_next >= s.task->space.size())))
      s.exhausted = true;
    return batch;
  }

  // Sequential per-layer tuning (Mode::kSequential): the layers in graph order, each
  // layer's tasks one after another, each task to its own stop; a checkpoint of the curve
  // after every layer. Every default point is already measured (round 1).
  void run_sequential() {
    int64_t limit = o_.task_trials;
    if (limit <= 0)
      limit = o_.budget_trials > 0
                  ? std::max<int64_t>(std::max(1, o_.batch),
                                      o_.budget_trials / static_cast<int64_t>(states_.size()))
                  : 64;
    const int patience = std::max(1, o_.patience);
    const size_t want = static_cast<size_t>(std::max(1, o_.batch));
    for (const LayerState& l : layers_) {
      for (size_t i : l.tasks) {
        TaskState& s = states_[i];
        int since_best = 0;
        size_t since_fit = 0;
        while (!budget_hit() && s.trials < limit && since_best < patience && !s.exhausted) {
          const size_t n = static_cast<size_t>(std::min<int64_t>(want, limit - s.trials));
          const std::vector<Knobs> batch = next_batch(s, n);
          if (batch.empty()) break;
          for (const Knobs& k : batch) {
            if (budget_hit() || since_best >= patience) break;
            const double before = s.best;
            const double c = measure(i, k, true);
            since_best = c < before * (1 - kSequentialMinGain) ? 0 : since_best + 1;
            ++since_fit;
          }
          // Retrain as often as a survey round would (every ~16 trials), not every batch:
          // the baseline should not pay for more model fits than survey does.
          if (since_fit >= 16) retrain(), since_fit = 0;
        }
        if (since_fit > 0) retrain();
        if (!report_.stop_reason.empty()) break;
      }
      if (!report_.stop_reason.empty()) break;
      push_point(static_cast<int>(++report_.rounds));
      if (o_.latency_goal_s > 0 && report_.curve.back().latency_s <= o_.latency_goal_s) {
        report_.stop_reason = "goal";
        break;
      }
    }
    if (report_.stop_reason.empty()) report_.stop_reason = "done";
    // Stopped by the budget in the middle of a layer: the last checkpoint is the end.
    else if (report_.curve.back().trials != report_.trials)
      push_point(static_cast<int>(++report_.rounds));
  }

  // Expected gain in model latency (seconds) of a batch on this task.
  double gain(const TaskState& s) const {
    const LayerState& l = layers_[s.layer];
    if (s.exhausted || !std::isfinite(l.best())) return 0;
    const double target = s.best * (1 - s.gain_rate);
    const double direct = std::max(0.0, l.best() - target);
    // A floor so no task starves forever (its schedule may unlock a better algorithm).
    return l.weight * (direct + 0.02 * s.gain_rate * l.best());
  }

  void round() {
    const size_t per_round = o_.round_trials > 0 ? static_cast<size_t>(o_.round_trials)
                                                 : std::max<size_t>(16, 4 * layers_.size());
    const size_t want = static_cast<size_t>(std::max(1, o_.batch));
    // Batches go one at a time to the task with the largest expected gain, whose gain then
    // halves (diminishing returns), so heavy layers get more and the rest still get some.
    std::vector<double> g(states_.size());
    for (size_t i = 0; i < states_.size(); ++i) g[i] = gain(states_[i]);
    std::vector<size_t> batches(states_.size(), 0), order;
    for (size_t b = 0; b < std::max<size_t>(1, per_round / want); ++b) {
      const size_t i = static_cast<size_t>(std::max_element(g.begin(), g.end()) - g.begin());
      if (g.empty() || g[i] <= 0) break;
      if (batches[i]++ == 0) order.push_back(i);
      g[i] *= 0.5;
    }
    for (size_t i : order) {
      if (budget_hit()) break;
      TaskState& s = states_[i];
      const size_t n = batches[i] * want;
      const std::vector<Knobs> batch = next_batch(s, n);
      if (batch.empty()) continue;
      const double before = s.best;
      for (const Knobs& k : batch) {
        if (budget_hit()) break;
        measure(i, k, true);
      }
      const double improved =
          std::isfinite(before) && std::isfinite(s.best) ? (before - s.best) / before : 0.0;
      s.gain_rate = std::clamp(0.5 * s.gain_rate + 0.5 * improved, 0.01, 0.5);
    }
    retrain();
  }

  const std::vector<Task>& tasks_;
  Measurer& m_;
  TuneOptions o_;
  std::mt19937_64 rng_;
  std::unique_ptr<CostModel> model_;
  std::vector<TaskState> states_;
  std::vector<LayerState> layers_;
  std::vector<std::vector<float>> x_;
  std::vector<double> y_;
  std::vector<int> group_;
  size_t trained_rows_ = 0;
  double accuracy_ = 0.5;
  TuneReport report_;
  Clock::time_point t0_;
};

}  // namespace

TuneReport tune(const std::vector<Task>& tasks, Measurer& measurer, const TuneOptions& options) {
  Tuner t(tasks, measurer, options);
  return t.run();
}

}  // namespace dlas::tune
