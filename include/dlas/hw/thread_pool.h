// The engine's thread pool (DLAS layer 6: hardware threads). A team of threads - 1 workers
// and the calling thread runs each parallel loop: static shares with work stealing, one
// cache line to post a loop and one per worker to mark it done, so a loop costs about a
// cache-line round trip between cores. Workers spin for a while before they sleep, so the
// back-to-back loops of one inference never pay a futex wake-up. DLAS_POOL=pthreadpool runs
// the loops on Debian's pthreadpool instead (the pool XNNPACK uses), for comparison;
// docs/engine.md "Threading" and docs/decisions.md record the measurements.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <type_traits>

struct pthreadpool;

namespace dlas {

class ThreadPool {
 public:
  // threads <= 0: one per logical processor. threads == 1 runs every loop inline.
  explicit ThreadPool(int threads = 1);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }

  // Calls fn(i) for i in [0, n), spread over the threads; returns when all are done.
  // fn must not throw. No allocation.
  template <class Fn>
  void parallel_for(size_t n, Fn&& fn) {
    if (n == 0) return;
    if (threads_ == 1 || n == 1) {
      for (size_t i = 0; i < n; ++i) fn(i);
      return;
    }
    run_1d(n, &trampoline<Fn>, static_cast<void*>(&fn));
  }
  // Calls fn(t, sync) once for each of the pool's threads, t in [0, threads()), all running
  // at once; sync() returns when every thread has called it. Two phases of one layer where
  // the second reads what every thread wrote in the first (a packed image, then its tiles)
  // meet at a spin barrier inside one loop instead of ending one loop and starting another.
  // Every thread must call sync() equally often.
  template <class Fn>
  void parallel_phases(Fn&& fn) {
    SpinBarrier barrier(threads_);
    parallel_for(static_cast<size_t>(threads_), [&](size_t t) { fn(t, [&] { barrier.wait(); }); });
  }
  // Calls fn(i, j) for i in [0, n0), j in [0, n1).
  template <class Fn>
  void parallel_for_2d(size_t n0, size_t n1, Fn&& fn) {
    parallel_for(n0 * n1, [&](size_t t) { fn(t / n1, t % n1); });
  }

  // A pool with one thread (inline), for callers that do not care.
  static ThreadPool& serial();
  // The process's shared pool of `threads` threads (created on first use, kept while anyone
  // holds it). Plans and the tuner's measurer use it: two pools of 2 threads each on 2
  // cores fight, because a pool's workers keep spinning after its loop ends while the
  // other pool's loop runs (the tuner's paired whole-model timings alternated two plans
  // and were off by up to 40% at 2 threads). Runs from different threads serialize.
  static std::shared_ptr<ThreadPool> shared(int threads);

 private:
  // The threads of one parallel_phases loop: the pool gives each of n == threads items to
  // its own thread, and a thread takes another's item only after finishing its own, so all
  // n are in the loop at once and none waits for an item that no thread will run.
  class SpinBarrier {
   public:
    explicit SpinBarrier(int n) : n_(n) {}
    void wait();  // thread_pool.cc

   private:
    const int n_;
    std::atomic<int> arrived_{0};
    std::atomic<int> gen_{0};
  };
  using Task = void (*)(void* ctx, size_t i);
  template <class Fn>
  static void trampoline(void* ctx, size_t i) {
    (*static_cast<std::remove_reference_t<Fn>*>(ctx))(i);
  }
  void run_1d(size_t n, Task task, void* ctx);

  struct Team;  // thread_pool.cc: the workers, the posted loop, each thread's range
  int threads_ = 1;
  std::unique_ptr<Team> team_;
  pthreadpool* pool_ = nullptr;  // DLAS_POOL=pthreadpool: Debian's pool instead of the team
};

}  // namespace dlas
