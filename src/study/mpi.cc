#include "dlas/study/mpi.h"

#include <cstdlib>

#include "dlas/core/error.h"

#if DLAS_WITH_MPI
#include <mpi.h>
#endif

namespace dlas::study {

std::optional<int> mpi_launch_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* v = std::getenv(var);
    if (v && std::atoi(v) > 1) return std::atoi(v);
  }
  return std::nullopt;
}

#if DLAS_WITH_MPI

bool mpi_available() { return true; }

MpiWorld::MpiWorld() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiWorld::~MpiWorld() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiWorld::barrier() const { MPI_Barrier(MPI_COMM_WORLD); }

bool MpiWorld::all(bool flag) const {
  int in = flag ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return out == 1;
}

void MpiWorld::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

#else

bool mpi_available() { return false; }

MpiWorld::MpiWorld() {
  fail(ErrorKind::kRuntime,
       "this dlas was built without MPI (install libopenmpi-dev and rebuild), so it cannot "
       "run under mpirun; use --shard I/N instead");
}
MpiWorld::~MpiWorld() = default;
void MpiWorld::barrier() const {}
bool MpiWorld::all(bool flag) const { return flag; }
void MpiWorld::abort(int code) const { std::exit(code); }

#endif

}  // namespace dlas::study
