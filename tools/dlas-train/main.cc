// dlas-train: the libtorch half of `dlas train`. bin/dlas parses `dlas train ...` and execs
// this binary with the same arguments, so only training pays libtorch's start-up.
#include "cli.h"

int main(int argc, char** argv) {
  CLI::App app{"dlas-train: the libtorch half of `dlas train` (run `dlas train --help`)"};
  app.require_subcommand(1);
  dlas::cli::Action run;
  dlas::cli::add_train_command(app, run);
  return dlas::cli::run_app(app, argc, argv, run);
}
