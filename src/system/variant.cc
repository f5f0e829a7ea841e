#include "dlas/system/variant.h"

#include <cstdio>

namespace dlas {

std::string Variant::str() const {
  std::string s = "model=" + model + ";batch=" + std::to_string(batch) + ";compress=" + compress +
                  ";backend=" + backend + ";conv=" + conv_algo + ";schedule=" + schedule +
                  ";opt=" + std::to_string(opt_level) + ";isa=" + isa +
                  ";threads=" + std::to_string(threads);
  if (isa_emulated) s += ";emulated";
  if (device != "cpu") s += ";device=" + device;
  if (layout != "auto") s += ";layout=" + layout;
  if (!dataset.empty()) s += ";dataset=" + dataset + ";limit=" + std::to_string(accuracy_limit);
  if (!dataset.empty() && !preprocess.empty()) s += ";preprocess=" + preprocess;
  return s;
}

uint64_t Variant::hash() const {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : str()) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string Variant::hash_hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash()));
  return buf;
}

}  // namespace dlas
