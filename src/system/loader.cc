#include "dlas/system/loader.h"

#include "dlas/system/passes.h"

namespace dlas {

Graph load_model(const std::string& model, const LoadOptions& options) {
  if (find_zoo_model(model)) return build_zoo_model(model, options.zoo);
  const bool looks_like_path = model.find('/') != std::string::npos ||
                               (model.size() > 5 && model.substr(model.size() - 5) == ".onnx");
  if (!looks_like_path) {
    std::string names;
    for (const auto& e : zoo_models()) names += (names.empty() ? "" : ", ") + e.name;
    fail(ErrorKind::kInvalidInput, "unknown model '", model, "': not a zoo model (", names,
         ") and not an .onnx path");
  }
  Graph g = import_onnx_file(model, options.onnx);
  try {
    fold_constants(g);
  } catch (const Error& e) {
    throw Error(e.kind(), model + ": " + e.what());
  }
  return g;
}

}  // namespace dlas
