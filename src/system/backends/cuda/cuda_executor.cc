// The CUDA plan (dlas/system/cuda_executor.h): lowering of an optimized graph to steps on one
// stream, the device arena, the CUDA graph, and the timed run.
#include "dlas/system/cuda_executor.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "dlas/algo/cuda_conv.h"
#include "dlas/core/dtype.h"
#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"
#include "dlas/system/cuda_profile.h"
#include "dlas/system/cuda_tune.h"
#include "dlas/system/passes.h"
#include "system/backends/cuda/conv_node.h"
#include "system/backends/cuda/vendor.h"
#include "system/plan/memory_plan.h"

namespace dlas {

// On one H100 the class's measured knobs applied to every layer of the class made
// densenet161 fp16 2x slower than the winner's own defaults (docs/decisions.md).
CudaProfileChoice cuda_profile_choice(const CudaProfile& profile, const cuda::ConvShape& s) {
  CudaProfileChoice c;
  const auto it = profile.classes.find(cuda_shape_class(s));
  const cuda::ConvAlgorithm* a =
      it == profile.classes.end() ? nullptr : cuda::find_conv_algorithm(it->second.algo);
  if (!a || !a->supports(s)) return c;
  c.algo = a;
  c.knobs = a->default_knobs(s);
  if (it->second.shape == s.str()) {
    try {
      a->knob_space(s).validate(it->second.knobs, "profile");
      c.knobs = it->second.knobs;
    } catch (const Error&) {
    }
  }
  return c;
}

namespace {

// A step's runtime operand: a value of the arena (index) or a constant on the device.
struct Operand {
  int value = -1;
  const float* constant = nullptr;
};

struct Step {
  CudaStepInfo info;
  std::vector<int> reads, writes;  // value indices (for lifetimes)
  std::function<void(cudaStream_t)> launch;
};

// Pinned host memory for the copies in and out.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes_) check_cuda(cudaMallocHost(&ptr_, bytes_), "pinned staging buffer");
  }
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  PinnedBuffer(const PinnedBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_text(const Shape& s) {
  std::string t;
  for (int64_t d : s) {
    if (!t.empty()) t += 'x';
    t += std::to_string(d);
  }
  return t.empty() ? "scalar" : t;
}

cuda::Storage storage_of(DType t) {
  return t == DType::kF16    ? cuda::Storage::kF16
         : t == DType::kBF16 ? cuda::Storage::kBF16
                             : cuda::Storage::kF32;
}

bool is_16bit(DType t) { return t == DType::kF16 || t == DType::kBF16; }

bool is_alias_op(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
         op == "Identity" || op == "Dropout";
}

}  // namespace

struct CudaExecutor::Impl {
  Graph graph;
  CudaPlanOptions options;
  int device = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaGraph_t cuda_graph = nullptr;
  cudaGraphExec_t graph_exec = nullptr;
  std::unique_ptr<cuda::VendorHandles> vendor;
  std::shared_ptr<const CudaProfile> profile;  // the measured auto rule, or null
  std::string profile_path;

  // Values: runtime tensors (graph inputs and node outputs), by index.
  std::unordered_map<std::string, int> index;
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  // 16-bit values: their f32 copy for ops that run in f32 (made once, by a convert step or
  // as the op's own output before it is narrowed).
  std::unordered_map<int, int> widened;
  std::vector<std::pair<int, int>> pending_narrow;  // (f32 output, 16-bit value)
  std::vector<int> root;                            // alias root (itself when it owns its memory)
  std::vector<float*> ptr;
  std::vector<Step> steps;
  std::vector<CudaStepInfo> infos;
  std::vector<int> input_values, output_values;

  // Device memory.
  std::vector<DeviceBuffer> constants;  // uploaded operands, biases, affine tables
  std::unordered_map<std::string, const float*> uploaded;
  std::vector<std::unique_ptr<cuda::ConvKernel>> convs;
  DeviceBuffer arena, workspace;
  size_t workspace_bytes = 0;
  int64_t unplanned_bytes = 0, packed_bytes = 0;
  std::vector<PinnedBuffer> pinned_in, pinned_out;
  double last_ms = -1;

  ~Impl() {
    if (graph_exec) cudaGraphExecDestroy(graph_exec);
    if (cuda_graph) cudaGraphDestroy(cuda_graph);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    convs.clear();
    vendor.reset();
    if (stream) cudaStreamDestroy(stream);
  }

  // --- values and operands ---------------------------------------------------------------

  int new_value(const std::string& name, const Shape& shape, DType dtype = DType::kF32) {
    const int v = static_cast<int>(shapes.size());
    if (!name.empty()) index[name] = v;
    shapes.push_back(shape);
    dtypes.push_back(dtype);
    root.push_back(v);
    return v;
  }
  size_t value_bytes(int v) const {
    return static_cast<size_t>(numel_of(shapes[v])) * dtype_size(dtypes[v]);
  }
  // Whether the node being lowered reads and writes 16-bit values as they are.
  bool native16 = false;

  const float* upload(const std::string& key, const std::vector<float>& host) {
    const auto it = uploaded.find(key);
    if (it != uploaded.end()) return it->second;
    constants.push_back(upload_floats(host.data(), host.size(), "constant"));
    packed_bytes += static_cast<int64_t>(constants.back().bytes());
    return uploaded[key] = constants.back().as<float>();
  }

