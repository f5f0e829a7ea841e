// AMX probes: four accumulator tiles fed by two A and two B tiles (the 32x32 tile of the
// dlas AMX kernels), tdpbsud (int8: 16 x 16 x 64 products per instruction) or tdpbf16ps
// (bf16: 16 x 16 x 32), operands held in the tiles. The caller has obtained the tile-data
// permission (dlas/hw/amx.h).
#include <immintrin.h>

#include <cstdint>

#include "dlas/hw/amx_tiles.h"
#include "hw/peak/peak_probes.h"

namespace dlas::peak_detail {
namespace {

template <bool Int8>
float amx_probe(int64_t iters) {
  alignas(64) static const uint8_t zeros[16 * 64] = {};
  alignas(64) float out[16 * 16];
  AmxTiles::configure();
  AmxTiles::zero<0>();
  AmxTiles::zero<1>();
  AmxTiles::zero<2>();
  AmxTiles::zero<3>();
  AmxTiles::load<4>(zeros, 64);
  AmxTiles::load<5>(zeros, 64);
  AmxTiles::load<6>(zeros, 64);
  AmxTiles::load<7>(zeros, 64);
  for (int64_t it = 0; it < iters; ++it) {
    if constexpr (Int8) {
      _tile_dpbsud(0, 4, 6);
      _tile_dpbsud(1, 4, 7);
      _tile_dpbsud(2, 5, 6);
      _tile_dpbsud(3, 5, 7);
    } else {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  AmxTiles::store<3>(out, 64);
  _tile_release();
  return out[0];
}

}  // namespace

float unit_probe_amx_int8(int64_t iters) { return amx_probe<true>(iters); }
float unit_probe_amx_bf16(int64_t iters) { return amx_probe<false>(iters); }

}  // namespace dlas::peak_detail
