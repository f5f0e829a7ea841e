// `dlas explore`'s search (dlas/study/explore.h): latency first, accuracy raced on growing
// samples with paired confidence bounds, fine-tuning only where it can still pay, a short
// tune of the front, and a final interleaved comparison.
#include "dlas/study/explore.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include "child.h"
#include "dlas/core/error.h"
#include "dlas/core/file.h"
#include "dlas/core/progress.h"
#include "dlas/data/dataset.h"
#include "dlas/hw/isa.h"
#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/compress_spec.h"
#include "dlas/optimize/prune_sweep.h"
#include "dlas/study/runner.h"
#include "dlas/study/store.h"
#include "dlas/system/loader.h"
#include "dlas/system/peer_executor.h"
#include "explore_internal.h"
#include "explore_store.h"

namespace dlas::study {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// --- statistics ------------------------------------------------------------------------------

DifferenceBound paired_difference_bound(int64_t plus, int64_t minus, int64_t n, int64_t population,
                                        double z) {
  DifferenceBound b;
  if (n <= 0) {
    b.low = -1;
    b.high = 1;
    return b;
  }
  const double nn = static_cast<double>(n);
  b.estimate = static_cast<double>(plus - minus) / nn;
  // Sample variance of the {-1, 0, +1} differences with one extra disagreement each way.
  const double m = nn + 2;
  const double mean = static_cast<double>(plus - minus) / m;
  const double second = static_cast<double>(plus + minus + 2) / m;
  const double var = std::max(0.0, second - mean * mean) * m / (m - 1);
  const double fpc =
      population > 1 && n < population
          ? std::sqrt(static_cast<double>(population - n) / static_cast<double>(population - 1))
          : 0.0;
  const double half = z * std::sqrt(var / nn) * fpc;
  b.low = b.estimate - half;
  b.high = b.estimate + half;
  return b;
}

bool explore_dominates(double b_ms, int64_t b_bytes, double a_ms, int64_t a_bytes,
                       const DifferenceBound& b_minus_a) {
  return b_ms > 0 && a_ms > 0 && b_ms <= 0.9 * a_ms && b_bytes >= 0 && a_bytes >= 0 &&
         b_bytes <= a_bytes && b_minus_a.low >= 0;
}

int explore_longer_pick(const std::vector<LongerCandidate>& levels, double max_drop,
                        double target_ms, bool any_miss) {
  const double near = std::max(2 * max_drop, max_drop + 0.5);
  int best = -1;
  for (size_t i = 0; i < levels.size(); ++i) {
    const LongerCandidate& c = levels[i];
    if (c.ms <= 0 || c.within_budget || c.drop <= max_drop) continue;
    if (!any_miss && (c.drop > near || (target_ms > 0 && c.ms >= 0.9 * target_ms))) continue;
    if (best < 0 || c.ms < levels[static_cast<size_t>(best)].ms) best = static_cast<int>(i);
  }
  return best;
}

std::vector<int64_t> explore_sample_sizes(int64_t n) {
  std::vector<int64_t> s;
  for (int64_t k = 500; k < n; k *= 2) s.push_back(k);
  if (n > 0) s.push_back(n);
  return s;
}

std::vector<int64_t> explore_order(int64_t n, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  auto next = [&x] {  // splitmix64: the same order on every machine and library
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)],
              order[static_cast<size_t>(next() % static_cast<uint64_t>(i + 1))]);
  return order;
}

