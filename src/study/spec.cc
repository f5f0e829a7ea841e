#include "dlas/study/spec.h"

#include <toml++/toml.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "dlas/algo/conv.h"
#include "dlas/core/error.h"
#include "dlas/data/dataset.h"
#include "dlas/hw/gpu.h"
#include "dlas/hw/isa.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/prune.h"
#include "dlas/optimize/quantize.h"
#include "dlas/system/accuracy.h"
#include "dlas/system/peer_executor.h"
#include "dlas/system/plan.h"
#include "dlas/system/tune_model.h"

namespace dlas::study {
namespace {

namespace fs = std::filesystem;

// Tables that look like parts of a spec but are not: the error says where the setting lives.
const std::pair<const char*, const char*> kNotTables[] = {
    {"tuning",
     "not supported: tuning is the [space].tuning dimension (tuning = [\"untuned\", "
     "\"tuned:120s\"])"},
    {"dataset",
     "not supported: datasets are the [space].dataset dimension (dataset = "
     "[\"fashion-mnist\"]); [accuracy] sets how variants are scored"},
};

// The pruning part of a compression value that asks for the elbow ("wp:elbow"), or "".
std::string elbow_part(const std::string& compress) {
  std::stringstream ss(compress);
  std::string part;
  while (std::getline(ss, part, '+'))
    if (part.rfind("wp:elbow", 0) == 0 || part.rfind("cp:elbow", 0) == 0) return part;
  return "";
}

// Where a node was written, as "FILE:LINE:COL".
std::string where(const std::string& source, const toml::source_region& r) {
  return str(source, ":", r.begin.line, ":", r.begin.column);
}

struct Ctx {
  std::string source;
  [[noreturn]] void error(const toml::source_region& r, const std::string& field,
                          const std::string& why) const {
    fail(ErrorKind::kInvalidInput, where(source, r), ": ", field, ": ", why);
  }
};

std::string joined(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string type_name(const toml::node& n) {
  std::ostringstream os;
  os << n.type();
  return os.str();
}

// A dimension's values: an array of `T` (a single value is accepted as a one-element list).
// One value of a list, where it was written, and its field name ("[space].threads[1]").
template <class T>
struct Value {
  T v;
  toml::source_region r;
  std::string field;
};

// Calls take(node, field) for each element of a list (with its field "F[i]"), or once for a
// single value; an empty list is an error saying `empty_hint`.
template <class Take>
void each_value(const Ctx& ctx, const toml::node& node, const std::string& field,
                const char* empty_hint, Take&& take) {
  if (const toml::array* arr = node.as_array()) {
    if (arr->empty()) ctx.error(node.source(), field, std::string("empty list: ") + empty_hint);
    for (size_t i = 0; i < arr->size(); ++i) take((*arr)[i], str(field, "[", i, "]"));
  } else {
    take(node, field);
  }
}

template <class T>
std::vector<Value<T>> values_of(const Ctx& ctx, const toml::node& node, const std::string& field) {
  std::vector<Value<T>> out;
  auto take = [&](const toml::node& n, const std::string& f) {
    if constexpr (std::is_same_v<T, std::string>) {
      if (!n.is_string()) ctx.error(n.source(), f, "expected a string, got " + type_name(n));
      out.push_back({*n.value<std::string>(), n.source(), f});
    } else {
      if (!n.is_integer()) ctx.error(n.source(), f, "expected an integer, got " + type_name(n));
      out.push_back({static_cast<T>(*n.value<int64_t>()), n.source(), f});
    }
  };
  each_value(ctx, node, field, "give at least one value", take);
  return out;
}

template <class T>
std::string text_of(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    return v;
  } else {
    return std::to_string(v);
  }
}

template <class T>
void no_duplicates(const Ctx& ctx, const std::vector<Value<T>>& vals, const std::string& field) {
  std::set<std::string> seen;
  for (const auto& [v, r, f] : vals)
    if (!seen.insert(text_of(v)).second) ctx.error(r, f, "'" + text_of(v) + "' is listed twice");
}

// Compression specs compose with '+': dense, wp:F, cp:F, bp:RxC:F, fp16, bf16, int8[:cal].
bool looks_like_compression(const std::string& spec) {
  std::stringstream ss(spec);
  std::string part;
  int n = 0;
  while (std::getline(ss, part, '+')) {
    ++n;
    const bool ok = part == "dense" || part == "fp16" || part == "bf16" || part == "int8" ||
                    part.rfind("int8:", 0) == 0 || part.rfind("wp:", 0) == 0 ||
                    part.rfind("cp:", 0) == 0 || part.rfind("bp:", 0) == 0;
    if (!ok) return false;
  }
  return n > 0 && spec.back() != '+';
}

std::vector<std::string> algo_choices() {
  std::vector<std::string> v;
  for (const ConvAlgorithm* a : conv_algorithms()) v.emplace_back(a->name());
  v.push_back("auto");
  for (const ConvAlgorithm* a : sparse_conv_algorithms()) v.emplace_back(a->name());
  return v;
}

// The [space].conv_algo values that name one of dlas's CUDA algorithms too (docs/gpu.md): a
// GPU variant runs only these; the CPU-only ones (spatial-pack, the sparse formats) are not
// GPU variants.
const std::set<std::string> kGpuConvAlgorithms = {"auto",     "direct",    "gemm",
                                                  "winograd", "depthwise", "sparse"};

std::vector<std::string> isa_choices() {
  std::vector<std::string> v = {"native"};
  for (Isa i : kAllIsas) v.push_back(isa_name(i));
  return v;
}

std::string check_model(const Ctx& ctx, const std::string& model, const toml::source_region& r,
                        const std::string& field, const std::string& base_dir) {
  if (find_zoo_model(model)) return model;
  const bool is_path = model.find('/') != std::string::npos ||
                       (model.size() > 5 && model.substr(model.size() - 5) == ".onnx");
  if (!is_path) {
    std::vector<std::string> names;
    for (const auto& e : zoo_models()) names.push_back(e.name);
    ctx.error(r, field,
              "unknown model '" + model + "': not a zoo model (" + joined(names) +
                  ") and not an .onnx path");
  }
  fs::path p(model);
  if (p.is_relative()) p = fs::path(base_dir) / p;
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))
    ctx.error(r, field, "model file '" + p.string() + "' does not exist");
  return p.lexically_normal().string();
}

