// make_executor: a Variant to its Executor (dlas/system/make_executor.h).
#include "dlas/system/make_executor.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include "dlas/core/error.h"
#include "dlas/hw/isa.h"
#include "dlas/system/cuda_executor.h"
#include "dlas/system/onednn_backend.h"
#include "dlas/system/peer_executor.h"

namespace dlas {
namespace {

int resolved_threads(int threads) {
  return threads > 0 ? threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::mutex& registry_mutex() {
  static std::mutex mu;
  return mu;
}

// The backends: one line each.
std::map<std::string, ExecutorFactory>& registry() {
  static std::map<std::string, ExecutorFactory> backends = {
      {"dlas",
       [](const Graph& g, const Variant& v, const ExecutorOptions& o) {
         return std::make_unique<Plan>(g, plan_options_for(v, o));
       }},
      {"onednn",
       [](const Graph& g, const Variant& v, const ExecutorOptions&) {
         return std::make_unique<OnednnExecutor>(g, resolved_threads(v.threads));
       }},
      {"reference", [](const Graph& g, const Variant&,
                       const ExecutorOptions&) { return std::make_unique<ReferenceExecutor>(g); }},
      // cuDNN's convolutions and cuBLAS on a CUDA device (cuda_executor.h).
      {"cudnn", make_cuda_executor},
  };
  // The ONNX peers: one server process each (peer_executor.h).
  static const bool peers_added = [] {
    for (const std::string& peer : peer_backends())
      backends.emplace(peer, [peer](const Graph& g, const Variant& v, const ExecutorOptions&) {
        return std::make_unique<PeerExecutor>(g, peer, resolved_threads(v.threads));
      });
    return true;
  }();
  (void)peers_added;
  return backends;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

PlanOptions plan_options_for(const Variant& v, const ExecutorOptions& options) {
  PlanOptions o;
  o.conv_algo = v.conv_algo;
  if (v.conv_algo.rfind("layers:", 0) == 0) {
    o.conv_algo = "auto";
    o.layers = read_layer_choices(v.conv_algo.substr(7));
  }
  for (const auto& [node, choice] : options.layers) o.layers.insert_or_assign(node, choice);
  o.profile = options.profile;
  o.threads = v.threads;
  o.opt_level = v.opt_level;
  o.layout = parse_layout_mode(v.layout);
  if (!v.isa.empty()) o.isa = parse_isa(v.isa);
  return o;
}

std::unique_ptr<Executor> make_executor(const Graph& graph, const Variant& variant,
                                        const ExecutorOptions& options) {
  // On a GPU: dlas's CUDA plan (or the cuDNN backend), whatever the backend table says.
  if (variant.device != "cpu" && variant.backend == "dlas")
    return make_cuda_executor(graph, variant, options);
  DLAS_CHECK(variant.device == "cpu" || variant.backend == "cudnn", ErrorKind::kUnsupported,
             "backend '", variant.backend, "' runs on the CPU only (--device cpu)");
  ExecutorFactory factory;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    const auto it = registry().find(variant.backend);
    if (it != registry().end()) factory = it->second;
  }
  DLAS_CHECK(factory, ErrorKind::kInvalidInput, "unknown backend '", variant.backend,
             "' (known: ", joined(executor_backends()), ")");
  return factory(graph, variant, options);
}

void register_executor(const std::string& backend, ExecutorFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[backend] = std::move(factory);
}

std::vector<std::string> executor_backends() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

}  // namespace dlas
