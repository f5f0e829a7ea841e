#include "dlas/study/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "child.h"
#include "dlas/algo/machine_profile.h"
#include "dlas/core/error.h"
#include "dlas/core/progress.h"
#include "dlas/core/version.h"
#include "dlas/hw/cpu.h"
#include "dlas/hw/gpu.h"
#include "dlas/hw/isa.h"
#include "dlas/system/peer_executor.h"

namespace dlas::study {
namespace {

using Clock = std::chrono::steady_clock;

int parse_int(std::string_view s, bool* ok) {
  *ok = !s.empty() && s.size() <= 9 &&
        std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  return *ok ? std::atoi(std::string(s).c_str()) : 0;
}

std::string iso_utc(std::chrono::system_clock::time_point t) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string fnv_hex(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// --- child processes -----------------------------------------------------------

struct ChildResult {
  bool started = false;
  bool timed_out = false;
  int status = 0;  // waitpid status
  std::string out;
  std::string err_tail;
  int64_t max_rss_bytes = 0;
};

constexpr size_t kStderrTail = 4000;
constexpr size_t kStdoutMax = 1 << 20;

void keep_tail(std::string& s, size_t n) {
  if (s.size() > 2 * n) s.erase(0, s.size() - n);
}

// Runs argv[0] with argv in its own process group; kills the whole group after
// timeout_s (0: no limit). The child dies with us (PR_SET_PDEATHSIG), so a runner
// killed with SIGKILL leaves no orphan measuring in the background.
ChildResult run_child(const std::vector<std::string>& args, double timeout_s) {
  ChildResult r;
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) fail(ErrorKind::kRuntime, "pipe: ", std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    fail(ErrorKind::kRuntime, "pipe: ", std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    fail(ErrorKind::kRuntime, "fork: ", std::strerror(errno));
  }
  if (pid == 0) {  // child: async-signal-safe calls only until exec
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execv(argv[0], argv.data());
    const char msg[] = "dlas study: cannot execute the measuring process\n";
    [[maybe_unused]] ssize_t n = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no race with the child's own call
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  r.started = true;

  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    int wait_ms = -1;
    if (timeout_s > 0 && !r.timed_out) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        r.timed_out = true;
        ::kill(-pid, SIGKILL);  // the whole group: threads and any helper processes
        continue;
      }
      wait_ms = static_cast<int>(std::min<int64_t>(left, 1000));
    }
    const int n = ::poll(fds, 2, wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(f.fd, buf, sizeof buf);
      if (got <= 0) {
        if (got < 0 && errno == EINTR) continue;
        ::close(f.fd);
        f.fd = -1;
        --open_fds;
        continue;
      }
      if (f.fd == out_pipe[0]) {
        if (r.out.size() < kStdoutMax) r.out.append(buf, static_cast<size_t>(got));
      } else {
        r.err_tail.append(buf, static_cast<size_t>(got));
        keep_tail(r.err_tail, kStderrTail);
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  // Wait for the exit without reaping, kill whatever the child left in its group, then
  // reap: while the leader is an unreaped zombie its process-group id cannot be reused,
  // so the kill cannot hit an unrelated group.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  ::kill(-pid, SIGKILL);
  rusage ru{};
  while (::wait4(pid, &r.status, 0, &ru) < 0 && errno == EINTR) {
  }
  r.max_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  if (r.err_tail.size() > kStderrTail) {
    r.err_tail.erase(0, r.err_tail.size() - kStderrTail);
    const size_t nl = r.err_tail.find('\n');
    if (nl != std::string::npos && nl + 1 < r.err_tail.size()) r.err_tail.erase(0, nl + 1);
  }
  return r;
}

// The last non-empty line of a text.
std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  const size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1,
                     end - (begin == std::string::npos ? 0 : begin + 1) + 1);
}

// An exclusive flock held while one child measures.
class MeasureLock {
 public:
  explicit MeasureLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      static bool warned = false;
      if (!warned)
        std::fprintf(stderr, "study: warning: cannot open the measurement lock %s (%s)\n",
                     path.c_str(), std::strerror(errno));
      warned = true;
      return;
    }
    ::fchmod(fd_, 0666);  // shared by every user of the machine; best effort
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    static bool told = false;  // once per run: on a busy machine every variant waits
    if (!told)                 // off the progress bar's line
      progress_message(str("study: waiting for another measurement on this machine (lock ", path,
                           "; each variant waits its turn)"));
    told = true;
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~MeasureLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the flock
  }
  MeasureLock(const MeasureLock&) = delete;
  MeasureLock& operator=(const MeasureLock&) = delete;

