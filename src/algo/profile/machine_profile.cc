// Machine profiles: the shape classes, the JSON file and the resolution of the active one.
#include "dlas/algo/machine_profile.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "dlas/core/error.h"
#include "dlas/core/file.h"
#include "dlas/hw/cpu.h"

namespace dlas {
namespace {
// {name, JSON text} of every data/profiles/*.json, generated at configure time.
struct BuiltinText {
  const char* name;
  const char* json;
};
constexpr BuiltinText kBuiltinTexts[] = {
#include "dlas/algo/builtin_profiles.inc"
    {nullptr, nullptr}};  // the end (and a valid array when there is no table)

constexpr const char* kFormat = "dlas-machine-profile";
constexpr int kVersion = 2;  // 1: no "other" and "reorder_us"

// 2 apart from 4: tiles of whole rows cover a 2x2 plane in one pass and a 4x4 one in one
// to four, so the two planes' best tiles (and algorithms) differ.
std::string side_bucket(int64_t side) {
  for (int64_t b : {2, 4, 8, 16, 32})
    if (side <= b) return std::to_string(b);
  return "big";
}

std::string channel_bucket(int64_t c) {
  for (int64_t b : {64, 256})
    if (c <= b) return std::to_string(b);
  return "big";
}

using json = nlohmann::json;

const json& field(const json& j, const char* name, json::value_t type, std::string_view what) {
  auto it = j.find(name);
  DLAS_CHECK(it != j.end(), ErrorKind::kInvalidInput, what, ": missing \"", name, "\"");
  const bool ok = it->type() == type || (type == json::value_t::number_float && it->is_number()) ||
                  (type == json::value_t::number_integer && it->is_number_integer());
  DLAS_CHECK(ok, ErrorKind::kInvalidInput, what, ": \"", name, "\" has the wrong type");
  return *it;
}

// An entry's (or its "other" object's) algo, layout, knobs and us.
MachineProfile::Choice read_choice(const json& e, const std::string& we) {
  MachineProfile::Choice x;
  x.algo = field(e, "algo", json::value_t::string, we).get<std::string>();
  DLAS_CHECK(find_conv_algorithm(x.algo), ErrorKind::kInvalidInput, we, ": unknown \"algo\" '",
             x.algo, "'");
  try {
    x.layout = parse_layout(field(e, "layout", json::value_t::string, we).get<std::string>());
  } catch (const Error&) {
    fail(ErrorKind::kInvalidInput, we, ": unknown \"layout\"");
  }
  for (const auto& [name, v] : field(e, "knobs", json::value_t::object, we).items()) {
    DLAS_CHECK(v.is_number_integer(), ErrorKind::kInvalidInput, we, ": knob \"", name,
               "\" is not an integer");
    x.knobs[name] = v.get<int64_t>();
  }
  x.us = field(e, "us", json::value_t::number_float, we).get<double>();
  DLAS_CHECK(x.us >= 0, ErrorKind::kInvalidInput, we, ": negative \"us\"");
  return x;
}

}  // namespace

std::string conv_shape_class(const ConvProblem& p) {
  std::string kind = p.is_depthwise()            ? "dw"
                     : p.groups == 1 && p.c <= 4 ? "stem"
                     : p.groups > 1              ? "group"
                                                 : "dense";
  std::string s = kind + "-" + std::to_string(p.kh) + "x" + std::to_string(p.kw) + "-s";
  s += p.stride_h == p.stride_w ? std::to_string(p.stride_h)
                                : std::to_string(p.stride_h) + "x" + std::to_string(p.stride_w);
  if (p.dil_h != 1 || p.dil_w != 1)
    s += "-d" + (p.dil_h == p.dil_w ? std::to_string(p.dil_h)
                                    : std::to_string(p.dil_h) + "x" + std::to_string(p.dil_w));
  const int64_t side = std::max(p.oh(), p.ow());
  s += "-o" + side_bucket(side);
  // Dense stride-1 3x3 planes of 5-16 that F(4x4, 3x3) tiles only with a ragged edge (7, 14)
  // apart from those it tiles exactly (8, 16): resnet18-cifar's 128->128 16x16 layers ran
  // F(4x4) Winograd in 0.076 ms and the F(2x2) that 256->256 14x14 layers pick in 0.113 ms
  // (AMD EPYC Zen 5, 2 threads).
  if (kind == "dense" && p.kh == 3 && p.kw == 3 && p.stride_h == 1 && p.stride_w == 1 &&
      p.dil_h == 1 && p.dil_w == 1 && side > 4 && side <= 16 && side % 4 != 0)
    s += "r";
  if (kind != "stem") s += "-c" + channel_bucket(p.c);
  // Output channels: a Winograd transform's cost per output grows as they shrink
  // (densenet161's 192->48 3x3 convs run direct 1.8x faster than Winograd at 14x14, where
  // 256->256 runs Winograd faster; Sapphire Rapids-class, 2 threads).
  if (kind == "dense" || kind == "group") s += "-k" + channel_bucket(p.k);
  // int8 convs run other kernels than f32 ones, with other crossovers: a class of their own.
  return p.is_int8() ? "int8-" + s : s;
}

bool MachineProfile::Entry::blocked_wins() const {
  if (is_blocked(layout)) return true;
  return other && is_blocked(other->layout) && other->us <= us + reorder_us;
}

MachineProfile::Choice MachineProfile::Entry::for_layout(Layout y) const {
  if (other && is_blocked(other->layout) == is_blocked(y) && is_blocked(layout) != is_blocked(y))
    return *other;
  return best();
}

const MachineProfile::Entry* MachineProfile::lookup(const ConvProblem& p) const {
  if (p.types() == ConvTypes::kHalf) return nullptr;
  const std::string cls = conv_shape_class(p);
  if (const Entry* e = lookup_class(cls)) return e;
  // A ragged plane's class ("-o16r-") without an entry: its even twin's (a profile written
  // before the split has only that one).
  const size_t r = cls.find("r-c");
  return r == std::string::npos ? nullptr : lookup_class(cls.substr(0, r) + cls.substr(r + 1));
}

const MachineProfile::Entry* MachineProfile::lookup_class(const std::string& cls) const {
  for (const Entry& e : entries)
    if (e.shape_class == cls) return &e;
  // No entry for the class: the same class with the nearest output-channel bucket (ties: the
  // larger), or without one (a profile written before the classes had it).
  const size_t k = cls.rfind("-k");
  if (k == std::string::npos) return nullptr;
  const std::string coarse = cls.substr(0, k);
  static const std::vector<std::string> kBuckets = {"64", "256", "big"};
  auto rank = [&](std::string_view b) {
    return std::find(kBuckets.begin(), kBuckets.end(), b) - kBuckets.begin();
  };
  const auto want = rank(std::string_view(cls).substr(k + 2));
  const Entry* best = nullptr;
  std::ptrdiff_t best_d = 0;
  for (const Entry& e : entries) {
    if (e.shape_class == coarse) return &e;
    if (e.shape_class.size() <= k + 2 || e.shape_class.compare(0, k + 2, cls, 0, k + 2) != 0 ||
        e.shape_class.find('-', k + 2) != std::string::npos)
      continue;
    const auto d = rank(std::string_view(e.shape_class).substr(k + 2)) - want;
    // Nearer wins; at equal distance the larger bucket (d > 0).
    if (!best || std::abs(d) < std::abs(best_d) || (std::abs(d) == std::abs(best_d) && d > 0))
      best = &e, best_d = d;
  }
  return best;
}

const ConvAlgorithm* MachineProfile::choose(const ConvProblem& p, Isa isa_path,
                                            const ConvAlgorithm& rule, Knobs& knobs) const {
  if (rule.name().substr(0, 7) == "sparse-") return nullptr;
  const Entry* e = lookup(p);
  if (!e) return nullptr;
  const Choice c = e->for_layout(p.y_layout);
  const ConvAlgorithm* a = find_conv_algorithm(c.algo);
  if (!a || !a->supports(p)) return nullptr;
  // Knobs the entry lacks (a knob the algorithm gained after the calibration) take their
  // defaults; an entry the space rejects leaves every knob at its default.
  const Knobs defaults = a->default_knobs(p, isa_path);
  knobs = c.knobs;
  for (const auto& [name, v] : defaults) knobs.emplace(name, v);
  try {
    a->knob_space(p, isa_path).validate(knobs, e->shape_class);
  } catch (const Error&) {
    knobs = defaults;
  }
  // Fitted to the layer (a class spans shapes); a fit outside the space is not taken.
  Knobs fitted = a->fit_class_knobs(p, isa_path, knobs);
  try {
    a->knob_space(p, isa_path).validate(fitted, e->shape_class);
    knobs = std::move(fitted);
  } catch (const Error&) {
  }
  return a;
}

std::string MachineProfile::to_json() const {
  nlohmann::ordered_json j = {{"format", kFormat}, {"version", kVersion}, {"cpu", cpu}};
  if (!cpuid.empty()) j["cpuid"] = cpuid;
  j["isa"] = isa_name(isa);
  j["threads"] = threads;
  j["source"] = source;
  nlohmann::ordered_json es = nlohmann::ordered_json::array();
  auto knobs_json = [](const Knobs& knobs) {
    nlohmann::ordered_json k = nlohmann::ordered_json::object();
    for (const auto& [name, v] : knobs) k[name] = v;
    return k;
  };
  for (const Entry& e : entries) {
    nlohmann::ordered_json x = {{"class", e.shape_class},
                                {"algo", e.algo},
                                {"layout", layout_name(e.layout)},
                                {"knobs", knobs_json(e.knobs)},
                                {"us", e.us}};
    if (e.other)
      x["other"] = {{"algo", e.other->algo},
                    {"layout", layout_name(e.other->layout)},
                    {"knobs", knobs_json(e.other->knobs)},
                    {"us", e.other->us}};
    x["reorder_us"] = e.reorder_us;
    es.push_back(std::move(x));
  }
  j["entries"] = es;
  return j.dump(2) + "\n";
}

MachineProfile MachineProfile::from_json(std::string_view text, std::string_view what) {
  const std::string w(what);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  DLAS_CHECK(!j.is_discarded(), ErrorKind::kInvalidInput, w, ": not valid JSON");
  DLAS_CHECK(j.is_object(), ErrorKind::kInvalidInput, w, ": not a JSON object");
  DLAS_CHECK(field(j, "format", json::value_t::string, w) == kFormat, ErrorKind::kInvalidInput, w,
             ": \"format\" is not \"", kFormat, "\"");
  const int64_t version = field(j, "version", json::value_t::number_integer, w).get<int64_t>();
  DLAS_CHECK(version >= 1 && version <= kVersion, ErrorKind::kInvalidInput, w,
             ": unsupported \"version\" (expected 1 to ", kVersion, ")");
  MachineProfile m;
  m.cpu = field(j, "cpu", json::value_t::string, w).get<std::string>();
  if (j.contains("cpuid")) m.cpuid = field(j, "cpuid", json::value_t::string, w).get<std::string>();
  try {
    m.isa = parse_isa(field(j, "isa", json::value_t::string, w).get<std::string>());
  } catch (const Error&) {
    fail(ErrorKind::kInvalidInput, w, ": unknown \"isa\"");
  }
  const int64_t threads = field(j, "threads", json::value_t::number_integer, w).get<int64_t>();
  DLAS_CHECK(threads >= 1 && threads <= 4096, ErrorKind::kInvalidInput, w,
             ": \"threads\" out of range");
  m.threads = static_cast<int>(threads);
  m.source = field(j, "source", json::value_t::string, w).get<std::string>();
  std::set<std::string> seen;
  for (const json& e : field(j, "entries", json::value_t::array, w)) {
    const std::string we = w + ": entry " + std::to_string(m.entries.size());
    DLAS_CHECK(e.is_object(), ErrorKind::kInvalidInput, we, ": not an object");
    Entry x;
    x.shape_class = field(e, "class", json::value_t::string, we).get<std::string>();
    DLAS_CHECK(!x.shape_class.empty() && seen.insert(x.shape_class).second,
               ErrorKind::kInvalidInput, we, ": empty or repeated \"class\"");
    const Choice best = read_choice(e, we);
    x.algo = best.algo;
    x.layout = best.layout;
    x.knobs = best.knobs;
    x.us = best.us;
    if (version >= 2) {
      if (e.contains("other"))
        x.other = read_choice(field(e, "other", json::value_t::object, we), we + ": \"other\"");
      x.reorder_us = field(e, "reorder_us", json::value_t::number_float, we).get<double>();
      DLAS_CHECK(x.reorder_us >= 0, ErrorKind::kInvalidInput, we, ": negative \"reorder_us\"");
    }
    m.entries.push_back(std::move(x));
  }
  return m;
}

MachineProfile MachineProfile::load(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const std::exception&) {
    fail(ErrorKind::kInvalidInput, path, ": cannot read");
  }
  return from_json(text, path);
}

