// The preprocessing flags, one definition for every command that feeds a dataset to a model
// (dlas/system/preprocess_meta.h holds the precedence and the warnings).
#include <iostream>

#include "cli.h"
#include "dlas/core/error.h"

namespace dlas::cli {

void add_preprocess_args(CLI::App& cmd, PreprocessArgs& a) {
  const std::string group = "Preprocessing (default: the model's metadata, else the dataset's)";
  cmd.add_option("--mean", a.mean,
                 "subtracted per channel after scaling: one value for every channel, or one per "
                 "channel (0.485,0.456,0.406)")
      ->group(group);
  cmd.add_option("--std", a.std, "divides per channel after the mean (> 0; one value or one per "
                                 "channel)")
      ->group(group);
  cmd.add_option("--scale", a.scale, "raw pixel values are divided by this first (default 255)")
      ->group(group);
  cmd.add_option("--channel-order", a.channel_order,
                 "rgb|bgr: the order of a colour model's input channels")
      ->group(group);
  cmd.add_option("--input-layout", a.input_layout,
                 "nchw|nhwc: the model takes [N,C,H,W] or [N,H,W,C] images")
      ->group(group);
  cmd.add_option("--resize", a.resize, "resize the shorter image side to this (bilinear; 0: keep)")
      ->group(group);
  cmd.add_option("--center-crop", a.center_crop, "center crop to SxS after resizing (0: keep)")
      ->group(group);
}

namespace {

float positive_number(const std::string& flag, const std::string& text) {
  std::vector<float> v;
  try {
    v = data::parse_channel_values(text);
  } catch (const Error&) {
    fail(ErrorKind::kUsage, flag, ": '", text, "' is not a number");
  }
  DLAS_CHECK(v.size() == 1, ErrorKind::kUsage, flag, ": '", text, "' is not one number");
  DLAS_CHECK(v[0] > 0, ErrorKind::kUsage, flag, " must be > 0, got ", text);
  return v[0];
}

int whole_number(const std::string& flag, const std::string& text) {
  size_t used = 0;
  long v = -1;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  DLAS_CHECK(used == text.size() && used > 0 && v >= 0 && v <= 1000000, ErrorKind::kUsage, flag,
             ": '", text, "' is not a whole number >= 0");
  return static_cast<int>(v);
}

}  // namespace

PreprocessFlags parse_preprocess_args(const PreprocessArgs& a) {
  PreprocessFlags f;
  const auto values = [](const char* flag, const std::string& text) {
    try {
      return data::parse_channel_values(text);
    } catch (const Error& e) {
      fail(ErrorKind::kUsage, flag, ": ", e.what());
    }
  };
  if (!a.mean.empty()) f.mean = values("--mean", a.mean);
  if (!a.std.empty()) {
    f.std = values("--std", a.std);
    for (float s : *f.std)
      DLAS_CHECK(s > 0, ErrorKind::kUsage, "--std values must be > 0, got '", a.std, "'");
  }
  if (!a.scale.empty()) f.scale = positive_number("--scale", a.scale);
  try {
    if (!a.channel_order.empty()) f.channel_order = data::parse_channel_order(a.channel_order);
    if (!a.input_layout.empty()) f.layout = data::parse_input_layout(a.input_layout);
  } catch (const Error& e) {
    fail(ErrorKind::kUsage, !a.input_layout.empty() && !f.layout ? "--input-layout: "
                                                                  : "--channel-order: ",
         e.what());
  }
  if (!a.resize.empty()) f.resize = whole_number("--resize", a.resize);
  if (!a.center_crop.empty()) f.center_crop = whole_number("--center-crop", a.center_crop);
  return f;
}

std::vector<std::string> preprocess_arg_list(const PreprocessArgs& a) {
  std::vector<std::string> out;
  for (const auto& [flag, v] : {std::pair{"--mean", &a.mean}, std::pair{"--std", &a.std},
                                std::pair{"--scale", &a.scale},
                                std::pair{"--channel-order", &a.channel_order},
                                std::pair{"--input-layout", &a.input_layout},
                                std::pair{"--resize", &a.resize},
                                std::pair{"--center-crop", &a.center_crop}}) {
    if (v->empty()) continue;
    out.push_back(flag);
    out.push_back(*v);
  }
  return out;
}

ResolvedPreprocess apply_preprocess_args(Graph& graph, const data::DatasetInfo& info,
                                         const PreprocessArgs& args, const std::string& model,
                                         bool train, bool warn) {
  const ResolvedPreprocess r =
      resolve_preprocess(info, parse_preprocess_args(args), &graph, model, train);
  if (warn) {
    const std::string w = default_preprocess_warning(r, info, model);
    if (!w.empty()) std::cerr << "dlas: " << w << "\n";
  }
  set_preprocess_metadata(graph, r.pre);
  return r;
}

}  // namespace dlas::cli
