#include "dlas/hw/thread_pool.h"

#include <pthreadpool.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "dlas/core/error.h"

namespace dlas {

// The team: threads_ - 1 workers and the calling thread run each loop together. A loop is
// posted on one cache line (task, context, item count, generation); every thread starts
// on its own static share of the items, kept in its own line as one 64-bit word
// (generation, next item, end), takes items from its front and, when its share is done,
// steals from the back of the others'. A worker marks the generation done in its own line;
// the caller waits for those marks. So a loop costs the caller about one cache-line round
// trip to each worker and back; pthreadpool's posting, per-thread range set-up and
// completion count cost more where the round trip is short (docs/decisions.md, "The
// engine's own thread team, not pthreadpool").
struct ThreadPool::Team {
  static constexpr int kItemBits = 24;  // a share counts items below 2^24 (larger loops: runs)
  static constexpr uint64_t kItemMask = (uint64_t{1} << kItemBits) - 1;

  struct alignas(64) Loop {
    std::atomic<uint32_t> gen{0};
    Task task = nullptr;
    void* ctx = nullptr;
    size_t n = 0;
    bool stop = false;
  };
  struct alignas(64) Share {
    std::atomic<uint64_t> word{0};  // gen:16 | next:24 | end:24
  };
  struct alignas(64) Done {
    std::atomic<uint32_t> gen{0};  // the last generation this worker finished
  };

  explicit Team(int threads);
  ~Team();
  void run(size_t n, Task task, void* ctx);

  static uint64_t pack(uint32_t gen, uint64_t next, uint64_t end) {
    return (uint64_t{gen & 0xffffu} << (2 * kItemBits)) | (next << kItemBits) | end;
  }
  void work(int t, uint32_t gen);
  void worker(int t);
  void stop();  // ends and joins the workers