void MachineProfile::save(const std::string& path) const {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  write_file_atomic(p, to_json());
}

std::string cpu_slug(const std::string& model_name) {
  std::string s;
  for (char ch : model_name) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c))
      s += static_cast<char>(std::tolower(c));
    else if (!s.empty() && s.back() != '-')
      s += '-';
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s.empty() ? "unknown-cpu" : s;
}

std::string calibration_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg && *xdg) return (std::filesystem::path(xdg) / "dlas").string();
  if (home && *home) return (std::filesystem::path(home) / ".cache" / "dlas").string();
  return "";
}

namespace {
// The cache file of (isa, threads) for CPU `id` (a model name, with its signature or not).
std::string cache_profile_path(const std::string& id, Isa isa, int threads) {
  const std::string cache = calibration_cache_dir();
  if (cache.empty()) return "";
  const std::filesystem::path dir = cache;
  return (dir / ("profile-" + cpu_slug(id) + "-" + isa_name(isa) + "-t" + std::to_string(threads) +
                 ".json"))
      .string();
}
}  // namespace

std::string default_profile_path(Isa isa, int threads) {
  const CpuInfo& c = cpu_info();
  return cache_profile_path(c.model_name + " " + c.signature(), isa, threads);
}

const std::vector<BuiltinProfile>& builtin_machine_profiles() {
  static const std::vector<BuiltinProfile> tables = [] {
    std::vector<BuiltinProfile> v;
    for (const BuiltinText& t : kBuiltinTexts)
      if (t.name)
        v.push_back({t.name, std::make_shared<const MachineProfile>(MachineProfile::from_json(
                                 t.json, std::string("built-in profile ") + t.name))});
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return v;
  }();
  return tables;
}

