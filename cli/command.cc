#include "cli/command.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "cli/common_flags.h"
#include "common/log_file.h"

namespace zf::cli {
namespace {

bool Accepts(const Command& command, absl::string_view name) {
  return std::find(command.flags.begin(), command.flags.end(), name) != command.flags.end();
}

}  // namespace

absl::Status ParseCommandFlags(const Command& command, const std::vector<std::string>& args,
                               std::vector<std::string>* positional, bool* help) {
  *help = false;
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
  }
  return absl::OkStatus();
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

std::string GeneralHelp() {
  std::string out =
      "zf: zerofleet, distributed AlphaZero-style training.\n\nusage: zf COMMAND [flags]\n\n"
      "commands:\n";
  size_t width = 4;
  for (const Command& c : Commands()) width = std::max(width, c.name.size());
  for (const Command& c : Commands()) {
    absl::StrAppend(&out, "  ", c.name, std::string(width - c.name.size() + 2, ' '), c.summary,
                    "\n");
  }
  absl::StrAppend(&out, "  help", std::string(width - 4 + 2, ' '), "this text\n",
                  "\n'zf COMMAND --help' lists a command's flags.\n");
  return out;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << GeneralHelp();
    return kExitUsage;
  }
  std::string name = argv[1];
  if (name == "help" || name == "--help" || name == "-h") {
    if (argc >= 3) {
      for (const Command& c : Commands()) {
        if (c.name == argv[2]) {
          std::cout << CommandHelp(c);
          return kExitOk;
        }
      }
    }
    std::cout << GeneralHelp();
    return kExitOk;
  }
  const Command* command = nullptr;
  for (const Command& c : Commands()) {
    if (c.name == name) command = &c;
  }
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
  // --log_file (the long-running roles): everything to the file, warnings and errors to stderr.
  if (status.ok() &&
      std::find(command->flags.begin(), command->flags.end(), "log_file") != command->flags.end()) {
    if (const std::string path = absl::GetFlag(FLAGS_log_file); !path.empty() && path != "-") {
      status = logging::LogToFile(path);
    }
  }
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