  std::vector<float> constant_floats(const Node& n, const std::string& name) const {
    const Tensor* t = graph.constant(name);
    DLAS_CHECK(t, ErrorKind::kUnsupported, "CUDA device: node '", n.name, "' (", n.op, "): input '",
               name, "' must be a constant");
    std::vector<float> v(static_cast<size_t>(t->numel()));
    if (t->dtype() == DType::kF32) {
      std::copy(t->data<float>(), t->data<float>() + t->numel(), v.begin());
    } else if (is_16bit(t->dtype())) {  // 16-bit constants widened (exactly)
      const auto* bits = static_cast<const uint16_t*>(t->raw());
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = t->dtype() == DType::kF16 ? f16_to_f32(bits[i]) : bf16_to_f32(bits[i]);
    } else {
      fail(ErrorKind::kUnsupported, "CUDA device: node '", n.name, "' (", n.op, "): constant '",
           name, "' is ", dtype_name(t->dtype()), "; the GPU runs f32, f16 and bf16");
    }
    return v;
  }

  Operand operand(const Node& n, const std::string& name) {
    if (const auto it = index.find(name); it != index.end()) {
      const int v = it->second;
      if (native16 || !is_16bit(dtypes[v])) return {v, nullptr};
      return {widen(n, v), nullptr};
    }
    return {-1, upload("c:" + name, constant_floats(n, name))};
  }

  // The f32 copy of 16-bit value v, converted once after it is produced.
  int widen(const Node& n, int v) {
    if (const auto it = widened.find(v); it != widened.end()) return it->second;
    const int f = new_value("", shapes[v], DType::kF32);
    widened[v] = f;
    const cuda::Storage from = storage_of(dtypes[v]);
    const int64_t count = numel_of(shapes[v]);
    add_convert_step(n.name + " (widen)", v, f, [this, v, f, from, count](cudaStream_t st) {
      cuda::convert(ptr[v], from, ptr[f], cuda::Storage::kF32, count, st);
    });
    return f;
  }

  void add_convert_step(const std::string& node, int in, int out,
                        std::function<void(cudaStream_t)> launch) {
    Step s;
    s.info.node = node;
    s.info.op = "Cast";
    s.info.algo = "convert";
    s.info.shape = shape_text(shapes[out]);
    s.reads.push_back(in);
    s.writes.push_back(out);
    s.launch = std::move(launch);
    steps.push_back(std::move(s));
  }
  const float* at(const Operand& o) const { return o.value >= 0 ? ptr[o.value] : o.constant; }
  const Shape& shape_of(const std::string& name) const { return graph.value(name).shape; }

  [[noreturn]] void unsupported(const Node& n, const std::string& why) const {
    fail(ErrorKind::kUnsupported, "CUDA device: node '", n.name, "' (", n.op, "): ", why);
  }

  // --- lowering --------------------------------------------------------------------------

  void add_step(const Node& n, std::string algo, std::vector<Operand> reads, int out,
                std::function<void(cudaStream_t)> launch, Knobs knobs = {},
                std::string shape = {}) {
    Step s;
    s.info.node = n.name;
    s.info.op = n.op;
    s.info.algo = std::move(algo);
    s.info.knobs = std::move(knobs);
    s.info.shape = shape.empty() ? shape_text(shapes[out]) : std::move(shape);
    s.info.macs = graph.node_macs(n);
    for (const Operand& o : reads)
      if (o.value >= 0) s.reads.push_back(o.value);
    s.writes.push_back(out);
    s.launch = std::move(launch);
    steps.push_back(std::move(s));
  }

  int output_value(const Node& n) {
    DLAS_CHECK(!n.outputs.empty(), ErrorKind::kInternal, "node '", n.name, "' has no output");
    for (size_t i = 1; i < n.outputs.size(); ++i)
      if (!n.outputs[i].empty() && graph_reads(n.outputs[i]))
        unsupported(n, "only its first output is supported");
    const ValueInfo& vi = graph.value(n.outputs[0]);
    if (vi.dtype != DType::kF32 && !is_16bit(vi.dtype))
      unsupported(n, "output is " + std::string(dtype_name(vi.dtype)) +
                         "; the GPU runs f32, f16 and bf16 (int8 variants run on the CPU)");
    const int v = new_value(n.outputs[0], vi.shape, vi.dtype);
    if (native16 || !is_16bit(vi.dtype)) return v;
    // An f32 op on 16-bit data: it writes an f32 value, narrowed after its step.
    const int f = new_value("", vi.shape, DType::kF32);
    widened[v] = f;
    pending_narrow.emplace_back(f, v);
    return f;
  }

  bool graph_reads(const std::string& value) const {
    for (const Node& m : graph.nodes)
      for (const std::string& in : m.inputs)
        if (in == value) return true;
    for (const std::string& o : graph.outputs)
      if (o == value) return true;
    return false;
  }

  bool is_graph_output(const std::string& value) const {
    return std::find(graph.outputs.begin(), graph.outputs.end(), value) != graph.outputs.end();
  }

  // Whether `n` runs on 16-bit data as it is: a conv, a cast, an alias, or an elementwise,
  // pooling, affine or concat op whose data inputs are all values of its output's 16-bit type
  // (a constant operand would be uploaded in f32).
  bool runs_native16(const Node& n) const {
    if (is_alias_op(n.op) || n.op == "Conv" || n.op == "FusedConv" || n.op == "Cast") return true;
    size_t data_inputs = 0;
    if (n.op == "Relu" || n.op == "Clip" || n.op == "Sigmoid" || n.op == "HardSigmoid" ||
        n.op == "HardSwish" || n.op == "BatchNormalization" || n.op == "MaxPool" ||
        n.op == "AveragePool" || n.op == "GlobalAveragePool" || n.op == "GlobalMaxPool" ||
        n.op == "ReduceMean")
      data_inputs = 1;
    else if (n.op == "Add" || n.op == "Sub" || n.op == "Mul" || n.op == "Div" ||
             ((n.op == "Max" || n.op == "Min") && n.inputs.size() == 2))
      data_inputs = 2;
    else if (n.op == "ChannelAffine")
      data_inputs = n.inputs.size() >= 2 ? n.inputs.size() - 2 : 0;
    else if (n.op == "Concat")
      data_inputs = n.inputs.size();
    if (data_inputs == 0 || n.outputs.empty() || n.inputs.size() < data_inputs) return false;
    const DType t = graph.value(n.outputs[0]).dtype;
    if (!is_16bit(t)) return false;
    for (size_t i = 0; i < data_inputs; ++i) {
      const auto it = index.find(n.inputs[i]);
      if (it == index.end() || dtypes[it->second] != t) return false;
    }
    return true;
  }