void parse_study_table(const Ctx& ctx, const toml::table& t, StudySpec& spec) {
  for (auto&& [key, node] : t) {
    const std::string k(key.str());
    const std::string field = "[study]." + k;
    if (k == "name") {
      if (!node.is_string()) ctx.error(node.source(), field, "expected a string");
      spec.name = *node.value<std::string>();
      if (spec.name.empty()) ctx.error(node.source(), field, "must not be empty");
    } else if (k == "description") {
      if (!node.is_string()) ctx.error(node.source(), field, "expected a string");
    } else if (k == "repeat" || k == "warmup") {
      if (!node.is_integer()) ctx.error(node.source(), field, "expected an integer");
      const int64_t v = *node.value<int64_t>();
      const int64_t lo = k == "repeat" ? 1 : 0;
      if (v < lo || v > 1000000)
        ctx.error(node.source(), field, str(v, " is out of range [", lo, ", 1000000]"));
      (k == "repeat" ? spec.repeat : spec.warmup) = static_cast<int>(v);
    } else if (k == "timeout") {
      if (!node.is_number()) ctx.error(node.source(), field, "expected seconds (a number)");
      const double v = *node.value<double>();
      if (!(v >= 0) || v > 1e7)
        ctx.error(node.source(), field, str(v, " is not a timeout in seconds (0: none)"));
      spec.timeout_s = v;
    } else if (k == "calibrate") {
      if (!node.is_boolean()) ctx.error(node.source(), field, "expected true or false");
      spec.calibrate = *node.value<bool>();
    } else {
      ctx.error(key.source(), field,
                "unknown key; expected one of name, description, repeat, warmup, timeout, "
                "calibrate");
    }
  }
}

// A dimension's values, each checked by `check(value)` (which reports through ctx.error),
// duplicates refused, converted to `Out`.
template <class Out, class T, class Check>
std::vector<Out> checked_values(const Ctx& ctx, const toml::node& node, const std::string& field,
                                Check check) {
  const std::vector<Value<T>> vals = values_of<T>(ctx, node, field);
  no_duplicates(ctx, vals, field);
  std::vector<Out> out;
  for (const Value<T>& v : vals) {
    check(v);
    out.push_back(static_cast<Out>(v.v));
  }
  return out;
}

// An integer dimension whose values must lie in [lo, hi]; `hint` follows the range.
template <class Out>
std::vector<Out> ranged_ints(const Ctx& ctx, const toml::node& node, const std::string& field,
                             int64_t lo, int64_t hi, const char* hint = "") {
  return checked_values<Out, int64_t>(ctx, node, field, [&](const Value<int64_t>& v) {
    if (v.v < lo || v.v > hi)
      ctx.error(v.r, v.field, str(v.v, " is out of range [", lo, ", ", hi, "]", hint));
  });
}

// A string dimension whose values must be one of `choices`; `what` names one value.
std::vector<std::string> chosen_strings(const Ctx& ctx, const toml::node& node,
                                        const std::string& field,
                                        const std::vector<std::string>& choices,
                                        const std::string& what) {
  return checked_values<std::string, std::string>(
      ctx, node, field, [&](const Value<std::string>& v) {
        if (std::find(choices.begin(), choices.end(), v.v) == choices.end())
          ctx.error(v.r, v.field, "'" + v.v + "' is not " + what + " (" + joined(choices) + ")");
      });
}

void parse_models(const Ctx& ctx, const toml::node& node, const std::string& field,
                  StudySpec& spec) {
  spec.space.models = checked_values<std::string, std::string>(
      ctx, node, field,
      [&](const Value<std::string>& v) { check_model(ctx, v.v, v.r, v.field, spec.base_dir); });
}

void parse_compress_values(const Ctx& ctx, const toml::node& node, const std::string& field,
                           StudySpec& spec) {
  spec.space.compress = checked_values<std::string, std::string>(
      ctx, node, field, [&](const Value<std::string>& val) {
        const auto& [v, r, f] = val;
        if (!looks_like_compression(v))
          ctx.error(r, f,
                    "'" + v +
                        "' is not a compression spec (dense, wp:F, cp:F, bp:RxC:F, fp16, bf16, "
                        "int8[:calibrator], joined with '+')");
        // Bad specs are refused by the parser (the measuring child applies the same one).
        // An elbow level is checked with a stand-in level; the sweep gives the real one.
        std::string checked = v;
        if (const std::string part = elbow_part(v); !part.empty()) {
          if (part != "wp:elbow" && part != "cp:elbow")
            ctx.error(r, f,
                      "'" + part +
                          "': an elbow level takes no options (wp:elbow or cp:elbow; the "
                          "sweep's level keeps its own)");
          checked.replace(checked.find(part), part.size(), part.substr(0, 3) + "0.5");
        }
        try {
          parse_compress(checked);
        } catch (const Error& e) {
          ctx.error(r, f, e.what());
        }
      });
}

