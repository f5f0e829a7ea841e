#include "dlas/core/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>

#include "dlas/core/error.h"

namespace dlas {

namespace {

// A bar is on stderr's current line (drawn, not yet ended): a message must clear it first.
std::atomic<bool> g_bar_on_screen{false};

constexpr int kBarWidth = 20;

size_t terminal_width() {
  winsize ws{};
  if (::ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col;
  return 100;
}

}  // namespace

bool progress_tty(bool json) { return !json && ::isatty(2) != 0; }

std::string duration_text(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  const int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) return str(t / 3600, "h", (t % 3600) / 60 < 10 ? "0" : "", (t % 3600) / 60, "m");
  if (t >= 60) return str(t / 60, "m", t % 60 < 10 ? "0" : "", t % 60, "s");
  return str(t, "s");
}

void progress_message(const std::string& line) {
  const bool clear = g_bar_on_screen.exchange(false);
  std::fprintf(stderr, "%s%s\n", clear ? "\r\033[K" : "", line.c_str());
  std::fflush(stderr);
}

Progress::Progress(Options options) : o_(std::move(options)) { restart(); }

Progress::~Progress() {
  if (o_.tty) finish(/*keep=*/true);
}

void Progress::restart() {
  start_ = last_line_ = Clock::now();
  drawn_once_ = false;
  last_done_ = last_step_ = 0;
}

double Progress::elapsed() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

double Progress::rate(int64_t done) const {
  const double t = elapsed();
  return t > 0 ? static_cast<double>(done) / t : 0.0;
}

double Progress::eta(int64_t done, int64_t total) const {
  if (done <= 0 || total < done) return -1;
  return elapsed() / static_cast<double>(done) * static_cast<double>(total - done);
}

std::string Progress::counts(int64_t done, int64_t total, const std::string& unit) const {
  const double r = rate(done);
  char rate_text[32];
  std::snprintf(rate_text, sizeof rate_text, r >= 100 ? "%.0f" : r >= 1 ? "%.1f" : "%.3g", r);
  return str(done, "/", total, " ", unit, ", ", rate_text, " ", unit, "/s, ETA ",
             duration_text(eta(done, total)));
}

void Progress::update(int64_t done, int64_t total, const std::string& text, bool force) {
  const Clock::time_point now = Clock::now();
  if (o_.tty) {
    if (!force && drawn_once_ &&
        std::chrono::duration<double>(now - last_draw_).count() < o_.redraw_seconds)
      return;
    drawn_once_ = true;
    last_draw_ = now;
    const int64_t clamped = std::clamp<int64_t>(done, 0, std::max<int64_t>(total, 0));
    const int filled = total > 0 ? static_cast<int>(kBarWidth * clamped / total) : kBarWidth;
    std::string line = "[";
    line.append(static_cast<size_t>(filled), '#')
        .append(static_cast<size_t>(kBarWidth - filled), '.');
    line += "] " + text;
    const size_t width = terminal_width();
    if (line.size() > width - 1) line.resize(width - 1);
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    g_bar_on_screen = true;
    return;
  }
  bool due = force;
  int64_t step = last_step_;
  if (o_.line_fraction > 0 && total > 0) {
    if (done < last_done_) last_step_ = 0;  // the work started over (the next epoch)
    // In whole parts of the total (10 for a tenth): exact, whatever the total.
    const int64_t parts = std::max<int64_t>(1, std::llround(1.0 / o_.line_fraction));
    step = std::clamp<int64_t>(done, 0, total) * parts / total;
    due |= step > last_step_;
  }
  if (o_.line_seconds > 0)
    due |= std::chrono::duration<double>(now - last_line_).count() >= o_.line_seconds;
  last_done_ = done;
  if (!due) return;
  last_step_ = step;
  last_line_ = now;
  std::fprintf(stderr, "%s%s%s\n", o_.label.c_str(), o_.label.empty() ? "" : ": ", text.c_str());
  std::fflush(stderr);
}

void Progress::note(const std::string& line) { progress_message(line); }

void Progress::finish(bool keep) {
  if (!o_.tty || !g_bar_on_screen.exchange(false)) return;
  std::fprintf(stderr, keep ? "\n" : "\r\033[K");
  std::fflush(stderr);
}

}  // namespace dlas