int cpu_match(const MachineProfile& m) {
  const CpuInfo& c = cpu_info();
  if (m.cpu != c.model_name) return 0;
  if (m.cpuid.empty()) return 1;
  return m.cpuid == c.signature() ? 2 : 0;
}

const BuiltinProfile* pick_builtin_profile(const std::vector<BuiltinProfile>& tables, Isa isa,
                                           int threads) {
  if (base_isa(isa) == Isa::kScalar) return nullptr;
  const BuiltinProfile* best = nullptr;
  auto rank = [&](const BuiltinProfile& b) {
    return std::make_tuple(-cpu_match(*b.profile), std::abs(b.profile->threads - threads),
                           b.profile->threads);
  };
  for (const BuiltinProfile& b : tables) {
    if (base_isa(b.profile->isa) != base_isa(isa)) continue;
    if (!b.profile->cpuid.empty() && cpu_match(*b.profile) == 0) continue;  // another CPU's
    if (!best || rank(b) < rank(*best)) best = &b;
  }
  return best;
}

ActiveProfile builtin_machine_profile(Isa isa, int threads) {
  const BuiltinProfile* best = pick_builtin_profile(builtin_machine_profiles(), isa, threads);
  if (!best) return {};
  return {best->profile, "builtin:" + best->name};
}

