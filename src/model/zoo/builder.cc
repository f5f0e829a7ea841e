#include "model/zoo/builder.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace dlas::zoo {

// ---- Rng ------------------------------------------------------------------------------------

namespace {
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
// FNV-1a: a fixed, portable hash of a tensor name.
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}
}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t state = seed;
  for (uint64_t& s : s_) s = splitmix64(state);
}

Rng Rng::for_tensor(uint64_t seed, std::string_view name) {
  uint64_t state = seed;
  return Rng(splitmix64(state) ^ fnv1a(name));
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

double Rng::normal(double mean, double std) {
  if (has_spare_) {
    has_spare_ = false;
    return mean + std * spare_;
  }
  const double u1 = static_cast<double>((next_u64() >> 11) + 1) * 0x1.0p-53;  // (0, 1]
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * std::numbers::pi * u2;
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return mean + std * r * std::cos(theta);
}

// ---- channel rounding -------------------------------------------------------------------------

int64_t make_divisible(double v, int64_t divisor, int64_t min_value) {
  if (min_value <= 0) min_value = divisor;
  const int64_t rounded =
      static_cast<int64_t>(v + static_cast<double>(divisor) / 2) / divisor * divisor;
  int64_t new_v = std::max(min_value, rounded);
  if (static_cast<double>(new_v) < 0.9 * v) new_v += divisor;
  return new_v;
}

int64_t scale_channels(int64_t channels, double width_mult) {
  return std::max<int64_t>(1, std::llround(static_cast<double>(channels) * width_mult));
}

// ---- GraphBuilder -----------------------------------------------------------------------------

namespace {
void fill_uniform(Tensor& t, Rng& rng, double bound) {
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng.uniform(-bound, bound));
}
void fill_normal(Tensor& t, Rng& rng, double std) {
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng.normal(0.0, std));
}
void fill_const(Tensor& t, float value) {
  float* p = t.data<float>();
  std::fill(p, p + t.numel(), value);
}
// PyTorch's pooling/conv output size, with ceil_mode's rule that the last window must start
// inside the input or the left padding.
int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool ceil_mode) {
  const int64_t span = in + 2 * pad - kernel;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}
}  // namespace

GraphBuilder::GraphBuilder(const ZooConfig& config, InitScheme init)
    : config_(config), init_(init) {
  graph_.name = config.model;
}

void GraphBuilder::internal_error(std::string_view what) const {
  fail(ErrorKind::kInternal, "zoo model '", config_.model, "': ", what);
}

std::string GraphBuilder::input() {
  const std::string name = "input";
  Shape s = {config_.batch, config_.in_channels, config_.image_size, config_.image_size};
  graph_.inputs.push_back({name, DType::kF32, s});
  shapes_[name] = std::move(s);
  return name;
}

const Shape& GraphBuilder::shape(const std::string& value) const {
  auto it = shapes_.find(value);
  if (it == shapes_.end()) internal_error(str("unknown value '", value, "'"));
  return it->second;
}

std::string GraphBuilder::add_node(std::string_view name, std::string op,
                                   std::vector<std::string> inputs,
                                   std::map<std::string, Attribute> attrs, Shape out_shape,
                                   const std::string& output_name) {
  std::string unique(name);
  for (int i = 1; node_names_.count(unique) || shapes_.count(unique); ++i)
    unique = str(name, "_", i);
  node_names_.insert(unique);
  const std::string out = output_name.empty() ? unique : output_name;
  if (shapes_.count(out)) internal_error(str("value '", out, "' is defined twice"));
  shapes_[out] = std::move(out_shape);
  Node node;
  node.name = unique;
  node.op = std::move(op);
  node.inputs = std::move(inputs);
  node.outputs = {out};
  node.attrs = std::move(attrs);
  graph_.nodes.push_back(std::move(node));
  return out;
}

std::string GraphBuilder::add_weight(const std::string& name, Shape shape, bool trainable) {
  if (graph_.initializers.count(name) || shapes_.count(name))
    internal_error(str("weight '", name, "' is defined twice"));
  Tensor t(DType::kF32, shape);
  if (trainable) trainable_params_ += t.numel();
  graph_.initializers.emplace(name, std::move(t));
  shapes_[name] = std::move(shape);
  return name;
}

void GraphBuilder::check_window(std::string_view name, const std::string& x, int64_t kernel,
                                int64_t stride, int64_t pad) const {
  const Shape& s = shape(x);
  const int64_t need = std::max<int64_t>(stride, kernel - 2 * pad);
  if (s[2] < need || s[3] < need)
    fail(ErrorKind::kInvalidInput, config_.model, ": image_size ", config_.image_size,
         " is too small for the network's downsampling: '", name, "' would get a ", s[2], "x", s[3],
         " map but needs at least ", need, "x", need);
}

