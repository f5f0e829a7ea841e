// Internal: the per-ISA FLOP/s probes and the bandwidth kernels behind dlas::peak().
#pragma once

#include <cstddef>
#include <cstdint>

namespace dlas::peak_detail {

// Independent multiply-add chains per probe: enough to cover FMA latency x throughput
// (Zen3/Skylake-X: 4 cycles x 2 FMA pipes = 8 in flight) with margin, and few enough
// to stay in registers (16 ymm / 32 zmm).
inline constexpr int kChains = 12;

// Each runs `iters` iterations of kChains chains and returns a value that depends on
// every chain (so nothing is optimised away). FLOPs = iters * kChains * lanes * 2.
float fma_probe_scalar(int64_t iters);
float fma_probe_avx2(int64_t iters);
float fma_probe_avx512(int64_t iters);

// The low-precision units (peak_unit__<isa>.cc), each `iters` iterations of its loop:
// operations (2 x products) = iters x kChains x (vnni_int8: 128, bf16_dot: 64, fp16: 64)
// for the vector units, iters x 4 tiles x (amx_int8: 32768, amx_bf16: 16384) for AMX.
float unit_probe_vnni_int8(int64_t iters);
float unit_probe_bf16_dot(int64_t iters);
float unit_probe_fp16(int64_t iters);
float unit_probe_amx_int8(int64_t iters);
float unit_probe_amx_bf16(int64_t iters);

// Bandwidth kernels over [0, n) floats; n is a multiple of 64.
float read_sum(const float* a, size_t n);
void triad(float* a, const float* b, const float* c, float s, size_t n);

}  // namespace dlas::peak_detail
