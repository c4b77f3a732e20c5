#include "games/registry.h"

#include <array>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace zf::games {
namespace {

// Parses 1-3 decimal digits (no sign, no spaces).
bool ParseSmallInt(absl::string_view text, int* out) {
  if (text.empty() || text.size() > 3) return false;
  int value = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return false;
    value = value * 10 + (ch - '0');
  }
  *out = value;
  return true;
}

absl::StatusOr<GameConfig> ParseFixed(GameConfig::Kind kind, absl::string_view game,
                                      absl::string_view full, bool has_params,
                                      absl::string_view /*params*/) {
  if (has_params) {
    return absl::InvalidArgumentError(absl::StrCat(full, ": ", game, " takes no parameters"));
  }
  GameConfig config;
  config.kind = kind;
  config.name = std::string(game);
  return config;
}

absl::StatusOr<GameConfig> ParseTicTacToe(absl::string_view full, bool has_params,
                                          absl::string_view params) {
  return ParseFixed(GameConfig::Kind::kTicTacToe, "tictactoe", full, has_params, params);
}

absl::StatusOr<GameConfig> ParseConnectFour(absl::string_view full, bool has_params,
                                            absl::string_view params) {
  return ParseFixed(GameConfig::Kind::kConnectFour, "connect4", full, has_params, params);
}

absl::StatusOr<GameConfig> ParseDotsAndBoxes(absl::string_view full, bool has_params,
                                             absl::string_view params) {
  int rows = 3;
  int cols = 3;
  if (has_params) {
    const size_t x = params.find('x');
    if (x == absl::string_view::npos || !ParseSmallInt(params.substr(0, x), &rows) ||
        !ParseSmallInt(params.substr(x + 1), &cols)) {
      return absl::InvalidArgumentError(absl::StrCat(
          full, ": expected dotsboxes:RxC with R rows and C columns of boxes, e.g. dotsboxes:5x5"));
    }
  }
  const auto out_of_range = [](int v) {
    return v < DotsAndBoxes::kMinSize || v > DotsAndBoxes::kMaxSize;
  };
  if (out_of_range(rows) || out_of_range(cols)) {
    return absl::InvalidArgumentError(absl::StrCat(full, ": ", out_of_range(rows) ? "rows" : "cols",
                                                   " must be in ", DotsAndBoxes::kMinSize, "..",
                                                   DotsAndBoxes::kMaxSize));
  }
  GameConfig config;
  config.kind = GameConfig::Kind::kDotsAndBoxes;
  config.rows = rows;
  config.cols = cols;
  config.name = absl::StrCat("dotsboxes:", rows, "x", cols);
  return config;
}

absl::StatusOr<GameConfig> ParseGo(absl::string_view full, bool has_params,
                                   absl::string_view params) {
  int size = Go::kDefaultSize;
  float komi = Go::kDefaultKomi;
  if (has_params) {
    const size_t colon = params.find(':');
    const absl::string_view size_text = params.substr(0, colon);
    if (!ParseSmallInt(size_text, &size)) {
      return absl::InvalidArgumentError(
          absl::StrCat(full, ": expected go:N or go:N:komi=K, e.g. go:9 or go:9:komi=6.5"));
    }
    if (colon != absl::string_view::npos) {
      absl::string_view rest = params.substr(colon + 1);
      double value = 0;
      if (!absl::ConsumePrefix(&rest, "komi=")) {
        return absl::InvalidArgumentError(
            absl::StrCat(full, ": expected go:N:komi=K, e.g. go:9:komi=6.5"));
      }
      if (!absl::SimpleAtod(rest, &value)) {
        return absl::InvalidArgumentError(absl::StrCat(full, ": komi must be a number"));
      }
      komi = static_cast<float>(value);
    }
  }
  absl::StatusOr<Go> game = Go::Create(size, komi);
  if (!game.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(full, ": ", game.status().message()));
  }
  GameConfig config;
  config.kind = GameConfig::Kind::kGo;
  config.rows = size;
  config.cols = size;
  config.komi = komi;
  config.name = game->Name();
  return config;
}

struct GameEntry {
  absl::string_view name;         // before the ':'
  absl::string_view syntax;       // how it is written with its parameters
  absl::string_view description;  // for KnownGamesHelp
  // full: the whole name as given; params: the text after ':' when has_params.
  absl::StatusOr<GameConfig> (*parse)(absl::string_view full, bool has_params,
                                      absl::string_view params);
};

constexpr std::array<GameEntry, 4> kGames = {{
    {"tictactoe", "tictactoe", "tic-tac-toe on 3x3 (tests and demos)", &ParseTicTacToe},
    {"connect4", "connect4", "Connect Four, 7 columns x 6 rows (the default)", &ParseConnectFour},
    {"dotsboxes", "dotsboxes[:RxC]",
     "Dots and Boxes with R x C boxes, 1 <= R,C <= 10 (default 3x3)", &ParseDotsAndBoxes},
    {"go", "go[:N[:komi=K]]",
     "Go on N x N, 5 <= N <= 19 (default 9), area scoring, komi K (default 7.5)", &ParseGo},
}};

}  // namespace

absl::StatusOr<GameConfig> ParseGameName(absl::string_view name) {
  const size_t colon = name.find(':');
  const absl::string_view game = name.substr(0, colon);
  const bool has_params = colon != absl::string_view::npos;
  const absl::string_view params = has_params ? name.substr(colon + 1) : absl::string_view();
  for (const GameEntry& entry : kGames) {
    if (entry.name == game) return entry.parse(name, has_params, params);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown game \"", name, "\"; known games: ", KnownGameNames()));
}

std::string KnownGameNames() {
  std::string out;
  for (const GameEntry& entry : kGames) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", entry.syntax);
  }
  return out;
}

std::string KnownGamesHelp() {
  std::string out;
  for (const GameEntry& entry : kGames) {
    absl::StrAppendFormat(&out, "  %-16s %s\n", entry.syntax, entry.description);
  }
  return out;
}

}  // namespace zf::games