void parse_batch(const Ctx& ctx, const toml::node& node, const std::string& field,
                 StudySpec& spec) {
  spec.space.batch = ranged_ints<int64_t>(ctx, node, field, 1, 4096);
}

void parse_backend(const Ctx& ctx, const toml::node& node, const std::string& field,
                   StudySpec& spec) {
  std::vector<std::string> backends = {"dlas", "onednn", "cudnn"};
  for (const std::string& p : peer_backends()) backends.push_back(p);
  spec.space.backend = chosen_strings(ctx, node, field, backends, "a backend");
}

// Devices are stored canonically ("cuda" -> "cuda:0"), so "cuda" and "cuda:0" are one value.
void parse_device_values(const Ctx& ctx, const toml::node& node, const std::string& field,
                         StudySpec& spec) {
  std::vector<std::string> out;
  for (const auto& [v, r, f] : values_of<std::string>(ctx, node, field)) {
    std::string d;
    try {
      d = canonical_device(v);
    } catch (const Error&) {
      ctx.error(r, f, "'" + v + "' is not a device (cpu, cuda or cuda:N)");
    }
    if (std::find(out.begin(), out.end(), d) != out.end())
      ctx.error(r, f, "'" + v + "' is listed twice (as " + d + ")");
    out.push_back(d);
  }
  spec.space.device = out;
}

void parse_isa(const Ctx& ctx, const toml::node& node, const std::string& field, StudySpec& spec) {
  spec.space.isa = chosen_strings(ctx, node, field, isa_choices(), "an ISA path");
}

void parse_opt_level(const Ctx& ctx, const toml::node& node, const std::string& field,
                     StudySpec& spec) {
  spec.space.opt_level = ranged_ints<int>(ctx, node, field, 0, 3);
}

void parse_conv_algo(const Ctx& ctx, const toml::node& node, const std::string& field,
                     StudySpec& spec) {
  const auto choices = algo_choices();
  spec.space.conv_algo = checked_values<std::string, std::string>(
      ctx, node, field, [&](const Value<std::string>& val) {
        const auto& [v, r, f] = val;
        AlgoChoiceSpec chosen;
        try {
          chosen = parse_algo_choice(v);
        } catch (const Error& e) {
          ctx.error(r, f, e.what());
        }
        if (std::find(choices.begin(), choices.end(), chosen.algo) == choices.end())
          ctx.error(
              r, f,
              "'" + chosen.algo + "' is not a convolution algorithm (" + joined(choices) + ")");
        if (chosen.algo == "auto" && !chosen.knobs.empty())
          ctx.error(r, f, "auto takes no knobs (name an algorithm: sparse-direct:format=csr)");
      });
}

void parse_layout(const Ctx& ctx, const toml::node& node, const std::string& field,
                  StudySpec& spec) {
  std::vector<std::string> choices;
  for (LayoutMode m : {LayoutMode::kNchw, LayoutMode::kNchwc, LayoutMode::kAuto})
    choices.emplace_back(layout_mode_name(m));
  spec.space.layout = chosen_strings(ctx, node, field, choices, "an activation layout");
}

void parse_threads(const Ctx& ctx, const toml::node& node, const std::string& field,
                   StudySpec& spec) {
  spec.space.threads = ranged_ints<int>(ctx, node, field, 0, 1024, " (0: one per logical CPU)");
}

void parse_tuning(const Ctx& ctx, const toml::node& node, const std::string& field,
                  StudySpec& spec) {
  spec.space.tuning = checked_values<std::string, std::string>(
      ctx, node, field, [&](const Value<std::string>& val) {
        const auto& [v, r, f] = val;
        if (v == "untuned") return;
        if (v.rfind("tuned:", 0) != 0)
          ctx.error(r, f, "'" + v + "' is not a tuning (untuned, tuned:120s, tuned:500trials)");
        try {
          tune::parse_budget(std::string_view(v).substr(6));
        } catch (const Error& e) {
          ctx.error(r, f, e.what());
        }
      });
}

void parse_dataset(const Ctx& ctx, const toml::node& node, const std::string& field,
                   StudySpec& spec) {
  spec.space.dataset =
      checked_values<std::string, std::string>(ctx, node, field, [&](const Value<std::string>& v) {
        // Opened here so a typo or a missing download fails before anything is measured.
        try {
          const auto ds = data::open_dataset(v.v, data::Split::kTest);
          zoo_options_for(ds->info());
        } catch (const Error& e) {
          ctx.error(v.r, v.field, e.what());
        }
      });
}

// Text values of a list, to match exclusion rules against.
template <class T>
std::vector<std::string> texts_of(const std::vector<T>& list) {
  std::vector<std::string> v;
  for (const T& x : list) v.push_back(text_of(x));
  return v;
}

// One dimension of [space]: its key, whether its values are integers, its parser (which
// replaces the default) and its values as text.
struct SpaceKey {
  const char* key;
  bool integer;
  void (*parse)(const Ctx&, const toml::node&, const std::string& field, StudySpec&);
  std::vector<std::string> (*texts)(const StudySpace&);
};