ActiveProfile active_machine_profile(const std::string& option, Isa isa, int threads) {
  std::string path = option;
  bool explicit_path = !option.empty();
  if (path.empty()) {
    const char* env = std::getenv("DLAS_PROFILE");
    if (env && *env) path = env;
  }
  if (path == "none") return {};
  if (path == "builtin") return builtin_machine_profile(isa, threads);
  const bool from_default = path.empty();
  if (from_default) {
    path = default_profile_path(isa, threads);
    // A calibration written before the file names carried the cpuid signature (its CPU is
    // checked below like any profile's).
    const std::string legacy = cache_profile_path(cpu_info().model_name, isa, threads);
    std::error_code ec;
    if (!path.empty() && !std::filesystem::exists(path, ec) &&
        std::filesystem::is_regular_file(legacy, ec))
      path = legacy;
  }
  if (path.empty()) return builtin_machine_profile(isa, threads);

  // The file's version: (exists, size, mtime); a change re-reads it.
  std::error_code ec;
  const bool exists = std::filesystem::is_regular_file(path, ec);
  DLAS_CHECK(exists || !explicit_path, ErrorKind::kInvalidInput, "profile ", path,
             ": no such file");
  if (!exists && from_default) return builtin_machine_profile(isa, threads);
  uintmax_t size = exists ? std::filesystem::file_size(path, ec) : 0;
  auto mtime = exists ? std::filesystem::last_write_time(path, ec).time_since_epoch().count() : 0;

  struct Cached {
    uintmax_t size = 0;
    int64_t mtime = 0;
    bool exists = false;
    ActiveProfile result;
  };
  static std::mutex mu;
  static std::map<std::tuple<std::string, Isa, int>, Cached> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_tuple(path, isa, threads);
  auto it = cache.find(key);
  if (it != cache.end() && it->second.exists == exists && it->second.size == size &&
      it->second.mtime == static_cast<int64_t>(mtime))
    return it->second.result;

  Cached c{size, static_cast<int64_t>(mtime), exists, {}};
  std::string warning;
  if (!exists) {
    warning = "profile " + path + ": no such file";
  } else {
    try {
      auto m = std::make_shared<MachineProfile>(MachineProfile::load(path));
      auto name = [](const std::string& model, const std::string& id) {
        return id.empty() ? model : model + " (" + id + ")";
      };
      if (cpu_match(*m) == 0)
        warning = "profile " + path + " is for CPU '" + name(m->cpu, m->cpuid) + "', not '" +
                  name(cpu_info().model_name, cpu_info().signature()) + "'";
      else if (m->isa != isa)
        warning = "profile " + path + " is for ISA " + isa_name(m->isa) + ", not " + isa_name(isa);
      else if (m->threads != threads)
        warning = "profile " + path + " is for " + std::to_string(m->threads) + " threads, not " +
                  std::to_string(threads);
      else
        c.result = {std::move(m), path};
    } catch (const std::exception& e) {
      warning = e.what();
    }
  }
  if (!warning.empty()) {
    c.result = builtin_machine_profile(isa, threads);
    const std::string instead =
        c.result.profile ? "the built-in table " + c.result.path.substr(8) : "the built-in rule";
    std::fprintf(stderr, "dlas: warning: %s; using %s\n", warning.c_str(), instead.c_str());
  }
  cache[key] = c;
  return c.result;
}

}  // namespace dlas
