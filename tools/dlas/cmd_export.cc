#include <iostream>

#include "cli.h"

namespace dlas::cli {

void add_export_command(CLI::App& app, Action& run) {
  auto* cmd =
      app.add_subcommand("export", "Write a model (zoo or ONNX) as an ONNX file (opset 13)");
  auto args = std::make_shared<ModelArgs>();
  auto out = std::make_shared<std::string>();
  auto external = std::make_shared<bool>(false);
  add_model_args(*cmd, *args);
  cmd->add_option("-o,--output", *out, "output .onnx path")->required();
  cmd->add_flag("--external-data", *external,
                "write the weights to OUTPUT.data beside the model (ONNX external data); "
                "automatic above 1.5 GiB of weights");
  cmd->callback([&run, args, out, external] {
    run = [args, out, external] {
      const Graph g = load_model_from_args(*args);
      export_onnx_file(g, *out, *external);
      const bool side = *external || g.weight_bytes() >= kExternalDataThreshold;
      std::cout << "wrote " << *out << (side ? " and " + *out + ".data" : std::string()) << " ("
                << g.nodes.size() << " nodes, " << with_commas(g.param_count()) << " params)\n";
      return 0;
    };
  });
}

}  // namespace dlas::cli
