// ONNX backend conformance: every case of Debian's libonnx-testdata (node and
// pytorch-converted) is loaded with load_model (import + fold + infer), run on
// the ReferenceExecutor and compared with the reference outputs using the ONNX
// backend runner's tolerance (onnx/backend/test/loader and case/node: rtol=1e-3,
// atol=1e-7 for every case, np.testing.assert_allclose semantics, dtypes equal).
//
// A case is skipped only when dlas reports kUnsupported (op or dtype it lacks),
// and every skipped case must be listed, with its reason, in
// tests/system/onnx_conformance_skips.txt. A listed case that now passes is
// reported so the list shrinks as support grows. DLAS_UPDATE_ONNX_SKIPS=1
// rewrites the list from a full run; DLAS_ONNX_CASES=<substring> runs only the
// matching cases.
//
// dlas compiles static shapes, so shape-like arguments (Reshape's shape, Slice's
// starts, ...) must be constants. Cases that feed them as graph inputs are
// retried with the test-data values frozen into initializers; the summary
// counts those passes.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "dlas/core/npy.h"
#include "dlas/system/executor.h"
#include "dlas/system/loader.h"
#include "dlas/system/passes.h"
#include "model/onnx/onnx_tensor.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDataRoot = "/usr/share/libonnx-testdata/data";
constexpr const char* kKinds[] = {"node", "pytorch-converted"};
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

struct ConformanceCase {
  std::string id;  // "node/test_abs"
  fs::path dir;
};

std::vector<ConformanceCase> list_cases() {
  std::vector<ConformanceCase> cases;
  for (const char* kind : kKinds) {
    const fs::path root = fs::path(kDataRoot) / kind;
    std::error_code ec;
    if (!fs::is_directory(root, ec)) continue;
    for (const auto& e : fs::directory_iterator(root, ec))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx"))
        cases.push_back({std::string(kind) + "/" + e.path().filename().string(), e.path()});
  }
  std::sort(cases.begin(), cases.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return cases;
}

fs::path skip_list_path() {
  return fs::path(DLAS_SOURCE_DIR) / "tests/system/onnx_conformance_skips.txt";
}

// "<case id> <reason...>" per line; '#' starts a comment.
std::map<std::string, std::string> read_skip_list() {
  std::map<std::string, std::string> skips;
  std::ifstream in(skip_list_path());
  std::string line;
  while (std::getline(in, line)) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream is(line);
    std::string id, reason;
    if (!(is >> id)) continue;
    std::getline(is >> std::ws, reason);
    skips[id] = reason;
  }
  return skips;
}

const std::map<std::string, std::string>& skip_list() {
  static const auto skips = read_skip_list();
  return skips;
}

// Groups kUnsupported messages: "op Foo", "dtype DOUBLE", "kernel Foo", ...
std::string reason_key(const std::string& message) {
  static const std::vector<std::pair<std::regex, std::string>> patterns = {
      {std::regex(R"(op '([A-Za-z0-9_]+)' is not supported)"), "op "},
      {std::regex(R"(op '([A-Za-z0-9_]+)' has no reference kernel)"), "no kernel "},
      {std::regex(R"(needs op '([A-Za-z0-9_]+)')"), "op "},
      {std::regex(R"(dtype ([A-Z0-9_]+))"), "dtype "},
      {std::regex(R"(\(([A-Za-z0-9_]+)\): input \d+ has dtype ([a-z0-9]+))"), ""},
      {std::regex(R"(is (a sequence|a map|an optional|a sparse tensor))"), "type "},
      {std::regex(R"(domain '([^']+)')"), "domain "},
      {std::regex(R"(graph attribute)"), "control flow"},
      {std::regex(R"(\(([A-Za-z0-9_]+)\): dtype ([a-z0-9]+) is not supported)"), ""},
  };
  std::smatch m;
  for (const auto& [re, prefix] : patterns)
    if (std::regex_search(message, m, re)) {
      if (m.size() > 2) return str("dtype ", m[2].str(), " in ", m[1].str());
      return m.size() > 1 ? prefix + m[1].str() : prefix;
    }
  // Otherwise the message after the node label, shortened.
  std::string tail = message;
  if (const size_t p = tail.rfind("): "); p != std::string::npos) tail = tail.substr(p + 3);
  return tail.substr(0, 80);
}

