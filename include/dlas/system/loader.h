// Loading a MODEL argument (zoo name or .onnx path) into an inferred graph.
#pragma once

#include <string>

#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"

namespace dlas {

struct LoadOptions {
  ZooOptions zoo;          // used for zoo names
  OnnxImportOptions onnx;  // used for .onnx paths
};

// A zoo name builds the model; anything else is read as an ONNX file, folded
// (fold_constants) and inferred. Errors name the file or node.
Graph load_model(const std::string& model, const LoadOptions& options = {});

}  // namespace dlas
