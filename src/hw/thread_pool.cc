#include "dlas/hw/thread_pool.h"

#include <pthreadpool.h>

#include <map>
#include <mutex>
#include <thread>

#include "dlas/core/error.h"

namespace dlas {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads_ = threads;
  if (threads_ > 1) {
    pool_ = pthreadpool_create(static_cast<size_t>(threads_));
    DLAS_CHECK(pool_ != nullptr, ErrorKind::kRuntime, "could not create a pool of ", threads_,
               " threads");
  }
}

ThreadPool::~ThreadPool() {
  if (pool_) pthreadpool_destroy(pool_);
}

ThreadPool& ThreadPool::serial() {
  static ThreadPool pool(1);
  return pool;
}

std::shared_ptr<ThreadPool> ThreadPool::shared(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  static std::mutex mu;
  static std::map<int, std::weak_ptr<ThreadPool>> pools;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<ThreadPool> p = pools[threads].lock();
  if (!p) {
    p = std::make_shared<ThreadPool>(threads);
    pools[threads] = p;
  }
  return p;
}

namespace {
struct Ctx {
  void (*task)(void*, size_t);
  void* ctx;
};
void call(void* c, size_t i) {
  auto* p = static_cast<Ctx*>(c);
  p->task(p->ctx, i);
}
}  // namespace

void ThreadPool::run_1d(size_t n, Task task, void* ctx) {
  Ctx c{task, ctx};
  pthreadpool_parallelize_1d(pool_, &call, &c, n, PTHREADPOOL_FLAG_DISABLE_DENORMALS);
}

}  // namespace dlas
