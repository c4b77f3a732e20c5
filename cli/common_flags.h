// Flags shared by several `zf` subcommands. Defined once (absl flags are global); each
// subcommand lists the ones it accepts in its Command entry.
#pragma once

#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(std::string, game);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(std::string, listen);
ABSL_DECLARE_FLAG(std::string, metrics_listen);
ABSL_DECLARE_FLAG(int, blocks);
ABSL_DECLARE_FLAG(int, filters);
ABSL_DECLARE_FLAG(std::string, dir);
ABSL_DECLARE_FLAG(std::string, replay);
ABSL_DECLARE_FLAG(std::string, device);
ABSL_DECLARE_FLAG(std::string, precision);
ABSL_DECLARE_FLAG(bool, cuda_graphs);