  void lower(const Node& n) {
    native16 = runs_native16(n);
    pending_narrow.clear();
    lower_node(n);
    for (const auto& [f, v] : pending_narrow) {
      const cuda::Storage to = storage_of(dtypes[v]);
      const int64_t count = numel_of(shapes[v]);
      add_convert_step(n.name + " (narrow)", f, v, [this, f, v, to, count](cudaStream_t st) {
        cuda::convert(ptr[f], cuda::Storage::kF32, ptr[v], to, count, st);
      });
    }
    pending_narrow.clear();
  }

  void lower_node(const Node& n) {
    if (is_alias_op(n.op)) return lower_alias(n);
    if (n.op == "Cast") return lower_cast(n);
    if (n.op == "Conv" || n.op == "FusedConv") return lower_conv(n);
    if (n.op == "BatchNormalization" || n.op == "ChannelAffine") return lower_affine(n);
    if (n.op == "Relu" || n.op == "Clip" || n.op == "Sigmoid" || n.op == "HardSigmoid" ||
        n.op == "HardSwish" || n.op == "LeakyRelu")
      return lower_activation(n);
    if (n.op == "Add" || n.op == "Sub" || n.op == "Mul" || n.op == "Div" ||
        ((n.op == "Max" || n.op == "Min") && n.inputs.size() == 2))
      return lower_binary(n);
    if (n.op == "MaxPool" || n.op == "AveragePool") return lower_pool(n);
    if (n.op == "GlobalAveragePool" || n.op == "GlobalMaxPool" || n.op == "ReduceMean")
      return lower_global_pool(n);
    if (n.op == "Gemm" || n.op == "MatMul" || n.op == "FusedMatMul") return lower_gemm(n);
    if (n.op == "Concat") return lower_concat(n);
    if (n.op == "Softmax" || n.op == "LogSoftmax") return lower_softmax(n);
    unsupported(n, "no CUDA kernel for this op in dlas");
  }

  void lower_cast(const Node& n) {
    const Operand in = operand(n, n.inputs.at(0));
    const DType from = graph.value(n.inputs[0]).dtype;
    const DType to = graph.value(n.outputs.at(0)).dtype;
    if ((from != DType::kF32 && !is_16bit(from)) || (to != DType::kF32 && !is_16bit(to)))
      unsupported(n, std::string("a cast from ") + dtype_name(from) + " to " + dtype_name(to));
    const int out = output_value(n);
    const int64_t count = numel_of(shapes[out]);
    const cuda::Storage sf = storage_of(from), st = storage_of(to);
    add_step(n, "convert", {in}, out, [this, in, out, sf, st, count](cudaStream_t s) {
      cuda::convert(at(in), sf, ptr[out], st, count, s);
    });
  }

  void lower_alias(const Node& n) {
    const Operand in = operand(n, n.inputs.at(0));
    const int out = output_value(n);
    if (in.value >= 0 && !is_graph_output(n.outputs[0])) {
      root[out] = root[in.value];
      return;
    }
    // A graph output (or a constant) gets its own copy.
    const size_t bytes = value_bytes(out);
    add_step(n, "copy", {in}, out, [this, in, out, bytes](cudaStream_t s) {
      check_cuda(cudaMemcpyAsync(ptr[out], at(in), bytes, cudaMemcpyDeviceToDevice, s), "copy");
    });
  }

  cuda::Epilogue epilogue_of(const Node& n) const {
    const Epilogue f = epilogue_from_attrs(n.attr_string("activation", "none"),
                                           n.attr_floats("activation_params", {}));
    cuda::Epilogue e;
    e.act = f.act, e.p0 = f.p0, e.p1 = f.p1;
    return e;
  }

  void lower_conv(const Node& n) {
    std::string why;
    const std::optional<cuda::ConvNode> cn = cuda::conv_node(graph, n, &why);
    if (!cn) unsupported(n, why);
    const cuda::ConvShape& s = cn->shape;
    const Operand x = operand(n, n.inputs[0]);
    if (x.value >= 0 && storage_of(dtypes[x.value]) != s.storage)
      unsupported(n, "input and weights of different types");
    const int out = output_value(n);
    const std::vector<float> w = constant_floats(n, n.inputs[1]);

    cuda::Epilogue e;
    e.act = cn->act, e.p0 = cn->p0, e.p1 = cn->p1;
    std::vector<float> bias;
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      bias = constant_floats(n, n.inputs[2]);
      e.bias = upload("b:" + n.inputs[2], bias);
    }
    Operand residual;
    if (n.inputs.size() > 3 && !n.inputs[3].empty()) residual = operand(n, n.inputs[3]);

