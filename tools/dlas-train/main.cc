// dlas-train: the libtorch half of `dlas train`. bin/dlas parses `dlas train ...` and execs
// this binary with the same arguments, so only training pays libtorch's start-up.
#include <iostream>
#include <new>

#include "cli.h"

int main(int argc, char** argv) {
  CLI::App app{"dlas-train: the libtorch half of `dlas train` (run `dlas train --help`)"};
  app.require_subcommand(1);
  dlas::cli::Action run;
  dlas::cli::add_train_command(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    return run ? run() : 2;
  } catch (const dlas::Error& e) {
    std::cerr << "dlas: error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    std::cerr << "dlas: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "dlas: internal error: " << e.what() << "\n";
    return 1;
  }
}