std::string GraphBuilder::conv(std::string_view name, const std::string& x, const ConvArgs& a) {
  const Shape& in = shape(x);
  const int64_t cin = in[1];
  if (a.out <= 0 || a.groups <= 0 || cin % a.groups != 0 || a.out % a.groups != 0)
    internal_error(
        str("conv '", name, "': ", cin, " -> ", a.out, " channels in ", a.groups, " groups"));
  check_window(name, x, a.kernel, a.stride, a.pad);
  const int64_t oh = window_out(in[2], a.kernel, a.stride, a.pad, false);
  const int64_t ow = window_out(in[3], a.kernel, a.stride, a.pad, false);
  const std::string prefix(name);
  const int64_t cin_per_group = cin / a.groups;
  const std::string w = add_weight(prefix + ".weight", {a.out, cin_per_group, a.kernel, a.kernel},
                                   /*trainable=*/true);
  const int64_t receptive = a.kernel * a.kernel;
  const double fan_in = static_cast<double>(cin_per_group * receptive);
  const double fan_out = static_cast<double>(a.out * receptive);
  {
    Tensor& t = graph_.initializers.at(w);
    Rng rng = Rng::for_tensor(config_.seed, w);
    switch (init_.conv_weight) {
      case InitScheme::ConvWeight::kPyTorchDefault:
        fill_uniform(t, rng, 1.0 / std::sqrt(fan_in));
        break;
      case InitScheme::ConvWeight::kKaimingNormalFanOut:
        fill_normal(t, rng, std::sqrt(2.0 / fan_out));
        break;
      case InitScheme::ConvWeight::kKaimingNormalFanIn:
        fill_normal(t, rng, std::sqrt(2.0 / fan_in));
        break;
    }
  }
  std::vector<std::string> inputs = {x, w};
  if (a.bias) {
    const std::string b = add_weight(prefix + ".bias", {a.out}, /*trainable=*/true);
    if (!init_.conv_bias_zero) {
      Rng rng = Rng::for_tensor(config_.seed, b);
      fill_uniform(graph_.initializers.at(b), rng, 1.0 / std::sqrt(fan_in));
    }
    inputs.push_back(b);
  }
  Shape out = {in[0], a.out, oh, ow};
  macs_ += shape_numel(out) * cin_per_group * receptive;
  return add_node(name, "Conv", std::move(inputs),
                  {{"dilations", std::vector<int64_t>{1, 1}},
                   {"group", a.groups},
                   {"kernel_shape", std::vector<int64_t>{a.kernel, a.kernel}},
                   {"pads", std::vector<int64_t>{a.pad, a.pad, a.pad, a.pad}},
                   {"strides", std::vector<int64_t>{a.stride, a.stride}}},
                  std::move(out));
}

std::string GraphBuilder::batch_norm(std::string_view name, const std::string& x, float epsilon) {
  const Shape s = shape(x);
  const int64_t c = s.at(1);
  const std::string prefix(name);
  const std::string w = add_weight(prefix + ".weight", {c}, true);
  const std::string b = add_weight(prefix + ".bias", {c}, true);
  const std::string mean = add_weight(prefix + ".running_mean", {c}, false);
  const std::string var = add_weight(prefix + ".running_var", {c}, false);
  fill_const(graph_.initializers.at(w), 1.0f);
  fill_const(graph_.initializers.at(var), 1.0f);
  return add_node(name, "BatchNormalization", {x, w, b, mean, var}, {{"epsilon", epsilon}}, s);
}

std::string GraphBuilder::relu(std::string_view name, const std::string& x) {
  return add_node(name, "Relu", {x}, {}, shape(x));
}

std::string GraphBuilder::relu6(std::string_view name, const std::string& x) {
  // Opset-11 Clip takes its bounds as inputs; one shared pair of scalar constants.
  static const std::string kMin = "relu6.min", kMax = "relu6.max";
  if (!graph_.initializers.count(kMin)) {
    add_weight(kMin, {}, false);
    fill_const(graph_.initializers.at(add_weight(kMax, {}, false)), 6.0f);
  }
  return add_node(name, "Clip", {x, kMin, kMax}, {}, shape(x));
}

std::string GraphBuilder::sigmoid(std::string_view name, const std::string& x) {
  return add_node(name, "Sigmoid", {x}, {}, shape(x));
}

std::string GraphBuilder::silu(std::string_view name, const std::string& x) {
  const std::string prefix(name);
  const std::string s = sigmoid(prefix + ".sigmoid", x);
  return mul(prefix + ".mul", x, s);
}

std::string GraphBuilder::elementwise_binary(std::string_view name, const char* op,
                                             const std::string& a, const std::string& b) {
  const Shape& sa = shape(a);
  const Shape& sb = shape(b);
  if (sa.size() != sb.size()) internal_error(str(op, " '", name, "': rank mismatch"));
  Shape out(sa.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    if (sa[i] != sb[i] && sa[i] != 1 && sb[i] != 1)
      internal_error(str(op, " '", name, "': ", shape_str(sa), " vs ", shape_str(sb)));
    out[i] = sa[i] == 1 ? sb[i] : sa[i];
  }
  return add_node(name, op, {a, b}, {}, std::move(out));
}

