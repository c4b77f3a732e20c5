// The shape of zerofleet's policy/value network, torch-free.
//
// The network (built in model/internal/residual_net.h, the only place that names LibTorch
// module types) is an AlphaZero-style residual tower:
//
//   input  uint8 planes [N, C, H, W], converted to float on the device as they are (no scaling;
//          games write 0/1 planes)
//   stem   conv 3x3 (C -> filters, no bias) -> batch norm -> ReLU
//   tower  `blocks` residual blocks, each
//            y = ReLU(x + BN(conv3x3(ReLU(BN(conv3x3(x))))))
//          with global_pooling (KataGo's global pooling blocks), every second block counted
//          from the last (4 blocks: the 2nd and 4th; 1 block: it) adds the board's global
//          context between its convolutions:
//            h = ReLU(BN(conv3x3(x)));  g = [mean over cells of h, max over cells of h]
//            y = ReLU(x + BN(conv3x3(h + linear_nobias(g))))   (g: 2*filters -> filters, each
//            channel's value added at every cell)
//   policy conv 1x1 (filters -> 2) -> BN -> ReLU -> flatten (2*H*W) -> linear -> num_actions
//          logits (over all actions; masking illegal ones is the caller's job)
//   value  conv 1x1 (filters -> 1) -> BN -> ReLU -> flatten (H*W) -> linear -> value_hidden
//          -> ReLU -> linear -> 3 logits: win, draw, loss for the player to move
//   with aux_heads (KataGo's auxiliary targets; the learner trains both; inference never
//   computes the ownership, and computes the score for search's score utility: on the CPU when
//   a caller asks for it, on CUDA in every batch):
//   ownership  conv 1x1 (filters -> 1, with bias) -> tanh: [H*W] in (-1, 1), +1 the player to
//          move owns the cell at the end of the game (the learner takes it before the tanh)
//   score  linear (value_hidden -> 1) on the value head's hidden layer: the final margin of the
//          player to move, in points divided by sqrt(H*W)
//
// A NetworkShape fully determines the parameter tensors, so it is what a checkpoint manifest
// records and what InferenceSession checks a checkpoint against.
//
// Thread-safety: a plain value type; thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace zf::model {

struct NetworkShape {
  // Upper bounds that catch nonsense (a mistyped flag, a corrupt manifest) before LibTorch
  // tries to allocate it. Go 19x19 with history planes is well inside them.
  static constexpr int kMaxInputChannels = 1024;
  static constexpr int kMaxBoardSide = 64;
  static constexpr int kMaxActions = 1 << 16;
  static constexpr int kMaxBlocks = 128;
  static constexpr int kMaxFilters = 2048;
  static constexpr int kMaxValueHidden = 4096;

  // From the game: the encoder's planes and the number of actions.
  int input_channels = 0;
  int board_height = 0;
  int board_width = 0;
  int num_actions = 0;
  // The tower. The defaults are the small network `zf run` trains Connect Four with on a CPU.
  int blocks = 4;
  int filters = 64;
  int value_hidden = 64;
  // The ownership and score heads (for games with final ownership: Go).
  bool aux_heads = false;
  // Global pooling in every second block (see above); any game.
  bool global_pooling = false;

  // Returns: OK if every field is in [1, its kMax... bound]; InvalidArgument naming the first
  // bad field, its value and the allowed range otherwise.
  absl::Status Validate() const;

  // Number of input bytes of one position: input_channels * board_height * board_width.
  int64_t PlaneSize() const { return int64_t{input_channels} * board_height * board_width; }

  // Whether tower block `block` (0-based, < blocks) is a global pooling block.
  bool HasGlobalPooling(int block) const { return global_pooling && (blocks - 1 - block) % 2 == 0; }
  // How many of the blocks are global pooling blocks.
  int GlobalPoolingBlocks() const { return global_pooling ? (blocks + 1) / 2 : 0; }

  // Floating-point operations of one position's forward pass (a multiply-add counts 2):
  // convolutions and linear layers, which are all but a sliver of the work; batch norm,
  // ReLU and softmax are left out. For "share of the GPU's peak" figures.
  int64_t ForwardFlops() const;

  // One line, e.g. "3x6x7 -> 7 actions, 4 blocks x 64 filters, value hidden 64" (and
  // ", global pooling", ", ownership and score heads" when set).
  std::string DebugString() const;

  bool operator==(const NetworkShape&) const = default;
};

}  // namespace zf::model
