// libFuzzer target: GTP commands (`zf gtp`, fed by a GUI such as Sabaki or GoGui, or by a
// script) for Go, tic-tac-toe and Connect Four, one line at a time, with a random player.
// Every line must get a well-formed answer ("=..." or "?...", ending in an empty line) or none.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "cli/gtp/gtp_engine.h"
#include "common/logging.h"
#include "games/connect4/connect4.h"
#include "games/go/go.h"
#include "games/tictactoe/tictactoe.h"

namespace {

template <typename G>
void Feed(const G& start, const std::vector<std::string>& lines) {
  typename zf::cli::GtpEngine<G>::Options options;
  options.start = start;
  options.make_player = [](const G&) -> absl::StatusOr<std::unique_ptr<zf::players::Player<G>>> {
    return std::make_unique<zf::players::RandomPlayer<G>>(/*seed=*/1);
  };
  auto engine = zf::cli::GtpEngine<G>::Create(std::move(options));
  ZF_CHECK(engine.ok()) << engine.status();
  for (const std::string& line : lines) {
    const std::string answer = (*engine)->Handle(line);
    if (answer.empty()) continue;
    ZF_CHECK((answer[0] == '=' || answer[0] == '?') && absl::EndsWith(answer, "\n\n"))
        << "malformed answer to \"" << line << "\": \"" << answer << "\"";
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // a session of commands, not a flood (keeps each run fast)
  const std::vector<std::string> lines =
      absl::StrSplit(std::string(reinterpret_cast<const char*>(data), size), '\n');
  Feed(*zf::games::Go::Create(/*size=*/5), lines);
  Feed(zf::games::TicTacToe(), lines);
  Feed(zf::games::ConnectFour(), lines);
  return 0;
}
