// Internal: the graph builder the zoo models are written with. It emits ONNX ops the way
// PyTorch's exporter would (op and attribute names), names nodes and weights like PyTorch
// state_dict keys, tracks NCHW shapes so it can validate options before inference, and
// initialises weights deterministically with PyTorch's init schemes.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dlas/model/graph.h"
#include "dlas/model/zoo.h"

namespace dlas::zoo {

// Resolved ZooOptions: defaults filled in and validated.
struct ZooConfig {
  std::string model;  // zoo name, used in error messages
  int64_t batch = 1;
  int64_t in_channels = 3;
  int64_t image_size = 32;
  int64_t num_classes = 10;
  double width_mult = 1.0;
  uint64_t seed = 0;
};

// Deterministic PRNG: xoshiro256** seeded through splitmix64. Identical on every machine.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  // Stream for one named tensor: independent of the order tensors are created in.
  static Rng for_tensor(uint64_t seed, std::string_view name);
  uint64_t next_u64();
  double uniform();                        // [0, 1)
  double uniform(double lo, double hi);    // [lo, hi)
  double normal(double mean, double std);  // Box-Muller

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// How a model family initialises its weights (PyTorch defaults or torchvision's overrides).
struct InitScheme {
  enum class ConvWeight {
    kPyTorchDefault,       // kaiming_uniform_(a=sqrt(5)): U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    kKaimingNormalFanOut,  // kaiming_normal_(mode="fan_out"): N(0, sqrt(2 / fan_out))
    kKaimingNormalFanIn,   // kaiming_normal_(): N(0, sqrt(2 / fan_in))
  };
  enum class LinearWeight {
    kPyTorchDefault,  // U(-1/sqrt(in), 1/sqrt(in))
    kNormal001,       // N(0, 0.01)
    kUniformFanOut,   // U(-1/sqrt(out), 1/sqrt(out))
  };
  ConvWeight conv_weight = ConvWeight::kPyTorchDefault;
  bool conv_bias_zero = false;  // else U(-1/sqrt(fan_in), 1/sqrt(fan_in))
  LinearWeight linear_weight = LinearWeight::kPyTorchDefault;
  bool linear_bias_zero = false;  // else U(-1/sqrt(in), 1/sqrt(in))
};

struct ConvArgs {
  int64_t out = 0;  // output channels
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t pad = 0;
  int64_t groups = 1;
  bool bias = false;
};

struct PoolArgs {
  int64_t kernel = 2;
  int64_t stride = 2;
  int64_t pad = 0;
  bool ceil_mode = false;
};

// torchvision's _make_divisible: round v to a multiple of divisor, never below min_value
// (divisor when <= 0) and never more than 10% below v.
int64_t make_divisible(double v, int64_t divisor = 8, int64_t min_value = -1);
// max(1, round(c * width_mult)): channel scaling for the models without a divisor rule.
int64_t scale_channels(int64_t channels, double width_mult);

class GraphBuilder {
 public:
  GraphBuilder(const ZooConfig& config, InitScheme init);

  // The image input "input": [batch, in_channels, image_size, image_size].
  std::string input();

  // Every op returns the name of its output value (equal to its node name). Node names
  // get a "_1", "_2" ... suffix when repeated (weight-bearing names must be unique).
  std::string conv(std::string_view name, const std::string& x, const ConvArgs& args);
  std::string batch_norm(std::string_view name, const std::string& x, float epsilon = 1e-5f);
  std::string relu(std::string_view name, const std::string& x);
  // Clip(x, min, max) in its opset-11+ form; the bounds are two scalar f32 initializers
  // ("relu6.min" = 0, "relu6.max" = 6) shared by every ReLU6 of the graph.
  std::string relu6(std::string_view name, const std::string& x);
  std::string sigmoid(std::string_view name, const std::string& x);
  std::string silu(std::string_view name, const std::string& x);  // x * Sigmoid(x)
  std::string add(std::string_view name, const std::string& a, const std::string& b);
  std::string mul(std::string_view name, const std::string& a, const std::string& b);
  std::string max_pool(std::string_view name, const std::string& x, const PoolArgs& args);
  std::string avg_pool(std::string_view name, const std::string& x, const PoolArgs& args);
  std::string global_avg_pool(std::string_view name, const std::string& x);
  // kuangliu's F.avg_pool2d(x, k), written for the k x k map a 32x32 image yields: AveragePool
  // when x is k x k, else GlobalAveragePool, so other image sizes work and pool the same way.
  std::string avg_pool_or_global(std::string_view name, const std::string& x, int64_t kernel);
  std::string flatten(std::string_view name, const std::string& x);               // Flatten axis=1
  std::string concat(std::string_view name, const std::vector<std::string>& xs);  // channels
  // Linear layer as Gemm(transB=1); output_name renames the output value (e.g. "output").
  std::string linear(std::string_view name, const std::string& x, int64_t out,
                     const std::string& output_name = "");

  const Shape& shape(const std::string& value) const;
  int64_t channels(const std::string& value) const { return shape(value).at(1); }
  int64_t height(const std::string& value) const { return shape(value).at(2); }

  // Marks `output` as the graph output and hands the (uninferred) graph over.
  Graph finish(const std::string& output);

  // The builder's own accounting, independent of the op schemas: trainable parameters
  // (PyTorch's parameters()) and Conv/Gemm multiply-accumulates.
  int64_t trainable_params() const { return trainable_params_; }
  int64_t macs() const { return macs_; }

 private:
  std::string add_node(std::string_view name, std::string op, std::vector<std::string> inputs,
                       std::map<std::string, Attribute> attrs, Shape out_shape,
                       const std::string& output_name = "");
  std::string pool(std::string_view name, const char* op, const std::string& x,
                   const PoolArgs& args);
  // Fails with kInvalidInput when a windowed op cannot run on x's spatial size.
  void check_window(std::string_view name, const std::string& x, int64_t kernel, int64_t stride,
                    int64_t pad) const;
  std::string add_weight(const std::string& name, Shape shape, bool trainable);
  std::string elementwise_binary(std::string_view name, const char* op, const std::string& a,
                                 const std::string& b);
  [[noreturn]] void internal_error(std::string_view what) const;

  ZooConfig config_;
  InitScheme init_;
  Graph graph_;
  std::unordered_map<std::string, Shape> shapes_;
  std::set<std::string> node_names_;
  int64_t trainable_params_ = 0;
  int64_t macs_ = 0;
};

}  // namespace dlas::zoo
