// Helpers for games' FromParameters (games/game.h, RegistrableGame): strict parsing of the
// parameters in a game name such as "dotsboxes:5x5" or "go:9:komi=6.5".
//
// Thread-safety: pure functions; thread-safe.
#pragma once

#include "absl/strings/string_view.h"

namespace zf::games {

// Parses 1-3 decimal digits (no sign, no spaces) into *out. Returns whether it did.
inline bool ParseSmallInt(absl::string_view text, int* out) {
  if (text.empty() || text.size() > 3) return false;
  int value = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return false;
    value = value * 10 + (ch - '0');
  }
  *out = value;
  return true;
}

}  // namespace zf::games
