// The ONNX peers as Executors (dlas/system/peer_executor.h): a server process of
// bench/peers/onnx_peers.py per executor, spoken to in JSON lines over a socket pair.
#include "dlas/system/peer_executor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "dlas/core/error.h"
#include "dlas/core/npy.h"
#include "dlas/model/onnx.h"

#ifndef DLAS_SOURCE_DIR
#define DLAS_SOURCE_DIR "."
#endif

namespace dlas {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

fs::path venv_dir() { return env_or("DLAS_PEERS_VENV", std::string(DLAS_SOURCE_DIR) + "/.venv-peers"); }

fs::path server_script() {
  return env_or("DLAS_PEERS_SERVER", std::string(DLAS_SOURCE_DIR) + "/bench/peers/onnx_peers.py");
}

// DeepSparse lives in its own environment (it pins an older onnx and numpy).
fs::path python_for(const std::string& peer) {
  return peer == "deepsparse" ? venv_dir() / "deepsparse" / "bin" / "python"
                              : venv_dir() / "bin" / "python";
}

}  // namespace

const std::vector<std::string>& peer_backends() {
  static const std::vector<std::string> names = {"onnxruntime", "openvino", "tvm", "tvm-tuned",
                                                 "deepsparse"};
  return names;
}

bool is_peer_backend(std::string_view backend) {
  const auto& p = peer_backends();
  return std::find(p.begin(), p.end(), backend) != p.end();
}

std::string peer_unavailable_reason(const std::string& peer) {
  if (!is_peer_backend(peer)) return "'" + peer + "' is not a peer engine";
  std::error_code ec;
  if (!fs::exists(server_script(), ec))
    return "the peer server " + server_script().string() + " is missing";
  const fs::path py = python_for(peer);
  if (!fs::exists(py, ec))
    return peer + " is not installed (no " + py.string() + "): run scripts/peers-setup.sh";
  // The engine's package in the environment (find_spec without importing it).
  const std::string module = peer == "tvm-tuned" ? "tvm" : peer;
  bool found = false;
  for (const fs::path& lib : {py.parent_path().parent_path() / "lib"}) {
    if (!fs::is_directory(lib, ec)) continue;
    for (const auto& e : fs::directory_iterator(lib, ec)) {
      if (fs::exists(e.path() / "site-packages" / module, ec)) found = true;
    }
  }
  if (!found)
    return peer + " is not installed in " + venv_dir().string() + ": run scripts/peers-setup.sh" +
           (peer == "deepsparse" ? " (DeepSparse needs a wheel for this Python)" : "");
  return "";
}

int tvm_tuned_trials() {
  const std::string v = env_or("DLAS_TVM_TRIALS", "64");
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  DLAS_CHECK(end && *end == '\0' && n >= 1 && n <= 1000000, ErrorKind::kInvalidInput,
             "DLAS_TVM_TRIALS='", v, "' is not a trial count (1 to 1000000)");
  return static_cast<int>(n);
}

// The server process and its end of the socket pair.
struct PeerExecutor::Server {
  pid_t pid = -1;
  int fd = -1;
  std::string buffer;  // read but not yet returned
  std::string peer;

  Server(const std::string& peer_name, int threads) : peer(peer_name) {
    int sv[2];
    DLAS_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, ErrorKind::kRuntime,
               "socketpair: ", std::strerror(errno));
    const std::string py = python_for(peer).string();
    const std::string script = server_script().string();
    std::vector<std::string> args = {py,     script,  "--serve", "--peer",
                                     peer,   "--threads", std::to_string(threads)};
    if (peer == "tvm-tuned") {
      args.push_back("--tvm-trials");
      args.push_back(std::to_string(tvm_tuned_trials()));
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid = ::fork();
    if (pid < 0) {
      ::close(sv[0]);
      ::close(sv[1]);
      fail(ErrorKind::kRuntime, "fork: ", std::strerror(errno));
    }
    if (pid == 0) {  // the server: its stdin and stdout are the socket; stderr is ours
      ::dup2(sv[1], 0);
      ::dup2(sv[1], 1);
      ::execv(argv[0], argv.data());
      const char msg[] = "dlas: error: cannot start the peer server\n";
      [[maybe_unused]] ssize_t w = ::write(2, msg, sizeof msg - 1);
      ::_exit(127);
    }
    ::close(sv[1]);
    fd = sv[0];
  }

