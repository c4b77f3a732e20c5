// libFuzzer target: SGF files, as `zf position`/`zf analyze --sgf` and GTP's `loadsgf` read them.
// Any input either fails with InvalidArgument or reads as a Go game that replays; such a game,
// written back (sgf::WriteGoGame), must read again to the same moves, comments and players.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/logging.h"
#include "sgf/go_sgf.h"
#include "sgf/sgf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  (void)zf::sgf::Parse(input);
  absl::StatusOr<zf::sgf::GoGameRecord> game = zf::sgf::ReadGoGame(input);
  if (!game.ok()) {
    ZF_CHECK(game.status().code() == absl::StatusCode::kInvalidArgument) << game.status();
    return 0;
  }
  ZF_CHECK(zf::sgf::GoPositionAfter(*game, -1).ok());
  absl::StatusOr<zf::sgf::GoGameRecord> again = zf::sgf::ReadGoGame(zf::sgf::WriteGoGame(*game));
  ZF_CHECK(again.ok()) << again.status();
  ZF_CHECK(again->moves == game->moves) << "moves changed in a round trip";
  ZF_CHECK(again->comments == game->comments) << "comments changed in a round trip";
  ZF_CHECK(again->black == game->black && again->white == game->white && again->result == game->result);
  ZF_CHECK(again->start.Size() == game->start.Size() && again->start.Komi() == game->start.Komi());
  return 0;
}
