// Torch-free glue between a game and the network's shape.
//
//   NetworkShape shape = NetworkShapeForGame(games::ConnectFour(), /*blocks=*/4, /*filters=*/64);
//   // 3x6x7 -> 7 actions, 4 blocks x 64 filters, value hidden 64
//   ZF_ASSIGN_OR_RETURN(NetworkShape go, NetworkShapeForGame(config, 4, 32,
//   /*global_pooling=*/false,
//                                                            /*aux_heads=*/true));
//
// Thread-safety: free functions; thread-safe.
#pragma once

#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "games/game.h"
#include "games/registry.h"
#include "model/network.h"

namespace zf::model {

// The shape of a network for `game` (its planes and action count; for games whose size is a
// parameter, of that size) with the given tower. The result may still fail Validate() when
// the tower arguments are out of range.
template <games::Game G>
NetworkShape NetworkShapeForGame(const G& game, int blocks = NetworkShape{}.blocks,
                                 int filters = NetworkShape{}.filters,
                                 int value_hidden = NetworkShape{}.value_hidden) {
  const games::PlaneShape planes = game.Shape();
  NetworkShape shape;
  shape.input_channels = planes.channels;
  shape.board_height = planes.height;
  shape.board_width = planes.width;
  shape.num_actions = game.NumActions();
  shape.blocks = blocks;
  shape.filters = filters;
  shape.value_hidden = value_hidden;
  return shape;
}

// Gives `shape` the ownership and score heads (model/network.h) when `on`.
// Returns: OK; InvalidArgument when `on` and `game` says nothing of who owns what at the end
// (games::GameWithFinalOwnership: only Go does).
template <games::Game G>
absl::Status SetAuxHeads(const G& game, bool on, NetworkShape* shape) {
  if (on && !games::GameWithFinalOwnership<G>) {
    return absl::InvalidArgumentError(
        absl::StrCat("aux heads (ownership and score) need a game with final ownership (Go); ",
                     game.Name(), " has none"));
  }
  shape->aux_heads = on;
  return absl::OkStatus();
}

// The shape for the game `config` names (as the CLI's flags describe a network): its planes
// and actions, `blocks` x `filters`, and the given global pooling and aux heads.
// Returns: the shape (which may still fail Validate() when the tower arguments are out of
// range); InvalidArgument for aux heads on a game without final ownership (SetAuxHeads).
inline absl::StatusOr<NetworkShape> NetworkShapeForGame(const games::GameConfig& config, int blocks,
                                                        int filters, bool global_pooling,
                                                        bool aux_heads = false) {
  return games::VisitGame(config, [&](const auto& game) -> absl::StatusOr<NetworkShape> {
    NetworkShape shape = NetworkShapeForGame(game, blocks, filters);
    shape.global_pooling = global_pooling;
    absl::Status status = SetAuxHeads(game, aux_heads, &shape);
    if (!status.ok()) return status;
    return shape;
  });
}

// The shape of the network for the game named `name` (games/registry.h), for tools that need a
// network's input and output but no game (learner_bench): its planes and actions, the default
// tower, and the ownership and score heads where the game has final ownership (Go), as
// `zf run` gives them.
// Returns: the shape; InvalidArgument for an unknown game name.
inline absl::StatusOr<NetworkShape> NetworkShapeForGameName(const std::string& name) {
  absl::StatusOr<games::GameConfig> config = games::ParseGameName(name);
  if (!config.ok()) return config.status();
  return games::VisitGame(*config, [](const auto& game) -> absl::StatusOr<NetworkShape> {
    using G = std::decay_t<decltype(game)>;
    NetworkShape shape = NetworkShapeForGame(game);
    shape.aux_heads = games::GameWithFinalOwnership<G>;
    return shape;
  });
}

// Checks that a network of `shape` can evaluate `game`: same planes and action count.
// Returns: OK; InvalidArgument naming both shapes otherwise.
template <games::Game G>
absl::Status CheckShapeFitsGame(const NetworkShape& shape, const G& game) {
  const games::PlaneShape planes = game.Shape();
  if (shape.input_channels != planes.channels || shape.board_height != planes.height ||
      shape.board_width != planes.width || shape.num_actions != game.NumActions()) {
    return absl::InvalidArgumentError(
        absl::StrCat("network ", shape.DebugString(), " does not fit game ", game.Name(),
                     " (planes ", planes.channels, "x", planes.height, "x", planes.width, ", ",
                     game.NumActions(), " actions)"));
  }
  return absl::OkStatus();
}

}  // namespace zf::model
