// The space `dlas explore` searches: the default and --space FILE.toml (dlas/study/explore.h).
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "dlas/algo/conv.h"
#include "dlas/core/error.h"
#include "dlas/optimize/compress_spec.h"
#include "dlas/study/explore.h"
#include "dlas/system/peer_executor.h"
#include "dlas/system/tune_model.h"

namespace dlas::study {

const char* explore_metric_name(ExploreMetric m) {
  return m == ExploreMetric::kTop1 ? "top1" : "top5";
}

ExploreMetric parse_explore_metric(std::string_view s) {
  if (s == "top1") return ExploreMetric::kTop1;
  if (s == "top5") return ExploreMetric::kTop5;
  fail(ErrorKind::kUsage, "--metric '", s, "': expected top1 or top5");
}

ExploreSpace default_explore_space(bool can_finetune) {
  ExploreSpace s;
  s.compress = {"dense",           "fp16",        "bf16",         "int8:mse",    "int8:entropy",
                "int8:percentile", "int8:minmax", "wp:0.5",       "wp:0.5+int8", "wp:0.7",
                "wp:0.7+int8",     "cp:0.25",     "cp:0.25+int8", "bp:4x1:0.5",  "bp:4x1:0.5+int8"};
  s.conv_algo = {"auto", "direct", "gemm", "winograd", "spatial-pack"};
  s.layout = {"auto", "nchw", "nchwc"};
  s.backend = {"dlas", "onednn"};
  for (const std::string& p : peer_backends())
    if (p != "tvm-tuned" && peer_unavailable_reason(p).empty()) s.backend.push_back(p);
  if (can_finetune) {
    s.weight_levels = {0.8, 0.9, 0.95};
    s.channel_levels = {0.25, 0.5};
  }
  return s;
}

namespace {

std::string where(const toml::source_region& r, const std::string& path, const std::string& field) {
  std::ostringstream os;
  os << path << ":" << r.begin.line << ":" << r.begin.column << ": " << field << ": ";
  return os.str();
}

std::vector<std::string> strings(const toml::node& n, const std::string& path,
                                 const std::string& field) {
  std::vector<std::string> out;
  auto one = [&](const toml::node& v) {
    const auto* s = v.as_string();
    DLAS_CHECK(s != nullptr, ErrorKind::kInvalidInput, where(v.source(), path, field),
               "expected a string");
    out.push_back(s->get());
  };
  if (const auto* a = n.as_array()) {
    for (const toml::node& v : *a) one(v);
  } else {
    one(n);
  }
  DLAS_CHECK(!out.empty(), ErrorKind::kInvalidInput, where(n.source(), path, field),
             "an empty list");
  return out;
}

std::vector<double> numbers(const toml::node& n, const std::string& path,
                            const std::string& field) {
  std::vector<double> out;
  auto one = [&](const toml::node& v) {
    const std::optional<double> d = v.value<double>();
    DLAS_CHECK(d && *d > 0 && *d < 1, ErrorKind::kInvalidInput, where(v.source(), path, field),
               "expected a level in (0, 1)");
    DLAS_CHECK(out.empty() || *d > out.back(), ErrorKind::kInvalidInput,
               where(v.source(), path, field), "levels must be ascending");
    out.push_back(*d);
  };
  if (const auto* a = n.as_array()) {
    for (const toml::node& v : *a) one(v);
  } else {
    one(n);
  }
  return out;
}

}  // namespace

ExploreSpace read_explore_space(const std::string& path, ExploreSpace s) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    fail(ErrorKind::kInvalidInput, where(e.source(), path, "toml"), e.description());
  } catch (const std::exception& e) {
    fail(ErrorKind::kInvalidInput, path, ": ", e.what());
  }
  for (const auto& [table_key, table_node] : t) {
    const std::string tk(table_key.str());
    const auto* table = table_node.as_table();
    DLAS_CHECK(table && (tk == "space" || tk == "explore"), ErrorKind::kInvalidInput,
               where(table_node.source(), path, tk),
               "unknown table; an explore space has [space] and [explore]");
    for (const auto& [key, node] : *table) {
      const std::string k(key.str()), field = tk + "." + k;
      const std::string at = where(node.source(), path, field);
      if (tk == "space" && k == "compress") {
        s.compress = strings(node, path, field);
        for (const std::string& c : s.compress) {
          try {
            parse_compress(c);
          } catch (const Error& e) {
            fail(ErrorKind::kInvalidInput, at, e.what());
          }
        }
      } else if (tk == "space" && k == "conv_algo") {
        s.conv_algo = strings(node, path, field);
        for (const std::string& a : s.conv_algo)
          DLAS_CHECK(a == "auto" || find_conv_algorithm(a), ErrorKind::kInvalidInput, at, "'", a,
                     "' is not auto|", conv_algorithm_names());
      } else if (tk == "space" && k == "layout") {
        s.layout = strings(node, path, field);
        for (const std::string& l : s.layout)
          DLAS_CHECK(l == "auto" || l == "nchw" || l == "nchwc", ErrorKind::kInvalidInput, at, "'",
                     l, "' is not auto, nchw or nchwc");
      } else if (tk == "space" && k == "backend") {
        s.backend = strings(node, path, field);
        for (const std::string& b : s.backend)
          DLAS_CHECK(b == "dlas" || b == "onednn" || is_peer_backend(b), ErrorKind::kInvalidInput,
                     at, "'", b, "' is not dlas, onednn or a peer engine");
      } else if (tk == "space" && k == "tuning") {
        const std::vector<std::string> v = strings(node, path, field);
        DLAS_CHECK(v.size() == 1, ErrorKind::kInvalidInput, at,
                   "one value: untuned or tuned:<budget> (the short tune of the front)");
        DLAS_CHECK(v[0] == "untuned" || v[0].rfind("tuned:", 0) == 0, ErrorKind::kInvalidInput, at,
                   "'", v[0], "' is neither untuned nor tuned:<budget>");
        if (v[0] != "untuned") {
          try {
            tune::parse_budget(std::string_view(v[0]).substr(6));
          } catch (const Error& e) {
            fail(ErrorKind::kInvalidInput, at, e.what());
          }
        }
        s.tuning = v[0];
      } else if (tk == "explore" && k == "weight_levels") {
        s.weight_levels = numbers(node, path, field);
      } else if (tk == "explore" && k == "channel_levels") {
        s.channel_levels = numbers(node, path, field);
      } else if (tk == "explore" && k == "finetune_epochs") {
        const std::optional<double> d = node.value<double>();
        DLAS_CHECK(d && *d >= 0 && std::isfinite(*d), ErrorKind::kInvalidInput, at,
                   "expected a number >= 0");
        s.finetune_epochs = *d;
      } else if (tk == "explore" && k == "finetune_all") {
        const std::optional<bool> b = node.value<bool>();
        DLAS_CHECK(b.has_value(), ErrorKind::kInvalidInput, at, "expected true or false");
        s.finetune_all = *b;
      } else if (tk == "explore" && k == "finetune_longer") {
        const std::vector<std::string> v = strings(node, path, field);
        DLAS_CHECK(v.size() == 1 && (v[0] == "near-miss" || v[0] == "always" || v[0] == "never"),
                   ErrorKind::kInvalidInput, at, "expected \"near-miss\", \"always\" or \"never\"");
        s.finetune_longer = v[0];
      } else if (tk == "explore" && k == "finetuned_quant") {
        s.finetuned_quant.clear();
        for (const std::string& q : strings(node, path, field)) {
          if (!q.empty() && q != "dense") {
            try {
              const CompressSpec c = parse_compress(q);
              DLAS_CHECK(c.quant && !c.prune, ErrorKind::kInvalidInput, "'", q,
                         "' is not a quantization");
            } catch (const Error& e) {
              fail(ErrorKind::kInvalidInput, at, e.what());
            }
          }
          s.finetuned_quant.push_back(q == "dense" ? "" : q);
        }
      } else if (tk == "explore" && k == "tune_top") {
        const std::optional<int64_t> n = node.value<int64_t>();
        DLAS_CHECK(n && *n >= 0 && *n <= 100, ErrorKind::kInvalidInput, at,
                   "expected an integer in [0, 100]");
        s.tune_top = static_cast<int>(*n);
      } else {
        fail(ErrorKind::kInvalidInput, at,
             tk == "space" ? "unknown key; expected one of compress, conv_algo, layout, backend, "
                             "tuning"
                           : "unknown key; expected one of weight_levels, channel_levels, "
                             "finetune_epochs, finetune_all, finetune_longer, finetuned_quant, "
                             "tune_top");
      }
    }
  }
  return s;
}

}  // namespace dlas::study
