#include "cli/command.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>
#include <system_error>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "cli/common_flags.h"
#include "cli/network_runtime.h"
#include "common/log_file.h"
#include "common/malloc_tuning.h"

namespace zf::cli {
namespace {

// The flags the last ParseCommandFlags set (FlagGiven).
std::set<std::string, std::less<>>& GivenFlags() {
  static auto* given = new std::set<std::string, std::less<>>();
  return *given;
}

bool Accepts(const Command& command, absl::string_view name) {
  return std::find(command.flags.begin(), command.flags.end(), name) != command.flags.end();
}

}  // namespace

absl::Status ParseCommandFlags(const Command& command, const std::vector<std::string>& args,
                               std::vector<std::string>* positional, bool* help) {
  *help = false;
  GivenFlags().clear();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positional->insert(positional->end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg == "--help" || arg == "-h" || arg == "-help") {
      *help = true;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-' || arg == "-") {
      positional->push_back(arg);
      continue;
    }
    absl::string_view body = arg;
    body.remove_prefix(absl::StartsWith(body, "--") ? 2 : 1);
    std::string name, value;
    bool has_value = false;
    if (size_t eq = body.find('='); eq != absl::string_view::npos) {
      name = std::string(body.substr(0, eq));
      value = std::string(body.substr(eq + 1));
      has_value = true;
    } else {
      name = std::string(body);
    }
    absl::CommandLineFlag* flag =
        Accepts(command, name) ? absl::FindCommandLineFlag(name) : nullptr;
    // --noNAME turns a boolean flag off.
    if (flag == nullptr && !has_value && absl::StartsWith(name, "no") &&
        Accepts(command, name.substr(2))) {
      absl::CommandLineFlag* negated = absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) {
        flag = negated;
        name = name.substr(2);
        value = "false";
        has_value = true;
      }
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, " (see 'zf ", command.name, " --help')"));
    }
    if (!has_value) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad value \"", value, "\" for --", name, ": ", error));
    }
    GivenFlags().insert(name);
  }
  return absl::OkStatus();
}

bool FlagGiven(absl::string_view name) { return GivenFlags().count(name) > 0; }

std::vector<std::string> GivenFlagNames() {
  return std::vector<std::string>(GivenFlags().begin(), GivenFlags().end());
}

std::string CommandHelp(const Command& command) {
  std::string out = absl::StrCat("usage: ", command.usage, "\n\n", command.summary, "\n");
  if (!command.flags.empty()) out += "\nflags:\n";
  for (const std::string& name : command.flags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;
    absl::StrAppend(&out, "  --", name, "  ", flag->Help());
    std::string def = flag->DefaultValue();
    if (!def.empty()) absl::StrAppend(&out, " (default: ", def, ")");
    out += "\n";
  }
  return out;
}

std::string BinaryNextToThisOne(absl::string_view name) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::string file(name);
  return (error ? std::filesystem::path(file) : self.parent_path() / file).string();
}

std::string GeneralHelp(const std::vector<Command>& commands) {
  std::string out =
      "zf: zerofleet, distributed AlphaZero-style training.\n\nusage: zf COMMAND [flags]\n\n"
      "commands:\n";
  size_t width = 4;
  for (const Command& c : commands) width = std::max(width, c.name.size());
  for (const Command& c : commands) {
    absl::StrAppend(&out, "  ", c.name, std::string(width - c.name.size() + 2, ' '), c.summary,
                    "\n");
  }
  absl::StrAppend(&out, "  help", std::string(width - 4 + 2, ' '), "this text\n");
  if (!NetworkRuntimeInstalled()) {
    absl::StrAppend(&out, "\nnot installed here (they need zf-torch, the binary with LibTorch): ",
                    absl::StrJoin(kNetworkCommandNames, ", "), "\n");
  }
  absl::StrAppend(&out, "\n'zf COMMAND --help' lists a command's flags.\n");
  return out;
}

namespace {

bool IsNetworkCommand(absl::string_view name) {
  return std::find(kNetworkCommandNames.begin(), kNetworkCommandNames.end(), name) !=
         kNetworkCommandNames.end();
}

// Replaces this process with zf-torch, same arguments; returns only when that fails.
int HandToNetworkBinary(char** argv, absl::string_view name) {
  const std::string path = BinaryNextToThisOne("zf-torch");
  std::cout.flush();
  std::cerr.flush();
  execv(path.c_str(), argv);
  const int error = errno;
  std::cerr << "zf " << name << ": this runs a network, which only zf-torch (the binary with "
            << "LibTorch) can, and " << path << " cannot be run: " << std::strerror(error) << "\n";
  return kExitFailure;
}

bool NetworkBinaryPresent() { return access(BinaryNextToThisOne("zf-torch").c_str(), X_OK) == 0; }

}  // namespace

int Main(int argc, char** argv, const std::vector<Command>& commands) {
  const bool lean = !NetworkRuntimeInstalled();
  if (argc < 2) {
    std::cerr << GeneralHelp(commands);
    return kExitUsage;
  }
  std::string name = argv[1];
  if (name == "help" || name == "--help" || name == "-h") {
    if (argc >= 3) {
      for (const Command& c : commands) {
        if (c.name == argv[2]) {
          std::cout << CommandHelp(c);
          return kExitOk;
        }
      }
      if (lean && IsNetworkCommand(argv[2])) return HandToNetworkBinary(argv, argv[2]);
    }
    // The full list is zf-torch's, where it is installed.
    if (lean && NetworkBinaryPresent()) return HandToNetworkBinary(argv, name);
    std::cout << GeneralHelp(commands);
    return kExitOk;
  }
  const Command* command = nullptr;
  for (const Command& c : commands) {
    if (c.name == name) command = &c;
  }
  if (command == nullptr && lean && IsNetworkCommand(name)) return HandToNetworkBinary(argv, name);
  if (command == nullptr) {
    std::cerr << "zf: unknown command \"" << name << "\" (see 'zf help')\n";
    return kExitUsage;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  std::vector<std::string> positional;
  bool help = false;
  absl::Status status = ParseCommandFlags(*command, args, &positional, &help);
  if (help) {
    std::cout << CommandHelp(*command);
    return kExitOk;
  }
  // Whether this invocation runs a network: a network command, or one whose runs_network says so
  // for these arguments (command.h). `zf` hands it to zf-torch, which tunes malloc for it below.
  const bool runs_network =
      status.ok() &&
      (IsNetworkCommand(name) || (command->runs_network && command->runs_network(positional)));
  if (lean && runs_network) return HandToNetworkBinary(argv, name);
  // --log_file (the long-running roles): everything to the file, warnings and errors to stderr.
  if (status.ok() &&
      std::find(command->flags.begin(), command->flags.end(), "log_file") != command->flags.end()) {
    if (const std::string path = absl::GetFlag(FLAGS_log_file); !path.empty() && path != "-") {
      status = logging::LogToFile(path);
    }
  }
  // A command that runs a network: glibc's malloc kept from handing tensor-sized buffers back to
  // the kernel after every step, before the command starts its threads (common/malloc_tuning.h).
  // The others (replay shards, lean actors, GNU Go matches) keep glibc's defaults.
  if (status.ok() && runs_network) status = TuneMallocForTensors().status();
  if (status.ok()) status = command->run(positional);
  if (status.ok()) return kExitOk;
  // One line: newlines inside a message would break the contract with scripts.
  std::string message(status.message());
  std::replace(message.begin(), message.end(), '\n', ' ');
  std::cerr << "zf " << name << ": " << message << "\n";
  std::cout.flush();
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

}  // namespace zf::cli
