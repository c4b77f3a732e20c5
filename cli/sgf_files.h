// SGF files for the commands: reading the position --sgf FILE [--move N] names, and writing
// games into an --sgf DIR (sgf/go_sgf.h holds the format).
//
// Thread-compatibility: free functions; thread-safe (each call touches its own file).
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sgf/go_sgf.h"
#include "sgf/sgf.h"

namespace zf::cli {

// The Go game of an SGF file and the position after `move` of its moves (-1: all).
struct SgfPosition {
  sgf::GoGameRecord game;
  games::Go position;
  int moves_played = 0;
};

// Returns: the position; sgf::ReadFile's errors (NotFound; InvalidArgument for what is no
// regular file or is too large); InvalidArgument for bad SGF or a --move past the end, each
// message starting with the file's name.
inline absl::StatusOr<SgfPosition> ReadSgfPosition(const std::string& path, int move) {
  absl::StatusOr<std::string> text = sgf::ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<sgf::GoGameRecord> game = sgf::ReadGoGame(*text);
  if (!game.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", game.status().message()));
  if (move < -1) return absl::InvalidArgumentError(absl::StrCat("--move ", move, " is negative"));
  absl::StatusOr<games::Go> position = sgf::GoPositionAfter(*game, move);
  if (!position.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": --", position.status().message()));
  }
  const int played = move < 0 ? static_cast<int>(game->moves.size()) : move;
  return SgfPosition{std::move(*game), *position, played};
}

// Makes `dir` (and its parents) if needed. Returns: OK; InvalidArgument naming it otherwise.
inline absl::Status MakeSgfDir(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sgf ", dir, ": cannot make the directory: ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace zf::cli
