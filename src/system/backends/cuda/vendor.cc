// cuDNN's convolution and cuBLAS's SGEMM for the CUDA plan's vendor backend (vendor.h). The
// only translation unit that sees cuDNN and cuBLAS headers. cuDNN's legacy convolution API
// is deprecated in cuDNN 9 but kept; it is what PyTorch's cudnn.benchmark path calls.
#include "system/backends/cuda/vendor.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <vector>

#include "dlas/core/dtype.h"
#include "dlas/core/error.h"

namespace dlas::cuda {
namespace {

void check_cudnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS)
    fail(ErrorKind::kRuntime, "cuDNN ", what, ": ", cudnnGetErrorString(s));
}

void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fail(ErrorKind::kRuntime, "cuBLAS ", what, ": status ", static_cast<int>(s));
}

const char* fwd_algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "implicit-gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "implicit-precomp-gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "fft";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "fft-tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "winograd-nonfused";
    default:
      return "other";
  }
}

// The most workspace a layer's cuDNN algorithm may take.
constexpr size_t kMaxWorkspace = size_t{1} << 30;

cudnnDataType_t cudnn_type(Storage s) {
  return s == Storage::kF16    ? CUDNN_DATA_HALF
         : s == Storage::kBF16 ? CUDNN_DATA_BFLOAT16
                               : CUDNN_DATA_FLOAT;
}

// `count` f32 values on the device in storage type `s` (16-bit rounded to nearest even).
DeviceBuffer upload_as(const float* v, size_t count, Storage s, const char* what) {
  if (s == Storage::kF32) return upload_floats(v, count, what);
  std::vector<uint16_t> bits(count);
  for (size_t i = 0; i < count; ++i)
    bits[i] = s == Storage::kF16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
  DeviceBuffer b(count * sizeof(uint16_t), what);
  b.upload(bits.data(), count * sizeof(uint16_t));
  return b;
}