// The dimensions, in expansion order (outermost first, as StudySpace lists them).
const SpaceKey kSpaceKeys[] = {
    {"models", false, parse_models, [](const StudySpace& s) { return texts_of(s.models); }},
    {"compress", false, parse_compress_values,
     [](const StudySpace& s) { return texts_of(s.compress); }},
    {"batch", true, parse_batch, [](const StudySpace& s) { return texts_of(s.batch); }},
    {"backend", false, parse_backend, [](const StudySpace& s) { return texts_of(s.backend); }},
    {"device", false, parse_device_values, [](const StudySpace& s) { return texts_of(s.device); }},
    {"isa", false, parse_isa, [](const StudySpace& s) { return texts_of(s.isa); }},
    {"opt_level", true, parse_opt_level, [](const StudySpace& s) { return texts_of(s.opt_level); }},
    {"conv_algo", false, parse_conv_algo,
     [](const StudySpace& s) { return texts_of(s.conv_algo); }},
    {"layout", false, parse_layout, [](const StudySpace& s) { return texts_of(s.layout); }},
    {"threads", true, parse_threads, [](const StudySpace& s) { return texts_of(s.threads); }},
    {"tuning", false, parse_tuning, [](const StudySpace& s) { return texts_of(s.tuning); }},
    {"dataset", false, parse_dataset, [](const StudySpace& s) { return texts_of(s.dataset); }},
};

// Keys that look like dimensions but are not: the error says where the setting lives.
const std::pair<const char*, const char*> kNotDimensions[] = {
    {"accuracy",
     "accuracy is not a dimension: list [space].dataset and set [accuracy] (limit, sweeps)"},
    {"schedule",
     "not supported: a variant's schedule comes from the tuning dimension (tuning = "
     "[\"untuned\", \"tuned:120s\"])"},
};

const SpaceKey* find_space_key(const std::string& key) {
  for (const SpaceKey& k : kSpaceKeys)
    if (key == k.key) return &k;
  return nullptr;
}

void parse_space_table(const Ctx& ctx, const toml::table& t, StudySpec& spec) {
  StudySpace& s = spec.space;
  s = StudySpace{};
  s.compress = {"dense"};
  s.batch = {1};
  s.backend = {"dlas"};
  s.device = {"cpu"};
  s.isa = {"native"};
  s.opt_level = {3};
  s.conv_algo = {"auto"};
  s.layout = {"auto"};
  s.threads = {1};
  s.tuning = {"untuned"};
  s.dataset = {""};
  for (auto&& [key, node] : t) {
    const std::string k(key.str());
    const std::string field = "[space]." + k;
    if (const SpaceKey* sk = find_space_key(k)) {
      sk->parse(ctx, node, field, spec);
      continue;
    }
    for (const auto& [name, why] : kNotDimensions)
      if (k == name) ctx.error(key.source(), field, why);
    ctx.error(key.source(), field,
              "unknown dimension; expected one of " + joined(study_dimensions()));
  }
  if (s.models.empty()) ctx.error(t.source(), "[space].models", "missing: list at least one model");
}

ExcludeRule parse_exclude(const Ctx& ctx, const toml::table& t, size_t index,
                          const StudySpace& space) {
  ExcludeRule rule;
  rule.line = static_cast<int>(t.source().begin.line);
  const std::string base = str("[[exclude]][", index, "]");
  if (t.empty()) ctx.error(t.source(), base, "empty rule: name at least one dimension");
  for (auto&& [key, node] : t) {
    std::string dim(key.str());
    if (dim == "model") dim = "models";
    const std::string field = base + "." + std::string(key.str());
    const SpaceKey* sk = find_space_key(dim);
    if (!sk)
      ctx.error(key.source(), field,
                "unknown dimension; expected one of model, " + joined(study_dimensions()));
    if (rule.match.count(dim)) ctx.error(key.source(), field, "dimension named twice");
    const std::vector<std::string> known = sk->texts(space);
    std::vector<std::string> vals;
    auto check = [&](const std::string& v, const toml::source_region& r, const std::string& f) {
      // A value the space does not have is most likely a typo; the rule would silently match
      // nothing.
      if (std::find(known.begin(), known.end(), v) == known.end())
        ctx.error(r, f,
                  "'" + v + "' is not a value of [space]." + dim + " (" + joined(known) + ")");
      vals.push_back(v);
    };
    if (sk->integer) {
      for (const auto& [v, r, f] : values_of<int64_t>(ctx, node, field))
        check(std::to_string(v), r, f);
    } else {
      for (const auto& [v, r, f] : values_of<std::string>(ctx, node, field)) {
        // Devices match as [space] stores them: "cuda" is "cuda:0".
        std::string text = v;
        if (dim == "device") try {
            text = canonical_device(v);
          } catch (const Error&) {
          }
        check(text, r, f);
      }
    }
    rule.match[dim] = vals;
  }
  return rule;
}

