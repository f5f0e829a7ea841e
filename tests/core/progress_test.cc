// The progress helper (dlas/core/progress.h): the bar on a terminal, the plain-line schedule
// otherwise, and the texts of durations, counts and messages.
#include "dlas/core/progress.h"

#include <gtest/gtest.h>

#include <string>

namespace dlas {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

TEST(CoreProgress, DurationText) {
  EXPECT_EQ(duration_text(0), "0s");
  EXPECT_EQ(duration_text(42.4), "42s");
  EXPECT_EQ(duration_text(187), "3m07s");
  EXPECT_EQ(duration_text(3900), "1h05m");
  EXPECT_EQ(duration_text(-1), "?");  // unknown
  EXPECT_EQ(duration_text(1e9), "?");
}

TEST(CoreProgress, PlainLinesEveryTenthAndWhenForced) {
  Progress p({.tty = false, .label = "work"});
  ::testing::internal::CaptureStderr();
  for (int i = 1; i <= 100; ++i) p.update(i, 100, "step " + std::to_string(i));
  p.update(100, 100, "done", /*force=*/true);
  // Work that starts over (the next epoch) is scheduled afresh.
  for (int i = 1; i <= 20; ++i) p.update(i, 20, "again " + std::to_string(i));
  p.finish(/*keep=*/true);  // nothing to end on a plain stream
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "\n"), 10u + 1u + 10u) << err;
  EXPECT_EQ(count(err, "\r"), 0u) << err;
  EXPECT_NE(err.find("work: step 10\n"), std::string::npos) << err;
  EXPECT_EQ(err.find("work: step 9\n"), std::string::npos) << err;
  EXPECT_NE(err.find("work: step 100\nwork: done\n"), std::string::npos) << err;
  EXPECT_NE(err.find("work: again 2\n"), std::string::npos) << err;
}

TEST(CoreProgress, PlainLinesByTimeOnly) {
  Progress p({.tty = false, .label = "eval", .line_fraction = 0, .line_seconds = 3600});
  ::testing::internal::CaptureStderr();
  for (int i = 1; i <= 1000; ++i) p.update(i, 1000, "x");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "");  // an hour has not passed
}

TEST(CoreProgress, BarRedrawsInPlaceAndEnds) {
  Progress p({.tty = true, .label = "", .redraw_seconds = 3600});
  ::testing::internal::CaptureStderr();
  p.update(5, 10, "half");
  p.update(6, 10, "skipped: too soon after the last draw");
  p.update(10, 10, "all", /*force=*/true);
  p.finish(/*keep=*/true);
  p.finish(/*keep=*/true);  // already ended: nothing more
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "\r\033[K[##########..........] half"
            "\r\033[K[####################] all\n");
}

TEST(CoreProgress, MessagesClearTheBarFirst) {
  Progress p({.tty = true, .label = ""});
  ::testing::internal::CaptureStderr();
  p.update(0, 4, "start", /*force=*/true);
  p.note("a line that stays");
  progress_message("another");  // no bar on screen now: printed as is
  p.update(4, 4, "end", /*force=*/true);
  p.finish(/*keep=*/false);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "\r\033[K[....................] start"
            "\r\033[Ka line that stays\n"
            "another\n"
            "\r\033[K[####################] end"
            "\r\033[K");
}

TEST(CoreProgress, RateEtaAndCounts) {
  Progress p({});
  EXPECT_EQ(p.eta(0, 10), -1);  // nothing done: unknown
  EXPECT_EQ(p.eta(10, 10), 0);
  const std::string c = p.counts(0, 10, "images");
  EXPECT_EQ(c.rfind("0/10 images, ", 0), 0u) << c;
  EXPECT_NE(c.find(" images/s, ETA ?"), std::string::npos) << c;
  EXPECT_FALSE(progress_tty(/*json=*/true));  // --json: never a bar
}

}  // namespace
}  // namespace dlas