    // The algorithm: the layer's own choice, else the plan's, else the auto rule.
    std::string algo = options.conv_algo;
    Knobs knobs;
    bool per_layer = false;
    if (const auto it = options.layers.find(n.name); it != options.layers.end()) {
      algo = it->second.algo;
      knobs = it->second.knobs;
      per_layer = true;
    }
    AlgoChoiceSpec spec = parse_algo_choice(per_layer ? algo : options.conv_algo);
    std::unique_ptr<cuda::ConvKernel> kernel;
    std::string used;
    if (spec.algo == "cudnn") {
      std::string why;
      if (!vendor) vendor = std::make_unique<cuda::VendorHandles>(stream);
      kernel =
          cuda::make_cudnn_conv(*vendor, s, w.data(), bias.empty() ? nullptr : bias.data(), &why);
      if (kernel) used = cuda::cudnn_algo_name(*kernel);
      knobs.clear();
    }
    if (!kernel) {
      const cuda::ConvAlgorithm* a = cuda::find_conv_algorithm(spec.algo);
      if (per_layer) {
        DLAS_CHECK(a && a->supports(s), ErrorKind::kInvalidInput, "layer '", n.name,
                   "': CUDA algorithm '", spec.algo, "' does not run ", s.str());
      }
      bool from_profile = false;
      if (!a || !a->supports(s)) {
        a = &cuda::auto_conv_algorithm(s);
        // The measured rule: this GPU's winner for the layer's class (cuda_profile_choice).
        if (profile) {
          CudaProfileChoice c = cuda_profile_choice(*profile, s);
          if (c.algo) {
            a = c.algo;
            knobs = std::move(c.knobs);
            from_profile = true;
          }
        }
      }
      if (per_layer) {
        a->knob_space(s).validate(knobs, "layer '" + n.name + "'");
      } else if (!from_profile) {
        knobs = a->default_knobs(s);
        if (a->name == spec.algo)
          apply_knob_overrides(spec, a->knob_space(s), knobs, "layer '" + n.name + "'");
      }
      kernel = a->prepare(s, knobs, w.data());
      used = a->name;
    }
    workspace_bytes = std::max(workspace_bytes, kernel->workspace_bytes());
    packed_bytes += static_cast<int64_t>(kernel->weight_bytes());
    const cuda::ConvKernel* k = kernel.get();
    convs.push_back(std::move(kernel));
    std::vector<Operand> reads = {x};
    if (residual.value >= 0 || residual.constant) reads.push_back(residual);
    add_step(
        n, used, reads, out,
        [this, k, x, residual, e, out](cudaStream_t st) {
          cuda::Epilogue ep = e;
          if (residual.value >= 0 || residual.constant) ep.residual = at(residual);
          k->run(at(x), ptr[out], workspace.get(), ep, st);
        },
        knobs, s.str());
  }

  void lower_affine(const Node& n) {
    const int out = output_value(n);
    const Shape& os = shapes[out];
    if (os.size() < 2) unsupported(n, "needs a [N, C, ...] tensor");
    const int64_t channels = os[1], inner = numel_of(os) / std::max<int64_t>(os[0] * os[1], 1);
    std::vector<float> scale(static_cast<size_t>(channels)), shift(scale.size());
    std::vector<Operand> parts;
    Activation act = Activation::kNone;
    float p0 = 0, p1 = 0;
    if (n.op == "BatchNormalization") {
      const auto g = constant_floats(n, n.inputs[1]), b = constant_floats(n, n.inputs[2]);
      const auto mean = constant_floats(n, n.inputs[3]), var = constant_floats(n, n.inputs[4]);
      const double eps = n.attr_float("epsilon", 1e-5f);
      for (int64_t c = 0; c < channels; ++c) {
        const double sc = g[c] / std::sqrt(static_cast<double>(var[c]) + eps);
        scale[c] = static_cast<float>(sc);
        shift[c] = static_cast<float>(b[c] - mean[c] * sc);
      }
      parts.push_back(operand(n, n.inputs[0]));
    } else {
      const size_t count = n.inputs.size() - 2;
      scale = constant_floats(n, n.inputs[count]);
      shift = constant_floats(n, n.inputs[count + 1]);
      for (size_t i = 0; i < count; ++i) parts.push_back(operand(n, n.inputs[i]));
      const cuda::Epilogue e = epilogue_of(n);
      act = e.act, p0 = e.p0, p1 = e.p1;
    }
    std::vector<int64_t> part_channels;
    for (size_t i = 0; i < parts.size(); ++i) part_channels.push_back(shape_of(n.inputs[i])[1]);
    const float* sc = upload("s:" + n.name, scale);
    const float* sh = upload("t:" + n.name, shift);
    const int64_t batch = os[0];
    const cuda::Storage st = storage_of(dtypes[out]);
    add_step(
        n, "channel-affine", parts, out,
        [this, parts, part_channels, batch, inner, sc, sh, act, p0, p1, out, st](cudaStream_t s) {
          std::vector<cuda::ChannelPart> cp;
          for (size_t i = 0; i < parts.size(); ++i) cp.push_back({at(parts[i]), part_channels[i]});
          cuda::channel_affine(cp, batch, inner, sc, sh, act, p0, p1, ptr[out], s, st);
        });
  }