 private:
  int fd_ = -1;
};

const char* const kMeasuredColumns[] = {"median_ms",
                                        "mean_ms",
                                        "p10_ms",
                                        "p90_ms",
                                        "min_ms",
                                        "max_ms",
                                        "std_ms",
                                        "cv",
                                        "first_ms",
                                        "compile_ms",
                                        "params",
                                        "macs",
                                        "weight_bytes",
                                        "packed_weight_bytes",
                                        "peak_activation_bytes",
                                        "workspace_bytes",
                                        "tuning_s",
                                        "tuning_trials",
                                        "tuning_failures",
                                        "tuning_cold_share",
                                        "tuning_stop",
                                        "nonzero_params",
                                        "accuracy",
                                        "top5",
                                        "accuracy_samples",
                                        "accuracy_s",
                                        "profile"};

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  std::string s = str("killed by signal ", sig, abbrev ? str(" (SIG", abbrev, ")") : "");
  if (sig == SIGKILL) s += ": out of memory (the kernel's OOM killer) or killed from outside";
  return s;
}

}  // namespace

// --- measuring children (child.h) -------------------------------------------------

ChildOutcome run_measuring_child(const std::vector<std::string>& args, double timeout_s,
                                 const std::string& lock_path) {
  std::string lock = lock_path;
  if (lock.empty()) {
    const char* env = std::getenv("DLAS_MEASURE_LOCK");
    lock = env && *env ? env : "/tmp/dlas-measure.lock";
  }
  ChildResult c;
  {
    MeasureLock held(lock);
    c = run_child(args, timeout_s);
  }
  ChildOutcome o;
  o.err_tail = c.err_tail;
  o.max_rss_bytes = c.max_rss_bytes;
  if (c.timed_out) {
    o.status = kStatusTimeout;
    o.reason =
        str("no result within the ", timeout_s, " s time limit: its process group was killed");
  } else if (WIFSIGNALED(c.status)) {
    o.status = kStatusCrashed;
    o.reason = signal_text(WTERMSIG(c.status));
  } else if (WIFEXITED(c.status) && WEXITSTATUS(c.status) != 0) {
    o.status = kStatusFailed;
    const std::string line = last_line(c.err_tail);
    o.reason = str("exit code ", WEXITSTATUS(c.status), line.empty() ? "" : ": ", line);
  } else {
    o.status = kStatusOk;
    o.out_line = last_line(c.out);
  }
  return o;
}

void measure_request_in_child(const MeasureRequest& req, const std::string& exe,
                              const std::string& lock_path, double timeout_s, Row& row) {
  std::vector<std::string> args = {exe, "study", "exec-variant"};
  for (auto& a : exec_variant_args(req)) args.push_back(std::move(a));
  const ChildOutcome c = run_measuring_child(args, timeout_s, lock_path);
  row.set("stderr_tail", c.err_tail);
  if (c.max_rss_bytes > 0) row.set("peak_rss_bytes", c.max_rss_bytes);
  if (c.status != kStatusOk) {
    row.set("status", c.status);
    row.set("reason", c.reason);
    return;
  }
  Row measured;
  bool parsed = true;
  try {
    measured = row_from_json(c.out_line);
  } catch (const Error&) {
    parsed = false;
  }
  if (parsed && measured.text("status") == kStatusUnsupported) {
    row.set("status", std::string(kStatusUnsupported));
    row.set("reason", measured.text("reason"));
    return;
  }
  if (!parsed || !measured.has("median_ms")) {
    row.set("status", std::string(kStatusFailed));
    row.set("reason", "the measuring process exited 0 without a result");
    return;
  }
  row.set("status", std::string(kStatusOk));
  row.set("reason", std::string());
  for (const char* col : kMeasuredColumns)
    if (measured.cells.count(col)) row.set(col, measured.cells.at(col));
}

