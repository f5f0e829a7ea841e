#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/core/npy.h"
#include "dlas/system/measure.h"

namespace dlas::cli {

namespace {

struct Stats {
  double min, max, mean;
};
Stats stats(const Tensor& t) {
  Stats s{INFINITY, -INFINITY, 0};
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.get_as_double(i);
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    s.mean += v;
  }
  if (t.numel()) s.mean /= static_cast<double>(t.numel());
  return s;
}

// Top-k (index, value) of row 0 of a [N, C] output.
std::vector<std::pair<int64_t, double>> top_k(const Tensor& t, int k) {
  std::vector<std::pair<int64_t, double>> v;
  const int64_t c = t.shape().back();
  for (int64_t i = 0; i < c; ++i) v.emplace_back(i, t.get_as_double(i));
  k = std::min<int>(k, static_cast<int>(v.size()));
  std::partial_sort(v.begin(), v.begin() + k, v.end(),
                    [](const auto& a, const auto& b) { return a.second > b.second; });
  v.resize(static_cast<size_t>(k));
  return v;
}

// A model input from an .npy file: floats are cast to the input's float dtype; otherwise
// dtype and shape must match (kInvalidInput naming the file and the input).
Tensor read_input(const std::string& path, const ValueInfo& vi) {
  Tensor t = read_npy(path);
  if (t.dtype() != vi.dtype && is_float(t.dtype()) && is_float(vi.dtype)) t = t.cast(vi.dtype);
  DLAS_CHECK(t.dtype() == vi.dtype && t.shape() == vi.shape, ErrorKind::kInvalidInput, path,
             ": model input '", vi.name, "' must be ", dtype_name(vi.dtype), shape_str(vi.shape),
             ", the file holds ", t.describe());
  return t;
}

}  // namespace

void add_run_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand("run", "Run a model once on an input (.npy or seeded random)");
  auto args = std::make_shared<ModelArgs>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto outputs = std::make_shared<std::vector<std::string>>();
  auto input_seed = std::make_shared<uint64_t>(0);
  auto json = std::make_shared<bool>(false);
  auto engine = std::make_shared<EngineArgs>();
  auto reference = std::make_shared<bool>(false);
  add_model_args(*cmd, *args);
  add_engine_args(*cmd, *engine);
  cmd->add_flag("--reference", *reference,
                "run the reference interpreter instead of the compiled engine");
  cmd->add_option("--input", *inputs, "input .npy, one per model input in order (default: random)");
  cmd->add_option("--output", *outputs,
                  "write outputs as .npy, one path per model output in order");
  cmd->add_option("--input-seed", *input_seed, "seed of the random input (default 0)");
  cmd->add_flag("--json", *json, "print one JSON object");
  cmd->callback([&run, args, inputs, outputs, input_seed, json, engine, reference] {
    run = [args, inputs, outputs, input_seed, json, engine, reference] {
      // Check the output folders before any work so a bad path fails fast.
      for (const auto& path : *outputs) {
        const std::filesystem::path dir = std::filesystem::path(path).parent_path();
        DLAS_CHECK(dir.empty() || std::filesystem::is_directory(dir), ErrorKind::kInvalidInput,
                   path, ": folder '", dir.string(), "' does not exist");
      }
      compress_name(engine->compress);  // a bad spec fails before the model loads
      Graph g = load_model_from_args(*args);
      apply_compress(g, engine->compress, nullptr, engine->threads);
      DLAS_CHECK(inputs->empty() || inputs->size() == g.inputs.size(), ErrorKind::kUsage,
                 "--input given ", inputs->size(), " time(s), the model has ", g.inputs.size(),
                 " input(s)");
      DLAS_CHECK(outputs->size() <= g.outputs.size(), ErrorKind::kUsage, "--output given ",
                 outputs->size(), " time(s), the model has ", g.outputs.size(), " output(s)");
      std::vector<Tensor> in;
      if (inputs->empty()) in = random_inputs(g, *input_seed);
      for (size_t i = 0; i < inputs->size(); ++i)
        in.push_back(read_input((*inputs)[i], g.inputs[i]));
      const CompiledModel c =
          compile_from_args(g, *args, *engine, *reference ? "reference" : "dlas");
      RunTimer timer(*c.executor, std::move(in));
      const double ms = timer.time_ms();
      const std::vector<Tensor>& out = timer.outputs();
      const std::string runtime = *reference ? "reference" : c.variant.str();
      for (size_t i = 0; i < outputs->size(); ++i) write_npy((*outputs)[i], out[i]);

      nlohmann::json j;
      j["model"] = args->model;
      j["runtime"] = runtime;
      j["latency_ms"] = ms;
      j["outputs"] = nlohmann::json::array();
      for (size_t i = 0; i < out.size(); ++i) {
        const Stats s = stats(out[i]);
        nlohmann::json o = {{"name", g.outputs[i]},
                            {"dtype", dtype_name(out[i].dtype())},
                            {"shape", out[i].shape()},
                            {"min", s.min},
                            {"max", s.max},
                            {"mean", s.mean}};
        if (out[i].rank() == 2 && is_float(out[i].dtype())) {
          o["top5"] = nlohmann::json::array();
          for (auto [idx, v] : top_k(out[i], 5))
            o["top5"].push_back({{"class", idx}, {"score", v}});
        }
        if (i < outputs->size()) o["file"] = (*outputs)[i];
        j["outputs"].push_back(o);
      }
      if (*json) {
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::printf("ran %s in %.1f ms (%s input) on %s\n", args->model.c_str(), ms,
                  inputs->empty() ? "random" : "given",
                  *reference ? "the reference runtime" : runtime.c_str());
      for (const auto& o : j["outputs"]) {
        std::printf("output %s: %s%s  min %.4g  max %.4g  mean %.4g\n",
                    o["name"].get<std::string>().c_str(), o["dtype"].get<std::string>().c_str(),
                    shape_str(o["shape"].get<Shape>()).c_str(), o["min"].get<double>(),
                    o["max"].get<double>(), o["mean"].get<double>());
        if (o.contains("top5")) {
          std::printf("  top-5 (batch 0):");
          for (const auto& t : o["top5"])
            std::printf("  %lld:%.4g", static_cast<long long>(t["class"].get<int64_t>()),
                        t["score"].get<double>());
          std::printf("\n");
        }
        if (o.contains("file")) std::printf("  wrote %s\n", o["file"].get<std::string>().c_str());
      }
      return 0;
    };
  });
}

}  // namespace dlas::cli