  void lower_activation(const Node& n) {
    const Operand x = operand(n, n.inputs.at(0));
    const int out = output_value(n);
    const int64_t count = numel_of(shapes[out]);
    if (n.op == "LeakyRelu") {
      const float alpha = n.attr_float("alpha", 0.01f);
      add_step(n, "leaky-relu", {x}, out, [this, x, out, count, alpha](cudaStream_t s) {
        cuda::leaky_relu(at(x), ptr[out], count, alpha, s);
      });
      return;
    }
    Activation act = Activation::kRelu;
    float p0 = 0, p1 = 0;
    if (n.op == "Clip") {
      act = Activation::kClip;
      p0 = -INFINITY, p1 = INFINITY;
      if (n.has_attr("min")) p0 = n.attr_float("min", p0);
      if (n.has_attr("max")) p1 = n.attr_float("max", p1);
      if (n.inputs.size() > 1 && !n.inputs[1].empty()) p0 = constant_floats(n, n.inputs[1]).at(0);
      if (n.inputs.size() > 2 && !n.inputs[2].empty()) p1 = constant_floats(n, n.inputs[2]).at(0);
    } else if (n.op == "Sigmoid") {
      act = Activation::kSigmoid;
    } else if (n.op == "HardSigmoid") {
      act = Activation::kHardSigmoid;
      p0 = n.attr_float("alpha", 0.2f), p1 = n.attr_float("beta", 0.5f);
    } else if (n.op == "HardSwish") {
      act = Activation::kHardSwish;
    }
    const cuda::Storage st = storage_of(dtypes[out]);
    add_step(n, activation_name(act), {x}, out,
             [this, x, out, count, act, p0, p1, st](cudaStream_t s) {
               cuda::activation(at(x), ptr[out], count, act, p0, p1, s, st);
             });
  }

  void lower_binary(const Node& n) {
    const Operand a = operand(n, n.inputs.at(0)), b = operand(n, n.inputs.at(1));
    const int out = output_value(n);
    const Shape as = shape_of(n.inputs[0]), bs = shape_of(n.inputs[1]), os = shapes[out];
    if (as.size() > 6 || bs.size() > 6 || os.size() > 6) unsupported(n, "rank above 6");
    const cuda::BinaryOp op = n.op == "Add"   ? cuda::BinaryOp::kAdd
                              : n.op == "Sub" ? cuda::BinaryOp::kSub
                              : n.op == "Mul" ? cuda::BinaryOp::kMul
                              : n.op == "Div" ? cuda::BinaryOp::kDiv
                              : n.op == "Max" ? cuda::BinaryOp::kMax
                                              : cuda::BinaryOp::kMin;
    std::string name = n.op;
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    const cuda::Storage st = storage_of(dtypes[out]);
    add_step(n, name, {a, b}, out, [this, op, a, b, as, bs, os, out, st](cudaStream_t s) {
      cuda::binary(op, at(a), as, at(b), bs, ptr[out], os, s, st);
    });
  }

  void lower_pool(const Node& n) {
    if (n.attr_string("auto_pad", "NOTSET") != "NOTSET") unsupported(n, "auto_pad");
    const Operand x = operand(n, n.inputs.at(0));
    const int out = output_value(n);
    const Shape& xs = shape_of(n.inputs[0]);
    const Shape& os = shapes[out];
    if (xs.size() != 4) unsupported(n, "only 2-D pooling runs on the GPU");
    const auto k = n.attr_ints("kernel_shape", {});
    const auto st = n.attr_ints("strides", {1, 1});
    const auto d = n.attr_ints("dilations", {1, 1});
    const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
    if (k.size() != 2 || st.size() != 2 || d.size() != 2 || pads.size() != 4)
      unsupported(n, "kernel_shape, strides, dilations and pads must be 2-D");
    cuda::PoolShape p;
    p.n = xs[0], p.c = xs[1], p.h = xs[2], p.w = xs[3], p.oh = os[2], p.ow = os[3];
    p.kh = k[0], p.kw = k[1], p.stride_h = st[0], p.stride_w = st[1];
    p.pad_h = pads[0], p.pad_w = pads[1], p.pad_b = pads[2], p.pad_r = pads[3];
    p.dil_h = d[0], p.dil_w = d[1];
    const cuda::Storage ty = storage_of(dtypes[out]);
    if (n.op == "MaxPool") {
      add_step(n, "max-pool", {x}, out, [this, x, out, p, ty](cudaStream_t s) {
        cuda::max_pool(at(x), ptr[out], p, s, ty);
      });
    } else {
      const bool include = n.attr_int("count_include_pad", 0) != 0;
      add_step(n, "average-pool", {x}, out, [this, x, out, p, include, ty](cudaStream_t s) {
        cuda::average_pool(at(x), ptr[out], p, include, s, ty);
      });
    }
  }

