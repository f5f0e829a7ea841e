#include "dlas/core/dtype.h"

namespace dlas {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
      return 4;
    case DType::kF16:
      return 2;
    case DType::kBF16:
      return 2;
    case DType::kS8:
      return 1;
    case DType::kU8:
      return 1;
    case DType::kS32:
      return 4;
    case DType::kS64:
      return 8;
    case DType::kBool:
      return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kS8:
      return "s8";
    case DType::kU8:
      return "u8";
    case DType::kS32:
      return "s32";
    case DType::kS64:
      return "s64";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType t : kAllDTypes)
    if (name == dtype_name(t)) return t;
  return std::nullopt;
}

std::optional<DType> dtype_from_onnx(int code) {
  switch (code) {
    case 1:
      return DType::kF32;
    case 2:
      return DType::kU8;
    case 3:
      return DType::kS8;
    case 6:
      return DType::kS32;
    case 7:
      return DType::kS64;
    case 9:
      return DType::kBool;
    case 10:
      return DType::kF16;
    case 16:
      return DType::kBF16;
    default:
      return std::nullopt;
  }
}

int dtype_to_onnx(DType t) {
  switch (t) {
    case DType::kF32:
      return 1;
    case DType::kU8:
      return 2;
    case DType::kS8:
      return 3;
    case DType::kS32:
      return 6;
    case DType::kS64:
      return 7;
    case DType::kBool:
      return 9;
    case DType::kF16:
      return 10;
    case DType::kBF16:
      return 16;
  }
  return 0;
}

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> Inf
  if (x < 0x38800000u) {                                      // result is subnormal or zero
    if (x < 0x33000000u) return static_cast<uint16_t>(sign);  // below half of min subnormal
    const uint32_t e = x >> 23;
    const uint32_t m = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 - (e - 127) + 10 + ... aligns to 2^-24 units
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  // normal: rebias exponent 127 -> 15 and round mantissa 23 -> 10 bits
  uint32_t r = x - 0x38000000u;
  const uint32_t rem = r & 0x1fffu;
  r >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  uint32_t u;
  if (e == 0) {
    if (m == 0) {
      u = sign;
    } else {  // subnormal: normalise
      e = 113;
      while (!(m & 0x400u)) {
        m <<= 1;
        --e;
      }
      u = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
  } else if (e == 31) {
    u = sign | 0x7f800000u | (m << 13);
  } else {
    u = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace dlas
