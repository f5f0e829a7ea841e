// Progress of long work on stderr (DESIGN.md section 6): on a terminal a bar redrawn in place
// ("\r"), with counts, rate and ETA; otherwise plain lines at a sane interval, so logs and
// pipes get a readable record and never a wall of carriage returns. Whether a command draws a
// bar is decided once (progress_tty) and handed to every Progress it makes.
//
//   Progress bar({.tty = progress_tty(json), .label = "eval", .line_seconds = 5});
//   for (...) bar.update(done, total, bar.counts(done, total, "images") + ", top-1 ...");
//   bar.finish(/*keep=*/true);
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace dlas {

// True when stderr is a terminal and the command does not print JSON: a command with --json
// is read by programs, so its progress goes out as plain lines (or not at all).
bool progress_tty(bool json = false);

// A duration for ETAs and elapsed times: "42s", "3m07s", "1h05m"; "?" when negative or not
// finite (unknown) or absurdly long.
std::string duration_text(double seconds);

// Prints `line` on stderr on a line of its own: a bar on screen is cleared first (the next
// update draws it again below the line). For messages in the middle of work with a bar.
void progress_message(const std::string& line);

class Progress {
 public:
  struct Options {
    bool tty = false;        // progress_tty(): a bar; otherwise plain lines
    std::string label = "";  // plain lines read "label: text"
    // Terminal: redraw at most this often (a forced update always draws).
    double redraw_seconds = 0.2;
    // Plain lines, besides forced ones: one each time the work passes another `line_fraction`
    // of its total (0: off), and one once `line_seconds` passed since the last line (0: off).
    double line_fraction = 0.1;
    double line_seconds = 0;
  };

  explicit Progress(Options options);
  ~Progress();  // a bar left on screen gets its newline, so what follows starts a line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool tty() const { return o_.tty; }
  // The clock starts at construction; restart() starts it again (and the line schedule).
  void restart();
  double elapsed() const;  // seconds
  // Units done per second so far, and seconds left at that rate (-1: not known yet).
  double rate(int64_t done) const;
  double eta(int64_t done, int64_t total) const;
  // "120/500 images, 41.3 images/s, ETA 9s".
  std::string counts(int64_t done, int64_t total, const std::string& unit) const;

  // Terminal: draws "[#####.....] text" (done of total filled), cut to the terminal's width.
  // Plain: prints "label: text" when the schedule above says so. `force` draws (or prints)
  // now: the last update of a piece of work, so its final state is on screen.
  void update(int64_t done, int64_t total, const std::string& text, bool force = false);
  // A line that stays: progress_message(line) (printed as given, no label).
  void note(const std::string& line);
  // Ends the bar's line: keep leaves it on screen (a newline after it), otherwise it is
  // cleared. Nothing on a plain stream.
  void finish(bool keep);

 private:
  using Clock = std::chrono::steady_clock;
  Options o_;
  Clock::time_point start_, last_draw_, last_line_;
  bool drawn_once_ = false;
  int64_t last_done_ = 0, last_step_ = 0;
};

}  // namespace dlas