void parse_accuracy_table(const Ctx& ctx, const toml::table& t, StudySpec& spec) {
  for (auto&& [key, node] : t) {
    const std::string k(key.str());
    const std::string field = "[accuracy]." + k;
    if (k == "limit") {
      if (!node.is_integer()) ctx.error(node.source(), field, "expected an integer");
      const int64_t v = *node.value<int64_t>();
      if (v < 0 || v > 100000000)
        ctx.error(node.source(), field, str(v, " is out of range [0, 1e8] (0: the whole split)"));
      spec.accuracy.limit = v;
    } else if (k == "sweeps") {
      auto vals = values_of<std::string>(ctx, node, field);
      no_duplicates(ctx, vals, field);
      for (const auto& [v, r, f] : vals) {
        fs::path dir(v);
        if (dir.is_relative()) dir = fs::path(spec.base_dir) / dir;
        dir = dir.lexically_normal();
        // A sweep.json path is accepted too.
        const fs::path file = dir.filename() == "sweep.json" ? dir : dir / "sweep.json";
        std::error_code ec;
        if (!fs::is_regular_file(file, ec))
          ctx.error(r, f, "'" + file.string() + "' does not exist (a `dlas prune-sweep` folder)");
        try {
          spec.accuracy.loaded.push_back(read_sweep(file));
        } catch (const Error& e) {
          ctx.error(r, f, e.what());
        }
        spec.accuracy.sweeps.push_back(file.parent_path().string());
      }
    } else {
      ctx.error(key.source(), field, "unknown key; expected one of limit, sweeps");
    }
  }
}

// [preprocess] keys, as `dlas eval`'s preprocessing flags.
const char* const kPreprocessKeys =
    "mean, std, scale, channel_order, input_layout, resize, center_crop";

// One number (an integer is accepted where a real is expected).
double number_of(const Ctx& ctx, const toml::node& n, const std::string& field) {
  if (!n.is_number()) ctx.error(n.source(), field, "expected a number, got " + type_name(n));
  return *n.value<double>();
}

// A number, or one per channel.
std::vector<float> channel_values_of(const Ctx& ctx, const toml::node& node,
                                     const std::string& field, bool positive) {
  std::vector<float> out;
  const auto take = [&](const toml::node& n, const std::string& f) {
    const double v = number_of(ctx, n, f);
    if (positive && !(v > 0)) ctx.error(n.source(), f, str("must be > 0, got ", v));
    out.push_back(static_cast<float>(v));
  };
  each_value(ctx, node, field, "give one value or one per channel", take);
  return out;
}

// The flag keys of one [preprocess] table into `f`; sub-tables are the caller's.
void parse_preprocess_keys(const Ctx& ctx, const toml::table& t, const std::string& table,
                           PreprocessFlags& f) {
  for (auto&& [key, node] : t) {
    const std::string k(key.str());
    const std::string field = table + "." + k;
    if (node.is_table()) continue;
    if (k == "mean") {
      f.mean = channel_values_of(ctx, node, field, false);
    } else if (k == "std") {
      f.std = channel_values_of(ctx, node, field, true);
    } else if (k == "scale") {
      const double v = number_of(ctx, node, field);
      if (!(v > 0)) ctx.error(node.source(), field, str("must be > 0, got ", v));
      f.scale = static_cast<float>(v);
    } else if (k == "channel_order" || k == "input_layout") {
      if (!node.is_string())
        ctx.error(node.source(), field, "expected a string, got " + type_name(node));
      try {
        if (k == "channel_order")
          f.channel_order = data::parse_channel_order(*node.value<std::string>());
        else
          f.layout = data::parse_input_layout(*node.value<std::string>());
      } catch (const Error& e) {
        ctx.error(node.source(), field, e.what());
      }
    } else if (k == "resize" || k == "center_crop") {
      if (!node.is_integer())
        ctx.error(node.source(), field, "expected an integer, got " + type_name(node));
      const int64_t v = *node.value<int64_t>();
      if (v < 0 || v > 1000000)
        ctx.error(node.source(), field, str(v, " is out of range [0, 1e6] (0: keep)"));
      (k == "resize" ? f.resize : f.center_crop) = static_cast<int>(v);
    } else {
      ctx.error(key.source(), field,
                std::string("unknown key; expected one of ") + kPreprocessKeys +
                    ", or a model's table [preprocess.\"MODEL\"]");
    }
  }
}

// [preprocess]: its keys for every model, a sub-table per model of [space].models.
void parse_preprocess_table(const Ctx& ctx, const toml::table& t, StudySpec& spec) {
  parse_preprocess_keys(ctx, t, "[preprocess]", spec.preprocess[""]);
  for (auto&& [key, node] : t) {
    if (!node.is_table()) continue;
    const std::string model(key.str());
    const std::string table = "[preprocess.\"" + model + "\"]";
    const auto& models = spec.space.models;
    if (std::find(models.begin(), models.end(), model) == models.end())
      ctx.error(key.source(), table,
                "'" + model + "' is not a model of [space].models (" + joined(models) +
                    "); a model's table is named as the model is listed there");
    for (auto&& [sub, n] : *node.as_table())
      if (n.is_table())
        ctx.error(sub.source(), table + "." + std::string(sub.str()),
                  std::string("a model's table has keys only: ") + kPreprocessKeys);
    parse_preprocess_keys(ctx, *node.as_table(), table, spec.preprocess[model]);
  }
  if (!spec.preprocess[""].any()) spec.preprocess.erase("");
}

// The flags of [preprocess] for `model`: its own table's keys over the table's.
PreprocessFlags preprocess_for(const StudySpec& spec, const std::string& model) {
  PreprocessFlags f;
  const auto over = [&f](const PreprocessFlags& o) {
    if (o.mean) f.mean = o.mean;
    if (o.std) f.std = o.std;
    if (o.scale) f.scale = o.scale;
    if (o.channel_order) f.channel_order = o.channel_order;
    if (o.layout) f.layout = o.layout;
    if (o.resize) f.resize = o.resize;
    if (o.center_crop) f.center_crop = o.center_crop;
  };
  if (auto it = spec.preprocess.find(""); it != spec.preprocess.end()) over(it->second);
  if (auto it = spec.preprocess.find(model); it != spec.preprocess.end()) over(it->second);
  return f;
}

