// Test helpers: small valid GameRecords with recognisable contents.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/zerofleet/v1/replay.pb.h"

namespace zf::replay::testing {

// A valid record "<id>" of `n` positions of game "toy" with planes [2, 2, 2] and 4 actions.
// Position i's planes are all (first_value + i) mod 256, its policy is one-hot on i % 4, to_play
// alternates starting with 0, every position is a full search, returns are {1, -1}.
zerofleet::v1::GameRecord MakeRecord(const std::string& id, int n, uint8_t first_value = 0);

// Packs float32 values as little-endian bytes, and back.
std::string PackFloats(const std::vector<float>& values);
std::vector<float> UnpackFloats(const std::string& bytes);

}  // namespace zf::replay::testing
