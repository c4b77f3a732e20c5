// The table of `zf` subcommands. Each group lives in cli/commands/.
#include "cli/command.h"
#include "cli/commands/game_commands.h"

namespace zf::cli {

const std::vector<Command>& Commands() {
  static const std::vector<Command>* commands = [] {
    auto* all = new std::vector<Command>();
    for (Command& c : GameCommands()) all->push_back(std::move(c));
    return all;
  }();
  return *commands;
}

}  // namespace zf::cli