std::string GraphBuilder::add(std::string_view name, const std::string& a, const std::string& b) {
  return elementwise_binary(name, "Add", a, b);
}

std::string GraphBuilder::mul(std::string_view name, const std::string& a, const std::string& b) {
  return elementwise_binary(name, "Mul", a, b);
}

std::string GraphBuilder::pool(std::string_view name, const char* op, const std::string& x,
                               const PoolArgs& a) {
  check_window(name, x, a.kernel, a.stride, a.pad);
  const Shape& in = shape(x);
  Shape out = {in[0], in[1], window_out(in[2], a.kernel, a.stride, a.pad, a.ceil_mode),
               window_out(in[3], a.kernel, a.stride, a.pad, a.ceil_mode)};
  std::map<std::string, Attribute> attrs = {
      {"ceil_mode", int64_t{a.ceil_mode ? 1 : 0}},
      {"kernel_shape", std::vector<int64_t>{a.kernel, a.kernel}},
      {"pads", std::vector<int64_t>{a.pad, a.pad, a.pad, a.pad}},
      {"strides", std::vector<int64_t>{a.stride, a.stride}}};
  if (std::string_view(op) == "AveragePool") attrs["count_include_pad"] = int64_t{1};
  return add_node(name, op, {x}, std::move(attrs), std::move(out));
}

std::string GraphBuilder::max_pool(std::string_view name, const std::string& x,
                                   const PoolArgs& args) {
  return pool(name, "MaxPool", x, args);
}

std::string GraphBuilder::avg_pool(std::string_view name, const std::string& x,
                                   const PoolArgs& args) {
  return pool(name, "AveragePool", x, args);
}

std::string GraphBuilder::global_avg_pool(std::string_view name, const std::string& x) {
  const Shape& in = shape(x);
  return add_node(name, "GlobalAveragePool", {x}, {}, {in[0], in[1], 1, 1});
}

std::string GraphBuilder::avg_pool_or_global(std::string_view name, const std::string& x,
                                             int64_t kernel) {
  const Shape& in = shape(x);
  if (in[2] == kernel && in[3] == kernel)
    return avg_pool(name, x, {.kernel = kernel, .stride = kernel});
  return global_avg_pool(name, x);
}

std::string GraphBuilder::flatten(std::string_view name, const std::string& x) {
  const Shape& in = shape(x);
  int64_t inner = 1;
  for (size_t i = 1; i < in.size(); ++i) inner *= in[i];
  return add_node(name, "Flatten", {x}, {{"axis", int64_t{1}}}, {in[0], inner});
}

std::string GraphBuilder::concat(std::string_view name, const std::vector<std::string>& xs) {
  if (xs.empty()) internal_error(str("concat '", name, "' has no inputs"));
  Shape out = shape(xs[0]);
  for (size_t i = 1; i < xs.size(); ++i) {
    const Shape& s = shape(xs[i]);
    if (s.size() != out.size() || s[0] != out[0] || s[2] != out[2] || s[3] != out[3])
      internal_error(str("concat '", name, "': ", shape_str(out), " vs ", shape_str(s)));
    out[1] += s[1];
  }
  return add_node(name, "Concat", xs, {{"axis", int64_t{1}}}, std::move(out));
}

std::string GraphBuilder::linear(std::string_view name, const std::string& x, int64_t out,
                                 const std::string& output_name) {
  const Shape& in = shape(x);
  if (in.size() != 2) internal_error(str("linear '", name, "' needs a 2-D input"));
  const int64_t m = in[0], k = in[1];
  const std::string prefix(name);
  const std::string w = add_weight(prefix + ".weight", {out, k}, true);
  const std::string b = add_weight(prefix + ".bias", {out}, true);
  const double bound_in = 1.0 / std::sqrt(static_cast<double>(k));
  {
    Tensor& t = graph_.initializers.at(w);
    Rng rng = Rng::for_tensor(config_.seed, w);
    switch (init_.linear_weight) {
      case InitScheme::LinearWeight::kPyTorchDefault:
        fill_uniform(t, rng, bound_in);
        break;
      case InitScheme::LinearWeight::kNormal001:
        fill_normal(t, rng, 0.01);
        break;
      case InitScheme::LinearWeight::kUniformFanOut:
        fill_uniform(t, rng, 1.0 / std::sqrt(static_cast<double>(out)));
        break;
    }
  }
  if (!init_.linear_bias_zero) {
    Rng rng = Rng::for_tensor(config_.seed, b);
    fill_uniform(graph_.initializers.at(b), rng, bound_in);
  }
  macs_ += m * out * k;
  return add_node(name, "Gemm", {x, w, b},
                  {{"alpha", 1.0f}, {"beta", 1.0f}, {"transB", int64_t{1}}}, {m, out}, output_name);
}

Graph GraphBuilder::finish(const std::string& output) {
  shape(output);  // must exist
  graph_.outputs = {output};
  Graph g = std::move(graph_);
  graph_ = Graph();
  return g;
}

}  // namespace dlas::zoo