  const int threads;
  const int64_t spin_ns;  // how long an idle worker spins before it sleeps
  Loop loop;
  std::unique_ptr<Share[]> shares;
  std::unique_ptr<Done[]> done;
  std::atomic<int> sleepers{0};
  std::mutex caller_mu;  // runs from different threads serialize
  std::vector<std::thread> workers;
};

namespace {
thread_local const void* tl_team = nullptr;  // the team whose loop this thread is inside

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

#if defined(__x86_64__) || defined(__i386__)
constexpr unsigned kFtzDaz = 0x8040;  // MXCSR flush-to-zero | denormals-are-zero
#endif

// DLAS_POOL_YIELD=1: workers sleep almost as soon as a loop ends instead of spinning for the
// next one. Spinning saves a wake-up per loop, but when more pool threads than cores are
// alive (several dlas processes on few cores, as the test suite runs) the spinners take
// the cores the working threads need.
bool pool_yield() {
  static const bool y = [] {
    const char* v = std::getenv("DLAS_POOL_YIELD");
    return v && std::string(v) == "1";
  }();
  return y;
}
bool use_pthreadpool() {
  static const bool p = [] {
    const char* v = std::getenv("DLAS_POOL");
    return v && std::string(v) == "pthreadpool";
  }();
  return p;
}
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

ThreadPool::Team::Team(int n)
    : threads(n),
      spin_ns(pool_yield() ? 20'000 : 2'000'000),
      shares(new Share[n]),
      done(new Done[n]) {
  workers.reserve(static_cast<size_t>(n - 1));
  try {
    for (int t = 1; t < n; ++t) workers.emplace_back([this, t] { worker(t); });
  } catch (const std::system_error& e) {
    stop();
    fail(ErrorKind::kRuntime, "could not start a pool of ", n, " threads: ", e.what());
  }
}

ThreadPool::Team::~Team() { stop(); }

void ThreadPool::Team::stop() {
  loop.stop = true;
  loop.gen.fetch_add(1, std::memory_order_seq_cst);
  loop.gen.notify_all();
  for (std::thread& w : workers) w.join();
}

void ThreadPool::Team::worker(int t) {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(_mm_getcsr() | kFtzDaz);
#endif
  tl_team = this;
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen = loop.gen.load(std::memory_order_acquire);
    if (gen == seen) {
      const int64_t until = now_ns() + spin_ns;
      for (int i = 1;; ++i) {
        cpu_relax();
        gen = loop.gen.load(std::memory_order_acquire);
        if (gen != seen) break;
        if ((i & 255) == 0 && now_ns() > until) {
          // Sleep. The caller bumps the generation, then reads sleepers; this thread counts
          // itself, then reads the generation (both sequentially consistent), so one of the
          // two sees the other and no post is missed.
          sleepers.fetch_add(1, std::memory_order_seq_cst);
          while ((gen = loop.gen.load(std::memory_order_seq_cst)) == seen)
            loop.gen.wait(seen, std::memory_order_seq_cst);
          sleepers.fetch_sub(1, std::memory_order_relaxed);
          break;
        }
      }
    }
    seen = gen;
    if (loop.stop) return;
    work(t, gen);
    done[t].gen.store(gen, std::memory_order_release);
  }
}

void ThreadPool::Team::work(int t, uint32_t gen) {
  const Task task = loop.task;
  void* const ctx = loop.ctx;
  const uint64_t n = loop.n;
  const uint64_t g16 = gen & 0xffffu;
  const auto tt = static_cast<uint64_t>(threads);
  // Each thread's static range; its first item is the owner's alone, run before the thread
  // touches any shared line, while a write-prefetch brings its share's line back from the
  // thread that probed it at the end of the last loop.
  auto fresh = [&](int v) {
    const uint64_t first = n * static_cast<uint64_t>(v) / tt,
                   end = n * static_cast<uint64_t>(v + 1) / tt;
    return pack(gen, first < end ? first + 1 : first, end);
  };
  // A share is set up for this generation by whoever reaches it first, its owner or a
  // thief, with the same static range, so no thread waits for another to set it.
  auto current = [&](std::atomic<uint64_t>& w, int v) {
    uint64_t cur = w.load(std::memory_order_acquire);
    while ((cur >> (2 * kItemBits)) != g16)
      if (w.compare_exchange_weak(cur, fresh(v), std::memory_order_acq_rel)) return fresh(v);
    return cur;
  };
  std::atomic<uint64_t>& mine = shares[t].word;
  auto drain = [&] {
    uint64_t cur = current(mine, t);
    for (;;) {
      const uint64_t next = (cur >> kItemBits) & kItemMask, end = cur & kItemMask;
      if (next >= end) return;
      if (mine.compare_exchange_weak(cur, pack(gen, next + 1, end), std::memory_order_acq_rel)) {
        task(ctx, static_cast<size_t>(next));
        cur = mine.load(std::memory_order_acquire);
      }
    }
  };
  if (const uint64_t first = n * static_cast<uint64_t>(t) / tt;
      first < n * static_cast<uint64_t>(t + 1) / tt) {
    __builtin_prefetch(&mine, 1);
    task(ctx, static_cast<size_t>(first));
  }
  drain();
  // Steal the back half of another share into this thread's own (where others may steal
  // from it in turn), so a steal moves a cache line once, not once per item.
  for (int d = 1; d < threads; ++d) {
    const int v = (t + d) % threads;
    std::atomic<uint64_t>& w = shares[v].word;
    for (uint64_t cur = current(w, v);;) {
      const uint64_t next = (cur >> kItemBits) & kItemMask, end = cur & kItemMask;
      if (next >= end) break;
      const uint64_t k = (end - next + 1) / 2;
      if (w.compare_exchange_weak(cur, pack(gen, next, end - k), std::memory_order_acq_rel)) {
        mine.store(pack(gen, end - k, end), std::memory_order_release);
        drain();
        cur = current(w, v);
      }
    }
  }
}

void ThreadPool::Team::run(size_t n, Task task, void* ctx) {
  std::lock_guard<std::mutex> lock(caller_mu);
#if defined(__x86_64__) || defined(__i386__)
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | kFtzDaz);
#endif
  loop.task = task;
  loop.ctx = ctx;
  loop.n = n;
  const uint32_t gen = loop.gen.fetch_add(1, std::memory_order_seq_cst) + 1;
  if (sleepers.load(std::memory_order_seq_cst) > 0) loop.gen.notify_all();
  const void* outer = tl_team;
  tl_team = this;
  work(0, gen);
  tl_team = outer;
  for (int t = 1; t < threads; ++t)
    for (int spins = 0; done[t].gen.load(std::memory_order_acquire) != gen; ++spins) {
      if (spins < (1 << 14))
        cpu_relax();
      else
        std::this_thread::yield();  // more threads than free cores: let the worker run
    }
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(csr);
#endif
}

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads_ = threads;
  if (threads_ > 1) {
    if (use_pthreadpool()) {
      pool_ = pthreadpool_create(static_cast<size_t>(threads_));
      DLAS_CHECK(pool_ != nullptr, ErrorKind::kRuntime, "could not create a pool of ", threads_,
                 " threads");
    } else {
      team_ = std::make_unique<Team>(threads_);
    }
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
uint32_t pthreadpool_flags() {
  return PTHREADPOOL_FLAG_DISABLE_DENORMALS | (pool_yield() ? PTHREADPOOL_FLAG_YIELD_WORKERS : 0u);
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
  if (team_ && tl_team == team_.get()) {
    // A loop inside one of this pool's loops runs inline: its threads are all busy.
    for (size_t i = 0; i < n; ++i) task(ctx, i);
    return;
  }
  if (team_) {
    if (n <= Team::kItemMask) {
      team_->run(n, task, ctx);
      return;
    }
    // More items than a share's word counts: each claim takes a run of them.
    struct Runs {
      size_t n, per;
      Task task;
      void* ctx;
    } runs{n, (n + Team::kItemMask - 1) / Team::kItemMask, task, ctx};
    const Task each = [](void* c, size_t r) {
      auto* p = static_cast<Runs*>(c);
      for (size_t i = r * p->per; i < std::min(p->n, (r + 1) * p->per); ++i) p->task(p->ctx, i);
    };
    team_->run((n + runs.per - 1) / runs.per, each, &runs);
    return;
  }
  Ctx c{task, ctx};
  pthreadpool_parallelize_1d(pool_, &call, &c, n, pthreadpool_flags());
}

}  // namespace dlas
