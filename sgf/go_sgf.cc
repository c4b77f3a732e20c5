#include "sgf/go_sgf.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "sgf/sgf.h"

namespace zf::sgf {
namespace {

// Where a node is, for errors.
std::string At(const Node& node) {
  return absl::StrCat(" (SGF line ", node.line, ", column ", node.column, ")");
}

absl::Status Bad(const Node& node, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(message, At(node)));
}

absl::StatusOr<std::string> Single(const Node& node, absl::string_view id) {
  const Property* p = node.Find(id);
  if (p == nullptr) return std::string();
  if (p->values.size() != 1) {
    return Bad(node, absl::StrCat(id, " has ", p->values.size(), " values, expected one"));
  }
  return p->values[0];
}

}  // namespace

std::string GoPoint(const games::Go& game, int action) {
  if (action == game.PassAction()) return "";
  const int n = game.Size();
  return absl::StrCat(std::string(1, static_cast<char>('a' + action % n)),
                      std::string(1, static_cast<char>('a' + action / n)));
}

std::string GoResult(const games::Go& final_position, bool resigned, int resigning_player,
                     bool truncated) {
  if (resigned) return resigning_player == 0 ? "W+R" : "B+R";
  if (truncated) return "Void";
  const float score = final_position.ScoreForBlack();
  if (score == 0.0f) return "0";
  return absl::StrFormat("%s+%g", score > 0 ? "B" : "W", std::fabs(score));
}

std::string WriteGoGame(const GoGameRecord& game) {
  std::string out = absl::StrFormat("(;FF[4]GM[1]CA[UTF-8]AP[zerofleet]SZ[%d]KM[%g]RU[Chinese]",
                                    game.start.Size(), game.start.Komi());
  if (!game.result.empty()) absl::StrAppend(&out, "RE[", Escape(game.result), "]");
  if (!game.black.empty()) absl::StrAppend(&out, "PB[", Escape(game.black), "]");
  if (!game.white.empty()) absl::StrAppend(&out, "PW[", Escape(game.white), "]");
  if (!game.date.empty()) absl::StrAppend(&out, "DT[", Escape(game.date), "]");
  if (!game.name.empty()) absl::StrAppend(&out, "GN[", Escape(game.name), "]");
  if (!game.game_comment.empty()) absl::StrAppend(&out, "C[", Escape(game.game_comment), "]");
  games::Go position = game.start;
  for (size_t i = 0; i < game.moves.size(); ++i) {
    absl::StrAppend(&out, i % 8 == 0 ? "\n" : "", ";", position.ToPlay() == 0 ? "B" : "W", "[",
                    GoPoint(position, game.moves[i]), "]");
    if (i < game.comments.size() && !game.comments[i].empty()) {
      absl::StrAppend(&out, "C[", Escape(game.comments[i]), "]");
    }
    if (!position.IsTerminal() && position.IsLegal(game.moves[i])) position.Apply(game.moves[i]);
  }
  absl::StrAppend(&out, ")\n");
  return out;
}

absl::Status WriteGoGameFile(const std::string& path, const GoGameRecord& game) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << WriteGoGame(game);
    out.flush();
    if (!out) return absl::InternalError(absl::StrCat(temp, ": write failed"));
  }
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  if (error) return absl::InternalError(absl::StrCat(path, ": ", error.message()));
  return absl::OkStatus();
}

std::string FileNameOf(absl::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  }
  return out.empty() ? std::string("game") : out;
}

