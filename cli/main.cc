// zf: the zerofleet command. See cli/command.h for exit codes and flag handling.
#include "cli/command.h"

int main(int argc, char** argv) { return zf::cli::Main(argc, argv); }