Row variant_columns(const Variant& v, const std::string& study_name, int repeat, int warmup,
                    const HostInfo& host) {
  Row row;
  row.set("variant_id", v.str());
  row.set("variant_hash", v.hash_hex());
  row.set("study", study_name);
  row.set("model", v.model);
  row.set("batch", v.batch);
  row.set("compress", v.compress);
  row.set("backend", v.backend);
  row.set("device", v.device);
  // The GPU's name where this machine has it (a row measured elsewhere says where).
  if (v.device != "cpu") try {
      const int ordinal = parse_device(v.device);
      for (const GpuInfo& g : list_gpus())
        if (g.index == ordinal) row.set("gpu", g.name);
    } catch (const Error&) {  // no such GPU here: the row is unsupported, its reason says why
    }
  row.set("conv_algo", v.conv_algo);
  row.set("layout", v.layout);
  row.set("schedule", v.schedule);
  row.set("opt_level", int64_t{v.opt_level});
  row.set("isa", v.isa);
  row.set("isa_emulated", int64_t{v.isa_emulated});
  row.set("threads", int64_t{v.threads});
  if (!v.dataset.empty()) row.set("dataset", v.dataset);
  row.set("repeat", int64_t{repeat});
  row.set("warmup", int64_t{warmup});
  row.set("attempts", int64_t{1});
  set_host_columns(row, host);
  return row;
}

// --- shards --------------------------------------------------------------------

Shard parse_shard(std::string_view text) {
  const size_t slash = text.find('/');
  bool ok_i = false, ok_n = false;
  Shard s;
  if (slash != std::string_view::npos) {
    s.index = parse_int(text.substr(0, slash), &ok_i);
    s.count = parse_int(text.substr(slash + 1), &ok_n);
  }
  DLAS_CHECK(ok_i && ok_n && s.count >= 1 && s.index < s.count, ErrorKind::kUsage, "--shard '",
             text, "' is not I/N with 0 <= I < N (e.g. 0/4)");
  s.source = "cli";
  return s;
}

std::optional<Shard> shard_from_environment() {
  auto env = [](const char* name) -> std::optional<int> {
    const char* v = std::getenv(name);
    if (!v || !*v) return std::nullopt;
    bool ok = false;
    const int x = parse_int(v, &ok);
    DLAS_CHECK(ok, ErrorKind::kUsage, name, "='", v, "' is not a non-negative integer");
    return x;
  };
  const auto id = env("SLURM_ARRAY_TASK_ID");
  const auto count = env("SLURM_ARRAY_TASK_COUNT");
  if (id && count) {
    const int min = env("SLURM_ARRAY_TASK_MIN").value_or(0);
    const int step = std::max(1, env("SLURM_ARRAY_TASK_STEP").value_or(1));
    Shard s;
    s.index = (*id - min) / step;
    s.count = *count;
    s.source = "slurm";
    DLAS_CHECK(*id >= min && s.count >= 1 && s.index < s.count, ErrorKind::kUsage,
               "Slurm array task ", *id, " (min ", min, ", step ", step, ", count ", *count,
               ") does not give a shard I/N with 0 <= I < N");
    return s;
  }
  // An MPI launch is not a shard source here: `mpirun` runs go through run_study_mpi.
  return std::nullopt;
}

std::vector<size_t> shard_indices(size_t n, const Shard& shard) {
  std::vector<size_t> v;
  for (size_t i = static_cast<size_t>(shard.index); i < n; i += static_cast<size_t>(shard.count))
    v.push_back(i);
  return v;
}

// --- host ------------------------------------------------------------------------