absl::StatusOr<GoGameRecord> ReadGoGame(absl::string_view text) {
  absl::StatusOr<std::vector<GameTree>> trees = Parse(text);
  if (!trees.ok()) return trees.status();
  const std::vector<Node>& nodes = (*trees)[0].nodes;
  const Node& root = nodes[0];
  GoGameRecord game;

  absl::StatusOr<std::string> gm = Single(root, "GM");
  if (!gm.ok()) return gm.status();
  if (!gm->empty() && *gm != "1") {
    return Bad(root, absl::StrCat("GM[", *gm, "] in the root node is not Go (GM[1])"));
  }
  int size = 19;
  absl::StatusOr<std::string> sz = Single(root, "SZ");
  if (!sz.ok()) return sz.status();
  if (!sz->empty()) {
    if (absl::StrContains(*sz, ':')) {
      return Bad(root,
                 absl::StrCat("SZ[", *sz, "] in the root node: zerofleet's Go boards are square"));
    }
    if (!absl::SimpleAtoi(*sz, &size) || size < 5 || size > games::Go::kMaxSize) {
      return Bad(root, absl::StrCat("SZ[", *sz, "] in the root node: expected a board size 5..",
                                    games::Go::kMaxSize));
    }
  }
  float komi = 0.0f;
  absl::StatusOr<std::string> km = Single(root, "KM");
  if (!km.ok()) return km.status();
  if (!km->empty() && !absl::SimpleAtof(*km, &komi)) {
    return Bad(root, absl::StrCat("KM[", *km, "] in the root node is not a number"));
  }
  absl::StatusOr<games::Go> start = games::Go::Create(size, komi);
  if (!start.ok()) {
    return Bad(root, absl::StrCat("SZ[", size, "] KM[", *km,
                                  "] in the root node: ", start.status().message()));
  }
  game.start = *start;
  for (auto [id, field] : {std::pair<const char*, std::string*>{"PB", &game.black},
                           {"PW", &game.white},
                           {"RE", &game.result},
                           {"DT", &game.date},
                           {"GN", &game.name}}) {
    absl::StatusOr<std::string> value = Single(root, id);
    if (!value.ok()) return value.status();
    *field = *value;
  }

  games::Go position = game.start;
  bool any_comment = false;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    const std::string where =
        i == 0 ? std::string("the root node") : absl::StrCat("move ", game.moves.size() + 1);
    for (const char* setup : {"AB", "AW", "AE", "PL"}) {
      if (node.Find(setup) != nullptr) {
        return Bad(node, absl::StrCat(setup, " in ", where,
                                      ": setup properties are not supported (zerofleet's Go "
                                      "starts from the empty board, Black to move)"));
      }
    }
    const Property* b = node.Find("B");
    const Property* w = node.Find("W");
    if (b != nullptr && w != nullptr) {
      return Bad(node, absl::StrCat("B and W in one node (", where, ")"));
    }
    const Property* move = b != nullptr ? b : w;
    if (move == nullptr) {
      if (i == 0) {
        absl::StatusOr<std::string> c = Single(node, "C");
        if (c.ok()) game.game_comment = *c;
      }
      continue;
    }
    const int color = move == b ? 0 : 1;
    const std::string& value = move->values[0];
    const std::string shown =
        absl::StrCat(move->id, "[", value, "] at move ", game.moves.size() + 1);
    if (move->values.size() != 1) return Bad(node, absl::StrCat(shown, ": more than one value"));
    if (position.IsTerminal()) {
      return Bad(node, absl::StrCat(shown, ": the game is already over (two passes)"));
    }
    if (color != position.ToPlay()) {
      return Bad(node, absl::StrCat(shown, ": it is ", position.ToPlay() == 0 ? "Black" : "White",
                                    "'s turn (zerofleet's Go alternates)"));
    }
    int action = -1;
    if (value.empty() || (value == "tt" && size <= 19)) {
      action = position.PassAction();
    } else if (value.size() == 2 && value[0] >= 'a' && value[0] < 'a' + size && value[1] >= 'a' &&
               value[1] < 'a' + size) {
      action = (value[1] - 'a') * size + (value[0] - 'a');
    } else {
      return Bad(node, absl::StrCat(shown, ": not a point of the ", size, "x", size,
                                    " board (two letters a..",
                                    std::string(1, static_cast<char>('a' + size - 1)), ")"));
    }
    if (!position.IsLegal(action)) {
      return Bad(node, absl::StrCat(shown, " (", position.ActionToString(action),
                                    "): illegal (an occupied point, suicide or superko)"));
    }
    position.Apply(action);
    game.moves.push_back(action);
    absl::StatusOr<std::string> c = Single(node, "C");
    game.comments.push_back(c.ok() ? *c : std::string());
    any_comment = any_comment || !game.comments.back().empty();
  }
  if (!any_comment) game.comments.clear();
  return game;
}

absl::StatusOr<games::Go> GoPositionAfter(const GoGameRecord& game, int moves) {
  const int total = static_cast<int>(game.moves.size());
  if (moves > total) {
    return absl::InvalidArgumentError(
        absl::StrCat("move ", moves, " is past the end of the game (", total, " moves)"));
  }
  if (moves < 0) moves = total;
  games::Go position = game.start;
  for (int i = 0; i < moves; ++i) position.Apply(game.moves[i]);
  return position;
}

}  // namespace zf::sgf
