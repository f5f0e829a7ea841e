// libFuzzer entry point: the .npy parser must turn any byte string into a tensor
// or a dlas::Error; an accepted tensor must survive serialise -> parse unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "dlas/core/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  dlas::Tensor t;
  try {
    t = dlas::parse_npy(bytes, "fuzz.npy");
  } catch (const dlas::Error&) {
    return 0;  // rejected cleanly
  }
  try {
    const dlas::Tensor back = dlas::parse_npy(dlas::serialize_npy(t), "round_trip.npy");
    if (t.dtype() != dlas::DType::kBF16 &&
        (back.dtype() != t.dtype() || back.shape() != t.shape() ||
         std::memcmp(back.raw(), t.raw(), t.nbytes()) != 0)) {
      std::fprintf(stderr, "npy round trip changed %s into %s\n", t.describe().c_str(),
                   back.describe().c_str());
      std::abort();
    }
  } catch (const dlas::Error& e) {
    std::fprintf(stderr, "npy round trip of an accepted tensor failed: %s\n", e.what());
    std::abort();
  }
  return 0;
}
