#include "cli/common_flags.h"

#include <cstdint>

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, game, "connect4",
          "game name: tictactoe, connect4, dotsboxes or dotsboxes:RxC (boxes, 1..10 each)");
ABSL_FLAG(bool, json, false, "print one JSON object instead of text");
ABSL_FLAG(uint64_t, seed, 0, "random seed; 0 picks one from the clock");
