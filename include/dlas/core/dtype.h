// Element types and the 16-bit float conversions every layer shares.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace dlas {

// kBool: one byte per value, 0 or 1 (ONNX BOOL: comparisons, masks and Where's condition).
enum class DType : uint8_t { kF32, kF16, kBF16, kS8, kU8, kS32, kS64, kBool };

inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kS8,
                                       DType::kU8,  DType::kS32, DType::kS64,  DType::kBool};

size_t dtype_size(DType t);
// Short lowercase name: "f32", "f16", "bf16", "s8", "u8", "s32", "s64", "bool".
const char* dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
bool is_float(DType t);
// ONNX TensorProto.DataType codes (FLOAT=1, UINT8=2, INT8=3, INT32=6, INT64=7,
// BOOL=9, FLOAT16=10, BFLOAT16=16). nullopt for codes dlas has no dtype for.
std::optional<DType> dtype_from_onnx(int code);
int dtype_to_onnx(DType t);

// IEEE binary16 <-> binary32, round to nearest even; NaN/Inf preserved.
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);

// bfloat16 <-> binary32, round to nearest even; NaN stays NaN.
inline float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// Maps a C++ element type to its DType (uint16_t is ambiguous: use DType directly).
template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::kS8;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kU8;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kS32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kS64;
};

}  // namespace dlas
