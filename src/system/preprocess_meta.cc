// Preprocessing as part of the model (dlas/system/preprocess_meta.h): the metadata key, the
// precedence flags > metadata > dataset default, and the warnings.
#include "dlas/system/preprocess_meta.h"

#include <cmath>
#include <cstdio>
#include <tuple>

#include "dlas/core/error.h"

namespace dlas {

namespace {

// Parses the metadata value onto `base` (the keys it leaves out keep base's values).
std::optional<data::Preprocess> read_metadata(const Graph& g, std::string_view model,
                                              const data::Preprocess& base) {
  const std::string* text = g.metadata_value(kPreprocessKey);
  if (!text) return std::nullopt;
  try {
    return data::preprocess_from_json(*text, base);
  } catch (const Error& e) {
    throw Error(ErrorKind::kInvalidInput,
                str(model, ": metadata '", kPreprocessKey, "': ", e.what()));
  }
}

std::string values_text(const std::vector<float>& v) {
  std::string s;
  for (float x : v) s += (s.empty() ? "" : ",") + str(x);
  return s;
}

}  // namespace

std::optional<data::Preprocess> preprocess_from_metadata(const Graph& g, std::string_view model) {
  return read_metadata(g, model, data::Preprocess{});
}

void set_preprocess_metadata(Graph& g, const data::Preprocess& p) {
  g.set_metadata(kPreprocessKey, data::preprocess_to_json(p));
}

bool PreprocessFlags::any() const {
  return mean || std || scale || channel_order || layout || resize || center_crop;
}

std::vector<std::string> PreprocessFlags::to_args() const {
  std::vector<std::string> a;
  const auto add = [&](const char* flag, const std::string& v) {
    a.push_back(flag);
    a.push_back(v);
  };
  if (mean) add("--mean", values_text(*mean));
  if (std) add("--std", values_text(*std));
  if (scale) add("--scale", dlas::str(*scale));
  if (channel_order) add("--channel-order", data::channel_order_name(*channel_order));
  if (layout) add("--input-layout", data::input_layout_name(*layout));
  if (resize) add("--resize", dlas::str(*resize));
  if (center_crop) add("--center-crop", dlas::str(*center_crop));
  return a;
}

std::string PreprocessFlags::str() const {
  std::string s;
  for (const std::string& a : to_args()) s += (s.empty() ? "" : " ") + a;
  return s;
}

const char* preprocess_source_name(PreprocessSource s) {
  switch (s) {
    case PreprocessSource::kFlags: return "flags";
    case PreprocessSource::kMetadata: return "metadata";
    case PreprocessSource::kFlagsAndMetadata: return "flags+metadata";
    case PreprocessSource::kDefault: break;
  }
  return "default";
}

ResolvedPreprocess resolve_preprocess(const data::DatasetInfo& info, const PreprocessFlags& f,
                                      const Graph* g, std::string_view model, bool train) {
  ResolvedPreprocess r;
  r.pre = data::default_preprocess(info, train);
  bool from_meta = false;
  if (g) {
    if (auto m = read_metadata(*g, model, r.pre)) {
      r.pre = *m;
      from_meta = true;
    }
  }
  // Flag values are checked here too: the library may be called without the CLI's parsers.
  if (f.scale) {
    DLAS_CHECK(*f.scale > 0 && std::isfinite(*f.scale), ErrorKind::kInvalidInput,
               "--scale must be > 0, got ", *f.scale);
    r.pre.scale = *f.scale;
  }
  if (f.mean) {
    DLAS_CHECK(!f.mean->empty(), ErrorKind::kInvalidInput, "--mean needs a value");
    r.pre.mean = *f.mean;
  }
  if (f.std) {
    DLAS_CHECK(!f.std->empty(), ErrorKind::kInvalidInput, "--std needs a value");
    for (float s : *f.std)
      DLAS_CHECK(s > 0 && std::isfinite(s), ErrorKind::kInvalidInput,
                 "--std values must be > 0, got ", s);
    r.pre.std = *f.std;
  }
  if (f.channel_order) r.pre.channel_order = *f.channel_order;
  if (f.layout) r.pre.layout = *f.layout;
  if (f.resize) {
    DLAS_CHECK(*f.resize >= 0, ErrorKind::kInvalidInput, "--resize must be >= 0");
    r.pre.resize = *f.resize;
  }
  if (f.center_crop) {
    DLAS_CHECK(*f.center_crop >= 0, ErrorKind::kInvalidInput, "--center-crop must be >= 0");
    r.pre.crop_h = r.pre.crop_w = *f.center_crop;
  }
  r.source = f.any() ? (from_meta ? PreprocessSource::kFlagsAndMetadata : PreprocessSource::kFlags)
             : from_meta ? PreprocessSource::kMetadata
                         : PreprocessSource::kDefault;
  if (!g) return r;

  DLAS_CHECK(!g->inputs.empty() && g->inputs[0].shape.size() == 4, ErrorKind::kInvalidInput,
             model, ": the first input is not an image batch [N,C,H,W] or [N,H,W,C]",
             g->inputs.empty() ? "" : " (it is " + shape_str(g->inputs[0].shape) + ")");
  const Shape& in = g->inputs[0].shape;
  const int64_t channels = r.pre.layout == data::InputLayout::kNhwc ? in[3] : in[1];
  // Say where a wrong channel count came from: a flag, the metadata, or the default.
  const auto where = [&](bool flag, const char* name) {
    if (flag) return str("--", name);
    if (from_meta) return str(model, ": metadata '", kPreprocessKey, "': ", name);
    return str(info.name, "'s default ", name);
  };
  for (const auto& [values, flag, name] :
       {std::tuple{&r.pre.mean, f.mean.has_value(), "mean"},
        std::tuple{&r.pre.std, f.std.has_value(), "std"}}) {
    const auto n = static_cast<int64_t>(values->size());
    DLAS_CHECK(n == 1 || n == channels, ErrorKind::kInvalidInput, where(flag, name), " has ", n,
               " values; the model's input ", shape_str(in), " has ", channels,
               channels == 1 ? " channel" : " channels", " (give one value, or one per channel)");
  }
  data::check_preprocess_for_input(r.pre, info, in);
  return r;
}

std::string default_preprocess_warning(const ResolvedPreprocess& r, const data::DatasetInfo& info,
                                       std::string_view model) {
  if (r.source != PreprocessSource::kDefault) return "";
  return str("warning: ", model, " carries no preprocessing (metadata '", kPreprocessKey,
             "'), so it gets ", info.name, "'s default: ", r.pre.describe(),
             "; if it was trained otherwise, give --scale, --mean, --std, --channel-order, "
             "--input-layout");
}

std::string chance_level_warning(double top1, int classes) {
  if (classes < 2) return "";
  const double chance = 100.0 / classes;
  // At or below chance counts too: a permuted class order can score less than chance.
  if (100.0 * top1 > chance + 2.0) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f%% is within 2 points of chance (%.1f%%)", 100.0 * top1,
                chance);
  return str("warning: top-1 ", buf,
             ": the likely causes are preprocessing that differs from the model's training "
             "(--scale, --mean, --std, --channel-order, --input-layout), a class order that "
             "differs from the dataset's, or an untrained model");
}

}  // namespace dlas