class CudnnConv : public ConvKernel {
 public:
  CudnnConv(const VendorHandles& h, const ConvShape& s, const float* weights, const float* bias)
      : h_(h), s_(s) {
    const cudnnDataType_t dt = cudnn_type(s.storage);
    check_cudnn(cudnnCreateTensorDescriptor(&x_desc_), "tensor descriptor");
    check_cudnn(cudnnCreateTensorDescriptor(&y_desc_), "tensor descriptor");
    check_cudnn(cudnnCreateTensorDescriptor(&b_desc_), "tensor descriptor");
    check_cudnn(cudnnCreateFilterDescriptor(&w_desc_), "filter descriptor");
    check_cudnn(cudnnCreateConvolutionDescriptor(&conv_desc_), "convolution descriptor");
    check_cudnn(cudnnCreateActivationDescriptor(&act_desc_), "activation descriptor");
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    check_cudnn(
        cudnnSetTensor4dDescriptor(x_desc_, CUDNN_TENSOR_NCHW, dt, i(s.n), i(s.c), i(s.h), i(s.w)),
        "input descriptor");
    check_cudnn(cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NCHW, dt, i(s.n), i(s.k), i(s.oh),
                                           i(s.ow)),
                "output descriptor");
    // The fused call's bias has the data's type (cuDNN's pseudo-half configurations).
    check_cudnn(cudnnSetTensor4dDescriptor(b_desc_, CUDNN_TENSOR_NCHW, dt, 1, i(s.k), 1, 1),
                "bias descriptor");
    check_cudnn(cudnnSetFilter4dDescriptor(w_desc_, dt, CUDNN_TENSOR_NCHW, i(s.k),
                                           i(s.c / s.groups), i(s.kh), i(s.kw)),
                "filter descriptor");
    check_cudnn(cudnnSetConvolution2dDescriptor(conv_desc_, i(s.pad_h), i(s.pad_w), i(s.stride_h),
                                                i(s.stride_w), i(s.dil_h), i(s.dil_w),
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                "convolution descriptor");
    check_cudnn(cudnnSetConvolutionGroupCount(conv_desc_, i(s.groups)), "group count");
    // f32: strict fp32, no TF32 tensor cores, the same arithmetic as dlas's kernels. 16-bit:
    // f32 accumulation on the tensor cores, as dlas's.
    check_cudnn(cudnnSetConvolutionMathType(
                    conv_desc_, s.storage == Storage::kF32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
                "math type");
    check_cudnn(cudnnSetActivationDescriptor(act_desc_, CUDNN_ACTIVATION_RELU,
                                             CUDNN_NOT_PROPAGATE_NAN, 0.0),
                "activation descriptor");
    int on = 0, oc = 0, ohh = 0, oww = 0;
    check_cudnn(
        cudnnGetConvolution2dForwardOutputDim(conv_desc_, x_desc_, w_desc_, &on, &oc, &ohh, &oww),
        "output size");
    DLAS_CHECK(on == s.n && oc == s.k && ohh == s.oh && oww == s.ow, ErrorKind::kInternal,
               "cuDNN output size ", on, "x", oc, "x", ohh, "x", oww, " differs from ", s.str());

    const size_t wcount = static_cast<size_t>(s.k * (s.c / s.groups) * s.kh * s.kw);
    weights_ = upload_as(weights, wcount, s.storage, "cuDNN conv weights");
    std::vector<float> b(static_cast<size_t>(s.k), 0.f);
    if (bias) std::copy(bias, bias + s.k, b.begin());
    has_bias_ = bias != nullptr;
    bias_ = upload_as(b.data(), b.size(), s.storage, "cuDNN conv bias");

    // cuDNN's own search: it times each algorithm on this shape (cudnn.benchmark).
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    check_cudnn(
        cudnnFindConvolutionForwardAlgorithm(h.cudnn(), x_desc_, w_desc_, conv_desc_, y_desc_,
                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
        "algorithm search");
    bool found = false;
    for (int r = 0; r < returned && !found; ++r) {
      if (perf[r].status != CUDNN_STATUS_SUCCESS || perf[r].memory > kMaxWorkspace) continue;
      algo_ = perf[r].algo;
      workspace_ = perf[r].memory;
      found = true;
    }
    DLAS_CHECK(found, ErrorKind::kUnsupported, "cuDNN has no algorithm for conv ", s.str());
  }

  ~CudnnConv() override {
    cudnnDestroyActivationDescriptor(act_desc_);
    cudnnDestroyConvolutionDescriptor(conv_desc_);
    cudnnDestroyFilterDescriptor(w_desc_);
    cudnnDestroyTensorDescriptor(b_desc_);
    cudnnDestroyTensorDescriptor(y_desc_);
    cudnnDestroyTensorDescriptor(x_desc_);
  }

  size_t workspace_bytes() const override { return workspace_; }
  size_t weight_bytes() const override { return weights_.bytes() + bias_.bytes(); }
  std::string algo_name() const { return fwd_algo_name(algo_); }

  void run(const float* x, float* y, void* workspace, const Epilogue& e,
           cudaStream_t stream) const override {
    const float one = 1.f, zero = 0.f;
    check_cudnn(cudnnSetStream(h_.cudnn(), stream), "set stream");
    // The fused call adds the bias given at prepare (in the data's type): a run's bias must
    // be that one, or absent.
    if (e.act == Activation::kRelu && fused_ok_ && (has_bias_ || !e.bias)) {
      // y = relu(conv + residual + bias) in one cuDNN call.
      const float alpha2 = e.residual ? 1.f : 0.f;
      const cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
          h_.cudnn(), &one, x_desc_, x, w_desc_, weights_.get(), conv_desc_, algo_, workspace,
          workspace_, &alpha2, y_desc_, e.residual ? static_cast<const void*>(e.residual) : y,
          b_desc_, bias_.get(), act_desc_, y_desc_, y);
      if (st == CUDNN_STATUS_SUCCESS) return;
      // Not every engine fuses: from now on this layer runs unfused.
      fused_ok_ = false;
    }
    check_cudnn(
        cudnnConvolutionForward(h_.cudnn(), &one, x_desc_, x, w_desc_, weights_.get(), conv_desc_,
                                algo_, workspace, workspace_, &zero, y_desc_, y),
        "convolution");
    if (e.bias || e.residual || e.act != Activation::kNone)
      apply_epilogue(y, y, s_.n * s_.k * s_.oh * s_.ow, s_.k, s_.oh * s_.ow, e, stream, s_.storage);
  }

 private:
  const VendorHandles& h_;
  ConvShape s_;
  cudnnTensorDescriptor_t x_desc_ = nullptr, y_desc_ = nullptr, b_desc_ = nullptr;
  cudnnFilterDescriptor_t w_desc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_desc_ = nullptr;
  cudnnActivationDescriptor_t act_desc_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace_ = 0;
  DeviceBuffer weights_, bias_;  // bias_: the prepare-time bias, or zeros
  bool has_bias_ = false;
  mutable bool fused_ok_ = true;
};

}  // namespace