// The same model? As written, or the same file (the sweep's path is relative to where
// prune-sweep ran, the spec's to the spec's folder).
bool same_model(const std::string& spec_model, const std::string& base_dir,
                const std::string& sweep_model) {
  if (spec_model == sweep_model) return true;
  if (find_zoo_model(spec_model) || find_zoo_model(sweep_model)) return false;
  fs::path a(spec_model);
  if (a.is_relative()) a = fs::path(base_dir) / a;
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(a, ea), cb = fs::weakly_canonical(sweep_model, eb);
  return !ea && !eb && ca == cb;
}

// True when a rule naming only models, dataset and compress removes this combination
// whatever the other dimensions (its elbow then needs no sweep).
bool excluded_whole(const StudySpec& spec, const std::string& model, const std::string& dataset,
                    const std::string& compress) {
  for (const ExcludeRule& rule : spec.exclude) {
    bool all = true;
    for (const auto& [dim, vals] : rule.match) {
      const std::string* v = dim == "models"     ? &model
                             : dim == "dataset"  ? &dataset
                             : dim == "compress" ? &compress
                                                 : nullptr;
      all = all && v && std::find(vals.begin(), vals.end(), *v) != vals.end();
    }
    if (all) return true;
  }
  return false;
}

// Every (model, method, dataset) an elbow compression needs, found in [accuracy].sweeps.
void resolve_elbows(const Ctx& ctx, const toml::table& root, StudySpec& spec) {
  const toml::node* cn = root.at_path("space.compress").node();
  for (size_t ci = 0; ci < spec.space.compress.size(); ++ci) {
    const std::string part = elbow_part(spec.space.compress[ci]);
    if (part.empty()) continue;
    const toml::node* vn = cn && cn->is_array() ? cn->as_array()->get(ci) : cn;
    const toml::source_region r = vn ? vn->source() : root.source();
    const std::string field = str("[space].compress[", ci, "]");
    const PruneMethod method = part[0] == 'w' ? PruneMethod::kWeight : PruneMethod::kChannel;
    for (const std::string& model : spec.space.models)
      for (const std::string& dataset : spec.space.dataset) {
        if (excluded_whole(spec, model, dataset, spec.space.compress[ci])) continue;
        const bool known = std::any_of(spec.elbows.begin(), spec.elbows.end(), [&](auto& e) {
          return e.model == model && e.dataset == dataset && e.method == method;
        });
        if (known) continue;
        std::vector<const SweepResult*> match;
        for (const SweepResult& sw : spec.accuracy.loaded)
          if (sw.method == method && (dataset.empty() || sw.dataset == dataset) &&
              same_model(model, spec.base_dir, sw.model))
            match.push_back(&sw);
        const std::string what = str(sweep_method_name(method), " sweep of ", model,
                                     dataset.empty() ? std::string() : " on " + dataset);
        if (match.empty())
          ctx.error(r, field,
                    "'" + part + "' needs a " + what + " in [accuracy].sweeps (" +
                        (spec.accuracy.sweeps.empty() ? std::string("none listed")
                                                      : joined(spec.accuracy.sweeps)) +
                        ")");
        if (match.size() > 1)
          ctx.error(r, field,
                    "'" + part + "': several " + what + " in [accuracy].sweeps (" +
                        match[0]->dir.string() + ", " + match[1]->dir.string() +
                        "); list one, or add [space].dataset to tell them apart");
        const SweepResult& sw = *match[0];
        if (sw.elbow < 0 || sw.elbow >= static_cast<int>(sw.points.size()))
          ctx.error(r, field,
                    "'" + part + "': the " + what + " (" + sw.dir.string() +
                        ") has no elbow: no level kept top-1 within " + str(sw.tolerance * 100) +
                        " points of the baseline");
        const SweepPoint& pt = sw.points[static_cast<size_t>(sw.elbow)];
        const std::string prefix = part.substr(0, 3);
        if (pt.spec.rfind(prefix, 0) != 0 || pt.spec.size() <= 3)
          ctx.error(r, field,
                    "'" + part + "': the elbow of " + sw.dir.string() + " is '" + pt.spec +
                        "', not a " + prefix + " level");
        const fs::path mp = sw.dir / (pt.model.empty() ? std::string("elbow.onnx") : pt.model);
        std::error_code ec;
        if (!fs::is_regular_file(mp, ec))
          ctx.error(r, field, "'" + part + "': the elbow model '" + mp.string() + "' is missing");
        spec.elbows.push_back({model, dataset, method, pt.spec.substr(3),
                               mp.lexically_normal().string(), sw.dir.string()});
      }
  }
}

