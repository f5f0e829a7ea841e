// dlas's own CUDA convolution algorithms (DLAS layer 4, docs/gpu.md): fp32, fp16 and bf16, NCHW,
// batch any, every group count. Like the CPU algorithms (conv.h), each one says which problems it
// supports, publishes a knob space and an untuned default point, prepares its weights once
// (transformed and uploaded to the device) and runs on a stream with a fused epilogue
// y = act(conv(x, w) + bias + residual). One list (src/algo/cuda/conv_algorithms_cuda.inc)
// is the only enumeration; the CUDA plan, the tests, the benchmarks and the tuner read it.
//
// Built only with the CUDA backend (DLAS_WITH_CUDA); this header includes no CUDA headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/knobs.h"
#include "dlas/hw/gpu.h"

namespace dlas::cuda {

// FusedConv's / ChannelAffine's `activation`: the CPU engine's enum (conv.h), parsed by
// dlas::parse_activation.
using dlas::Activation;

// The fused tail of a conv (and of the other producers that take one): per output element
// y = act(acc + bias[k] + residual[i]). p0/p1: clip's min/max, hardsigmoid's alpha/beta.
struct Epilogue {
  Activation act = Activation::kNone;
  float p0 = 0, p1 = 0;
  const float* bias = nullptr;      // device [K], or none
  const float* residual = nullptr;  // device, shaped like the output (NCHW), or none
};

// Element type of a conv's input, residual and output: f32, or 16-bit with f32 arithmetic
// (fp16 / bf16 variants; 16-bit weights on the tensor cores of `gemm`).
enum class Storage : int { kF32, kF16, kBF16 };
inline size_t storage_bytes(Storage s) { return s == Storage::kF32 ? 4 : 2; }
const char* storage_name(Storage s);  // "f32", "f16", "bf16"

// One conv problem: input [n][c][h][w], weights [k][c/groups][kh][kw], output
// [n][k][oh][ow]. pad_h/pad_w are the leading pads (ONNX pads[0], pads[1]); the trailing ones
// are implied by oh/ow, so asymmetric padding needs nothing else.
struct ConvShape {
  int64_t n = 1, c = 0, h = 0, w = 0;
  int64_t k = 0, kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t groups = 1;
  int64_t oh = 0, ow = 0;
  // The nonzero share of the weights (1 for dense layers): the auto rule runs the sparse
  // algorithm on weight-pruned layers.
  double density = 1.0;
  // The element type (16-bit: every algorithm but `sparse` runs it, `gemm` on tensor cores).
  Storage storage = Storage::kF32;

