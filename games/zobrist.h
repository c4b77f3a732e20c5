// Compile-time Zobrist key tables shared by the games.
//
// A Zobrist hash is the XOR of one random 64-bit key per feature of a position (a stone on a
// cell, a drawn line, the player to move). Updating it after a move is a few XORs, and equal
// positions reached by different move orders hash equally because XOR is order-independent.
// The keys come from SplitMix64 with a fixed seed per table, so hashes are stable across runs,
// processes and machines (replay and evaluation caches may rely on that).
//
// Thread-safety: the tables are constexpr constants; reading them is thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace zf::games::internal {

// One step of SplitMix64 (Steele, Lea, Flood 2014): advances *state and returns a well-mixed
// 64-bit value.
constexpr uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// N keys drawn from SplitMix64 seeded with `seed`.
template <size_t N>
constexpr std::array<uint64_t, N> MakeZobristKeys(uint64_t seed) {
  std::array<uint64_t, N> keys{};
  uint64_t state = seed;
  for (uint64_t& key : keys) key = SplitMix64(&state);
  return keys;
}

}  // namespace zf::games::internal
