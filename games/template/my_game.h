// TEMPLATE: a new game starts as a copy of this folder (docs/adding-a-game.md walks through it).
// Copy games/template/ to games/<yourgame>/, rename MyGame and the files, replace the rules
// below with yours, and keep every comment that states a rule, the action numbering, the planes
// and the symmetries true: they are the contract users and the network rely on.
//
// The stand-in rules (so the template compiles, passes the conformance suite, and cannot rot):
// a row of kCells empty cells; players alternately put a stone on any empty cell; whoever fills
// the last cell wins. (Trivial: the first player wins when kCells is odd.)
//
// Actions: the cell, 0..kCells-1 from the left. Text form: the cell number ("0".."6"), the only
// form, so ParseAction accepts exactly that.
//
// Encoding: 3 planes of 1 x kCells: [stones of the player to move, stones of the opponent, all
// ones]. Planes are from the point of view of the player to move (games/game.h).
// Symmetries: identity and the left-right mirror (the rules do not care about direction).
//
// Thread-compatibility: a trivially copyable value type; thread-compatible as games/game.h says.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "games/game.h"

namespace zf::games {

class MyGame {
 public:
  static constexpr int kCells = 7;

  // The start position, player 0 to move. A game with parameters (a board size) has a static
  // Create(...) returning absl::StatusOr<MyGame> instead, as Othello::Create does.
  MyGame() = default;

  // Registration (games/game.h, RegistrableGame): the name users type, and its parameters (a
  // game without any refuses them). Then add MyGame to RegisteredGames in games/registry.h.
  static constexpr absl::string_view kFamily = "mygame";
  static constexpr absl::string_view kSyntax = "mygame";
  static constexpr absl::string_view kDescription = "the template's stand-in rules";
  static absl::StatusOr<MyGame> FromParameters(std::optional<absl::string_view> params);
  // Optional: self-play settings that suit the game (games/game.h, SelfPlayHints).
  SelfPlayHints SelfPlayDefaults() const {
    return {.dirichlet_alpha = 1.0f, .temperature_moves = 2};
  }

  // The canonical name: FromParameters's position has it, and files and logs use it.
  std::string Name() const { return "mygame"; }
  int NumActions() const { return kCells; }
  int MaxGameLength() const { return kCells; }
  int ToPlay() const { return to_play_; }
  bool IsTerminal() const { return filled_ == kCells; }
  // Requires IsTerminal().
  games::Returns Returns() const;
  bool IsLegal(int action) const;
  void LegalActions(std::vector<int>* out) const;
  // Requires IsLegal(action) (ZF_DCHECK).
  void Apply(int action);
  uint64_t Hash() const { return hash_; }
  PlaneShape Shape() const { return {3, 1, kCells}; }
  void Encode(uint8_t* planes) const;
  std::vector<Symmetry> Symmetries() const;
  std::string ToString() const;
  std::string ActionToString(int action) const;
  absl::StatusOr<int> ParseAction(absl::string_view text) const;

 private:
  uint64_t hash_ = 0;
  uint8_t stones_[2] = {0, 0};  // bit i = cell i
  uint8_t to_play_ = 0;
  uint8_t filled_ = 0;
};

// The compile-time contract (games/game.h) and the cheap copies search relies on.
static_assert(RegistrableGame<MyGame>);
static_assert(std::is_trivially_copyable_v<MyGame>);

}  // namespace zf::games
