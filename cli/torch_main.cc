// zf-torch: every zerofleet command, with LibTorch for those that run a network. Users type `zf`;
// it hands network commands over to this binary (cli/command.h, cli/network_runtime.h).
#include "cli/command.h"
#include "cli/network_runtime.h"

int main(int argc, char** argv) {
  zf::cli::InstallNetworkRuntime();
  return zf::cli::Main(argc, argv, zf::cli::AllCommands());
}