  ~Server() {
    if (fd >= 0) {
      send_line(R"({"cmd": "quit"})", /*throw_on_error=*/false);
      ::close(fd);
    }
    if (pid > 0) {
      // A server stuck in a compile gets a few seconds, then SIGKILL.
      for (int i = 0; i < 50; ++i) {
        if (::waitpid(pid, nullptr, WNOHANG) == pid) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }

  bool send_line(const std::string& line, bool throw_on_error = true) {
    const std::string out = line + "\n";
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::send(fd, out.data() + done, out.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        DLAS_CHECK(!throw_on_error, ErrorKind::kRuntime, "the ", peer,
                   " server is gone (its messages are above)");
        return false;
      }
      done += static_cast<size_t>(n);
    }
    return true;
  }

  json read_reply() {
    for (;;) {
      const size_t nl = buffer.find('\n');
      if (nl != std::string::npos) {
        const std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        if (line.empty()) continue;
        try {
          return json::parse(line);
        } catch (const json::exception&) {
          fail(ErrorKind::kRuntime, "the ", peer, " server answered '", line.substr(0, 200),
                    "', not JSON");
        }
      }
      char chunk[65536];
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      DLAS_CHECK(n > 0, ErrorKind::kRuntime, "the ", peer,
                 " server exited without an answer (its messages are above)");
      buffer.append(chunk, static_cast<size_t>(n));
    }
  }

  // One command and its answer; an {"error"} answer is `kind` with the peer's message.
  json ask(const json& command, ErrorKind kind, const std::string& what) {
    send_line(command.dump());
    json reply = read_reply();
    if (reply.contains("error"))
      fail(kind, peer, " cannot ", what, ": ", reply.value("error", std::string()));
    return reply;
  }
};

PeerExecutor::PeerExecutor(const Graph& graph, const std::string& peer, int threads)
    : graph_(graph), peer_(peer), threads_(threads) {
  const std::string why = peer_unavailable_reason(peer);
  DLAS_CHECK(why.empty(), ErrorKind::kUnsupported, why);
  DLAS_CHECK(threads >= 1, ErrorKind::kInvalidInput, "peer threads must be >= 1");
  std::string tmpl = (fs::temp_directory_path() / "dlas-peer-XXXXXX").string();
  DLAS_CHECK(::mkdtemp(tmpl.data()) != nullptr, ErrorKind::kRuntime,
             "cannot make a temporary folder: ", std::strerror(errno));
  dir_ = tmpl;
  model_path_ = dir_ + "/model.onnx";
  try {
    export_onnx_file(graph_, model_path_);
    server_ = std::make_unique<Server>(peer, threads);
    const json ready = server_->read_reply();
    DLAS_CHECK(ready.value("ready", false), ErrorKind::kRuntime, peer,
               " server did not start: ", ready.dump());
    version_ = ready.value("version", std::string());
    const json loaded =
        server_->ask({{"cmd", "load"}, {"model", model_path_}}, ErrorKind::kUnsupported, "run this model");
    compile_ms_ = loaded.value("compile_ms", 0.0);
    tune_ms_ = loaded.value("tune_ms", 0.0);
    tune_trials_ = loaded.value("trials", 0);
    precision_ = loaded.value("precision", std::string());
  } catch (...) {
    server_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
    throw;
  }
}

PeerExecutor::~PeerExecutor() {
  server_.reset();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void PeerExecutor::run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DLAS_CHECK(inputs.size() == graph_.inputs.size(), ErrorKind::kInvalidInput, peer_, ": ",
             inputs.size(), " inputs for a model of ", graph_.inputs.size());
  json in = json::array(), out = json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string p = dir_ + "/in" + std::to_string(i) + ".npy";
    write_npy(p, inputs[i]);
    in.push_back(p);
  }
  for (size_t i = 0; i < graph_.outputs.size(); ++i)
    out.push_back(dir_ + "/out" + std::to_string(i) + ".npy");
  server_->ask({{"cmd", "infer"}, {"model", model_path_}, {"input", in}, {"output", out}},
               ErrorKind::kRuntime, "run");
  outputs.resize(graph_.outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) outputs[i] = read_npy(out[i].get<std::string>());
}

LatencyStats PeerExecutor::measure_remote(const LatencyOptions& o) {
  DLAS_CHECK(o.repeat >= 1 && o.warmup >= 0, ErrorKind::kInvalidInput,
             "latency: repeat must be >= 1 and warmup >= 0");
  const json r = server_->ask(
      {{"cmd", "run"}, {"model", model_path_}, {"repeat", o.repeat}, {"warmup", o.warmup}},
      ErrorKind::kRuntime, "run");
  LatencyStats s = latency_stats(r.at("times_ms").get<std::vector<double>>());
  s.first_ms = r.value("first_ms", 0.0);
  return s;
}

}  // namespace dlas