StudySpec parse_table(const Ctx& ctx, const toml::table& root, StudySpec spec) {
  bool have_space = false;
  for (auto&& [key, node] : root) {
    const std::string k(key.str());
    if (k == "study") {
      if (!node.is_table()) ctx.error(node.source(), k, "expected a table [study]");
      parse_study_table(ctx, *node.as_table(), spec);
    } else if (k == "space") {
      if (!node.is_table()) ctx.error(node.source(), k, "expected a table [space]");
      parse_space_table(ctx, *node.as_table(), spec);
      have_space = true;
    } else if (k == "accuracy") {
      if (!node.is_table()) ctx.error(node.source(), k, "expected a table [accuracy]");
      // Parsed after [space] (the sweeps' models are matched against it).
    } else if (k == "preprocess") {
      if (!node.is_table()) ctx.error(node.source(), k, "expected a table [preprocess]");
      // Parsed after [space] (its sub-tables name models of [space].models).
    } else if (k == "exclude") {
      // Checked after [space], whatever the order in the file (values are checked against it).
    } else {
      for (const auto& [name, why] : kNotTables)
        if (k == name) ctx.error(key.source(), "[" + k + "]", why);
      ctx.error(
          key.source(), k,
          "unknown table; expected [study], [space], [accuracy], [preprocess] or [[exclude]]");
    }
  }
  if (!have_space) ctx.error(root.source(), "[space]", "missing: the spec needs a [space] table");
  if (const toml::node* acc = root.get("accuracy"))
    parse_accuracy_table(ctx, *acc->as_table(), spec);
  if (const toml::node* pre = root.get("preprocess")) {
    parse_preprocess_table(ctx, *pre->as_table(), spec);
    const auto& ds = spec.space.dataset;
    if (!spec.preprocess.empty() &&
        std::all_of(ds.begin(), ds.end(), [](const std::string& d) { return d.empty(); }))
      ctx.error(pre->source(), "[preprocess]",
                "feeds dataset images, but [space] has no dataset (dataset = [\"fashion-mnist\"])");
  }
  // A tuned variant tunes inside its child process, under the per-variant timeout.
  for (const std::string& t : spec.space.tuning) {
    if (t == "untuned" || spec.timeout_s <= 0) continue;
    const double budget = tune::parse_budget(std::string_view(t).substr(6)).seconds;
    if (budget == 0 || budget + 30 > spec.timeout_s) {
      const toml::node* n = root.at_path("space.tuning").node();
      ctx.error(n ? n->source() : root.source(), "[space].tuning",
                "'" + t + "' needs a time budget at least 30 s under [study].timeout (" +
                    str(spec.timeout_s) + " s): the child tunes, then measures, within it");
    }
  }
  if (const toml::node* ex = root.get("exclude")) {
    const toml::array* arr = ex->as_array();
    if (!arr || !arr->is_array_of_tables())
      ctx.error(ex->source(), "exclude", "expected [[exclude]] tables");
    for (size_t i = 0; i < arr->size(); ++i)
      spec.exclude.push_back(parse_exclude(ctx, *(*arr)[i].as_table(), i, spec.space));
  }
  resolve_elbows(ctx, root, spec);
  return spec;
}

bool excluded_by(const ExcludeRule& rule, const StudyPoint& p) {
  for (const auto& [dim, vals] : rule.match)
    if (std::find(vals.begin(), vals.end(), p.value(dim)) == vals.end()) return false;
  return true;
}

}  // namespace

const std::vector<std::string>& study_dimensions() {
  static const std::vector<std::string> dims = [] {
    std::vector<std::string> v;
    for (const SpaceKey& k : kSpaceKeys) v.emplace_back(k.key);
    return v;
  }();
  return dims;
}

StudySpec parse_study_spec(std::string_view text, const std::string& source_name,
                           const std::string& base_dir) {
  Ctx ctx{source_name};
  StudySpec spec;
  spec.source = source_name;
  spec.base_dir = base_dir;
  spec.name = fs::path(source_name).stem().string();
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    fail(ErrorKind::kInvalidInput, where(source_name, e.source()), ": TOML: ", e.description());
  }
  return parse_table(ctx, root, std::move(spec));
}

StudySpec parse_study_spec_file(const std::string& path) {
  std::error_code ec;
  DLAS_CHECK(fs::is_regular_file(path, ec), ErrorKind::kInvalidInput, path,
             ": study spec not found (or not a file)");
  std::ifstream in(path, std::ios::binary);
  DLAS_CHECK(in, ErrorKind::kInvalidInput, path, ": cannot read the study spec");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string base = fs::path(path).parent_path().string();
  return parse_study_spec(ss.str(), path, base.empty() ? "." : base);
}

std::string StudyPoint::value(std::string_view d) const {
  if (d == "models" || d == "model") return model;
  if (d == "compress") return compress;
  if (d == "batch") return std::to_string(batch);
  if (d == "backend") return backend;
  if (d == "device") return device;
  if (d == "isa") return isa;
  if (d == "opt_level") return std::to_string(opt_level);
  if (d == "conv_algo") return conv_algo;
  if (d == "layout") return layout;
  if (d == "threads") return std::to_string(threads);
  if (d == "tuning") return tuning;
  if (d == "dataset") return dataset;
  fail(ErrorKind::kInternal, "StudyPoint::value: unknown dimension '", d, "'");
}

std::string StudyPoint::str() const {
  return "model=" + model + ";compress=" + compress + ";batch=" + std::to_string(batch) +
         ";backend=" + backend + ";isa=" + isa + ";opt=" + std::to_string(opt_level) +
         ";conv=" + conv_algo + ";threads=" + std::to_string(threads) +
         (layout == "auto" ? "" : ";layout=" + layout) +
         (device == "cpu" ? "" : ";device=" + device) +
         (tuning == "untuned" ? "" : ";tuning=" + tuning) +
         (dataset.empty() ? ""
                          : ";dataset=" + dataset + ";limit=" + std::to_string(accuracy_limit)) +
         (dataset.empty() || !preprocess.any() ? "" : ";preprocess=" + preprocess.str());
}