VendorHandles::VendorHandles(cudaStream_t stream) {
  check_cudnn(cudnnCreate(&cudnn_), "create");
  check_cudnn(cudnnSetStream(cudnn_, stream), "set stream");
  check_cublas(cublasCreate(&cublas_), "create");
  check_cublas(cublasSetStream(cublas_, stream), "set stream");
  check_cublas(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH), "math mode");
  cublas_workspace_ = DeviceBuffer(size_t{4} << 20, "cuBLAS workspace");
  check_cublas(cublasSetWorkspace(cublas_, cublas_workspace_.get(), cublas_workspace_.bytes()),
               "workspace");
}

VendorHandles::~VendorHandles() {
  if (cublas_) cublasDestroy(cublas_);
  if (cudnn_) cudnnDestroy(cudnn_);
}

std::unique_ptr<ConvKernel> make_cudnn_conv(const VendorHandles& handles, const ConvShape& s,
                                            const float* weights, const float* bias,
                                            std::string* why) {
  // cuDNN pads both sides equally: the trailing pads must equal the leading ones.
  const int64_t want_oh = (s.h + 2 * s.pad_h - s.dil_h * (s.kh - 1) - 1) / s.stride_h + 1;
  const int64_t want_ow = (s.w + 2 * s.pad_w - s.dil_w * (s.kw - 1) - 1) / s.stride_w + 1;
  if (want_oh != s.oh || want_ow != s.ow) {
    if (why) *why = "asymmetric padding (cuDNN pads both sides equally)";
    return nullptr;
  }
  return std::make_unique<CudnnConv>(handles, s, weights, bias);
}

std::string cudnn_algo_name(const ConvKernel& kernel) {
  const auto* c = dynamic_cast<const CudnnConv*>(&kernel);
  return c ? "cudnn:" + c->algo_name() : "";
}

void cublas_gemm(const VendorHandles& h, const float* a, const float* b, bool trans_b,
                 const float* bias, float* y, int64_t m, int64_t n, int64_t k, float alpha,
                 cudaStream_t stream) {
  // Row-major y[m][n] is column-major y^T (n x m) = b^T-view x a-view.
  const float zero = 0.f;
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  check_cublas(cublasSetStream(h.cublas(), stream), "set stream");
  if (trans_b) {  // b [n][k]: column-major k x n, transposed
    check_cublas(cublasSgemm(h.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, i(n), i(m), i(k), &alpha, b,
                             i(k), a, i(k), &zero, y, i(n)),
                 "sgemm");
  } else {  // b [k][n]: column-major n x k
    check_cublas(cublasSgemm(h.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, i(n), i(m), i(k), &alpha, b,
                             i(n), a, i(k), &zero, y, i(n)),
                 "sgemm");
  }
  if (bias) {
    Epilogue e;
    e.bias = bias;
    apply_epilogue(y, y, m * n, n, 1, e, stream);
  }
}

}  // namespace dlas::cuda
