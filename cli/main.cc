// zf: the zerofleet command, without LibTorch. Runs the commands that need no network and hands
// the others to zf-torch next to it (cli/command.h, cli/network_runtime.h).
#include "cli/command.h"

int main(int argc, char** argv) { return zf::cli::Main(argc, argv, zf::cli::LeanCommands()); }
