// The table of zf-torch: every `zf` subcommand, the network ones (which link LibTorch) after
// those of `zf` (commands.cc).
#include "cli/command.h"
#include "cli/commands/bench_commands.h"
#include "cli/commands/evaluator_commands.h"
#include "cli/commands/inference_commands.h"
#include "cli/commands/learner_commands.h"
#include "cli/commands/model_commands.h"
#include "cli/commands/run_commands.h"

namespace zf::cli {

const std::vector<Command>& AllCommands() {
  static const std::vector<Command>* commands = [] {
    auto* all = new std::vector<Command>(LeanCommands());
    for (Command& c : ModelCommands()) all->push_back(std::move(c));
    for (Command& c : InferenceCommands()) all->push_back(std::move(c));
    for (Command& c : LearnerCommands()) all->push_back(std::move(c));
    for (Command& c : EvaluatorCommands()) all->push_back(std::move(c));
    for (Command& c : RunCommands()) all->push_back(std::move(c));
    for (Command& c : BenchCommands()) all->push_back(std::move(c));
    return all;
  }();
  return *commands;
}

}  // namespace zf::cli
