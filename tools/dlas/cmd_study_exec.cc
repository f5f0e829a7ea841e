// `dlas study exec-variant` (hidden): the runner's child. It measures one variant and prints
// its columns as one JSON line (src/study/measure.cc does the work).
#include <iostream>
#include <memory>

#include "cli.h"
#include "dlas/hw/isa.h"
#include "dlas/study/runner.h"
#include "dlas/study/store.h"

namespace dlas::cli {

void add_study_exec_command(CLI::App& study, Action& run) {
  auto* x = study.add_subcommand("exec-variant", "");
  x->group("");  // hidden: not for people
  auto xa = std::make_shared<study::MeasureRequest>();
  auto isa = std::make_shared<std::string>();
  Variant& v = xa->variant;
  x->add_option("--model", v.model)->required();
  x->add_option("--model-path", xa->model_path)->required();
  x->add_option("--batch", v.batch);
  x->add_option("--compress", v.compress);
  x->add_option("--backend", v.backend);
  x->add_option("--device", v.device);  // cpu or cuda:N (a GPU this machine lacks: unsupported)
  x->add_option("--conv-algo", v.conv_algo);
  x->add_option("--layout", v.layout)->check(CLI::IsMember({"nchw", "nchwc", "auto"}));
  x->add_option("--opt-level", v.opt_level);
  x->add_option("--isa", *isa)->required();
  x->add_option("--threads", v.threads);
  x->add_option("--schedule", v.schedule);
  x->add_option("--repeat", xa->repeat);
  x->add_option("--warmup", xa->warmup);
  x->add_option("--input-seed", xa->input_seed);
  x->add_option("--dataset", v.dataset);
  x->add_option("--accuracy-limit", xa->accuracy_limit);
  x->add_option("--records-out", xa->records_out);
  x->add_option("--records-in", xa->records_in);
  auto no_score = std::make_shared<bool>(false);
  x->add_flag("--no-score", *no_score);
  auto pre = std::make_shared<PreprocessArgs>();
  add_preprocess_args(*x, *pre);
  x->callback([&run, xa, isa, pre, no_score] {
    run = [xa, isa, pre, no_score] {
      study::MeasureRequest req = *xa;
      req.score = !*no_score;
      req.preprocess = parse_preprocess_args(*pre);
      req.variant.preprocess = req.preprocess.str();
      req.variant.isa = *isa;
      req.variant.accuracy_limit = req.accuracy_limit;
      if (req.variant.backend == "dlas" && req.variant.device == "cpu")
        req.variant.isa_emulated = parse_isa(*isa) < detected_isa();
      std::cout << study::row_to_json(study::measure_variant(req)) << std::endl;
      return 0;
    };
  });
}

}  // namespace dlas::cli