  void lower_global_pool(const Node& n) {
    const Operand x = operand(n, n.inputs.at(0));
    const Shape& xs = shape_of(n.inputs[0]);
    const int rank = static_cast<int>(xs.size());
    int first_axis = 2;
    if (n.op == "ReduceMean") {
      std::vector<int64_t> axes = n.attr_ints("axes", {});
      if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
        const Tensor* t = graph.constant(n.inputs[1]);
        if (!t || t->dtype() != DType::kS64) unsupported(n, "axes must be a constant");
        axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
      }
      for (int64_t& a : axes) a = a < 0 ? a + rank : a;
      std::sort(axes.begin(), axes.end());
      bool trailing = !axes.empty() && axes.back() == rank - 1;
      for (size_t i = 1; i < axes.size(); ++i) trailing &= axes[i] == axes[i - 1] + 1;
      if (!trailing) unsupported(n, "only a mean over the trailing axes runs on the GPU");
      first_axis = static_cast<int>(axes.front());
    }
    if (rank < first_axis) unsupported(n, "needs a [N, C, ...] tensor");
    const int out = output_value(n);
    int64_t rows = 1, hw = 1;
    for (int i = 0; i < rank; ++i) (i < first_axis ? rows : hw) *= xs[i];
    const bool max = n.op == "GlobalMaxPool";
    const cuda::Storage st = storage_of(dtypes[out]);
    add_step(n, max ? "global-max-pool" : "global-average-pool", {x}, out,
             [this, x, out, rows, hw, max, st](cudaStream_t s) {
               cuda::global_pool(at(x), ptr[out], rows, hw, max, s, st);
             });
  }

  void lower_gemm(const Node& n) {
    const Shape& as = shape_of(n.inputs.at(0));
    const Shape& bs = shape_of(n.inputs.at(1));
    if (as.size() != 2 || bs.size() != 2) unsupported(n, "only 2-D matrix products run on the GPU");
    if (n.attr_int("transA", 0) != 0) unsupported(n, "transA");
    const bool trans_b = n.op == "Gemm" && n.attr_int("transB", 0) != 0;
    const float alpha = n.op == "Gemm" ? n.attr_float("alpha", 1.f) : 1.f;
    const float beta = n.op == "Gemm" ? n.attr_float("beta", 1.f) : 1.f;
    const Operand a = operand(n, n.inputs[0]);
    const Operand b = operand(n, n.inputs[1]);
    const int out = output_value(n);
    const int64_t m = as[0], k = as[1], cols = shapes[out][1];
    const float* bias = nullptr;
    const bool fused = n.op == "FusedMatMul";  // act(a b + bias), no residual on the GPU
    if ((n.op == "Gemm" || fused) && n.inputs.size() > 2 && !n.inputs[2].empty()) {
      std::vector<float> c = constant_floats(n, n.inputs[2]);
      if (static_cast<int64_t>(c.size()) != cols) unsupported(n, "C must be one value per column");
      for (float& v : c) v *= beta;
      bias = upload("g:" + n.name, c);
    }
    Activation act = Activation::kNone;
    float p0 = 0, p1 = 0;
    if (fused) {
      if (n.inputs.size() > 3 && !n.inputs[3].empty()) unsupported(n, "a fused residual");
      const Epilogue e = epilogue_from_attrs(n.attr_string("activation", "none"),
                                             n.attr_floats("activation_params", {}));
      act = e.act, p0 = e.p0, p1 = e.p1;
    }
    std::vector<Operand> reads = {a, b};
    if (options.conv_algo == "cudnn") {
      if (!vendor) vendor = std::make_unique<cuda::VendorHandles>(stream);
      add_step(
          n, "cublas-sgemm", reads, out,
          [this, a, b, trans_b, bias, out, m, cols, k, alpha, act, p0, p1](cudaStream_t s) {
            cuda::cublas_gemm(*vendor, at(a), at(b), trans_b, bias, ptr[out], m, cols, k, alpha, s);
            if (act != Activation::kNone)
              cuda::activation(ptr[out], ptr[out], m * cols, act, p0, p1, s, cuda::Storage::kF32);
          });
      return;
    }
    add_step(n, "gemm", reads, out,
             [this, a, b, trans_b, bias, out, m, cols, k, alpha, act, p0, p1](cudaStream_t s) {
               cuda::gemm(at(a), at(b), trans_b, bias, ptr[out], m, cols, k, alpha, 1.f,
                          Activation::kNone, s);
               if (act != Activation::kNone)
                 cuda::activation(ptr[out], ptr[out], m * cols, act, p0, p1, s,
                                  cuda::Storage::kF32);
             });
  }

  void lower_concat(const Node& n) {
    const int out = output_value(n);
    const Shape& os = shapes[out];
    const int rank = static_cast<int>(os.size());
    int64_t axis = n.attr_int("axis", 1);
    if (axis < 0) axis += rank;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < rank; ++i) {
      if (i < axis) outer *= os[i];
      if (i > axis) inner *= os[i];
    }
    std::vector<Operand> parts;
    std::vector<int64_t> dims;
    for (const std::string& in : n.inputs) {
      parts.push_back(operand(n, in));
      dims.push_back(shape_of(in)[axis]);
    }
    const cuda::Storage st = storage_of(dtypes[out]);
    add_step(n, "concat", parts, out, [this, parts, dims, outer, inner, out, st](cudaStream_t s) {
      std::vector<cuda::ConcatPart> cp;
      for (size_t i = 0; i < parts.size(); ++i) cp.push_back({at(parts[i]), dims[i]});
      cuda::concat(cp, outer, inner, ptr[out], s, st);
    });
  }

  void lower_softmax(const Node& n) {
    const Operand x = operand(n, n.inputs.at(0));
    const int out = output_value(n);
    const Shape& os = shapes[out];
    const int rank = static_cast<int>(os.size());
    int64_t axis = n.attr_int("axis", -1);
    if (axis < 0) axis += rank;
    int64_t trailing = 1;
    for (int i = static_cast<int>(axis) + 1; i < rank; ++i) trailing *= os[i];
    if (trailing != 1) unsupported(n, "only a softmax over the last axis runs on the GPU");
    const int64_t cols = os[axis], rows = numel_of(os) / std::max<int64_t>(cols, 1);
    const bool log = n.op == "LogSoftmax";
    add_step(n, log ? "log-softmax" : "softmax", {x}, out,
             [this, x, out, rows, cols, log](cudaStream_t s) {
               cuda::softmax(at(x), ptr[out], rows, cols, log, s);
             });
  }

  // --- the arena, the graph --------------------------------------------------------------

  void plan() {
    const int count = static_cast<int>(shapes.size());
    const int last_step = static_cast<int>(steps.size());
    std::vector<BufferLifetime> life(static_cast<size_t>(count));
    std::vector<bool> owns(static_cast<size_t>(count), false);
    for (int v = 0; v < count; ++v) {
      if (root[v] != v) continue;
      owns[v] = true;
      life[v].bytes = value_bytes(v);
      life[v].first = last_step + 1;
      life[v].last = -1;
    }
    auto touch = [&](int v, int step) {
      const int r = root[v];
      life[r].first = std::min(life[r].first, step);
      life[r].last = std::max(life[r].last, step);
    };
    for (int v : input_values) touch(v, 0);
    for (int i = 0; i < last_step; ++i) {
      for (int v : steps[i].reads) touch(v, i);
      for (int v : steps[i].writes) touch(v, i);
    }
    for (int v : output_values) touch(v, last_step);
    std::vector<BufferLifetime> owned;
    std::vector<int> owned_values;
    for (int v = 0; v < count; ++v) {
      if (!owns[v] || life[v].last < 0) continue;
      owned.push_back(life[v]);
      owned_values.push_back(v);
      unplanned_bytes += static_cast<int64_t>(life[v].bytes);
    }
    const MemoryPlan mp = plan_memory(owned, options.opt_level >= 1);
    arena = DeviceBuffer(std::max<size_t>(mp.arena_bytes, 1), "activation arena");
    ptr.assign(static_cast<size_t>(count), nullptr);
    for (size_t i = 0; i < owned_values.size(); ++i)
      ptr[owned_values[i]] = reinterpret_cast<float*>(arena.as<char>() + mp.offsets[i]);
    for (int v = 0; v < count; ++v) ptr[v] = ptr[root[v]];
    if (workspace_bytes) workspace = DeviceBuffer(workspace_bytes, "conv workspace");
  }

  void launch_all() {
    for (const Step& s : steps) s.launch(stream);
  }

  void capture() {
    if (!options.cuda_graph) return;
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    try {
      launch_all();
    } catch (const Error&) {
      cudaGraph_t g = nullptr;
      cudaStreamEndCapture(stream, &g);
      if (g) cudaGraphDestroy(g);
      (void)cudaGetLastError();
      return;
    }
    if (cudaStreamEndCapture(stream, &cuda_graph) != cudaSuccess ||
        cudaGraphInstantiate(&graph_exec, cuda_graph, 0) != cudaSuccess) {
      (void)cudaGetLastError();
      if (cuda_graph) cudaGraphDestroy(cuda_graph);
      cuda_graph = nullptr;
      graph_exec = nullptr;
    }
  }

  void build(const Graph& given) {
    graph = given;
    optimize_graph(graph, options.opt_level);
    check_cuda(cudaSetDevice(device), "select device");
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "create stream");
    check_cuda(cudaEventCreate(&start), "create event");
    check_cuda(cudaEventCreate(&stop), "create event");
    for (const ValueInfo& in : graph.inputs) {
      DLAS_CHECK(in.dtype == DType::kF32 || is_16bit(in.dtype), ErrorKind::kUnsupported,
                 "CUDA device: input '", in.name, "' is ", dtype_name(in.dtype),
                 "; the GPU runs f32, f16 and bf16 models");
      input_values.push_back(new_value(in.name, in.shape, in.dtype));
    }
    for (const auto& [node, choice] : options.layers) {
      bool is_conv = false;
      for (const Node& n : graph.nodes)
        is_conv |= n.name == node && (n.op == "Conv" || n.op == "FusedConv");
      DLAS_CHECK(is_conv, ErrorKind::kInvalidInput, "per-layer choice for '", node,
                 "': no conv node of that name in the optimized graph");
    }
    if (options.conv_algo != "cudnn") {
      profile = active_cuda_profile(options.profile, tune::cuda_hardware_id(device));
      if (profile)
        profile_path =
            options.profile.empty() ? default_cuda_profile_path(profile->gpu) : options.profile;
    }
    for (const Node& n : graph.nodes) lower(n);
    for (const std::string& o : graph.outputs) {
      const auto it = index.find(o);
      DLAS_CHECK(it != index.end(), ErrorKind::kUnsupported, "CUDA device: graph output '", o,
                 "' is not computed by a node");
      DLAS_CHECK(graph.value(o).dtype == DType::kF32 || is_16bit(graph.value(o).dtype),
                 ErrorKind::kUnsupported, "CUDA device: output '", o, "' is not f32, f16 or bf16");
      output_values.push_back(it->second);
    }
    for (const Step& s : steps) infos.push_back(s.info);
    plan();
    for (int v : input_values) pinned_in.emplace_back(value_bytes(v));
    for (int v : output_values) pinned_out.emplace_back(value_bytes(v));
    // One eager run first: every kernel launches once (cuDNN settles its fused path) before
    // the steps are captured.
    check_cuda(cudaMemsetAsync(arena.get(), 0, arena.bytes(), stream), "clear arena");
    launch_all();
    check_cuda(cudaStreamSynchronize(stream), "first run");
    capture();
  }
};

