// dlas-train: the libtorch half of `dlas train` and `dlas prune-sweep`. bin/dlas parses them
// and execs this binary with the same arguments, so only training pays libtorch's start-up.
#include "cli.h"

int main(int argc, char** argv) {
  CLI::App app{
      "dlas-train: the libtorch half of `dlas train` and `dlas prune-sweep` (see their --help)"};
  app.require_subcommand(1);
  dlas::cli::Action run;
  dlas::cli::add_train_command(app, run);
  dlas::cli::add_prune_sweep_command(app, run);
  return dlas::cli::run_app(app, argc, argv, run);
}
