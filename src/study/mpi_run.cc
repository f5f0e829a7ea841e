// `mpirun -n K dlas study run`: the rank's shard into its own database, then rank 0 merges
// (dlas/study/mpi.h). Only MpiWorld's interface is used, so this builds without MPI too.
#include <cstdio>
#include <filesystem>

#include "dlas/core/error.h"
#include "dlas/study/mpi.h"
#include "dlas/study/store.h"

namespace dlas::study {

namespace {

std::string rank_db(const std::string& db, int rank) { return db + ".rank" + std::to_string(rank); }

// Rank 0: the rank databases merged into `db` and removed; false (message printed) when the
// merge fails, which keeps them for a rerun.
bool merge_rank_databases(const MpiWorld& mpi, const std::string& db) {
  std::vector<std::string> parts;
  for (int r = 0; r < mpi.size(); ++r) parts.push_back(rank_db(db, r));
  try {
    const int64_t n = merge_stores(parts, db);
    std::error_code ec;
    for (const auto& p : parts)
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p + suffix, ec);
    std::fprintf(stderr, "study run: rank 0 merged %d rank databases (%lld rows) into %s\n",
                 mpi.size(), static_cast<long long>(n), db.c_str());
    return true;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: rank 0: merge: %s (the rank databases are kept)\n", e.what());
    return false;
  }
}

}  // namespace

int run_study_mpi(const MpiWorld& mpi, const StudySpec& spec, RunOptions& options,
                  const RunListener& listener, RunSummary* summary) {
  const std::string merged_db = options.db_path;
  options.shard = {mpi.rank(), mpi.size(), "mpi"};
  options.db_path = rank_db(merged_db, mpi.rank());
  bool seeded = true;
  try {
    if (std::filesystem::exists(merged_db)) merge_stores({merged_db}, options.db_path);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    seeded = false;
  }
  if (!mpi.all(seeded)) return 2;  // every rank stops: none waits at a barrier
  bool ok = true;
  try {
    *summary = run_study(spec, options, listener);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: rank %d: %s\n", mpi.rank(), e.what());
    ok = false;
  }
  if (!mpi.all(ok)) return 2;  // the rank databases stay for a rerun
  const bool merged = mpi.rank() != 0 || merge_rank_databases(mpi, merged_db);
  mpi.barrier();
  if (!merged) return 2;
  options.db_path = merged_db;
  return 0;
}

}  // namespace dlas::study
