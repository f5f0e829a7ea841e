// Inside the study layer: the table `dlas explore` keeps beside the results table of its store
// (explore.db): every scored chunk of the test split, per model + compression, so a resumed or
// repeated exploration scores nothing twice; and the settings the store was made with.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dlas::study {

class ExploreStore {
 public:
  // Opens (creating the tables) the SQLite file the ResultStore of `path` already created.
  explicit ExploreStore(const std::string& path);
  ~ExploreStore();
  ExploreStore(const ExploreStore&) = delete;
  ExploreStore& operator=(const ExploreStore&) = delete;

  // The hits of records [begin, end) of the race's order for `group` on this hardware.
  std::optional<std::vector<uint8_t>> hits(const std::string& hardware_id, const std::string& group,
                                           int64_t begin, int64_t end) const;
  // Stores them (one transaction), with the time scoring took.
  void put_hits(const std::string& hardware_id, const std::string& group, int64_t begin,
                int64_t end, const std::vector<uint8_t>& hits, double seconds);
  // The scoring time stored for the group's chunks.
  double seconds(const std::string& hardware_id, const std::string& group) const;
  // The final comparison's median of `variant_id` in interleaved round `round`.
  std::optional<double> final_median(const std::string& hardware_id, const std::string& variant_id,
                                     int round) const;
  void put_final_median(const std::string& hardware_id, const std::string& variant_id, int round,
                        double median_ms);
  // A setting ("model_hash", "dataset", ...); nullopt when not stored.
  std::optional<std::string> setting(const std::string& key) const;
  void put_setting(const std::string& key, const std::string& value);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dlas::study