const HostInfo& current_host() {
  static const HostInfo host = [] {
    HostInfo h;
    const CpuInfo& c = cpu_info();
    h.cpu_vendor = c.vendor;
    h.cpu_model = c.model_name;
    h.detected_isa = isa_name(detected_isa());
    for (const auto& [name, present] : c.feature_list())
      if (present) h.cpu_features += (h.cpu_features.empty() ? "" : " ") + name;
    h.cores = c.cores;
    h.logical_cpus = c.logical_processors;
    h.l1d_bytes = static_cast<int64_t>(c.l1d_bytes);
    h.l2_bytes = static_cast<int64_t>(c.l2_bytes);
    h.l3_bytes = static_cast<int64_t>(c.l3_bytes);
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0) h.hostname = name;
    // The hostname is left out on purpose: identical nodes of a cluster share the id, so
    // shards measured on them merge into one comparable table.
    h.hardware_id = "cpu-" + fnv_hex(str(h.cpu_vendor, "|", h.cpu_model, "|", c.packages, "|",
                                         h.cores, "|", h.logical_cpus, "|", h.l1d_bytes, "|",
                                         h.l2_bytes, "|", h.l3_bytes, "|", h.cpu_features));
    return h;
  }();
  return host;
}

void set_host_columns(Row& row, const HostInfo& h) {
  row.set("hardware_id", h.hardware_id);
  row.set("dlas_version", std::string(DLAS_VERSION));
  row.set("git_sha", std::string(DLAS_GIT_SHA));
  row.set("hostname", h.hostname);
  row.set("cpu_vendor", h.cpu_vendor);
  row.set("cpu_model", h.cpu_model);
  row.set("detected_isa", h.detected_isa);
  row.set("cpu_features", h.cpu_features);
  row.set("cores", h.cores);
  row.set("logical_cpus", h.logical_cpus);
  row.set("l1d_bytes", h.l1d_bytes);
  row.set("l2_bytes", h.l2_bytes);
  row.set("l3_bytes", h.l3_bytes);
}

Variant resolve_variant(const StudyPoint& p, std::string* skip_reason) {
  Variant v;
  v.model = p.model;
  v.batch = p.batch;
  v.compress = p.compress;
  v.backend = p.backend;
  v.conv_algo = p.conv_algo;
  v.layout = p.layout;  // "auto" adds nothing to the id: studies without layouts keep theirs
  // The Variant's schedule: "default" for the algorithms' default knobs (so untuned ids stay
  // what they were before tuning existed), "tuned:<budget>" otherwise.
  v.schedule = p.tuning == "untuned" ? "default" : p.tuning;
  v.opt_level = p.opt_level;
  v.dataset = p.dataset;
  v.accuracy_limit = p.accuracy_limit;
  v.preprocess = p.preprocess.str();
  // Like the thread pool: 0 means one thread per logical processor.
  v.threads = p.threads > 0 ? p.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  v.device = p.device;
  if (p.device != "cpu") {
    // A GPU: its architecture is the variant's ISA (as `dlas bench --device cuda` labels it),
    // one host thread drives it. A machine without this GPU cannot run the variant: it is
    // stored `unsupported` with the reason, as a peer that is not installed.
    v.threads = 1;
    v.isa = p.isa;
    try {
      const int ordinal = parse_device(p.device);
      for (const GpuInfo& g : list_gpus())
        if (g.index == ordinal) v.isa = str("sm_", g.cc_major, g.cc_minor);
    } catch (const Error& e) {
      if (skip_reason) *skip_reason = e.what();
    }
  } else if (p.backend == "onednn" || is_peer_backend(p.backend)) {
    // oneDNN and the peers dispatch on their own (as `dlas bench --backend X` labels them).
    v.isa = p.backend;
    if (is_peer_backend(p.backend) && skip_reason)
      *skip_reason = peer_unavailable_reason(p.backend);
  } else if (p.isa == "native") {
    v.isa = isa_name(active_isa());
    v.isa_emulated = isa_emulated();
  } else {
    const Isa isa = parse_isa(p.isa);
    v.isa = isa_name(isa);
    v.isa_emulated = isa < detected_isa();
    if (!isa_supported(isa) && skip_reason)
      *skip_reason =
          str("this CPU cannot run the ", p.isa, " path (detected ", isa_name(detected_isa()), ")");
  }
  return v;
}

// --- the runner --------------------------------------------------------------------

