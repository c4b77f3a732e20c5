// The `zf` command's subcommand table and its flag parsing.
//
// Flags are absl flags (defined next to the subcommand that owns them, shared ones in
// cli/common_flags.h); libraries never read them. Each subcommand names the flags it accepts,
// so `zf perft --moves x` is an error rather than a silently ignored flag, and
// `zf perft --help` lists exactly perft's flags.
//
// Two binaries run the commands (cli/network_runtime.h): `zf`, without LibTorch, runs every
// command that needs no network and hands the others to `zf-torch`, the binary next to it that
// has every command: execv with the same arguments, so the PID, signals and exit code are the
// command's own. A command needs a network when it is one of kNetworkCommandNames (`zf` does not
// link them) or when its Command::runs_network says so for the arguments given (`zf match --p1
// net:...`, `zf actor --local`).
//
// Exit codes: 0 success; 2 bad usage or bad input (one line on stderr naming what was wrong);
// 1 any other failure.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace zf::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct Command {
  std::string name;                // e.g. "perft"
  std::string summary;             // one line for `zf help`
  std::string usage;               // e.g. "zf perft --game G --depth D [--json]"
  std::vector<std::string> flags;  // names of the absl flags this command accepts
  // Runs the command after its flags are parsed. `args` are the positional arguments.
  // InvalidArgument becomes exit code 2; any other error exit code 1.
  std::function<absl::Status(const std::vector<std::string>& args)> run;
  // Whether this invocation runs a network, asked after the flags are parsed (with the
  // positional arguments): then `zf` hands it to zf-torch. Null: never.
  std::function<bool(const std::vector<std::string>& args)> runs_network;
};

// The commands only zf-torch has (network_commands.cc; a test checks the two lists agree).
inline constexpr std::array<absl::string_view, 6> kNetworkCommandNames = {
    "checkpoint", "inference", "learner", "evaluator", "run", "bench"};

// The commands of `zf` (commands.cc), in the order `zf help` lists them.
const std::vector<Command>& LeanCommands();
// The commands of zf-torch (network_commands.cc): LeanCommands() and the network commands.
const std::vector<Command>& AllCommands();

// `name` in the directory of this process's executable (/proc/self/exe), e.g. the zf-torch
// next to zf.
std::string BinaryNextToThisOne(absl::string_view name);

// Parses `args` (flags and positional arguments after the subcommand name) against the flags
// `command` accepts, setting the absl flags. Accepts --name=value, --name value, --bool,
// --nobool and `--` to end flags. Sets *help when --help or -h is present.
// Returns: OK; InvalidArgument naming the unknown flag or the bad value.
absl::Status ParseCommandFlags(const Command& command, const std::vector<std::string>& args,
                               std::vector<std::string>* positional, bool* help);

// Whether the last ParseCommandFlags set the flag `name` (in any spelling: --name, --name=v,
// --noname): how a command tells a flag given at its default value from one not given, e.g.
// `zf run --game go --noaux_heads` against Go's default of aux heads on.
bool FlagGiven(absl::string_view name);

// Every flag the last ParseCommandFlags set, by name in sorted order (as FlagGiven spells them).
std::vector<std::string> GivenFlagNames();

// The text of `zf COMMAND --help`: usage, summary and each accepted flag with its default.
std::string CommandHelp(const Command& command);

// The text of `zf help` for a binary with `commands`.
std::string GeneralHelp(const std::vector<Command>& commands);

// Runs `zf` with argv over the commands this binary has (LeanCommands() in zf, AllCommands() in
// zf-torch); returns the process exit code. Where the network runtime is not installed
// (NetworkRuntimeInstalled()), hands network commands to zf-torch as above; when that binary is
// missing, exit code 1 with one line naming the path it looked for.
int Main(int argc, char** argv, const std::vector<Command>& commands);

}  // namespace zf::cli
