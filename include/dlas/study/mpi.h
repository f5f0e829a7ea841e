// `mpirun -n K dlas study run SPEC --db DB`: every rank runs shard rank/K of the study
// into its own copy of the database (DB.rank<r>, seeded with DB's rows so finished
// variants are not rerun), then all ranks meet at a barrier and rank 0 merges the
// copies into DB. Rank and size come from MPI itself (MPI_Comm_rank/size); the launch
// is recognised from the launcher's environment (Open MPI's OMPI_COMM_WORLD_SIZE,
// MPICH/Hydra's PMI_SIZE), so a plain `dlas study run` never initialises MPI.
#pragma once

#include <optional>
#include <string>

#include "dlas/study/runner.h"

namespace dlas::study {

// The world size the launcher announced; nullopt outside mpirun (or size 1).
std::optional<int> mpi_launch_size();
// Whether this dlas was built with MPI (Debian's Open MPI).
bool mpi_available();

// MPI_Init on construction, MPI_Finalize on destruction. Throws kRuntime when dlas
// was built without MPI.
class MpiWorld {
 public:
  MpiWorld();
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  void barrier() const;
  // Every rank's flag ANDed (false anywhere -> false everywhere); also a barrier.
  bool all(bool flag) const;
  // Ends every rank (a failed rank must not leave the others waiting at a barrier).
  [[noreturn]] void abort(int code) const;

 private:
  int rank_ = 0, size_ = 1;
};

// This rank's part of the run above: shard rank/size of `spec` into options.db_path + ".rank<r>"
// (seeded with options.db_path's rows), then rank 0 merges the rank databases into
// options.db_path. options.shard and options.db_path are those of the rank while it runs (a
// listener reading them sees the shard); db_path is the merged database again on success.
// An error on any rank is printed ("error: rank R: ...") and every rank returns 2, keeping
// the rank databases for a rerun; 0 on success, with *summary this rank's run.
int run_study_mpi(const MpiWorld& mpi, const StudySpec& spec, RunOptions& options,
                  const RunListener& listener, RunSummary* summary);

}  // namespace dlas::study
