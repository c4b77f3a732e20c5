// Test helpers: synthetic training batches for a tiny network.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/network.h"
#include "proto/zerofleet/v1/replay.pb.h"

namespace zf::learner::testing {

// 2 planes of 3x3, 9 actions, 1 block of 8 filters: trains in milliseconds.
inline model::NetworkShape TinyShape() {
  model::NetworkShape s;
  s.input_channels = 2;
  s.board_height = 3;
  s.board_width = 3;
  s.num_actions = 9;
  s.blocks = 1;
  s.filters = 8;
  s.value_hidden = 8;
  return s;
}

inline std::string Pack(const std::vector<float>& v) {
  std::string out(v.size() * 4, '\0');
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// A batch of `b` random 0/1 positions from `seed`. Targets are functions of the position, so a
// network can learn them: the policy is one-hot on `policy_action` if >= 0, else on the first
// empty cell of plane 0; the value is +1 if plane 0 has more stones than plane 1, -1 if fewer,
// 0 if equal.
inline zerofleet::v1::SampleBatch MakeBatch(const model::NetworkShape& s, int b, uint64_t seed,
                                            int policy_action = -1) {
  std::mt19937_64 rng(seed);
  zerofleet::v1::SampleBatch batch;
  batch.set_batch_size(b);
  batch.set_game("tiny");
  batch.mutable_plane_shape()->set_channels(s.input_channels);
  batch.mutable_plane_shape()->set_height(s.board_height);
  batch.mutable_plane_shape()->set_width(s.board_width);
  batch.set_num_actions(s.num_actions);
  const int cells = s.board_height * s.board_width;
  std::string planes(static_cast<size_t>(b * s.PlaneSize()), '\0');
  std::vector<float> policy(static_cast<size_t>(b) * s.num_actions, 0.0f);
  std::vector<float> value(static_cast<size_t>(b), 0.0f);
  for (int i = 0; i < b; ++i) {
    int counts[2] = {0, 0};
    int first_empty = 0;
    bool found = false;
    for (int c = 0; c < s.input_channels; ++c) {
      for (int k = 0; k < cells; ++k) {
        const bool on = (rng() % 3) == 0;
        planes[static_cast<size_t>(i * s.PlaneSize() + c * cells + k)] = on ? 1 : 0;
        if (c < 2 && on) ++counts[c];
        if (c == 0 && !on && !found) {
          first_empty = k;
          found = true;
        }
      }
    }
    const int action = policy_action >= 0 ? policy_action : first_empty % s.num_actions;
    policy[static_cast<size_t>(i * s.num_actions + action)] = 1.0f;
    value[static_cast<size_t>(i)] =
        counts[0] > counts[1] ? 1.0f : (counts[0] < counts[1] ? -1.0f : 0.0f);
  }
  batch.set_planes(planes);
  batch.set_policy(Pack(policy));
  batch.set_value(Pack(value));
  batch.set_policy_mask(std::string(static_cast<size_t>(b), '\1'));
  return batch;
}

// Gives `batch` (of MakeBatch) ownership and score targets that are functions of its planes, so
// a network can learn them: a cell is +1 where plane 0 has a stone, -1 where plane 1 has one
// (and plane 0 not), 0 elsewhere; the score is the sum of the cells. Rows with
// `row % mask_every == mask_every - 1` have no targets (aux_mask 0, zeros) when mask_every > 0.
inline void AddOwnership(const model::NetworkShape& s, zerofleet::v1::SampleBatch* batch,
                         int mask_every = 0) {
  const int b = batch->batch_size();
  const int cells = s.board_height * s.board_width;
  std::string ownership(static_cast<size_t>(b) * cells, '\0');
  std::vector<float> score(static_cast<size_t>(b), 0.0f);
  std::string mask(static_cast<size_t>(b), '\1');
  for (int i = 0; i < b; ++i) {
    if (mask_every > 0 && i % mask_every == mask_every - 1) {
      mask[i] = 0;
      continue;
    }
    for (int k = 0; k < cells; ++k) {
      const char* planes = batch->planes().data() + static_cast<size_t>(i) * s.PlaneSize();
      const int8_t owner = planes[k] != 0 ? 1 : (planes[cells + k] != 0 ? -1 : 0);
      ownership[static_cast<size_t>(i) * cells + k] = static_cast<char>(owner);
      score[i] += owner;
    }
  }
  batch->set_ownership(ownership);
  batch->set_score(Pack(score));
  batch->set_aux_mask(mask);
}

}  // namespace zf::learner::testing
