// The vendor libraries behind `--backend cudnn` (docs/gpu.md): cuDNN's convolution, with
// the algorithm cuDNN's own search finds fastest for each layer at compile time (what
// PyTorch's cudnn.benchmark does), and cuBLAS's SGEMM for Gemm / MatMul. f32 layers in strict
// fp32 (no TF32), 16-bit layers on tensor cores with f32 accumulation, as dlas's own kernels.
// Private to the CUDA plan.
#pragma once

#include <memory>
#include <string>

#include "dlas/algo/cuda_conv.h"

typedef struct cudnnContext* cudnnHandle_t;
typedef struct cublasContext* cublasHandle_t;

namespace dlas::cuda {

// A cuDNN and a cuBLAS handle bound to one stream.
class VendorHandles {
 public:
  explicit VendorHandles(cudaStream_t stream);
  ~VendorHandles();
  VendorHandles(const VendorHandles&) = delete;
  VendorHandles& operator=(const VendorHandles&) = delete;
  cudnnHandle_t cudnn() const { return cudnn_; }
  cublasHandle_t cublas() const { return cublas_; }

 private:
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  DeviceBuffer cublas_workspace_;  // given to cuBLAS, so it allocates nothing during capture
};

// The conv through cuDNN (any storage type): its fused conv + bias + residual + ReLU where
// the epilogue is at most that, else cuDNN's conv followed by dlas's epilogue kernel. `bias`
// (host, [k], or null): the layer's bias, which the fused call takes in the data's type.
// Returns nullptr and sets *why when cuDNN cannot take the shape as given (asymmetric
// padding).
std::unique_ptr<ConvKernel> make_cudnn_conv(const VendorHandles& handles, const ConvShape& shape,
                                            const float* weights, const float* bias,
                                            std::string* why);
// The cuDNN algorithm a prepared cuDNN conv runs ("implicit-precomp-gemm", "winograd", ...).
std::string cudnn_algo_name(const ConvKernel& kernel);

// y[m][n] = sum_k a[m][k] * b(k, n) (+ bias[n] through dlas's epilogue kernel), b stored
// [n][k] when trans_b, else [k][n]: cublasSgemm on row-major data.
void cublas_gemm(const VendorHandles& handles, const float* a, const float* b, bool trans_b,
                 const float* bias, float* y, int64_t m, int64_t n, int64_t k, float alpha,
                 cudaStream_t stream);

}  // namespace dlas::cuda