std::string deployed_compress(const std::string& compress) {
  std::stringstream ss(compress);
  std::string part, out;
  while (std::getline(ss, part, '+')) {
    if (part.rfind("cp:elbow=", 0) == 0) continue;  // the elbow model is already smaller
    if (part.rfind("wp:elbow=", 0) == 0) part = "wp:" + part.substr(9);
    out += (out.empty() ? "" : "+") + part;
  }
  return out.empty() ? "dense" : out;
}

Expansion expand_study(const StudySpec& spec) {
  const StudySpace& s = spec.space;
  Expansion e;
  std::set<std::string> seen;
  // One point of the cartesian product: excluded, normalised, collapsed or kept.
  auto add = [&](StudyPoint p) {
    ++e.total;
    // The limit is part of the variant's identity with a dataset only, so dataset-free ids
    // (and their stored rows) are unchanged.
    if (!p.dataset.empty()) p.accuracy_limit = spec.accuracy.limit;
    if (!p.dataset.empty()) p.preprocess = preprocess_for(spec, p.model);
    // cuDNN runs on a GPU only: on the CPU it takes the first one (as --backend cudnn does),
    // before the rules match, so a rule on device matches where the variant runs.
    if (p.backend == "cudnn" && p.device == "cpu") p.device = "cuda:0";
    if (std::any_of(spec.exclude.begin(), spec.exclude.end(),
                    [&](const ExcludeRule& r) { return excluded_by(r, p); })) {
      ++e.excluded;
      return;
    }
    // Exclusions match the level as written ("wp:elbow"); the point deploys the resolved one.
    if (const std::string part = elbow_part(p.compress); !part.empty()) {
      const PruneMethod m = part[0] == 'w' ? PruneMethod::kWeight : PruneMethod::kChannel;
      const auto it = std::find_if(spec.elbows.begin(), spec.elbows.end(), [&](auto& c) {
        return c.model == p.model && c.dataset == p.dataset && c.method == m;
      });
      DLAS_CHECK(it != spec.elbows.end(), ErrorKind::kInternal, "expand_study: unresolved ", part,
                 " for ", p.model);
      p.compress.replace(p.compress.find(part), part.size(), part + "=" + it->level);
      p.model_path = it->model_path;
    }
    if (p.device != "cpu") {
      // A GPU runs dlas's CUDA plan or cuDNN (f32, pruned, fp16 and bf16 models), with
      // dlas's CUDA algorithms: every other combination is not a variant of this device.
      const bool gpu_backend = p.backend == "dlas" || p.backend == "cudnn";
      const auto quant = parse_compress(deployed_compress(p.compress)).quant;
      const bool quantized = quant && quant->type == QuantType::kInt8;
      const bool gpu_algo =
          p.backend == "cudnn" || kGpuConvAlgorithms.count(parse_algo_choice(p.conv_algo).algo);
      if (!gpu_backend || quantized || !gpu_algo) {
        ++e.excluded;
        return;
      }
      // No ISA path, thread pool or CPU activation layout on a GPU: one row per device.
      p.isa = p.device;
      p.threads = 1;
      p.layout = "auto";
      if (p.backend == "cudnn") {
        // cuDNN picks each layer's algorithm by its own search; dlas's tuner has nothing to
        // tune there.
        p.conv_algo = "cudnn";
        p.tuning = "untuned";
      }
    }
    if (p.backend == "onednn" || is_peer_backend(p.backend)) {
      // oneDNN runs the fp32 graph only: quantized variants are dlas's alone. The peers
      // run the exported compressed graph (int8 as QuantizeLinear/DequantizeLinear).
      if (p.backend == "onednn" && parse_compress(deployed_compress(p.compress)).quant) {
        ++e.excluded;
        return;
      }
      // They choose their kernels, layouts and ISA themselves, and tune (tvm-tuned) or not
      // on their own: one row per model x compression x threads, labelled by the backend.
      p.isa = p.backend;
      p.opt_level = 0;
      p.conv_algo = p.backend;
      p.layout = "auto";
      p.tuning = "untuned";
    }
    if (!seen.insert(p.str()).second) {
      ++e.collapsed;
      return;
    }
    e.points.push_back(std::move(p));
  };
  for (const std::string& model : s.models) {
    const std::string path =
        find_zoo_model(model)
            ? model
            : (fs::path(model).is_relative() ? (fs::path(spec.base_dir) / model).lexically_normal()
                                             : fs::path(model))
                  .string();
    for (const std::string& dataset : s.dataset)
      for (const std::string& compress : s.compress)
        for (int64_t batch : s.batch)
          for (const std::string& backend : s.backend)
            for (const std::string& device : s.device)
              for (const std::string& isa : s.isa)
                for (int opt : s.opt_level)
                  for (const std::string& algo : s.conv_algo)
                    for (const std::string& layout : s.layout)
                      for (int threads : s.threads)
                        for (const std::string& tuning : s.tuning)
                          add({model,
                               path,
                               compress,
                               batch,
                               backend,
                               device,
                               isa,
                               opt,
                               algo,
                               layout,
                               threads,
                               tuning,
                               dataset,
                               0,
                               {}});
  }
  return e;
}

}  // namespace dlas::study
