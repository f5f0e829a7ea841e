// Inside the study layer: the state of one `dlas explore` run (explore.cc searches,
// explore_output.cc writes DIR).
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dlas/data/dataset.h"
#include "dlas/optimize/prune_sweep.h"
#include "dlas/study/explore.h"
#include "dlas/study/store.h"
#include "dlas/system/variant.h"
#include "explore_store.h"

namespace dlas::study {

inline std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
// Short and exact enough for levels and budgets: 0.9 -> "0.9".
inline std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The median over rounds of base[round] / other[round], over the rounds both were timed in
// (each ratio from one round, so a host that slows down between rounds moves both of its
// times); -1 when there is none. The final comparison's speedups over dense.
double median_round_ratio(const std::map<int, double>& base, const std::map<int, double>& other);

class Explorer {
 public:
  Explorer(const ExploreOptions& options, const ExploreLog& log);
  ExploreResult run();
  void write_outputs() const;  // explore_output.cc

 private:
  struct FinalRow {
    std::string role;
    int candidate = -1;
    std::vector<double> medians;     // one per interleaved round it was timed in
    std::map<int, double> by_round;  // the same, by round
  };

  double elapsed() const;
  double left() const;
  double search_left() const;
  void say(const std::string& line) const;
  void check_inputs();
  void open_store();
  int add_group(const std::string& label, const std::string& model_path,
                const std::string& compress, const std::string& source);
  int add_candidate(int group, const std::string& backend, const std::string& algo,
                    const std::string& layout, const std::string& schedule);
  int group_index(const std::string& key) const;
  Variant variant_of(const ExploreCandidate& c) const;
  void fill_from_row(ExploreCandidate& c, const Row& row) const;
  bool measure(int candidate, const std::string& records_out = "");
  bool score_upto(int group, int64_t n, const ExploreCandidate* exact);
  int metric_bit() const;
  double accuracy_of(const std::vector<uint8_t>& hits, int64_t n) const;
  DifferenceBound paired(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                         int64_t n) const;
  double group_latency(int group) const;
  int64_t group_size(int group) const;
  void update_group(int group);
  void race(const std::vector<int>& groups);
  const std::vector<uint8_t>& base_hits();
  bool within_budget(const ExploreGroup& g) const;
  std::string best_line() const;
  int fastest_within_budget(const std::function<bool(const ExploreCandidate&)>& pick) const;
  std::string records_path(const ExploreCandidate& c) const;
  void finetune();
  bool worth_finetuning(const std::string& level, int candidate, int fastest);
  std::vector<int> add_finetuned_groups(PruneMethod method, const std::string& level_spec,
                                        const std::string& model, const std::string& how);
  int fastest_of_group(int group) const;
  void finetune_longer(PruneMethod method, const SweepResult& sw, double epochs);
  std::vector<std::string> prune_sweep_args(const std::string& model, const std::string& method,
                                            const std::string& levels, double epochs,
                                            const std::string& dir) const;
  bool sweep_done(const std::string& dir, size_t levels) const;
  void store_accuracy();
  void compute_front();
  double accuracy_of_candidate(int candidate) const;
  std::optional<double> time_again(int candidate);
  void final_comparison(const std::vector<int>& finalists);
  double final_median(int candidate) const;
  // The median over the final rounds of dense's time over the candidate's, each ratio from
  // one round (a host that slows down between rounds moves both); -1 when no round timed
  // both.
  double final_speedup(int candidate) const;
  // explore_output.cc
  std::string json() const;
  std::string readme() const;
  std::string html() const;
  std::string reproduce_commands(const ExploreCandidate& c) const;

  const ExploreOptions& o_;
  ExploreLog log_;
  std::chrono::steady_clock::time_point t0_;
  std::unique_ptr<data::Dataset> test_;
  int64_t n_ = 0;
  bool has_train_ = false;
  int threads_ = 1;
  std::string db_path_;
  std::unique_ptr<ResultStore> store_;
  std::unique_ptr<ExploreStore> xs_;
  std::map<std::string, Row> rows_;  // this hardware's stored rows by variant id
  std::vector<int64_t> order_, sizes_;
  std::map<std::string, std::vector<uint8_t>> hits_;        // group key -> hits so far
  std::map<std::string, std::vector<uint8_t>> exact_hits_;  // candidate id -> its own hits
  std::map<std::string, double> exact_drop_;                // candidate id -> its own drop
  std::set<int> scored_one_shot_;
  double finetune_s_ = 0;
  std::vector<FinalRow> finals_;
  ExploreResult r_;
};

}  // namespace dlas::study