CudaExecutor::CudaExecutor(Graph graph, const CudaPlanOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->device = options.device;
  impl_->build(graph);
}

CudaExecutor::~CudaExecutor() = default;

std::string CudaExecutor::name() const { return impl_->options.backend; }
const Graph& CudaExecutor::graph() const { return impl_->graph; }
const std::vector<CudaStepInfo>& CudaExecutor::steps() const { return impl_->infos; }
const std::string& CudaExecutor::profile_path() const { return impl_->profile_path; }
bool CudaExecutor::graph_captured() const { return impl_->graph_exec != nullptr; }
double CudaExecutor::last_device_ms() const { return impl_->last_ms; }

std::string CudaExecutor::device_label() const {
  const auto& gpus = list_gpus();
  const int d = impl_->device;
  std::string label = "cuda:" + std::to_string(d);
  if (d >= 0 && d < static_cast<int>(gpus.size()))
    label += " (" + gpus[d].name + ", sm_" + std::to_string(gpus[d].cc_major) +
             std::to_string(gpus[d].cc_minor) + ")";
  return label;
}

MemoryReport CudaExecutor::memory() const {
  MemoryReport r;
  r.arena_bytes = static_cast<int64_t>(impl_->arena.bytes());
  r.unplanned_bytes = impl_->unplanned_bytes;
  r.weight_bytes = impl_->graph.weight_bytes();
  r.packed_weight_bytes = impl_->packed_bytes;
  r.workspace_bytes = static_cast<int64_t>(impl_->workspace_bytes);
  return r;
}