  int64_t macs() const { return n * k * oh * ow * (c / groups) * kh * kw; }
  bool depthwise() const { return groups == c && groups == k; }
  // "c64x32x32 k128 3x3 s1 p1 g1": for messages and profiles.
  std::string str() const;
};

// A prepared conv: its weights on the device, in the algorithm's own format.
class ConvKernel {
 public:
  virtual ~ConvKernel() = default;
  // Device scratch one run needs (0: none).
  virtual size_t workspace_bytes() const = 0;
  // Device bytes of the prepared weights.
  virtual size_t weight_bytes() const = 0;
  // x: device input, y: device output (never aliasing x or the residual), workspace: device
  // scratch of workspace_bytes(). x, y and the epilogue's residual hold the shape's storage
  // type (16-bit data passed through these pointers as is); the bias is always f32. Enqueues on
  // `stream` and returns: no allocation, no synchronisation, so a plan can capture it in a CUDA
  // graph.
  virtual void run(const float* x, float* y, void* workspace, const Epilogue& epilogue,
                   cudaStream_t stream) const = 0;
};

struct ConvAlgorithm {
  const char* name;  // "direct", "gemm", "winograd", "depthwise", "sparse"
  const char* doc;   // one line for --help and docs
  bool (*supports)(const ConvShape& shape);
  KnobSpace (*knob_space)(const ConvShape& shape);
  Knobs (*default_knobs)(const ConvShape& shape);
  // weights: host f32 [k][c/groups][kh][kw] (a 16-bit problem's weights widened; they are
  // stored back in its type). Throws kInvalidInput naming the knob for a
  // point outside knob_space, kUnsupported when !supports(shape).
  std::unique_ptr<ConvKernel> (*prepare)(const ConvShape& shape, const Knobs& knobs,
                                         const float* weights);
};

// The list, in its order.
const std::vector<const ConvAlgorithm*>& conv_algorithms();
// nullptr when there is none of that name.
const ConvAlgorithm* find_conv_algorithm(std::string_view name);
// The untuned rule: depthwise for depthwise convs, sparse for weight-pruned layers (density
// at most kSparseDensity), winograd for 3x3 stride-1 dense convs with enough channels and
// pixels to amortise its transforms, gemm otherwise (docs/gpu.md).
inline constexpr double kSparseDensity = 0.25;
const ConvAlgorithm& auto_conv_algorithm(const ConvShape& shape);

// --- the other ops of a CUDA plan (src/algo/cuda/ops.cu); all enqueue on `stream` -----------
// Those with a `storage` argument run on tensors of that type (16-bit data passed through the
// float pointers as is; f32 arithmetic, one rounding per output); the others are f32.

// y[i] = epilogue applied to x[i], for a tensor of `count` elements whose channel (for the
// bias) is (i / inner) % channels.
void apply_epilogue(const float* x, float* y, int64_t count, int64_t channels, int64_t inner,
                    const Epilogue& epilogue, cudaStream_t stream, Storage storage = Storage::kF32);
// ChannelAffine / BatchNormalization: y[n][c][i] = act(x[n][c][i] * scale[c] + shift[c]),
// with x the channel concatenation of `parts` (each [n][c_j][inner]); y [n][sum c_j][inner].
struct ChannelPart {
  const float* data;
  int64_t channels;
};
void channel_affine(const std::vector<ChannelPart>& parts, int64_t n, int64_t inner,
                    const float* scale, const float* shift, Activation act, float p0, float p1,
                    float* y, cudaStream_t stream, Storage storage = Storage::kF32);
// Concatenation along `axis` of row-major tensors: outer = product of dims before axis,
// each part contributes part_dim * inner contiguous elements per outer index.
struct ConcatPart {
  const float* data;
  int64_t dim;  // its extent along the axis
};
void concat(const std::vector<ConcatPart>& parts, int64_t outer, int64_t inner, float* y,
            cudaStream_t stream, Storage storage = Storage::kF32);
// Elementwise binary op with numpy broadcasting (up to 6 dimensions): shapes are given
// right-aligned to out_shape's rank.
enum class BinaryOp : int { kAdd, kSub, kMul, kDiv, kMax, kMin };
void binary(BinaryOp op, const float* a, const std::vector<int64_t>& a_shape, const float* b,
            const std::vector<int64_t>& b_shape, float* y, const std::vector<int64_t>& out_shape,
            cudaStream_t stream, Storage storage = Storage::kF32);
// Converts `count` elements between storage types (f32 <-> f16 / bf16; the same type: a
// copy): ONNX Cast, and the widening around ops that run in f32 on 16-bit values.
void convert(const void* x, Storage from, void* y, Storage to, int64_t count, cudaStream_t stream);
// Unary activations (Relu, Clip, Sigmoid, HardSigmoid, HardSwish, SiLU) over `count`
// elements, and LeakyRelu; in place allowed.
void activation(const float* x, float* y, int64_t count, Activation act, float p0, float p1,
                cudaStream_t stream, Storage storage = Storage::kF32);
void leaky_relu(const float* x, float* y, int64_t count, float alpha, cudaStream_t stream);
// Max / average pooling of NCHW [n][c][h][w] -> [n][c][oh][ow]; pads are the leading ones.
// Average: count_include_pad as ONNX's attribute.
struct PoolShape {
  int64_t n = 1, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t pad_b = 0, pad_r = 0;  // the trailing pads (average pooling's count_include_pad)
};
void max_pool(const float* x, float* y, const PoolShape& s, cudaStream_t stream,
              Storage storage = Storage::kF32);
void average_pool(const float* x, float* y, const PoolShape& s, bool count_include_pad,
                  cudaStream_t stream, Storage storage = Storage::kF32);
// Global average / max over the inner `hw` elements of each of `rows` rows.
void global_pool(const float* x, float* y, int64_t rows, int64_t hw, bool max, cudaStream_t stream,
                 Storage storage = Storage::kF32);
// y[m][n] = act(sum_k A[m][k] * B(k, n) + bias[n]) with B stored [n][k] (trans_b) or [k][n]:
// ONNX Gemm's / MatMul's and the classifier's GEMM. `bias` broadcast along m, or none.
void gemm(const float* a, const float* b, bool trans_b, const float* bias, float* y, int64_t m,
          int64_t n, int64_t k, float alpha, float beta_bias, Activation act, cudaStream_t stream);
// Softmax over the last `cols` elements of each of `rows` rows.
void softmax(const float* x, float* y, int64_t rows, int64_t cols, bool log, cudaStream_t stream);

}  // namespace dlas::cuda
