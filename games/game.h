// The game contract that search, actors, the encoder and the `zf` command rely on.
//
// A game is a small copyable value type: copying a game copies the whole position, so search can
// keep one per node or replay from the root without heap allocation per move. MCTS and self-play
// are templated on the game type (no virtual call per node); `games/registry.h` maps a game name
// such as "dotsboxes:5x5" to an instantiation.
//
// Conventions every game follows (checked by games/testing/conformance.h):
//  - Players are 0 (moves first) and 1. ToPlay() is the player to move in a non-terminal position;
//    in a terminal one it is still a fixed function of the position (Encode is relative to it).
//  - A terminal position has no legal actions: LegalActions() gives none, IsLegal() is false.
//  - Actions are dense integers in [0, NumActions()) and equal policy indices. The numbering is
//    documented in each game's header and used verbatim by the command line.
//  - Apply(a) requires IsLegal(a); it is checked with ZF_DCHECK only, so callers that take
//    actions from outside (CLI, network) call IsLegal first.
//  - Returns() is defined only when IsTerminal(): +1 win, 0 draw, -1 loss, for players 0 and 1.
//    Games are two-player zero-sum: Returns()[1] == -Returns()[0] (search relies on it).
//  - Hash() is a Zobrist-style 64-bit hash of everything that decides future play and outcome
//    (board, player to move, scores); equal positions reached by different orders hash equally.
//    It must also cover everything Encode() shows the network (history planes included), since
//    evaluation caches are keyed by it.
//  - Encode() writes uint8 planes [C, H, W] (C-major) from the point of view of the player to
//    move, so the network needs no colour input beyond what the planes say.
//  - Symmetries(): the board symmetries the rules have, identity first. Each is a pair of
//    permutations, over actions and over the H*W cells of every plane; for every game g and
//    symmetry s, playing the s-mapped actions gives a position whose encoding is g's encoding
//    with each cell i moved to cell_map[i], and whose legal actions are the mapped ones. The
//    replay service applies them without knowing the game.
//
// Thread-compatibility: game values are thread-compatible (const methods may be called
// concurrently; a value is mutated by one thread at a time).
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zf::games {

// The shape of a game's input planes: channels x height x width.
struct PlaneShape {
  int channels = 0;
  int height = 0;
  int width = 0;
  int Cells() const { return height * width; }
  int Size() const { return channels * height * width; }
  bool operator==(const PlaneShape&) const = default;
};

// A board symmetry as two permutations. Applying symmetry s maps action a to action_map[a] and
// moves the value of plane cell i (i = row * W + col, in every channel) to cell cell_map[i].
struct Symmetry {
  std::string name;             // e.g. "identity", "mirror", "rot90"
  std::vector<int> action_map;  // size NumActions()
  std::vector<int> cell_map;    // size H * W
};

// Outcome of a finished game for players 0 and 1: +1 win, 0 draw, -1 loss.
using Returns = std::array<float, 2>;

// The compile-time contract. Each method's meaning is documented at the top of this file.
template <typename G>
concept Game = std::copyable<G> && requires(const G cg, G g, int action, std::vector<int>* out,
                                            uint8_t* planes, absl::string_view text) {
  { cg.Name() } -> std::convertible_to<std::string>;  // canonical name, e.g. "dotsboxes:3x3"
  { cg.NumActions() } -> std::convertible_to<int>;
  { cg.MaxGameLength() } -> std::convertible_to<int>;  // upper bound on plies
  { cg.ToPlay() } -> std::convertible_to<int>;
  { cg.IsTerminal() } -> std::convertible_to<bool>;
  { cg.Returns() } -> std::convertible_to<Returns>;
  { cg.IsLegal(action) } -> std::convertible_to<bool>;
  cg.LegalActions(out);  // clears *out, then appends the legal actions in increasing order
  g.Apply(action);
  { cg.Hash() } -> std::convertible_to<uint64_t>;
  { cg.Shape() } -> std::convertible_to<PlaneShape>;
  cg.Encode(planes);  // writes Shape().Size() bytes, each 0 or 1 unless the game says otherwise
  { cg.Symmetries() } -> std::convertible_to<std::vector<Symmetry>>;
  { cg.ToString() } -> std::convertible_to<std::string>;  // the board as text, several lines
  { cg.ActionToString(action) } -> std::convertible_to<std::string>;
  // Accepts the form ActionToString prints and the plain action number; InvalidArgument names
  // the text when it is neither or out of range (legality is not checked here).
  { cg.ParseAction(text) } -> std::convertible_to<absl::StatusOr<int>>;
};

// Optional: a game whose finished position says who owns each cell and by how much player 0
// won (territory games: Go). Self-play records both when a game ends by its rules (not by
// resignation or the move cap), as targets of the network's ownership and score heads (KataGo's
// auxiliary targets). Both are defined only when IsTerminal():
//  - FinalOwnership(cells) writes Shape().Cells() values, cell i (row * W + col, as the planes
//    and the symmetries' cell maps number them): +1 player 0 owns it, -1 player 1, 0 neither;
//  - FinalScore() is player 0's margin (its score minus player 1's), whose sign agrees with
//    Returns()[0].
template <typename G>
concept GameWithFinalOwnership = Game<G> && requires(const G cg, int8_t* cells) {
  cg.FinalOwnership(cells);
  { cg.FinalScore() } -> std::convertible_to<float>;
};

// Registration: what games/registry.h needs of a game to put it on the command line. The name
// a user types is FAMILY or FAMILY:PARAMETERS; the game parses its own parameters.
//  - kFamily: the name before any ':' ("dotsboxes");
//  - kSyntax: how it is written with its parameters, for help texts ("dotsboxes[:RxC]");
//  - kDescription: one line for `zf --help`;
//  - FromParameters(params): the start position the name stands for; params is the text after
//    the ':' (nullopt when there is none). InvalidArgument says what is wrong in one line (the
//    registry puts the whole name in front: "dotsboxes:0x3: rows must be in 1..10").
template <typename G>
concept RegistrableGame = Game<G> && requires(std::optional<absl::string_view> params) {
  { G::kFamily } -> std::convertible_to<absl::string_view>;
  { G::kSyntax } -> std::convertible_to<absl::string_view>;
  { G::kDescription } -> std::convertible_to<absl::string_view>;
  { G::FromParameters(params) } -> std::same_as<absl::StatusOr<G>>;
};

// Optional: self-play settings that suit a game, which actor::ActorOptions::ForGame takes from a
// game with `SelfPlayHints SelfPlayDefaults() const` (the start position's; unset fields keep
// the actor's general defaults: Dirichlet alpha 0.3, temperature for the first 10 plies).
struct SelfPlayHints {
  // Root noise: AlphaZero scales alpha inversely to the typical number of legal moves.
  std::optional<float> dirichlet_alpha;
  // Plies played at temperature 1 (the opening's variety) before the most visited move.
  std::optional<int> temperature_moves;
  // Games with a self-play pass rule (Go): pass only when needed (search/self_play.h).
  bool restrict_pass = false;
};

template <typename G>
concept GameWithSelfPlayHints = Game<G> && requires(const G cg) {
  { cg.SelfPlayDefaults() } -> std::same_as<SelfPlayHints>;
};

}  // namespace zf::games
