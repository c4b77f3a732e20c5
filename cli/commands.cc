// The table of `zf` subcommands that run without a network (the `zf` binary, no LibTorch). Each
// group lives in cli/commands/; the network commands are in network_commands.cc (zf-torch).
#include "cli/command.h"
#include "cli/commands/actor_commands.h"
#include "cli/commands/game_commands.h"
#include "cli/commands/gtp_commands.h"
#include "cli/commands/ops_commands.h"
#include "cli/commands/player_commands.h"
#include "cli/commands/ratings_commands.h"
#include "cli/commands/replay_commands.h"

namespace zf::cli {

const std::vector<Command>& LeanCommands() {
  static const std::vector<Command>* commands = [] {
    auto* all = new std::vector<Command>();
    for (Command& c : GameCommands()) all->push_back(std::move(c));
    for (Command& c : PlayerCommands()) all->push_back(std::move(c));
    for (Command& c : GtpCommands()) all->push_back(std::move(c));
    for (Command& c : ActorCommands()) all->push_back(std::move(c));
    for (Command& c : ReplayCommands()) all->push_back(std::move(c));
    for (Command& c : RatingsCommands()) all->push_back(std::move(c));
    for (Command& c : OpsCommands()) all->push_back(std::move(c));
    return all;
  }();
  return *commands;
}

}  // namespace zf::cli
