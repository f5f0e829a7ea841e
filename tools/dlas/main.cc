// dlas: the Deep Learning Acceleration Stack toolkit.
#include <cstdio>
#include <iostream>
#include <new>

#include "cli.h"
#include "dlas/core/version.h"

int main(int argc, char** argv) {
  CLI::App app{"dlas: perturb every layer of the Deep Learning Acceleration Stack and measure it"};
  app.set_version_flag("--version",
                       std::string("dlas ") + DLAS_VERSION + " (" + DLAS_GIT_SHA + ")");
  app.require_subcommand(1);
  dlas::cli::Action run;
  dlas::cli::add_zoo_command(app, run);
  dlas::cli::add_info_command(app, run);
  dlas::cli::add_run_command(app, run);
  dlas::cli::add_export_command(app, run);
  dlas::cli::add_prune_command(app, run);
  dlas::cli::add_quantize_command(app, run);
  dlas::cli::add_eval_command(app, run);
  dlas::cli::add_data_command(app, run);
  dlas::cli::add_train_command(app, run);
  dlas::cli::add_prune_sweep_command(app, run);
  dlas::cli::add_bench_command(app, run);
  dlas::cli::add_profile_command(app, run);
  dlas::cli::add_hw_command(app, run);
  dlas::cli::add_study_command(app, run);
  dlas::cli::add_tune_command(app, run);
  dlas::cli::add_explore_command(app, run);
  return dlas::cli::run_app(app, argc, argv, run);
}