namespace {

// The columns a study row has before its variant is measured.
Row variant_row(const StudySpec& spec, const PlannedVariant& pv, const HostInfo& host) {
  Row row = variant_columns(pv.variant, spec.name, spec.repeat, spec.warmup, host);
  row.set("variant_id", pv.variant_id);
  return row;
}

// Measures one variant in an isolated child (`dlas study exec-variant`), one at a time on
// this machine (the measure lock), and sets the row's status, reason and measured columns.
void measure_in_child(const StudySpec& spec, const PlannedVariant& pv, const std::string& exe,
                      const std::string& lock_path, double timeout_s, Row& row) {
  MeasureRequest req;
  req.variant = pv.variant;
  req.model_path = pv.point.model_path;
  req.repeat = spec.repeat;
  req.warmup = spec.warmup;
  req.accuracy_limit = pv.variant.accuracy_limit;
  req.preprocess = pv.point.preprocess;
  measure_request_in_child(req, exe, lock_path, timeout_s, row);
}

std::string threads_text(int threads) {
  return str(threads, threads == 1 ? " thread" : " threads");
}

// [study] calibrate (run_study's comment): the machine profiles of the (ISA path, threads)
// pairs the variants to run need, calibrated where the cache has none.
void calibrate_profiles(const RunOptions& options, const std::string& lock_path,
                        const std::vector<std::string>& skip_reasons, RunSummary& sum) {
  std::vector<std::pair<std::string, int>> pairs;  // in order of first use
  for (size_t k = 0; k < sum.plan.size(); ++k) {
    const Variant& v = sum.plan[k].variant;
    if (sum.plan[k].already_ok || !skip_reasons[k].empty() || v.backend != "dlas" ||
        v.device != "cpu")
      continue;
    const std::pair<std::string, int> pair{v.isa, v.threads};
    if (std::find(pairs.begin(), pairs.end(), pair) == pairs.end()) pairs.push_back(pair);
  }
  if (pairs.empty()) return;
  // The variants' plans look for $DLAS_PROFILE before the cache (active_machine_profile).
  if (const char* env = std::getenv("DLAS_PROFILE"); env && *env) {
    sum.calibration_skipped = str("DLAS_PROFILE=", env, " overrides the calibration cache");
    progress_message(str("study: calibrate: skipped, ", sum.calibration_skipped));
    return;
  }
  std::vector<std::string> present;
  for (const auto& [isa_text, threads] : pairs) {
    ProfileCalibration pc;
    pc.isa = isa_text;
    pc.threads = threads;
    pc.path = default_profile_path(parse_isa(isa_text), threads);
    DLAS_CHECK(!pc.path.empty(), ErrorKind::kInvalidInput,
               "[study].calibrate: no calibration cache folder (set XDG_CACHE_HOME or HOME)");
    std::error_code ec;
    if (std::filesystem::exists(pc.path, ec)) {
      pc.status = ProfileCalibration::kPresent;
      present.push_back(str(isa_text, ", ", threads_text(threads)));
    } else {
      pc.status = options.dry_run ? ProfileCalibration::kPlanned : ProfileCalibration::kCalibrated;
    }
    sum.calibrations.push_back(std::move(pc));
  }
  if (!present.empty()) {
    std::string list;
    for (const std::string& p : present) list += (list.empty() ? "" : "; ") + p;
    progress_message(str("study: calibrate: machine profiles present, not re-measured: ", list));
  }
  for (ProfileCalibration& pc : sum.calibrations) {
    const std::string what = str(pc.isa, ", ", threads_text(pc.threads));
    if (pc.status == ProfileCalibration::kPlanned)
      progress_message(str("study: calibrate: would calibrate ", what, " -> ", pc.path));
    if (pc.status != ProfileCalibration::kCalibrated) continue;
    // A measurement like the variants': one at a time on the machine. Another runner (a
    // shard, an MPI rank) may have written the profile while this one waited.
    MeasureLock lock(lock_path);
    std::error_code ec;
    if (std::filesystem::exists(pc.path, ec)) {
      pc.status = ProfileCalibration::kPresent;
      progress_message(str("study: calibrate: ", what, ": written meanwhile by another run, ",
                           "not re-measured: ", pc.path));
      continue;
    }
    std::fprintf(stderr, "study: calibrating %s ...", what.c_str());
    std::fflush(stderr);
    const auto t0 = Clock::now();
    try {
      CalibrateOptions co;
      co.isa = parse_isa(pc.isa);
      co.threads = pc.threads;
      const CalibrateResult r = options.calibrate ? options.calibrate(co) : calibrate(co);
      r.profile.save(pc.path);
    } catch (const Error& e) {
      std::fprintf(stderr, " failed\n");
      throw Error(e.kind(), str("[study].calibrate: calibrating ", what, ": ", e.what()));
    } catch (const std::exception& e) {
      std::fprintf(stderr, " failed\n");
      fail(ErrorKind::kRuntime, "[study].calibrate: calibrating ", what, ": ", e.what());
    }
    pc.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::fprintf(stderr, " %.0f s -> %s\n", pc.seconds, pc.path.c_str());
  }
}

}  // namespace