struct Summary {
  int ran = 0, passed = 0, failed = 0, skipped = 0;
  std::map<std::string, std::vector<std::string>> skip_reasons;  // key -> case ids
  std::vector<std::string> unlisted_skips;                       // lines to add to the skip list
  std::vector<std::string> listed_now_pass;                      // lines to remove
  std::vector<std::string> failures;
  std::vector<std::string> frozen;  // passed once shape-like inputs were made constants
};

std::string read_bytes(const fs::path& p) { return read_file(p.string()); }

// np.testing.assert_allclose(actual, desired, rtol, atol) with equal_nan=True.
bool all_close(const Tensor& got, const Tensor& want, std::string* why) {
  if (got.dtype() != want.dtype()) {
    *why = str("dtype ", dtype_name(got.dtype()), ", expected ", dtype_name(want.dtype()));
    return false;
  }
  if (got.shape() != want.shape()) {
    *why = str("shape ", shape_str(got.shape()), ", expected ", shape_str(want.shape()));
    return false;
  }
  int64_t bad = 0, first = -1;
  double worst = 0;
  const bool integral = !is_float(want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i) {
    bool ok;
    if (integral) {
      ok = got.get_as_int64(i) == want.get_as_int64(i);
    } else {
      const double a = got.get_as_double(i), d = want.get_as_double(i);
      if (std::isnan(d) || std::isnan(a)) {
        ok = std::isnan(d) && std::isnan(a);
      } else if (std::isinf(d) || std::isinf(a)) {
        ok = a == d;
      } else {
        const double err = std::abs(a - d);
        ok = err <= kAtol + kRtol * std::abs(d);
        if (!ok) worst = std::max(worst, err);
      }
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return true;
  std::ostringstream os;
  os.precision(9);
  os << bad << " of " << want.numel() << " elements differ; first at " << first << ": got "
     << got.get_as_double(first) << ", expected " << want.get_as_double(first) << "; max abs error "
     << worst;
  *why = os.str();
  return false;
}

std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

// Rewrites the entries of `kind` in the skip list from this run (DLAS_UPDATE_ONNX_SKIPS=1):
// the header comment and other kinds' entries are kept.
void write_skip_list(const std::string& kind, const Summary& s) {
  std::string header, line;
  std::vector<std::string> lines;
  std::ifstream in(skip_list_path());
  while (std::getline(in, line)) {
    if (line.rfind('#', 0) == 0) {
      header += line + "\n";
    } else if (!line.empty() && line.rfind(kind + "/", 0) != 0) {
      lines.push_back(line);
    }
  }
  for (const auto& [key, ids] : s.skip_reasons)
    for (const auto& id : ids) lines.push_back(id + " " + key);
  std::sort(lines.begin(), lines.end());
  std::string text = header;
  for (const auto& l : lines) text += l + "\n";
  write_file_atomic(skip_list_path().string(), text);
  std::cout << "[ONNX conformance] rewrote the " << kind << " entries of "
            << skip_list_path().string() << "\n";
}

// Which runtime inputs a retry turns into initializers: dlas compiles static
// shapes, so shape-like arguments (Reshape's shape, Pad's pads, Slice's starts...)
// must be constants; the backend tests feed some of them as graph inputs.
enum class Freeze { kNone, kIntegerInputs, kAllInputs };

struct TestInput {
  std::string name;
  Tensor value;
};

// Loads the case like `dlas run` would (load_model: import + fold + infer); with
// freezing, the chosen inputs become initializers before the same import + fold.
Graph load_case(const fs::path& model_path, const onnx::ModelProto& proto,
                const std::vector<TestInput>& inputs, Freeze freeze) {
  LoadOptions options;
  for (const TestInput& in : inputs) {
    for (const auto& vi : proto.graph().input()) {
      if (vi.name() != in.name) continue;
      bool dynamic = !vi.type().tensor_type().has_shape();
      for (const auto& d : vi.type().tensor_type().shape().dim())
        dynamic = dynamic || !d.has_dim_value();
      if (dynamic) options.onnx.input_shapes[in.name] = in.value.shape();
    }
  }
  if (freeze == Freeze::kNone) return load_model(model_path.string(), options);
  onnx::ModelProto frozen = proto;
  for (const TestInput& in : inputs) {
    if (freeze == Freeze::kIntegerInputs && is_float(in.value.dtype())) continue;
    options.onnx.input_shapes.erase(in.name);
    onnx_io::tensor_to_proto(in.value, in.name, frozen.mutable_graph()->add_initializer());
    auto* list = frozen.mutable_graph()->mutable_input();
    for (int i = 0; i < list->size(); ++i)
      if (list->Get(i).name() == in.name) list->DeleteSubrange(i--, 1);
  }
  std::string bytes;
  frozen.SerializeToString(&bytes);
  Graph g = import_onnx_bytes(bytes, model_path.string(), options.onnx);
  fold_constants(g);
  return g;
}

// Runs one test_data_set; returns "" when every output matches, else why not.
std::string run_data_set(const fs::path& model_path, const onnx::ModelProto& proto,
                         const fs::path& set, Freeze* freeze_used) {
  std::vector<TestInput> inputs;
  const auto in_files = numbered_files(set, "input_");
  for (size_t i = 0; i < in_files.size(); ++i) {
    if (static_cast<int>(i) >= proto.graph().input_size())
      throw std::runtime_error("test data has more inputs than the model");
    const onnx::ValueInfoProto& vi = proto.graph().input(static_cast<int>(i));
    // Non-tensor inputs (sequences, optionals) are rejected by the import itself.
    if (!vi.type().has_tensor_type()) continue;
    inputs.push_back({vi.name(), onnx_io::tensor_from_proto_bytes(read_bytes(in_files[i]),
                                                                  in_files[i].string())});
  }
  Graph g;
  for (Freeze f : {Freeze::kNone, Freeze::kIntegerInputs, Freeze::kAllInputs}) {
    try {
      g = load_case(model_path, proto, inputs, f);
      *freeze_used = f;
      break;
    } catch (const Error& e) {
      const bool needs_constant =
          std::string(e.what()).find("must be a constant") != std::string::npos;
      if (!needs_constant || f == Freeze::kAllInputs || inputs.empty()) throw;
    }
  }
  std::vector<Tensor> args;
  for (const ValueInfo& in : g.inputs) {
    auto it = std::find_if(inputs.begin(), inputs.end(),
                           [&](const TestInput& t) { return t.name == in.name; });
    if (it == inputs.end()) throw std::runtime_error(str("no test data for input '", in.name, "'"));
    args.push_back(it->value);
  }
  const std::vector<std::string> output_names = g.outputs;
  const ReferenceExecutor ex(std::move(g));
  const std::vector<Tensor> outputs = ex.run(args);
  const auto out_files = numbered_files(set, "output_");
  if (out_files.size() != outputs.size())
    return str(out_files.size(), " reference outputs, dlas gives ", outputs.size());
  for (size_t i = 0; i < out_files.size(); ++i) {
    const Tensor want =
        onnx_io::tensor_from_proto_bytes(read_bytes(out_files[i]), out_files[i].string());
    std::string why;
    if (!all_close(outputs[i], want, &why))
      return str(set.filename().string(), " output ", i, " '", output_names[i], "': ", why);
  }
  return "";
}

enum class Status { kPass, kFail, kSkip };

struct Outcome {
  Status status = Status::kPass;
  std::string detail;  // failure or skip message
  bool frozen = false;
};

Outcome run_case(const ConformanceCase& c) {
  Outcome out;
  Freeze freeze = Freeze::kNone;
  try {
    const fs::path model_path = c.dir / "model.onnx";
    onnx::ModelProto proto;
    if (!proto.ParseFromString(read_bytes(model_path)))
      throw std::runtime_error("model.onnx does not parse");
    std::vector<fs::path> data_sets;
    for (const auto& e : fs::directory_iterator(c.dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
        data_sets.push_back(e.path());
    std::sort(data_sets.begin(), data_sets.end());
    if (data_sets.empty()) throw std::runtime_error("no test_data_set_* folder");
    for (const fs::path& set : data_sets) {
      out.detail = run_data_set(model_path, proto, set, &freeze);
      if (!out.detail.empty()) {
        out.status = Status::kFail;
        return out;
      }
    }
  } catch (const Error& e) {
    out.status = e.kind() == ErrorKind::kUnsupported ? Status::kSkip : Status::kFail;
    out.detail = out.status == Status::kSkip ? std::string(e.what())
                                             : str(error_kind_name(e.kind()), ": ", e.what());
    return out;
  } catch (const std::exception& e) {
    out.status = Status::kFail;
    out.detail = str("exception: ", e.what());
    return out;
  }
  out.frozen = freeze != Freeze::kNone;
  return out;
}

void print_summary(const std::string& title, const Summary& s) {
  std::cout << "\n[ONNX conformance] " << title << ": ran " << s.ran << ", passed " << s.passed
            << ", failed " << s.failed << ", skipped " << s.skipped << " (unsupported); "
            << s.frozen.size() << " of the passes needed runtime inputs frozen to constants\n";
  std::vector<std::pair<size_t, std::string>> by_count;
  for (const auto& [key, ids] : s.skip_reasons) by_count.push_back({ids.size(), key});
  std::sort(by_count.rbegin(), by_count.rend());
  std::cout << "[ONNX conformance] skip reasons:";
  for (const auto& [n, key] : by_count) std::cout << " " << key << " (" << n << ");";
  std::cout << "\n";
  for (const auto& f : s.failures) std::cout << "[ONNX conformance] FAILED " << f << "\n";
  if (!s.unlisted_skips.empty()) {
    std::cout << "[ONNX conformance] skipped but not in " << skip_list_path().string()
              << " (support was lost, or add these lines):\n";
    for (const auto& l : s.unlisted_skips) std::cout << l << "\n";
  }
  if (!s.listed_now_pass.empty()) {
    std::cout << "[ONNX conformance] listed as skipped but now pass (remove from the list):\n";
    for (const auto& l : s.listed_now_pass) std::cout << "  " << l << "\n";
  }
  std::cout << std::flush;
}

// Runs every case of one kind (or those whose id contains $DLAS_ONNX_CASES).
// One gtest per kind keeps CTest to two processes; each failure names its case.
void run_kind(const std::string& kind) {
  const char* only = std::getenv("DLAS_ONNX_CASES");
  Summary s;
  for (const ConformanceCase& c : list_cases()) {
    if (c.id.rfind(kind + "/", 0) != 0) continue;
    if (only && c.id.find(only) == std::string::npos) continue;
    ++s.ran;
    const auto listed = skip_list().find(c.id);
    const bool is_listed = listed != skip_list().end();
    const Outcome o = run_case(c);
    switch (o.status) {
      case Status::kPass:
        ++s.passed;
        if (o.frozen) s.frozen.push_back(c.id);
        if (is_listed) s.listed_now_pass.push_back(c.id + " (listed: " + listed->second + ")");
        break;
      case Status::kFail:
        ++s.failed;
        s.failures.push_back(c.id + ": " + o.detail);
        ADD_FAILURE() << c.id << ": " << o.detail;
        break;
      case Status::kSkip: {
        ++s.skipped;
        const std::string key = reason_key(o.detail);
        s.skip_reasons[key].push_back(c.id);
        if (!is_listed) {
          s.unlisted_skips.push_back(c.id + " " + key);
          ADD_FAILURE() << c.id << " is skipped as unsupported but is not listed in "
                        << skip_list_path().string() << ": " << o.detail;
        }
        break;
      }
    }
  }
  print_summary(kind, s);
  if (std::getenv("DLAS_UPDATE_ONNX_SKIPS") && !only) write_skip_list(kind, s);
  EXPECT_GT(s.ran, 0) << "no " << kind << " cases under " << kDataRoot;
}

TEST(OnnxConformance, NodeCases) { run_kind("node"); }
TEST(OnnxConformance, PytorchConvertedCases) { run_kind("pytorch-converted"); }

TEST(OnnxConformanceData, IsInstalledAndSkipListIsCurrent) {
  const auto cases = list_cases();
  ASSERT_GT(cases.size(), 500u) << "libonnx-testdata is missing under " << kDataRoot
                                << " (scripts/setup.sh installs it)";
  std::set<std::string> ids;
  for (const auto& c : cases) ids.insert(c.id);
  for (const auto& [id, reason] : skip_list())
    EXPECT_TRUE(ids.count(id)) << skip_list_path().string() << " lists '" << id
                               << "', which is not a conformance case";
}

}  // namespace
}  // namespace dlas
