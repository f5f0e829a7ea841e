// The engine's thread pool: every index of every loop runs exactly once, whatever the
// thread count, the loop size, the balance of the items, nesting, idle sleeps and callers
// on several threads.
#include "dlas/hw/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace dlas {
namespace {

// Many small loops back to back: on 2 threads more than 2^16 of them, so each thread's share
// word sees its generation tag wrap around. (3 threads on a 2-core machine wait for the
// scheduler at every loop, so fewer there.)
TEST(ThreadPool, BackToBackLoopsEachRunEveryIndexOnce) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    const int kLoops = threads == 2 ? 70'000 : 500;
    std::vector<std::atomic<int>> hits(5);
    int64_t bad = 0;
    for (int l = 0; l < kLoops; ++l) {
      const size_t n = 1 + static_cast<size_t>(l % 5);
      pool.parallel_for(n, [&](size_t i) { hits[i]++; });
      for (size_t i = 0; i < n; ++i)
        if (hits[i].exchange(0) != 1) ++bad;
    }
    EXPECT_EQ(bad, 0) << threads << " threads";
  }
}

// One slow item among many quick ones: the other threads take the rest (stealing), and
// still no index runs twice.
TEST(ThreadPool, UnevenItemsAreSharedAndRunOnce) {
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    for (size_t slow : {size_t{0}, size_t{37}, size_t{99}}) {
      std::vector<std::atomic<int>> hits(100);
      std::vector<std::thread::id> who(100);  // each index written once, by its one thread
      pool.parallel_for(100, [&](size_t i) {
        if (i == slow) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        hits[i]++;
        who[i] = std::this_thread::get_id();
      });
      for (size_t i = 0; i < 100; ++i) EXPECT_EQ(hits[i].load(), 1) << threads << " " << i;
      // The slow item's thread ran few others: the rest went to the threads that were free.
      int with_slow = 0;
      for (size_t i = 0; i < 100; ++i) with_slow += who[i] == who[slow];
      EXPECT_LT(with_slow, 100) << threads << " threads, slow item " << slow;
    }
  }
}

// A loop issued from inside a loop of the same pool runs inline on the calling thread.
TEST(ThreadPool, NestedLoopsRunInline) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> hits(8 * 16);
  pool.parallel_for(8, [&](size_t i) {
    const auto outer = std::this_thread::get_id();
    pool.parallel_for(16, [&](size_t j) {
      EXPECT_EQ(std::this_thread::get_id(), outer);
      hits[i * 16 + j]++;
    });
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

// Two threads issuing loops on one pool at the same time: the loops serialize, each whole.
TEST(ThreadPool, CallersOnSeveralThreadsSerialize) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum_a{0}, sum_b{0};
  auto caller = [&](std::atomic<int64_t>& sum) {
    for (int l = 0; l < 2000; ++l)
      pool.parallel_for(50, [&](size_t i) { sum += static_cast<int64_t>(i); });
  };
  std::thread a(caller, std::ref(sum_a)), b(caller, std::ref(sum_b));
  a.join();
  b.join();
  EXPECT_EQ(sum_a.load(), 2000 * (49 * 50 / 2));
  EXPECT_EQ(sum_b.load(), 2000 * (49 * 50 / 2));
}

// Workers that went to sleep after a long idle wake for the next loop.
TEST(ThreadPool, SleepingWorkersWakeForTheNextLoop) {
  ThreadPool pool(3);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));  // past any spin
    std::vector<std::atomic<int>> hits(64);
    pool.parallel_for(64, [&](size_t i) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      hits[i]++;
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1) << "round " << round;
  }
}

// More items than a share's word can count: claimed in runs, each index still once.
TEST(ThreadPool, LoopsPastTwoToThe24ItemsRunEveryIndexOnce) {
  ThreadPool pool(2);
  const size_t n = (size_t{1} << 24) + 7;
  std::vector<uint8_t> hits(n, 0);
  pool.parallel_for(n, [&](size_t i) { hits[i]++; });
  size_t bad = 0;
  for (uint8_t h : hits) bad += h != 1;
  EXPECT_EQ(bad, 0u);
}

#if defined(__x86_64__) || defined(__i386__)
// Denormals flush to zero inside a loop on every thread, and the caller's own mode returns.
TEST(ThreadPool, LoopsRunWithDenormalsFlushedAndRestoreTheCaller) {
  ThreadPool pool(2);
  const unsigned before = _mm_getcsr();
  std::atomic<int> flushed{0};
  pool.parallel_for(64, [&](size_t) { flushed += (_mm_getcsr() & 0x8040u) == 0x8040u; });
  EXPECT_EQ(flushed.load(), 64);
  EXPECT_EQ(_mm_getcsr(), before);
}
#endif

}  // namespace
}  // namespace dlas