RunSummary run_study(const StudySpec& spec, const RunOptions& options,
                     const RunListener& listener) {
  const Expansion ex = expand_study(spec);
  const HostInfo& host = current_host();
  RunSummary sum;
  sum.hardware_id = host.hardware_id;
  sum.shard = options.shard;
  sum.expanded = ex.points.size();
  sum.excluded = ex.excluded;
  sum.collapsed = ex.collapsed;

  std::unique_ptr<ResultStore> store;
  std::error_code ec;
  if (!options.dry_run) {
    DLAS_CHECK(!options.db_path.empty(), ErrorKind::kUsage, "study run: --db is required");
    store = std::make_unique<ResultStore>(options.db_path);
  } else if (!options.db_path.empty() && std::filesystem::exists(options.db_path, ec)) {
    store = std::make_unique<ResultStore>(options.db_path, ResultStore::Mode::kReadOnly);
  }
  std::set<std::string> done;
  if (store)
    for (auto& id : store->ok_variants(host.hardware_id)) done.insert(std::move(id));

  std::vector<std::string> skip_reasons;
  for (size_t i : shard_indices(ex.points.size(), options.shard)) {
    PlannedVariant pv;
    pv.point = ex.points[i];
    std::string skip;
    pv.variant = resolve_variant(pv.point, &skip);
    pv.variant_id = pv.variant.str();
    pv.already_ok = done.count(pv.variant_id) > 0;
    sum.already_ok += pv.already_ok;
    sum.plan.push_back(std::move(pv));
    skip_reasons.push_back(skip);
  }
  sum.in_shard = sum.plan.size();
  sum.ran = sum.in_shard - sum.already_ok;
  if (listener) {
    RunEvent e{RunEvent::kPlanned};
    e.plan = &sum.plan;
    e.total = sum.ran;
    listener(e);
  }
  std::string lock_path = options.lock_path;
  if (lock_path.empty()) {
    const char* env = std::getenv("DLAS_MEASURE_LOCK");
    lock_path = env && *env ? env : "/tmp/dlas-measure.lock";
  }
  if (spec.calibrate) calibrate_profiles(options, lock_path, skip_reasons, sum);
  if (options.dry_run) return sum;

  const double timeout_s = options.timeout_s >= 0 ? options.timeout_s : spec.timeout_s;
  DLAS_CHECK(!options.exe.empty(), ErrorKind::kInternal, "run_study: no dlas binary to run");

  size_t index = 0;
  for (size_t k = 0; k < sum.plan.size(); ++k) {
    const PlannedVariant& pv = sum.plan[k];
    if (pv.already_ok) continue;
    if (listener) {
      RunEvent e{RunEvent::kStart};
      e.index = index;
      e.total = sum.ran;
      e.variant = &pv;
      listener(e);
    }
    Row row = variant_row(spec, pv, host);
    const auto started = std::chrono::system_clock::now();
    const auto t0 = Clock::now();
    if (!skip_reasons[k].empty()) {
      // A peer that is not installed, a GPU this machine lacks: unsupported here; an ISA
      // path the CPU lacks: skipped.
      const bool unsupported = is_peer_backend(pv.variant.backend) || pv.variant.device != "cpu";
      row.set("status", std::string(unsupported ? kStatusUnsupported : kStatusSkipped));
      row.set("reason", skip_reasons[k]);
    } else {
      measure_in_child(spec, pv, options.exe, lock_path, timeout_s, row);
    }
    row.set("started_at", iso_utc(started));
    row.set("finished_at", iso_utc(std::chrono::system_clock::now()));
    row.set("duration_s", std::chrono::duration<double>(Clock::now() - t0).count());
    store->put(row);

    const std::string status = row.text("status");
    sum.ok += status == kStatusOk;
    sum.failed += status == kStatusFailed;
    sum.timeout += status == kStatusTimeout;
    sum.crashed += status == kStatusCrashed;
    sum.skipped += status == kStatusSkipped;
    sum.unsupported += status == kStatusUnsupported;
    if (listener) {
      RunEvent e{RunEvent::kDone};
      e.index = index;
      e.total = sum.ran;
      e.variant = &pv;
      e.row = &row;
      listener(e);
    }
    ++index;
  }
  return sum;
}