namespace {

// Deployments within the budget timed again in the final interleaved rounds.
constexpr int kFinalists = 3;
// The share of the budget kept for the finalists' scoring and the final comparison.
constexpr double kEndReserve = 0.1;
// The most of the time left one prune sweep may take.
constexpr double kFinetuneShare = 0.35;
// A pruning level's one-shot latency within this factor of the fastest deployment, either
// way, is a close call: both are timed again in interleaved rounds before the level's
// fine-tuning is decided (two single timings taken minutes apart on a shared host differ
// by 30-60% at times; fine-tuning costs minutes).
constexpr double kCloseCall = 1.3;
constexpr int kCloseCallRounds = 3;

std::string iso_now() {
  const std::time_t tt = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool has_quant(const std::string& compress) { return parse_compress(compress).quant.has_value(); }
bool has_prune(const std::string& compress) { return parse_compress(compress).prune.has_value(); }

}  // namespace

// --- the search ------------------------------------------------------------------------------

Explorer::Explorer(const ExploreOptions& o, const ExploreLog& log) : o_(o), log_(log) {
  t0_ = Clock::now();
}

double Explorer::elapsed() const {
  return std::chrono::duration<double>(Clock::now() - t0_).count();
}
double Explorer::left() const { return o_.budget_s - elapsed(); }
// The search stages stop this much before the end: the finalists' own scoring and the final
// comparison use the rest.
double Explorer::search_left() const { return left() - kEndReserve * o_.budget_s; }

void Explorer::say(const std::string& line) const {
  if (log_) log_(line);
}

void Explorer::check_inputs() {
  DLAS_CHECK(o_.max_drop >= 0 && std::isfinite(o_.max_drop), ErrorKind::kUsage,
             "--max-drop must be a number of points >= 0");
  DLAS_CHECK(o_.budget_s > 0, ErrorKind::kUsage, "--budget must be > 0");
  DLAS_CHECK(!o_.out_dir.empty(), ErrorKind::kUsage, "-o: an output directory is required");
  DLAS_CHECK(!find_zoo_model(o_.model) || fs::is_regular_file(o_.model), ErrorKind::kUsage, "'",
             o_.model, "' is an untrained zoo model: train it first (dlas train ", o_.model,
             " --dataset ", o_.dataset, " -o model.onnx) and explore the .onnx");
  DLAS_CHECK(fs::is_regular_file(o_.model), ErrorKind::kInvalidInput, o_.model,
             ": no such model file");
  test_ = data::open_dataset(o_.dataset, data::Split::kTest);
  n_ = test_->size();
  DLAS_CHECK(n_ > 0, ErrorKind::kInvalidInput, o_.dataset, ": the test split is empty");
  DLAS_CHECK(test_->info().classes > 0, ErrorKind::kInvalidInput, o_.dataset,
             ": has no labels to score a model against");
  const Graph g = load_model(o_.model);
  DLAS_CHECK(!g.outputs.empty(), ErrorKind::kInvalidInput, o_.model, ": has no outputs");
  const Shape& out = g.value(g.outputs[0]).shape;
  int64_t classes = 1;
  for (size_t i = 1; i < out.size(); ++i) classes *= out[i];
  DLAS_CHECK(classes == test_->info().classes, ErrorKind::kInvalidInput, o_.model, ": its output ",
             g.outputs[0], " ", shape_str(out), " gives ", classes, " classes, the dataset ",
             o_.dataset, " has ", test_->info().classes);
  std::error_code ec;
  try {
    auto tr = data::open_dataset(o_.dataset, data::Split::kTrain);
    has_train_ = tr->size() > 0;
  } catch (const Error&) {
    has_train_ = false;
  }
  const fs::path db = fs::path(o_.out_dir) / "explore.db";
  DLAS_CHECK(!fs::exists(o_.out_dir) || fs::is_directory(o_.out_dir), ErrorKind::kInvalidInput,
             o_.out_dir, ": exists and is not a directory");
  if (o_.resume) {
    DLAS_CHECK(fs::is_regular_file(db, ec), ErrorKind::kInvalidInput, db.string(),
               ": not found: --resume continues an exploration made with -o ", o_.out_dir);
  } else {
    DLAS_CHECK(!fs::exists(o_.out_dir) || fs::is_empty(o_.out_dir, ec), ErrorKind::kInvalidInput,
               o_.out_dir, ": not empty (--resume continues the exploration there)");
  }
}

void Explorer::open_store() {
  fs::create_directories(o_.out_dir);
  db_path_ = (fs::path(o_.out_dir) / "explore.db").string();
  store_ = std::make_unique<ResultStore>(db_path_);
  xs_ = std::make_unique<ExploreStore>(db_path_);
  const std::string hash = file_hash_hex(o_.model);
  const std::pair<const char*, std::string> settings[] = {{"model_hash", hash},
                                                          {"dataset", o_.dataset},
                                                          {"order_seed", std::to_string(o_.seed)},
                                                          {"preprocess", o_.preprocess.str()}};
  for (const auto& [k, v] : settings) {
    const std::optional<std::string> old = xs_->setting(k);
    DLAS_CHECK(!old || *old == v, ErrorKind::kInvalidInput, db_path_, ": was explored with ", k,
               " ", old.value_or(""), ", this run has ", v,
               " (start a new exploration in another folder)");
    if (!old) xs_->put_setting(k, v);
  }
  for (const Row& r : store_->rows())
    if (r.text("hardware_id") == current_host().hardware_id) rows_[r.text("variant_id")] = r;
  order_ = explore_order(n_, o_.seed);
  sizes_ = explore_sample_sizes(n_);
  threads_ = o_.threads > 0 ? o_.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// --- groups and candidates ---------------------------------------------------------------------

int Explorer::add_group(const std::string& label, const std::string& model_path,
                        const std::string& compress, const std::string& source) {
  ExploreGroup g;
  g.label = label;
  g.model_path = model_path;
  g.compress = compress;
  g.source = source;
  g.key = str("model=", model_path, ";compress=", compress);
  for (size_t i = 0; i < r_.groups.size(); ++i)
    if (r_.groups[i].key == g.key) return static_cast<int>(i);
  r_.groups.push_back(g);
  return static_cast<int>(r_.groups.size()) - 1;
}

namespace {

// One deployment of an exploration as a study point (its tuning, untuned, and its
// preprocessing, none, left to the caller).
StudyPoint deployment_point(const std::string& model_path, const std::string& compress,
                            const std::string& backend, const std::string& conv_algo,
                            const std::string& layout, int threads, const std::string& dataset) {
  StudyPoint p;
  p.model = p.model_path = model_path;
  p.compress = compress;
  p.backend = backend;
  p.conv_algo = conv_algo;
  p.layout = layout;
  p.threads = threads;
  p.dataset = dataset;
  return p;
}

}  // namespace

// The study's own resolution (runner.h), so an exploration's ids are a study's ids.
Variant Explorer::variant_of(const ExploreCandidate& c) const {
  StudyPoint p = deployment_point(c.model_path, c.compress, c.backend, c.conv_algo, c.layout,
                                  threads_, o_.dataset);
  p.tuning = c.schedule == "default" ? "untuned" : c.schedule;
  p.preprocess = o_.preprocess;
  return resolve_variant(p, nullptr);
}

int Explorer::add_candidate(int group, const std::string& backend, const std::string& algo,
                            const std::string& layout, const std::string& schedule) {
  const ExploreGroup& g = r_.groups[static_cast<size_t>(group)];
  ExploreCandidate c;
  c.group = g.key;
  c.model_path = g.model_path;
  c.compress = g.compress;
  c.backend = backend;
  c.conv_algo = backend == "dlas" ? algo : backend;
  c.layout = backend == "dlas" ? layout : "auto";
  c.schedule = schedule;
  c.label = g.label;
  if (backend != "dlas")
    c.label += " on " + backend;
  else
    c.label += str(" + ", algo, layout == "auto" ? "" : ", " + layout,
                   schedule == "default" ? "" : ", " + schedule);
  c.variant_id = variant_of(c).str();
  c.status = "not-measured";
  for (size_t i = 0; i < r_.candidates.size(); ++i)
    if (r_.candidates[i].variant_id == c.variant_id) return static_cast<int>(i);
  r_.candidates.push_back(c);
  return static_cast<int>(r_.candidates.size()) - 1;
}

int Explorer::group_index(const std::string& key) const {
  for (size_t i = 0; i < r_.groups.size(); ++i)
    if (r_.groups[i].key == key) return static_cast<int>(i);
  return -1;
}

void Explorer::fill_from_row(ExploreCandidate& c, const Row& row) const {
  c.status = row.text("status");
  c.reason = row.text("reason");
  if (c.status != kStatusOk) return;
  c.median_ms = row.real("median_ms");
  c.p90_ms = row.real("p90_ms");
  c.size_bytes = row.has("weight_bytes") ? row.integer("weight_bytes") : -1;
  c.peak_bytes = row.has("peak_rss_bytes") ? row.integer("peak_rss_bytes") : -1;
  c.activation_bytes = row.has("peak_activation_bytes") ? row.integer("peak_activation_bytes") : -1;
  c.seconds = row.real("duration_s");
}

// Measures a candidate's latency in a child unless the store has it.
bool Explorer::measure(int index, const std::string& records_out) {
  ExploreCandidate& c = r_.candidates[static_cast<size_t>(index)];
  // Stored, whatever its status: a failed measurement (an op an engine lacks) is finished
  // too, and a resumed exploration does not repeat it.
  if (auto it = rows_.find(c.variant_id); it != rows_.end()) {
    fill_from_row(c, it->second);
    return c.status == kStatusOk;
  }
  if (search_left() <= 0) {
    r_.budget_reached = true;
    return false;
  }
  const Variant v = variant_of(c);
  MeasureRequest req;
  req.variant = v;
  req.model_path = c.model_path;
  req.repeat = o_.repeat;
  req.warmup = 2;
  req.input_seed = o_.seed;
  req.score = false;
  req.preprocess = o_.preprocess;
  req.records_out = records_out;
  Row row = variant_columns(v, "explore", o_.repeat, 2, current_host());
  ++r_.latency_runs;
  const auto t = Clock::now();
  measure_request_in_child(req, o_.exe, o_.lock_path, o_.timeout_s, row);
  c.seconds = std::chrono::duration<double>(Clock::now() - t).count();
  row.set("duration_s", c.seconds);
  row.set("finished_at", iso_now());
  store_->put(row);
  rows_[c.variant_id] = row;
  fill_from_row(c, row);
  say(str("explore: ", c.label, ": ",
          c.status == kStatusOk ? str(fixed(c.median_ms, 3), " ms")
                                : c.status + " (" + c.reason + ")"));
  return c.status == kStatusOk;
}

// The group's hits on records [0, n) of the order (scored in the race's chunks).
bool Explorer::score_upto(int group, int64_t n, const ExploreCandidate* exact) {
  ExploreGroup& g = r_.groups[static_cast<size_t>(group)];
  const std::string key = exact ? exact->variant_id : g.key;
  std::vector<uint8_t>& hits = exact ? exact_hits_[key] : hits_[key];
  int64_t begin = 0;
  for (int64_t end : sizes_) {
    if (end > n) break;
    if (begin < static_cast<int64_t>(hits.size())) {
      begin = end;
      continue;
    }
    std::optional<std::vector<uint8_t>> stored =
        xs_->hits(current_host().hardware_id, key, begin, end);
    if (!stored) {
      // The finalists' own scoring may use the time kept back for the end.
      if ((exact ? left() : search_left()) <= 0) {
        r_.budget_reached = true;
        return false;
      }
      std::vector<std::string> args = {o_.exe,
                                       "explore",
                                       "exec-score",
                                       "--model",
                                       exact ? exact->model_path : g.model_path,
                                       "--compress",
                                       exact ? exact->compress : g.compress,
                                       "--dataset",
                                       o_.dataset,
                                       "--threads",
                                       std::to_string(threads_),
                                       "--begin",
                                       std::to_string(begin),
                                       "--end",
                                       std::to_string(end),
                                       "--seed",
                                       std::to_string(o_.seed)};
      if (exact) {
        for (std::string a : {std::string("--conv-algo"), exact->conv_algo, std::string("--layout"),
                              exact->layout, std::string("--backend"), exact->backend})
          args.push_back(a);
        if (exact->schedule != "default") {
          args.push_back("--records");
          args.push_back(records_path(*exact));
        }
      }
      for (std::string& a : o_.preprocess.to_args()) args.push_back(std::move(a));
      ++r_.scoring_runs;
      const ChildOutcome out = run_measuring_child(args, o_.timeout_s, o_.lock_path);
      std::vector<uint8_t> got;
      double seconds = 0;
      std::string why = out.reason;
      if (out.status == kStatusOk) {
        try {
          const auto j = nlohmann::json::parse(out.out_line);
          const std::string hex = j.at("hits").get<std::string>();
          for (char ch : hex) got.push_back(static_cast<uint8_t>(ch - '0'));
          seconds = j.at("seconds").get<double>();
        } catch (const std::exception&) {
          why = "the scoring process exited 0 without a result";
        }
      }
      if (static_cast<int64_t>(got.size()) != end - begin) {
        if (why.empty()) why = "scoring returned the wrong number of records";
        if (exact) {
          // One deployment's own scoring: it is not recommended (the caller), while its
          // model's group keeps the state its race gave it.
          say(str("explore: ", exact->label, ": scoring failed: ", why));
          return false;
        }
        g.state = "failed";
        g.reason = why;
        say(str("explore: ", g.label, ": scoring failed: ", g.reason));
        return false;
      }
      xs_->put_hits(current_host().hardware_id, key, begin, end, got, seconds);
      stored = std::move(got);
    }
    hits.insert(hits.end(), stored->begin(), stored->end());
    begin = end;
  }
  g.seconds = xs_->seconds(current_host().hardware_id, g.key);
  return static_cast<int64_t>(hits.size()) >= n;
}

int Explorer::metric_bit() const { return o_.metric == ExploreMetric::kTop1 ? 1 : 2; }

double Explorer::accuracy_of(const std::vector<uint8_t>& hits, int64_t n) const {
  int64_t right = 0;
  for (int64_t i = 0; i < n; ++i) right += (hits[static_cast<size_t>(i)] & metric_bit()) != 0;
  return n ? static_cast<double>(right) / static_cast<double>(n) : 0;
}

// Paired bound of (accuracy of a) - (accuracy of b) on their first n records.
DifferenceBound Explorer::paired(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                                 int64_t n) const {
  int64_t plus = 0, minus = 0;
  const int bit = metric_bit();
  for (int64_t i = 0; i < n; ++i) {
    const bool ra = a[static_cast<size_t>(i)] & bit, rb = b[static_cast<size_t>(i)] & bit;
    plus += ra && !rb;
    minus += rb && !ra;
  }
  return paired_difference_bound(plus, minus, n, n_, kExploreZ);
}

double Explorer::group_latency(int group) const {
  const int ci = fastest_of_group(group);
  return ci < 0 ? -1 : r_.candidates[static_cast<size_t>(ci)].median_ms;
}

int64_t Explorer::group_size(int group) const {
  for (const ExploreCandidate& c : r_.candidates)
    if (c.group == r_.groups[static_cast<size_t>(group)].key && c.status == kStatusOk &&
        c.backend == "dlas")
      return c.size_bytes;
  return -1;
}

void Explorer::update_group(int gi) {
  ExploreGroup& g = r_.groups[static_cast<size_t>(gi)];
  const std::vector<uint8_t>& h = hits_[g.key];
  g.samples = static_cast<int64_t>(h.size());
  g.accuracy = accuracy_of(h, g.samples);
  // The drop below the dense model, in points: dense's answers minus this model's.
  const DifferenceBound d = paired(base_hits(), h, g.samples);
  g.drop_low = 100 * d.low;
  g.drop_high = 100 * d.high;
}

// The race over `groups` (indices): every round scores the next chunk of the order for the
// groups still racing, then drops the ones outside the budget or dominated.
void Explorer::race(const std::vector<int>& groups) {
  int64_t prev = 0;
  for (int64_t n : sizes_) {
    std::vector<int> alive;
    for (int gi : groups)
      if (r_.groups[static_cast<size_t>(gi)].state == "racing") alive.push_back(gi);
    if (alive.empty()) break;
    for (int gi : alive) {
      if (!score_upto(gi, n, nullptr)) {
        ExploreGroup& g = r_.groups[static_cast<size_t>(gi)];
        if (g.state == "racing") g.state = "estimated";  // the budget ran out
        if (hits_[g.key].size() > 0) update_group(gi);
        continue;
      }
      update_group(gi);
    }
    for (int gi : alive) {
      ExploreGroup& g = r_.groups[static_cast<size_t>(gi)];
      if (g.state != "racing") continue;
      if (g.drop_low > o_.max_drop) {
        g.state = "dropped";
        g.reason = str("outside the budget: drops at least ", fixed(g.drop_low, 2),
                       " points (99.9% bound after ", g.samples, " images)");
        continue;
      }
      const double lat = group_latency(gi);
      const int64_t size = group_size(gi);
      for (size_t bi = 0; bi < r_.groups.size(); ++bi) {
        const ExploreGroup& b = r_.groups[bi];
        if (static_cast<int>(bi) == gi || (b.state != "racing" && b.state != "confirmed")) continue;
        const double bl = group_latency(static_cast<int>(bi));
        const int64_t bs = group_size(static_cast<int>(bi));
        const int64_t common = std::min<int64_t>(g.samples, b.samples);
        if (common <= 0) continue;
        if (explore_dominates(bl, bs, lat, size, paired(hits_[b.key], hits_[g.key], common))) {
          g.state = "dropped";
          g.reason = str("dominated by ", b.label, " (", fixed(bl, 3), " against ", fixed(lat, 3),
                         " ms, no larger, at least as accurate after ", common, " images)");
          break;
        }
      }
    }
    for (int gi : alive) {
      ExploreGroup& g = r_.groups[static_cast<size_t>(gi)];
      if (g.state == "racing" && g.samples >= n_) g.state = "confirmed";
    }
    int racing = 0, dropped = 0;
    for (int gi : groups) {
      racing += r_.groups[static_cast<size_t>(gi)].state == "racing";
      dropped += r_.groups[static_cast<size_t>(gi)].state == "dropped";
    }
    say(str("explore: accuracy on ", n, " of ", n_, " images: ", racing, " racing, ", dropped,
            " dropped; ", best_line(), "; ", duration_text(std::max(0.0, left())), " left"));
    if (r_.budget_reached) {
      for (int gi : groups)
        if (r_.groups[static_cast<size_t>(gi)].state == "racing")
          r_.groups[static_cast<size_t>(gi)].state = "estimated";
      break;
    }
    prev = n;
  }
  (void)prev;
}

const std::vector<uint8_t>& Explorer::base_hits() { return hits_[r_.groups[0].key]; }

// "fastest within the budget: LABEL, MS ms" for the progress lines.
std::string Explorer::best_line() const {
  const int best = fastest_within_budget([](const ExploreCandidate&) { return true; });
  if (best < 0) return "nothing confirmed within the budget yet";
  const ExploreCandidate& c = r_.candidates[static_cast<size_t>(best)];
  return str("fastest within the budget: ", c.label, ", ", fixed(c.median_ms, 3), " ms");
}

bool Explorer::within_budget(const ExploreGroup& g) const {
  return g.state == "confirmed" && g.samples >= n_ && g.drop_high <= o_.max_drop + 1e-9;
}

int Explorer::fastest_within_budget(
    const std::function<bool(const ExploreCandidate&)>& pick) const {
  int best = -1;
  for (size_t i = 0; i < r_.candidates.size(); ++i) {
    const ExploreCandidate& c = r_.candidates[i];
    const int gi = group_index(c.group);
    if (c.status != kStatusOk || gi < 0 || !within_budget(r_.groups[static_cast<size_t>(gi)]))
      continue;
    if (!pick(c)) continue;
    if (auto it = exact_drop_.find(c.variant_id);
        it != exact_drop_.end() && it->second > o_.max_drop)
      continue;  // its own scoring (algorithm, tuning) left the budget
    if (best < 0 || c.median_ms < r_.candidates[static_cast<size_t>(best)].median_ms)
      best = static_cast<int>(i);
  }
  return best;
}

std::string Explorer::records_path(const ExploreCandidate& c) const {
  return (fs::path(o_.out_dir) / "records" / (variant_of(c).hash_hex() + ".jsonl")).string();
}

// Fine-tuned pruning levels: a prune sweep per method over the levels whose one-shot latency
// could still beat the fastest deployment found so far.
void Explorer::finetune() {
  const ExploreSpace& s = o_.space;
  if (s.weight_levels.empty() && s.channel_levels.empty()) return;
  if (!has_train_) {
    say("explore: fine-tuning skipped: " + o_.dataset + " has no training split");
    return;
  }
  // Channel pruning first: its smaller models speed up every algorithm, while weight pruning
  // pays only where the sparse kernels win.
  for (PruneMethod method : {PruneMethod::kChannel, PruneMethod::kWeight}) {
    // The fastest deployment so far, the one method's fine-tuned levels included.
    const int rec = fastest_within_budget([](const ExploreCandidate&) { return true; });
    const double target = rec >= 0 ? r_.candidates[static_cast<size_t>(rec)].median_ms : -1;
    const std::vector<double>& all =
        method == PruneMethod::kWeight ? s.weight_levels : s.channel_levels;
    const char* prefix = method == PruneMethod::kWeight ? "wp:" : "cp:";
    std::vector<double> levels;
    for (double level : all) {
      // The level's latency does not depend on fine-tuning: measure it one-shot first.
      double best = -1;
      int best_ci = -1;
      for (const std::string& q : s.finetuned_quant) {
        const std::string spec = str(prefix, num(level), q.empty() ? "" : "+" + q);
        const int gi = add_group(spec, o_.model, spec, "one-shot");
        const int ci = add_candidate(gi, "dlas", "auto", "auto", "default");
        if (measure(ci)) {
          const double ms = r_.candidates[static_cast<size_t>(ci)].median_ms;
          if (best < 0 || ms < best) best = ms, best_ci = ci;
        }
        ExploreGroup& g = r_.groups[static_cast<size_t>(gi)];
        if (g.state == "racing" && !scored_one_shot_.count(gi)) {
          g.state = "latency-only";
          g.reason = "timed one-shot to decide whether to fine-tune this level";
        }
      }
      if (best > 0 &&
          (s.finetune_all || target < 0 || worth_finetuning(str(prefix, num(level)), best_ci, rec)))
        levels.push_back(level);
    }
    if (levels.empty()) continue;
    if (search_left() <= 0) {
      r_.budget_reached = true;
      return;
    }
    const std::string dir = (fs::path(o_.out_dir) / "sweeps" / sweep_method_name(method)).string();
    std::string lv;
    for (double l : levels) lv += (lv.empty() ? "" : ",") + num(l);
    const double epochs =
        s.finetune_epochs * static_cast<double>(levels.size()) / static_cast<double>(all.size());
    const std::vector<std::string> args =
        prune_sweep_args(o_.model, sweep_method_name(method), lv, epochs, dir);
    if (fs::is_regular_file(fs::path(dir) / "sweep.json") && sweep_done(dir, levels.size())) {
      // finished before: nothing to run
    } else {
      say(str("explore: fine-tuning ", sweep_method_name(method), " levels ", lv, " (", num(epochs),
              " epochs, dlas prune-sweep -o ", dir, ")"));
      const auto t = Clock::now();
      // At most a share of what is left, so the grid, the tune and the final comparison
      // still run; a sweep stopped by it keeps its finished levels (and resumes with
      // --resume).
      const double share = std::max(1.0, kFinetuneShare * search_left());
      const ChildOutcome out = run_measuring_child(args, share, o_.lock_path);
      finetune_s_ += std::chrono::duration<double>(Clock::now() - t).count();
      if (out.status != kStatusOk)
        say(str("explore: fine-tuning ", sweep_method_name(method), " stopped: ", out.reason,
                "; its finished levels are used"));
    }
    SweepResult sw;
    try {
      sw = read_sweep(fs::path(dir) / "sweep.json");
    } catch (const Error& e) {
      say(str("explore: fine-tuning ", sweep_method_name(method), ": ", e.what()));
      continue;
    }
    std::vector<int> fresh;
    for (const SweepPoint& p : sw.points) {
      const std::vector<int> gs =
          add_finetuned_groups(method, p.spec, (sw.dir / p.model).string(), " fine-tuned");
      fresh.insert(fresh.end(), gs.begin(), gs.end());
    }
    race(fresh);
    finetune_longer(method, sw, s.finetune_epochs / static_cast<double>(all.size()));
  }
}

// The deployments of one fine-tuned model (the level alone, +int8, ...), measured; the groups
// that ran.
std::vector<int> Explorer::add_finetuned_groups(PruneMethod method, const std::string& level_spec,
                                                const std::string& model, const std::string& how) {
  std::vector<int> ran;
  for (const std::string& q : o_.space.finetuned_quant) {
    // Weight-pruned levels keep their zeros in the model; the spec keeps the sparse
    // algorithms on. Channel-pruned levels are already smaller models.
    std::string spec = method == PruneMethod::kWeight ? level_spec : "";
    if (!q.empty()) spec += (spec.empty() ? "" : "+") + q;
    if (spec.empty()) spec = "dense";
    const std::string label = str(level_spec, how, q.empty() ? "" : "+" + q);
    const int gi = add_group(label, model, spec, "fine-tuned");
    const int ci = add_candidate(gi, "dlas", "auto", "auto", "default");
    if (measure(ci))
      ran.push_back(gi);
    else
      r_.groups[static_cast<size_t>(gi)].state = "failed";
  }
  return ran;
}

// The fastest untuned deployment of a group; -1 when none ran.
int Explorer::fastest_of_group(int group) const {
  int best = -1;
  for (size_t i = 0; i < r_.candidates.size(); ++i) {
    const ExploreCandidate& c = r_.candidates[i];
    if (c.group != r_.groups[static_cast<size_t>(group)].key || c.status != kStatusOk ||
        c.schedule != "default")
      continue;
    if (best < 0 || c.median_ms < r_.candidates[static_cast<size_t>(best)].median_ms)
      best = static_cast<int>(i);
  }
  return best;
}

// `dlas prune-sweep MODEL` over `levels` ("0.25,0.5") into dir, with the exploration's
// dataset, threads and preprocessing; --resume where dir holds an interrupted sweep.
std::vector<std::string> Explorer::prune_sweep_args(const std::string& model,
                                                    const std::string& method,
                                                    const std::string& levels, double epochs,
                                                    const std::string& dir) const {
  std::vector<std::string> args = {o_.exe,
                                   "prune-sweep",
                                   model,
                                   "--dataset",
                                   o_.dataset,
                                   "--method",
                                   method,
                                   "--levels",
                                   levels,
                                   "--epochs",
                                   num(epochs),
                                   "--threads",
                                   std::to_string(threads_),
                                   "--test-limit",
                                   "1000",
                                   "-o",
                                   dir};
  for (std::string& a : o_.preprocess.to_args()) args.push_back(std::move(a));
  if (fs::is_regular_file(fs::path(dir) / "sweep.json")) args.push_back("--resume");
  return args;
}

// A level that missed the budget by little after its share of the sweep's epochs, yet would
// be the fastest deployment, is fine-tuned as long again from its own fine-tuned weights
// (channel levels: dlas train on the smaller model; weight levels: a one-level prune sweep of
// the fine-tuned model at its own level, which keeps its zeros), once, and raced again.
void Explorer::finetune_longer(PruneMethod method, const SweepResult& sw, double epochs) {
  const ExploreSpace& s = o_.space;
  if (s.finetune_longer == "never" || epochs <= 0) return;
  std::vector<LongerCandidate> levels;
  std::vector<std::pair<const SweepPoint*, int>> owner;  // the level and its fastest deployment
  for (const SweepPoint& p : sw.points) {
    const std::string model = (sw.dir / p.model).string();
    for (size_t gi = 0; gi < r_.groups.size(); ++gi) {
      const ExploreGroup& g = r_.groups[gi];
      if (g.model_path != model || g.samples <= 0 || g.source != "fine-tuned") continue;
      const int ci = fastest_of_group(static_cast<int>(gi));
      if (ci < 0) continue;
      LongerCandidate c;
      c.ms = r_.candidates[static_cast<size_t>(ci)].median_ms;
      c.drop = (g.drop_low + g.drop_high) / 2;
      c.within_budget = within_budget(g);
      levels.push_back(c);
      owner.emplace_back(&p, ci);
    }
  }
  const int rec = fastest_within_budget([](const ExploreCandidate&) { return true; });
  const double target = rec >= 0 ? r_.candidates[static_cast<size_t>(rec)].median_ms : -1;
  const int pick = explore_longer_pick(levels, o_.max_drop, target, s.finetune_longer == "always");
  if (pick < 0) return;
  const SweepPoint& p = *owner[static_cast<size_t>(pick)].first;
  const int ci = owner[static_cast<size_t>(pick)].second;
  const LongerCandidate& c = levels[static_cast<size_t>(pick)];
  // A close call against the fastest deployment is timed again first, as for fine-tuning.
  if (rec >= 0 && s.finetune_longer != "always" &&
      !worth_finetuning(str(p.spec, " longer"), ci, rec))
    return;
  if (search_left() <= 0) {
    r_.budget_reached = true;
    return;
  }
  const fs::path dir = sw.dir / "longer";
  const fs::path level_model = sw.dir / p.model;
  std::string model;
  std::vector<std::string> args;
  if (method == PruneMethod::kChannel) {
    model = (dir / p.model).string();
    args = {o_.exe,
            "train",
            level_model.string(),
            "--dataset",
            o_.dataset,
            "--epochs",
            num(epochs),
            "--lr",
            "0.01",
            "--schedule",
            "cosine",
            "--threads",
            std::to_string(threads_),
            "--test-limit",
            "1000",
            "-o",
            model};
    for (std::string& a : o_.preprocess.to_args()) args.push_back(std::move(a));
  } else {
    args = prune_sweep_args(level_model.string(), "weight", num(p.level), epochs, dir.string());
  }
  const bool done =
      method == PruneMethod::kChannel ? fs::is_regular_file(model) : sweep_done(dir.string(), 1);
  if (!done) {
    say(str("explore: ", p.spec, " fine-tuned missed the budget by ",
            fixed(c.drop - o_.max_drop, 2), " points",
            s.finetune_longer == "always"
                ? ""
                : str(" but would be the fastest deployment (", fixed(c.ms, 3), " ms)"),
            ": fine-tuning it ", num(epochs), " epochs longer"));
    fs::create_directories(dir);
    const auto t = Clock::now();
    const ChildOutcome out =
        run_measuring_child(args, std::max(1.0, kFinetuneShare * search_left()), o_.lock_path);
    finetune_s_ += std::chrono::duration<double>(Clock::now() - t).count();
    if (out.status != kStatusOk) {
      say(str("explore: fine-tuning ", p.spec, " longer stopped: ", out.reason));
      return;
    }
  }
  if (method == PruneMethod::kWeight) {
    try {
      const SweepResult longer = read_sweep(dir / "sweep.json");
      DLAS_CHECK(!longer.points.empty(), ErrorKind::kRuntime, "no level in ", dir.string());
      model = (longer.dir / longer.points[0].model).string();
    } catch (const Error& e) {
      say(str("explore: fine-tuning ", p.spec, " longer: ", e.what()));
      return;
    }
  }
  race(add_finetuned_groups(method, p.spec, model, " fine-tuned longer"));
}

// Whether a pruning level whose fastest one-shot deployment is `candidate` could beat the
// fastest deployment so far (`fastest`). A close call is timed again, both in turn, in
// interleaved rounds; the decision is stored, so a resumed exploration makes the same one.
bool Explorer::worth_finetuning(const std::string& level, int candidate, int fastest) {
  const double best = r_.candidates[static_cast<size_t>(candidate)].median_ms;
  const double target = r_.candidates[static_cast<size_t>(fastest)].median_ms;
  const std::string key = str("finetune_gate/", current_host().hardware_id, "/", level);
  bool worth = best < target;
  std::string why =
      str("its latency (", fixed(best, 3), " ms) cannot beat ", fixed(target, 3), " ms");
  if (const std::optional<std::string> stored = xs_->setting(key)) {
    worth = stored->rfind("yes", 0) == 0;
    why = stored->substr(stored->find(' ') + 1);
  } else if (best < target * kCloseCall && best * kCloseCall > target) {
    // Each round times both, in alternating order; the decision is the median of the
    // rounds' ratios (a host that slows down between rounds moves both times of a round).
    std::vector<double> a, b, ratio;
    for (int round = 0; round < kCloseCallRounds && search_left() > 0; ++round) {
      r_.gate_runs += 2;
      std::optional<double> ta, tb;
      if (round % 2 == 0) {
        ta = time_again(candidate);
        tb = time_again(fastest);
      } else {
        tb = time_again(fastest);
        ta = time_again(candidate);
      }
      if (ta && tb && *tb > 0) a.push_back(*ta), b.push_back(*tb), ratio.push_back(*ta / *tb);
    }
    if (!a.empty()) {
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      std::sort(ratio.begin(), ratio.end());
      const double ma = a[a.size() / 2], mb = b[b.size() / 2], mr = ratio[ratio.size() / 2];
      worth = mr < 1;
      why = str("timed again in ", a.size(), " interleaved rounds: ", fixed(ma, 3), " against ",
                fixed(mb, 3), " ms, median ratio ", fixed(mr, 2), " (one-shot ", fixed(best, 3),
                " against ", fixed(target, 3), ")");
      say(str("explore: ", level, ": a close call, ", why));
      xs_->put_setting(key, str(worth ? "yes " : "no ", why));
    }
  }
  if (!worth) say(str("explore: ", level, ": not fine-tuned, ", why));
  return worth;
}

bool Explorer::sweep_done(const std::string& dir, size_t levels) const {
  try {
    return read_sweep(fs::path(dir) / "sweep.json").points.size() >= levels;
  } catch (const Error&) {
    return false;
  }
}

ExploreResult Explorer::run() {
  check_inputs();
  open_store();
  const ExploreSpace& s = o_.space;
  say(str("explore: ", o_.model, " on ", o_.dataset, " (", n_, " test images), budget ",
          fixed(o_.max_drop, 2), " points of ", explore_metric_name(o_.metric), ", ", threads_,
          threads_ == 1 ? " thread" : " threads", ", ", duration_text(o_.budget_s), " at most"));

  // 1. The reference: the dense model, its latency and its answers on the whole split.
  const int dense_group = add_group("dense", o_.model, "dense", "dense");
  r_.dense = add_candidate(dense_group, "dlas", "auto", "auto", "default");
  DLAS_CHECK(
      measure(r_.dense), ErrorKind::kInvalidInput, o_.model,
      ": the dense model does not run: ", r_.candidates[static_cast<size_t>(r_.dense)].reason);
  DLAS_CHECK(score_upto(dense_group, n_, nullptr), ErrorKind::kRuntime,
             "scoring the dense model on ", o_.dataset, ": ",
             r_.groups[0].reason.empty() ? "the budget ran out" : r_.groups[0].reason);
  update_group(dense_group);
  r_.groups[0].state = "confirmed";
  say(str("explore: dense: ", fixed(100 * r_.groups[0].accuracy, 2), "% ",
          explore_metric_name(o_.metric), ", ",
          fixed(r_.candidates[static_cast<size_t>(r_.dense)].median_ms, 3), " ms"));

  // 2. Latency of every one-shot compression (the engine's own choices).
  std::vector<int> one_shot;
  for (const std::string& c : s.compress) {
    const std::string canon = parse_compress(c).str();
    if (canon == "dense") continue;
    const int gi = add_group(canon, o_.model, canon, "one-shot");
    const int ci = add_candidate(gi, "dlas", "auto", "auto", "default");
    if (measure(ci))
      one_shot.push_back(gi);
    else
      r_.groups[static_cast<size_t>(gi)].state = "failed";
  }
  for (int gi : one_shot) scored_one_shot_.insert(gi);

  // 3. The race.
  race(one_shot);

  // 4. Fine-tuned pruning where it can still pay.
  finetune();

  // 5. The algorithm, layout and backend grid of the models within the budget.
  std::vector<int> keep;
  for (size_t gi = 0; gi < r_.groups.size(); ++gi)
    if (within_budget(r_.groups[gi])) keep.push_back(static_cast<int>(gi));
  for (int gi : keep) {
    const bool fp32 = !has_quant(r_.groups[static_cast<size_t>(gi)].compress);
    for (const std::string& b : s.backend) {
      if (b != "dlas") {
        if (fp32) measure(add_candidate(gi, b, "auto", "auto", "default"));
        continue;
      }
      for (const std::string& a : s.conv_algo)
        for (const std::string& l : s.layout) measure(add_candidate(gi, "dlas", a, l, "default"));
    }
  }

  say(str("explore: algorithms, layouts and engines measured; ", best_line()));

  // 6. A short tune of the fastest deployments within the budget.
  if (s.tuning != "untuned" && s.tune_top > 0) {
    std::set<int> picked;
    for (int k = 0; k < s.tune_top; ++k) {
      const int best = fastest_within_budget([&](const ExploreCandidate& c) {
        return c.backend == "dlas" && c.schedule == "default" &&
               !picked.count(static_cast<int>(&c - r_.candidates.data()));
      });
      if (best < 0) break;
      picked.insert(best);
      const ExploreCandidate base = r_.candidates[static_cast<size_t>(best)];
      const int gi = group_index(base.group);
      const int ti = add_candidate(gi, "dlas", base.conv_algo, base.layout, s.tuning);
      fs::create_directories(fs::path(o_.out_dir) / "records");
      measure(ti, records_path(r_.candidates[static_cast<size_t>(ti)]));
    }
  }

  // 7. The finalists: the fastest within the budget, each with its own configuration scored
  //    on the whole split (an algorithm or tuned knobs can change the answers slightly).
  std::vector<int> finalists;
  while (static_cast<int>(finalists.size()) < kFinalists) {
    const int best = fastest_within_budget([&](const ExploreCandidate& c) {
      return std::find(finalists.begin(), finalists.end(),
                       static_cast<int>(&c - r_.candidates.data())) == finalists.end();
    });
    if (best < 0) break;
    const ExploreCandidate& c = r_.candidates[static_cast<size_t>(best)];
    const int gi = group_index(c.group);
    const bool scored_as_group = c.backend == "dlas" && c.conv_algo == "auto" &&
                                 c.layout == "auto" && c.schedule == "default";
    if (scored_as_group) {
      finalists.push_back(best);
      continue;
    }
    if (!score_upto(gi, n_, &c)) {
      exact_drop_[c.variant_id] = 1e9;  // could not be scored: not recommended
      if (r_.budget_reached) break;
      continue;
    }
    const DifferenceBound d = paired(base_hits(), exact_hits_[c.variant_id], n_);
    exact_drop_[c.variant_id] = 100 * d.estimate;
    if (100 * d.estimate <= o_.max_drop + 1e-9)
      finalists.push_back(best);
    else
      say(str("explore: ", c.label, ": its own answers drop ", fixed(100 * d.estimate, 2),
              " points: not recommended"));
  }
  // 8. The finalists, the dense model and the best single-dimension choices timed again in
  //    interleaved rounds; the recommendation is the finalist with the largest speedup over
  //    dense there (each round's ratio, so a host that slows down between rounds does not
  //    pick the finalist that happened to run in its fast minutes).
  final_comparison(finalists);
  auto better = [&](int a, int b) {
    const double xa = final_speedup(a), xb = final_speedup(b);
    if (xa > 0 && xb > 0) return xa > xb;
    return final_median(a) < final_median(b);
  };
  for (int f : finalists)
    if (final_median(f) > 0 && (r_.recommendation < 0 || better(f, r_.recommendation)))
      r_.recommendation = f;
  if (r_.recommendation < 0) r_.recommendation = r_.dense;
  store_accuracy();
  compute_front();
  r_.seconds = elapsed();
  return r_;
}

// The accuracy columns of every measured row: its own answers where it was scored itself,
// else its model's (the samples column says on how many images).
void Explorer::store_accuracy() {
  for (ExploreCandidate& c : r_.candidates) {
    auto it = rows_.find(c.variant_id);
    if (it == rows_.end() || it->second.text("status") != kStatusOk) continue;
    const std::vector<uint8_t>* h = nullptr;
    if (auto e = exact_hits_.find(c.variant_id); e != exact_hits_.end())
      h = &e->second;
    else if (auto g = hits_.find(c.group); g != hits_.end())
      h = &g->second;
    if (!h || h->empty()) continue;
    int64_t top1 = 0, top5 = 0;
    for (uint8_t x : *h) {
      top1 += x & 1;
      top5 += (x >> 1) & 1;
    }
    const double n = static_cast<double>(h->size());
    Row& row = it->second;
    row.set("accuracy", static_cast<double>(top1) / n);
    row.set("top5", static_cast<double>(top5) / n);
    row.set("accuracy_samples", static_cast<int64_t>(h->size()));
    const int gi = group_index(c.group);
    if (gi >= 0) row.set("accuracy_s", r_.groups[static_cast<size_t>(gi)].seconds);
    store_->put(row);
  }
}

void Explorer::compute_front() {
  r_.front.clear();
  std::vector<int> pool;
  for (size_t i = 0; i < r_.candidates.size(); ++i) {
    const ExploreCandidate& c = r_.candidates[i];
    const int gi = group_index(c.group);
    if (c.status == kStatusOk && gi >= 0 && r_.groups[static_cast<size_t>(gi)].state == "confirmed")
      pool.push_back(static_cast<int>(i));
  }
  for (int i : pool) {
    const ExploreCandidate& a = r_.candidates[static_cast<size_t>(i)];
    const double acc_a = accuracy_of_candidate(i);
    bool dominated = false;
    for (int j : pool) {
      if (i == j) continue;
      const ExploreCandidate& b = r_.candidates[static_cast<size_t>(j)];
      const double acc_b = accuracy_of_candidate(j);
      const bool no_worse =
          b.median_ms <= a.median_ms && acc_b >= acc_a && b.size_bytes <= a.size_bytes;
      const bool better = b.median_ms < a.median_ms || acc_b > acc_a || b.size_bytes < a.size_bytes;
      if (no_worse && better) {
        dominated = true;
        break;
      }
    }
    if (!dominated) r_.front.push_back(i);
  }
  std::sort(r_.front.begin(), r_.front.end(), [&](int a, int b) {
    return r_.candidates[static_cast<size_t>(a)].median_ms <
           r_.candidates[static_cast<size_t>(b)].median_ms;
  });
}

double Explorer::accuracy_of_candidate(int i) const {
  const ExploreCandidate& c = r_.candidates[static_cast<size_t>(i)];
  if (auto it = exact_hits_.find(c.variant_id);
      it != exact_hits_.end() && static_cast<int64_t>(it->second.size()) >= n_)
    return accuracy_of(it->second, n_);
  const int gi = group_index(c.group);
  return gi < 0 ? -1 : r_.groups[static_cast<size_t>(gi)].accuracy;
}

// One more timing of a measured candidate (at least 50 runs), in a child; nullopt when it
// failed. A tuned candidate runs its stored records, not a new tune.
std::optional<double> Explorer::time_again(int candidate) {
  const ExploreCandidate& c = r_.candidates[static_cast<size_t>(candidate)];
  MeasureRequest req;
  req.variant = variant_of(c);
  req.model_path = c.model_path;
  req.repeat = std::max(o_.repeat, 50);
  req.warmup = 3;
  req.input_seed = o_.seed;
  req.score = false;
  req.preprocess = o_.preprocess;
  if (c.schedule != "default") {
    req.variant.schedule = "default";
    req.records_in = records_path(c);
  }
  Row row;
  measure_request_in_child(req, o_.exe, o_.lock_path, o_.timeout_s, row);
  if (row.text("status") != kStatusOk) return std::nullopt;
  return row.real("median_ms");
}

double median_round_ratio(const std::map<int, double>& base, const std::map<int, double>& other) {
  std::vector<double> ratios;
  for (const auto& [round, ms] : other)
    if (auto b = base.find(round); b != base.end() && ms > 0 && b->second > 0)
      ratios.push_back(b->second / ms);
  if (ratios.empty()) return -1;
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  return n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
}

// The dense model, the recommendation and the best single-dimension choices timed again in
// interleaved rounds (A/B/C/A/B/C): the ratios the answer quotes.
void Explorer::final_comparison(const std::vector<int>& finalists) {
  finals_.clear();
  // A candidate in two roles is timed once (the rounds skip repeats).
  auto add = [&](const std::string& role, int idx) {
    if (idx >= 0) finals_.push_back({role, idx, {}, {}});
  };
  add("dense fp32 (auto)", r_.dense);
  for (size_t k = 0; k < finalists.size(); ++k) add(str("finalist ", k + 1), finalists[k]);
  add("best int8 alone", fastest_within_budget([&](const ExploreCandidate& c) {
        return c.model_path == o_.model && c.backend == "dlas" && c.conv_algo == "auto" &&
               c.layout == "auto" && c.schedule == "default" && c.compress.rfind("int8", 0) == 0 &&
               !has_prune(c.compress);
      }));
  add("best pruning alone", fastest_within_budget([&](const ExploreCandidate& c) {
        const int gi = group_index(c.group);
        const bool pruned = has_prune(c.compress) ||
                            (gi >= 0 && r_.groups[static_cast<size_t>(gi)].source == "fine-tuned");
        return pruned && !has_quant(c.compress) && c.backend == "dlas" && c.conv_algo == "auto" &&
               c.layout == "auto" && c.schedule == "default";
      }));
  add("best algorithm/layout alone", fastest_within_budget([&](const ExploreCandidate& c) {
        return c.group == r_.groups[0].key && c.backend == "dlas" && c.schedule == "default";
      }));
  add("best backend alone", fastest_within_budget([&](const ExploreCandidate& c) {
        return c.group == r_.groups[0].key && c.backend != "dlas";
      }));
  // Each round times every candidate once, in an order rotated by one place per round, so
  // none always runs first or next to the same neighbour.
  std::vector<int> order;
  for (const FinalRow& f : finals_)
    if (std::find(order.begin(), order.end(), f.candidate) == order.end())
      order.push_back(f.candidate);
  std::map<int, std::map<int, double>> medians;
  for (int round = 0; round < o_.final_rounds; ++round) {
    for (size_t k = 0; k < order.size(); ++k) {
      const int cand = order[(k + static_cast<size_t>(round)) % order.size()];
      const ExploreCandidate& c = r_.candidates[static_cast<size_t>(cand)];
      const std::string& hw = current_host().hardware_id;
      if (const std::optional<double> stored = xs_->final_median(hw, c.variant_id, round)) {
        medians[cand][round] = *stored;
        continue;
      }
      if (left() <= 0 && round > 0) {
        r_.budget_reached = true;
        continue;
      }
      ++r_.final_runs;
      if (const std::optional<double> ms = time_again(cand)) {
        medians[cand][round] = *ms;
        xs_->put_final_median(hw, c.variant_id, round, *ms);
      }
    }
  }
  for (FinalRow& f : finals_) {
    f.by_round = medians[f.candidate];
    f.medians.clear();
    for (const auto& [round, ms] : f.by_round) f.medians.push_back(ms);
  }
  say(str("explore: final comparison, ", o_.final_rounds,
          " interleaved rounds (speedups: the median of each round's ratio to dense):"));
  for (const FinalRow& f : finals_) {
    const double m = final_median(f.candidate), x = final_speedup(f.candidate);
    say(str("  ", f.role, ": ", r_.candidates[static_cast<size_t>(f.candidate)].label, ": ",
            m > 0 ? fixed(m, 3) + " ms" : std::string("not measured"),
            x > 0 ? str(" (", fixed(x, 2), "x dense)") : ""));
  }
}

double Explorer::final_speedup(int candidate) const {
  const FinalRow* dense = nullptr;
  const FinalRow* cand = nullptr;
  for (const FinalRow& f : finals_) {
    if (f.candidate == r_.dense && !dense) dense = &f;
    if (f.candidate == candidate && !cand) cand = &f;
  }
  return dense && cand ? median_round_ratio(dense->by_round, cand->by_round) : -1;
}

double Explorer::final_median(int candidate) const {
  for (const FinalRow& f : finals_)
    if (f.candidate == candidate && !f.medians.empty()) {
      std::vector<double> v = f.medians;
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    }
  return -1;
}

std::string run_score_child(const ScoreChildArgs& a) {
  MeasureRequest req;
  req.variant = resolve_variant(deployment_point(a.model_path, a.compress, a.backend, a.conv_algo,
                                                 a.layout, a.threads, a.dataset),
                                nullptr);
  req.model_path = a.model_path;
  req.preprocess = a.preprocess;
  const std::unique_ptr<data::Dataset> test = data::open_dataset(a.dataset, data::Split::kTest);
  const std::vector<int64_t> order = explore_order(test->size(), a.seed);
  DLAS_CHECK(a.begin >= 0 && a.begin < a.end && a.end <= test->size(), ErrorKind::kUsage,
             "records [", a.begin, ", ", a.end, ") are not within the split's ", test->size());
  const std::vector<int64_t> records(order.begin() + a.begin, order.begin() + a.end);
  const ScoreResult r = score_variant(req, records, a.records);
  std::string hits;
  for (uint8_t h : r.hits) hits.push_back(static_cast<char>('0' + h));
  nlohmann::json j;
  j["hits"] = hits;
  j["seconds"] = r.seconds;
  return j.dump();
}

ExploreResult explore(const ExploreOptions& options, const ExploreLog& log) {
  Explorer e(options, log);
  ExploreResult r = e.run();
  e.write_outputs();
  return r;
}

}  // namespace dlas::study
