// The GPU machine profile's classes, file format and lookup (dlas/system/cuda_profile.h);
// the calibration itself needs CUDA (src/system/tune/cuda/cuda_calibrate.cc).
#include "dlas/system/cuda_profile.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "dlas/algo/machine_profile.h"
#include "dlas/core/error.h"
#include "dlas/core/file.h"

namespace dlas {

std::string cuda_shape_class(const cuda::ConvShape& s) {
  const bool dw = s.depthwise();
  const char* kind = dw                                  ? "dw"
                     : s.density <= cuda::kSparseDensity ? "sparse"
                     : s.groups > 1                      ? "group"
                                                         : "dense";
  std::string kernel = "other";
  if (s.kh == s.kw && (s.kh == 1 || s.kh == 3 || s.kh == 5 || s.kh == 7))
    kernel = std::to_string(s.kh) + "x" + std::to_string(s.kw);
  const char* stride = s.stride_h == 1 && s.stride_w == 1 ? "s1" : "s2";
  const int64_t pixels = s.n * s.oh * s.ow;
  const char* p = pixels <= 64     ? "p64"
                  : pixels <= 256  ? "p256"
                  : pixels <= 1024 ? "p1k"
                  : pixels <= 4096 ? "p4k"
                                   : "pbig";
  std::string cls = std::string(kind) + "-" + kernel + "-" + stride + "-" + p;
  if (!dw) cls += s.k <= 64 ? "-k64" : s.k <= 256 ? "-k256" : "-kbig";
  if (s.storage != cuda::Storage::kF32) cls += "-h16";  // fp16 and bf16: the same kernels
  return cls;
}

std::string CudaProfile::to_json() const {
  nlohmann::ordered_json j;
  j["format"] = "dlas-gpu-profile-1";
  j["gpu"] = gpu;
  j["created"] = created;
  j["version"] = version;
  nlohmann::ordered_json c = nlohmann::ordered_json::object();
  for (const auto& [cls, e] : classes) {
    nlohmann::ordered_json r;
    r["algo"] = e.algo;
    r["knobs"] = e.knobs;
    r["us"] = e.us;
    r["rule"] = e.rule;
    r["rule_us"] = e.rule_us;
    r["shape"] = e.shape;
    c[cls] = r;
  }
  j["classes"] = c;
  return j.dump(2) + "\n";
}

CudaProfile CudaProfile::from_json(const std::string& text, const std::string& what) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    fail(ErrorKind::kInvalidInput, what, ": not JSON (", e.what(), ")");
  }
  DLAS_CHECK(j.is_object() && j.value("format", "") == "dlas-gpu-profile-1",
             ErrorKind::kInvalidInput, what,
             ": not a dlas GPU profile (format dlas-gpu-profile-1)");
  CudaProfile p;
  try {
    p.gpu = j.at("gpu").get<std::string>();
    p.created = j.value("created", "");
    p.version = j.value("version", "");
    for (const auto& [cls, r] : j.at("classes").items()) {
      CudaProfileEntry e;
      e.algo = r.at("algo").get<std::string>();
      e.knobs = r.at("knobs").get<Knobs>();
      e.us = r.value("us", 0.0);
      e.rule = r.value("rule", "");
      e.rule_us = r.value("rule_us", 0.0);
      e.shape = r.value("shape", "");
      p.classes[cls] = e;
    }
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::kInvalidInput, what, ": ", e.what());
  }
  return p;
}

CudaProfile CudaProfile::load(const std::string& path) { return from_json(read_file(path), path); }

void CudaProfile::save(const std::string& path) const {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  write_file_atomic(path, to_json());
}

std::string default_cuda_profile_path(const std::string& gpu) {
  const std::string cache = calibration_cache_dir();
  if (cache.empty()) return "";
  // The CPU's slug rule ("NVIDIA H200|sm_90" -> "nvidia-h200-sm-90").
  return (std::filesystem::path(cache) / ("gpu-profile-" + cpu_slug(gpu) + ".json")).string();
}

std::shared_ptr<const CudaProfile> active_cuda_profile(const std::string& option,
                                                       const std::string& gpu) {
  if (option == "none" || option == "builtin") return nullptr;  // no built-in GPU tables yet
  const std::string path = option.empty() ? default_cuda_profile_path(gpu) : option;
  if (path.empty() || !std::filesystem::is_regular_file(path)) {
    DLAS_CHECK(option.empty(), ErrorKind::kInvalidInput, "--profile ", option, ": no such file");
    return nullptr;
  }
  static std::mutex mu;
  static std::set<std::string> warned;
  const auto warn = [&](const std::string& why) {
    std::lock_guard<std::mutex> lock(mu);
    if (warned.insert(path + why).second)
      std::fprintf(stderr, "warning: GPU profile %s ignored: %s\n", path.c_str(), why.c_str());
  };
  try {
    auto p = std::make_shared<CudaProfile>(CudaProfile::load(path));
    if (p->gpu != gpu) {
      warn("measured on " + p->gpu + ", this is " + gpu);
      return nullptr;
    }
    return p;
  } catch (const Error& e) {
    warn(e.what());
    return nullptr;
  }
}

}  // namespace dlas