// --- progress ----------------------------------------------------------------------

namespace {

std::string row_summary(const Row& r) {
  const std::string status = r.text("status");
  if (status == kStatusOk) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "ok %.3f ms", r.real("median_ms"));
    return buf;
  }
  return status + " (" + r.text("reason") + ")";
}

}  // namespace

// The variant in few characters for the bar, whose line must fit the terminal:
// "resnet18-cifar b1 dlas/gemm opt3 avx2 t2".
std::string short_label(const Variant& v) {
  std::string s = str(v.model, " b", v.batch);
  if (v.compress != "dense") s += " " + v.compress;
  if (!v.dataset.empty()) s += " @" + v.dataset;
  if (v.device != "cpu")
    return str(s, " ", v.backend == "dlas" ? "dlas/" + v.conv_algo : v.backend, " ", v.device,
               v.schedule == "default" ? "" : " " + v.schedule);
  if (v.backend != "dlas") return str(s, " ", v.backend, " t", v.threads);
  return str(s, " dlas/", v.conv_algo, " opt", v.opt_level, " ", v.isa,
             v.isa_emulated ? "(emulated)" : "", v.layout == "auto" ? "" : " " + v.layout, " t",
             v.threads, v.schedule == "default" ? "" : " " + v.schedule);
}

namespace {
// The measuring child's chance-level warning ("study: MODEL: ... chance ..."), "" if none.
std::string chance_warning_line(const std::string& err_tail) {
  std::stringstream ss(err_tail);
  std::string line;
  while (std::getline(ss, line))
    if (line.rfind("study: ", 0) == 0 && line.find("of chance") != std::string::npos) return line;
  return "";
}
}  // namespace

RunListener progress_printer(bool tty) {
  auto bar = std::make_shared<Progress>(Progress::Options{.tty = tty, .label = "study"});
  // Models whose chance-level accuracy was reported: once per model, not per variant.
  auto warned = std::make_shared<std::set<std::string>>();
  return [bar, warned](const RunEvent& e) {
    if (e.kind == RunEvent::kPlanned) {
      bar->restart();
      return;
    }
    if (e.kind == RunEvent::kStart) {
      // The clock of the ETA starts with the first variant (not before a calibration).
      if (e.index == 0) bar->restart();
      // ETA from the mean time of the variants done so far.
      if (bar->tty())
        bar->update(
            e.index, e.total,
            str(e.index + 1, "/", e.total, " ETA ", duration_text(bar->eta(e.index, e.total)), "  ",
                short_label(e.variant->variant)),
            /*force=*/true);
      return;
    }
    // kDone
    if (const std::string w = chance_warning_line(e.row->text("stderr_tail"));
        !w.empty() && warned->insert(e.row->text("model")).second)
      bar->note(w);
    const std::string text =
        str("[", e.index + 1, "/", e.total, "] ", row_summary(*e.row), "  ", e.variant->variant_id);
    if (bar->tty()) {
      // Keep non-ok outcomes on screen above the bar; ok ones only move the bar.
      if (e.row->text("status") != kStatusOk) bar->note(text);
      if (e.index + 1 == e.total) bar->finish(/*keep=*/false);
    } else {
      bar->note(str("study: ", text, " (elapsed ", duration_text(bar->elapsed()), ")"));
    }
  };
}

}  // namespace dlas::study
