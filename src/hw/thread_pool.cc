#include "dlas/hw/thread_pool.h"

#include <pthreadpool.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
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

namespace {
// DLAS_POOL_YIELD=1: workers sleep as soon as a loop ends instead of spinning for the next
// one. Spinning saves a wake-up per loop, but when more pool threads than cores are alive
// (several dlas processes on few cores, as the test suite runs) the spinners take the cores
// the working threads need.
uint32_t pool_flags() {
  static const uint32_t flags = [] {
    const char* y = std::getenv("DLAS_POOL_YIELD");
    return PTHREADPOOL_FLAG_DISABLE_DENORMALS |
           (y && std::string(y) == "1" ? PTHREADPOOL_FLAG_YIELD_WORKERS : 0u);
  }();
  return flags;
}
}  // namespace

void ThreadPool::SpinBarrier::wait() {
  const int gen = gen_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
    arrived_.store(0, std::memory_order_relaxed);
    gen_.fetch_add(1, std::memory_order_release);
    return;
  }
  // Spin, then yield: with more threads than free cores (several processes on two), the
  // thread waited for may need this one's core.
  constexpr int kSpins = 1 << 14;
  for (int spins = 0; gen_.load(std::memory_order_acquire) == gen; ++spins) {
    if (spins < kSpins) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::run_1d(size_t n, Task task, void* ctx) {
  Ctx c{task, ctx};
  pthreadpool_parallelize_1d(pool_, &call, &c, n, pool_flags());
}

}  // namespace dlas
