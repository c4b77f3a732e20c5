#include "model/network.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zf::model {
namespace {

absl::Status CheckRange(const char* name, int value, int min, int max) {
  if (value < min || value > max) {
    return absl::InvalidArgumentError(
        absl::StrFormat("network shape: %s must be in [%d, %d], got %d", name, min, max, value));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status NetworkShape::Validate() const {
  struct Field {
    const char* name;
    int value;
    int min;
    int max;
  };
  const Field fields[] = {
      {"input_channels", input_channels, 1, kMaxInputChannels},
      {"board_height", board_height, 1, kMaxBoardSide},
      {"board_width", board_width, 1, kMaxBoardSide},
      {"num_actions", num_actions, 1, kMaxActions},
      {"blocks", blocks, 1, kMaxBlocks},
      {"filters", filters, 1, kMaxFilters},
      {"value_hidden", value_hidden, 1, kMaxValueHidden},
  };
  for (const Field& f : fields) {
    if (absl::Status s = CheckRange(f.name, f.value, f.min, f.max); !s.ok()) return s;
  }
  return absl::OkStatus();
}

int64_t NetworkShape::ForwardFlops() const {
  const int64_t hw = int64_t{board_height} * board_width;
  const int64_t f = filters;
  int64_t macs = 9 * int64_t{input_channels} * f * hw;  // stem 3x3
  macs += int64_t{blocks} * 2 * 9 * f * f * hw;         // two 3x3 convolutions per block
  macs += int64_t{GlobalPoolingBlocks()} * 2 * f * f;   // pooling blocks: linear 2f -> f
  macs += f * 2 * hw + 2 * hw * num_actions;            // policy: 1x1 to 2 planes, linear
  macs += f * hw + hw * value_hidden + int64_t{value_hidden} * 3;  // value head
  // The aux heads are left out: inference computes only the score head, value_hidden
  // multiply-adds (when asked for), and never the ownership head.
  return 2 * macs;
}

std::string NetworkShape::DebugString() const {
  return absl::StrCat(input_channels, "x", board_height, "x", board_width, " -> ", num_actions,
                      " actions, ", blocks, " blocks x ", filters, " filters, value hidden ",
                      value_hidden, global_pooling ? ", global pooling" : "",
                      aux_heads ? ", ownership and score heads" : "");
}

}  // namespace zf::model
