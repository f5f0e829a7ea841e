// libFuzzer entry point: ONNX import (+ shape inference and an export round trip)
// must turn any byte string into a graph or a dlas::Error, never a crash, a hang
// or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "dlas/model/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  dlas::Graph graph;
  try {
    graph = dlas::import_onnx_bytes(bytes, "fuzz.onnx");
    graph.infer();
  } catch (const dlas::Error&) {
    return 0;  // rejected cleanly
  }
  // An inferred graph must survive export -> import -> infer unchanged in shape.
  try {
    dlas::Graph back = dlas::import_onnx_bytes(dlas::export_onnx_bytes(graph), "round_trip.onnx");
    back.infer();
    for (const auto& out : graph.outputs) {
      if (back.value(out).shape != graph.value(out).shape) {
        std::fprintf(stderr, "round trip changed the shape of output '%s'\n", out.c_str());
        std::abort();
      }
    }
  } catch (const dlas::Error& e) {
    std::fprintf(stderr, "round trip of an accepted model failed: %s\n", e.what());
    std::abort();
  }
  return 0;
}
