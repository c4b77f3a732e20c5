// The table of `zf` subcommands. Each group lives in cli/commands/.
#include "cli/command.h"
#include "cli/commands/actor_commands.h"
#include "cli/commands/evaluator_commands.h"
#include "cli/commands/game_commands.h"
#include "cli/commands/gtp_commands.h"
#include "cli/commands/inference_commands.h"
#include "cli/commands/learner_commands.h"
#include "cli/commands/model_commands.h"
#include "cli/commands/ops_commands.h"
#include "cli/commands/player_commands.h"
#include "cli/commands/replay_commands.h"
#include "cli/commands/run_commands.h"

namespace zf::cli {

const std::vector<Command>& Commands() {
  static const std::vector<Command>* commands = [] {
    auto* all = new std::vector<Command>();
    for (Command& c : GameCommands()) all->push_back(std::move(c));
    for (Command& c : PlayerCommands()) all->push_back(std::move(c));
    for (Command& c : ModelCommands()) all->push_back(std::move(c));
    for (Command& c : InferenceCommands()) all->push_back(std::move(c));
    for (Command& c : ReplayCommands()) all->push_back(std::move(c));
    for (Command& c : ActorCommands()) all->push_back(std::move(c));
    for (Command& c : LearnerCommands()) all->push_back(std::move(c));
    for (Command& c : EvaluatorCommands()) all->push_back(std::move(c));
    for (Command& c : GtpCommands()) all->push_back(std::move(c));
    for (Command& c : RunCommands()) all->push_back(std::move(c));
    for (Command& c : OpsCommands()) all->push_back(std::move(c));
    return all;
  }();
  return *commands;
}

}  // namespace zf::cli