void CudaExecutor::run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  Impl& im = *impl_;
  DLAS_CHECK(inputs.size() == im.input_values.size(), ErrorKind::kInvalidInput, "expected ",
             im.input_values.size(), " inputs, got ", inputs.size());
  DLAS_CHECK(outputs.size() == im.output_values.size(), ErrorKind::kInvalidInput, "expected ",
             im.output_values.size(), " outputs, got ", outputs.size());
  check_cuda(cudaSetDevice(im.device), "select device");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& vi = im.graph.inputs[i];
    DLAS_CHECK(inputs[i].dtype() == vi.dtype && inputs[i].shape() == vi.shape,
               ErrorKind::kInvalidInput, "input '", vi.name, "': expected ", dtype_name(vi.dtype),
               " ", shape_str(vi.shape), ", got ", dtype_name(inputs[i].dtype()), " ",
               shape_str(inputs[i].shape()));
    std::memcpy(im.pinned_in[i].get(), inputs[i].raw(), inputs[i].nbytes());
    check_cuda(cudaMemcpyAsync(im.ptr[im.input_values[i]], im.pinned_in[i].get(),
                               inputs[i].nbytes(), cudaMemcpyHostToDevice, im.stream),
               "copy input to the device");
  }
  check_cuda(cudaEventRecord(im.start, im.stream), "record event");
  if (im.graph_exec) {
    check_cuda(cudaGraphLaunch(im.graph_exec, im.stream), "launch CUDA graph");
  } else {
    im.launch_all();
  }
  check_cuda(cudaEventRecord(im.stop, im.stream), "record event");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Shape& s = im.shapes[im.output_values[i]];
    const DType t = im.dtypes[im.output_values[i]];
    if (!outputs[i].defined() || outputs[i].shape() != s || outputs[i].dtype() != t)
      outputs[i] = Tensor(t, s);
    check_cuda(cudaMemcpyAsync(im.pinned_out[i].get(), im.ptr[im.output_values[i]],
                               outputs[i].nbytes(), cudaMemcpyDeviceToHost, im.stream),
               "copy output to the host");
  }
  check_cuda(cudaStreamSynchronize(im.stream), "run on the device");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, im.start, im.stop), "event time");
  im.last_ms = ms;
  for (size_t i = 0; i < outputs.size(); ++i)
    std::memcpy(outputs[i].raw(), im.pinned_out[i].get(), outputs[i].nbytes());
}

std::vector<double> CudaExecutor::profile_steps(int repeat) {
  Impl& im = *impl_;
  const size_t count = im.steps.size();
  std::vector<std::vector<double>> times(count);
  std::vector<cudaEvent_t> events(count + 1);
  for (cudaEvent_t& e : events) check_cuda(cudaEventCreate(&e), "create event");
  try {
    for (int r = 0; r < std::max(repeat, 1); ++r) {
      check_cuda(cudaEventRecord(events[0], im.stream), "record event");
      for (size_t i = 0; i < count; ++i) {
        im.steps[i].launch(im.stream);
        check_cuda(cudaEventRecord(events[i + 1], im.stream), "record event");
      }
      check_cuda(cudaStreamSynchronize(im.stream), "profile run");
      for (size_t i = 0; i < count; ++i) {
        float ms = 0;
        check_cuda(cudaEventElapsedTime(&ms, events[i], events[i + 1]), "event time");
        times[i].push_back(ms);
      }
    }
  } catch (...) {
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    throw;
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  std::vector<double> median(count, 0.0);
  for (size_t i = 0; i < count; ++i) {
    std::sort(times[i].begin(), times[i].end());
    median[i] = times[i][times[i].size() / 2];
  }
  return median;
}

std::unique_ptr<Executor> make_cuda_executor(const Graph& graph, const Variant& variant,
                                             const ExecutorOptions& options) {
  // cuDNN runs on a GPU: on "cpu" (a Variant built without --device) it takes cuda:0.
  const int device = std::max(parse_device(variant.device), 0);
  DLAS_CHECK(variant.backend == "dlas" || variant.backend == "cudnn", ErrorKind::kUnsupported,
             "backend '", variant.backend, "' runs on the CPU only (--device cpu)");
  DLAS_CHECK(variant.compress.find("int8") == std::string::npos, ErrorKind::kUnsupported,
             "--compress ", variant.compress,
             ": int8 variants run on the CPU only (the GPU runs f32, fp16 and bf16 models)");
  DLAS_CHECK(variant.layout == "auto" || variant.layout == "nchw", ErrorKind::kUnsupported,
             "--layout ", variant.layout, " is a CPU layout; the GPU runs NCHW");
  CudaPlanOptions o;
  o.device = device;
  o.backend = variant.backend;
  o.opt_level = variant.opt_level;
  o.conv_algo = variant.backend == "cudnn" ? "cudnn" : variant.conv_algo;
  if (o.conv_algo.rfind("layers:", 0) == 0) {
    o.layers = read_layer_choices(o.conv_algo.substr(7));
    o.conv_algo = "auto";
  }
  for (const auto& [node, choice] : options.layers) o.layers.insert_or_assign(node, choice);
  o.profile = options.profile;
  if (const char* g = std::getenv("DLAS_CUDA_GRAPH"); g && std::string(g) == "0")
    o.cuda_graph = false;
  return std::make_unique<CudaExecutor>(graph, o);
}

}  // namespace dlas
