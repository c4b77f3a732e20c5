// libFuzzer target: game names and move lists, as `zf position --game G --moves M` and
// `zf analyze` take them from the command line. Input: the game name, a newline, the moves.
// After the moves (or those before the first bad one) the position must still be consistent:
// listed actions legal, no legal action in a terminal position, an encoding of its stated size.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/move_list.h"
#include "common/logging.h"
#include "games/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string name = input.substr(0, newline);
  const std::string moves = newline == std::string::npos ? "" : input.substr(newline + 1);
  auto config = zf::games::ParseGameName(name);
  if (!config.ok()) return 0;
  zf::games::VisitGame(*config, [&](const auto& start) {
    auto game = start;
    (void)zf::cli::ApplyMoveList(game, moves);  // on error, game holds the last legal position
    std::vector<int> legal;
    game.LegalActions(&legal);
    ZF_CHECK(!game.IsTerminal() || legal.empty()) << "a terminal position with legal actions";
    for (int a : legal) ZF_CHECK(game.IsLegal(a)) << "LegalActions lists illegal " << a;
    const auto shape = game.Shape();
    std::vector<uint8_t> planes(shape.Size());
    game.Encode(planes.data());
    ZF_CHECK(!game.ToString().empty());
    return 0;
  });
  return 0;
}
