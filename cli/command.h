// The `zf` command's subcommand table and its flag parsing.
//
// Flags are absl flags (defined next to the subcommand that owns them, shared ones in
// cli/common_flags.h); libraries never read them. Each subcommand names the flags it accepts,
// so `zf perft --moves x` is an error rather than a silently ignored flag, and
// `zf perft --help` lists exactly perft's flags.
//
// Exit codes: 0 success; 2 bad usage or bad input (one line on stderr naming what was wrong);
// 1 any other failure.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace zf::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct Command {
  std::string name;     // e.g. "perft"
  std::string summary;  // one line for `zf help`
  std::string usage;    // e.g. "zf perft --game G --depth D [--json]"
  std::vector<std::string> flags;  // names of the absl flags this command accepts
  // Runs the command after its flags are parsed. `args` are the positional arguments.
  // InvalidArgument becomes exit code 2; any other error exit code 1.
  std::function<absl::Status(const std::vector<std::string>& args)> run;
};

// Every subcommand, in the order `zf help` lists them.
const std::vector<Command>& Commands();

// Parses `args` (flags and positional arguments after the subcommand name) against the flags
// `command` accepts, setting the absl flags. Accepts --name=value, --name value, --bool,
// --nobool and `--` to end flags. Sets *help when --help or -h is present.
// Returns: OK; InvalidArgument naming the unknown flag or the bad value.
absl::Status ParseCommandFlags(const Command& command, const std::vector<std::string>& args,
                               std::vector<std::string>* positional, bool* help);

// The text of `zf COMMAND --help`: usage, summary and each accepted flag with its default.
std::string CommandHelp(const Command& command);

// The text of `zf help`.
std::string GeneralHelp();

// Runs `zf` with argv; returns the process exit code.
int Main(int argc, char** argv);

}  // namespace zf::cli
