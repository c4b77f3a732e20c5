#include "replay/testing/records.h"

#include <cstring>

namespace zf::replay::testing {

zerofleet::v1::GameRecord MakeRecord(const std::string& id, int n, uint8_t first_value) {
  constexpr int kC = 2, kH = 2, kW = 2, kA = 4;
  zerofleet::v1::GameRecord r;
  r.set_game_id(id);
  r.set_game("toy");
  r.mutable_plane_shape()->set_channels(kC);
  r.mutable_plane_shape()->set_height(kH);
  r.mutable_plane_shape()->set_width(kW);
  r.set_num_actions(kA);
  r.set_num_positions(n);
  std::vector<float> policy;
  for (int i = 0; i < n; ++i) {
    r.mutable_planes()->append(kC * kH * kW, static_cast<char>((first_value + i) % 256));
    for (int a = 0; a < kA; ++a) policy.push_back(a == i % kA ? 1.0f : 0.0f);
    r.mutable_to_play()->push_back(static_cast<char>(i % 2));
    r.mutable_full_search()->push_back(1);
  }
  r.set_policy(PackFloats(policy));
  r.add_returns(1.0f);
  r.add_returns(-1.0f);
  r.add_model_versions(3);
  r.add_model_versions(7);
  return r;
}

std::string PackFloats(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::vector<float> UnpackFloats(const std::string& bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

}  // namespace zf::replay::testing
