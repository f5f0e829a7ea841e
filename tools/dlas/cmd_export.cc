#include <iostream>

#include "cli.h"

namespace dlas::cli {

void add_export_command(CLI::App& app, Action& run) {
  auto* cmd =
      app.add_subcommand("export", "Write a model (zoo or ONNX) as an ONNX file (opset 13)");
  auto args = std::make_shared<ModelArgs>();
  auto out = std::make_shared<std::string>();
  add_model_args(*cmd, *args);
  cmd->add_option("-o,--output", *out, "output .onnx path")->required();
  cmd->callback([&run, args, out] {
    run = [args, out] {
      const Graph g = load_model_from_args(*args);
      export_onnx_file(g, *out);
      std::cout << "wrote " << *out << " (" << g.nodes.size() << " nodes, "
                << with_commas(g.param_count()) << " params)\n";
      return 0;
    };
  });
}

}  // namespace dlas::cli
