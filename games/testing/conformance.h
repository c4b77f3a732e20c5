// The conformance suite every game passes: broad checks of the games/game.h contract.
//
// A game's test instantiates it in a few lines with a traits type that makes the start
// position (several traits, e.g. board sizes, can share one instantiation):
//
//   struct TicTacToeTraits {
//     using GameType = TicTacToe;
//     static TicTacToe Make() { return TicTacToe(); }
//     static constexpr int kNumPlayouts = 300;  // optional; default 200
//   };
//   INSTANTIATE_TYPED_TEST_SUITE_P(TicTacToe, GameConformanceTest,
//                                  ::testing::Types<TicTacToeTraits>);
//
// (inside namespace zf::games or with the suite's name visible). Name a list of several traits
// with a `using` alias first: template arguments with commas break the macro.
//
// The suite relies on the two conventions games/game.h states for terminal positions: they have
// no legal actions, and ToPlay() is still a fixed function of the position.
//
// What it checks, over many seeded random playouts (std::mt19937, fixed seeds, so failures
// reproduce):
//  - the start position: not terminal, player 0 to move, sane sizes;
//  - LegalActions: cleared first, sorted, unique, in range, in agreement with IsLegal for every
//    action in [0, NumActions()); out-of-range values are illegal; a terminal position has no
//    legal actions; Name, NumActions, MaxGameLength and Shape never change during a game;
//  - playouts end within MaxGameLength, with Returns in {-1, 0, 1} and r0 == -r1;
//  - value semantics: a copy does not change when the original moves;
//  - Hash: replaying a sequence gives the same hashes; transpositions (a, b, c) vs (c, b, a)
//    that reach the same position hash equally; over all positions seen, equal
//    (Encode, ToPlay) means equal hash and equal hash means equal (Encode, ToPlay);
//  - Encode: exactly Shape().Size() bytes, each 0 or 1 (a canary byte after the buffer);
//  - Symmetries: identity first, permutations of the right sizes, and every mapped playout is
//    legal with the mapped legal actions, the same ToPlay/IsTerminal/Returns and the mapped
//    encoding;
//  - ActionToString/ParseAction round-trip for every action, plain numbers parse, garbage is
//    InvalidArgument naming the text;
//  - ToString is non-empty and changes after every move.
//
// Thread-safety: test code; each test runs on one thread.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "games/game.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::games {
namespace conformance_internal {

// One random game: positions[0] is the start, positions[i + 1] = positions[i] after actions[i].
template <Game G>
struct Playout {
  std::vector<G> positions;
  std::vector<int> actions;
};

template <Game G>
std::vector<int> Legal(const G& game) {
  std::vector<int> out;
  game.LegalActions(&out);
  return out;
}

template <Game G>
std::vector<uint8_t> EncodeOf(const G& game) {
  std::vector<uint8_t> planes(game.Shape().Size());
  game.Encode(planes.data());
  return planes;
}

// Plays uniformly random legal actions until the game ends or `max_plies` plies (a safety
// bound well beyond MaxGameLength, so a game that never ends fails instead of hanging).
template <Game G>
Playout<G> RandomPlayout(const G& start, std::mt19937* rng, int max_plies) {
  Playout<G> playout;
  playout.positions.push_back(start);
  std::vector<int> legal;
  while (!playout.positions.back().IsTerminal() &&
         static_cast<int>(playout.actions.size()) < max_plies) {
    const G& current = playout.positions.back();
    current.LegalActions(&legal);
    if (legal.empty()) break;  // reported by the tests as a non-terminal dead end
    std::uniform_int_distribution<size_t> pick(0, legal.size() - 1);
    const int action = legal[pick(*rng)];
    G next = current;
    next.Apply(action);
    playout.actions.push_back(action);
    playout.positions.push_back(std::move(next));
  }
  return playout;
}

inline bool IsPermutation(const std::vector<int>& map, size_t size) {
  if (map.size() != size) return false;
  std::vector<bool> seen(size, false);
  for (int v : map) {
    if (v < 0 || static_cast<size_t>(v) >= size || seen[v]) return false;
    seen[v] = true;
  }
  return true;
}

inline bool IsWinDrawLoss(float r) { return r == 1.0f || r == 0.0f || r == -1.0f; }

}  // namespace conformance_internal

template <typename Traits>
class GameConformanceTest : public ::testing::Test {
 public:
  using G = typename Traits::GameType;
  static_assert(Game<G>, "Traits::GameType must satisfy zf::games::Game");

  static G Start() { return Traits::Make(); }

  static int NumPlayouts() {
    if constexpr (requires { Traits::kNumPlayouts; }) {
      return Traits::kNumPlayouts;
    } else {
      return 200;
    }
  }

  // Random playouts from the start with a seed fixed per test.
  static std::vector<conformance_internal::Playout<G>> Playouts(uint32_t seed, int count) {
    std::mt19937 rng(seed);
    const G start = Start();
    const int max_plies = 4 * start.MaxGameLength() + 16;
    std::vector<conformance_internal::Playout<G>> out;
    out.reserve(count);
    for (int i = 0; i < count; ++i) {
      out.push_back(conformance_internal::RandomPlayout(start, &rng, max_plies));
    }
    return out;
  }
};

TYPED_TEST_SUITE_P(GameConformanceTest);

TYPED_TEST_P(GameConformanceTest, StartPosition) {
  using G = typename TestFixture::G;
  const G start = TestFixture::Start();
  EXPECT_FALSE(start.Name().empty());
  EXPECT_FALSE(start.IsTerminal());
  EXPECT_EQ(start.ToPlay(), 0);
  EXPECT_GT(start.NumActions(), 0);
  EXPECT_GT(start.MaxGameLength(), 0);
  const PlaneShape shape = start.Shape();
  EXPECT_GT(shape.channels, 0);
  EXPECT_GT(shape.height, 0);
  EXPECT_GT(shape.width, 0);
  EXPECT_FALSE(conformance_internal::Legal(start).empty());
  EXPECT_EQ(TestFixture::Start().Hash(), start.Hash()) << "Make() must be deterministic";
}

TYPED_TEST_P(GameConformanceTest, LegalActionsAgreeWithIsLegal) {
  using G = typename TestFixture::G;
  const G start = TestFixture::Start();
  const int n = start.NumActions();
  int positions = 0;
  int terminals = 0;
  for (const auto& playout : TestFixture::Playouts(/*seed=*/101, TestFixture::NumPlayouts())) {
    for (size_t ply = 0; ply < playout.positions.size(); ++ply) {
      const G& game = playout.positions[ply];
      const auto where = [&] { return absl::StrCat("ply ", ply, "\n", game.ToString()); };
      ++positions;
      ASSERT_EQ(game.Name(), start.Name());
      ASSERT_EQ(game.NumActions(), n);
      ASSERT_EQ(game.MaxGameLength(), start.MaxGameLength());
      ASSERT_EQ(game.Shape(), start.Shape());
      std::vector<int> legal = {-7, 12345};  // LegalActions must clear this first
      game.LegalActions(&legal);
      ASSERT_TRUE(std::is_sorted(legal.begin(), legal.end())) << where();
      ASSERT_EQ(std::adjacent_find(legal.begin(), legal.end()), legal.end())
          << "duplicates; " << where();
      for (int a : legal) ASSERT_TRUE(a >= 0 && a < n) << a << "; " << where();
      const std::set<int> legal_set(legal.begin(), legal.end());
      for (int a = 0; a < n; ++a) {
        ASSERT_EQ(game.IsLegal(a), legal_set.count(a) == 1) << "action " << a << "; " << where();
      }
      for (int a : {-1, n, n + 1, INT_MIN, INT_MAX})
        EXPECT_FALSE(game.IsLegal(a)) << a << "; " << where();
      if (game.IsTerminal()) {
        ++terminals;
        EXPECT_TRUE(legal.empty()) << "a terminal position has no legal actions; " << where();
      } else {
        ASSERT_FALSE(legal.empty()) << "a non-terminal position needs a legal action; " << where();
        EXPECT_TRUE(game.ToPlay() == 0 || game.ToPlay() == 1) << game.ToPlay() << "; " << where();
      }
    }
  }
  EXPECT_GT(positions, TestFixture::NumPlayouts());
  EXPECT_EQ(terminals, TestFixture::NumPlayouts());
}

TYPED_TEST_P(GameConformanceTest, RandomPlayoutsEndWithValidReturns) {
  const int max_length = TestFixture::Start().MaxGameLength();
  for (const auto& playout : TestFixture::Playouts(/*seed=*/202, TestFixture::NumPlayouts())) {
    const auto& last = playout.positions.back();
    SCOPED_TRACE(last.ToString());
    ASSERT_TRUE(last.IsTerminal())
        << "no terminal position after " << playout.actions.size() << " plies";
    EXPECT_LE(static_cast<int>(playout.actions.size()), max_length);
    for (size_t i = 0; i + 1 < playout.positions.size(); ++i) {
      ASSERT_FALSE(playout.positions[i].IsTerminal()) << "play continued past the end at ply " << i;
    }
    const Returns r = last.Returns();
    EXPECT_TRUE(conformance_internal::IsWinDrawLoss(r[0])) << r[0];
    EXPECT_TRUE(conformance_internal::IsWinDrawLoss(r[1])) << r[1];
    EXPECT_EQ(r[0], -r[1]);
  }
}

TYPED_TEST_P(GameConformanceTest, CopiesAreIndependent) {
  using G = typename TestFixture::G;
  using conformance_internal::EncodeOf;
  using conformance_internal::Legal;
  for (const auto& playout :
       TestFixture::Playouts(/*seed=*/303, std::min(TestFixture::NumPlayouts(), 20))) {
    for (size_t ply = 0; ply < playout.actions.size(); ++ply) {
      G original = playout.positions[ply];
      const G copy = original;
      G assigned = TestFixture::Start();
      assigned = original;
      const std::string text = copy.ToString();
      const uint64_t hash = copy.Hash();
      const std::vector<uint8_t> planes = EncodeOf(copy);
      const std::vector<int> legal = Legal(copy);
      original.Apply(playout.actions[ply]);
      const G* const copies[] = {&copy, &assigned};
      for (const G* g : copies) {
        EXPECT_EQ(g->ToString(), text);
        EXPECT_EQ(g->Hash(), hash);
        EXPECT_EQ(EncodeOf(*g), planes);
        EXPECT_EQ(Legal(*g), legal);
        EXPECT_FALSE(g->IsTerminal());
      }
      EXPECT_EQ(original.Hash(), playout.positions[ply + 1].Hash());
      EXPECT_EQ(original.ToString(), playout.positions[ply + 1].ToString());
    }
  }
}

TYPED_TEST_P(GameConformanceTest, HashIdentifiesPositions) {
  using G = typename TestFixture::G;
  using conformance_internal::EncodeOf;
  // (encoding, player to move, terminal, return of player 0). Encodings are relative to the
  // player to move, so the player is part of what identifies a position; in terminal positions
  // ToPlay is whatever the game reports there, and the result is added for good measure.
  using Key = std::tuple<std::vector<uint8_t>, int, bool, float>;
  const auto key_of = [](const G& g) {
    return Key(EncodeOf(g), g.ToPlay(), g.IsTerminal(), g.IsTerminal() ? g.Returns()[0] : 0.0f);
  };
  std::map<Key, uint64_t> hash_of_key;
  std::unordered_map<uint64_t, Key> key_of_hash;
  std::mt19937 rng(404);
  int transpositions = 0;
  const auto playouts = TestFixture::Playouts(/*seed=*/405, TestFixture::NumPlayouts());
  for (const auto& playout : playouts) {
    // Replaying the same actions gives the same hashes.
    G replay = TestFixture::Start();
    for (size_t ply = 0; ply < playout.positions.size(); ++ply) {
      const G& game = playout.positions[ply];
      ASSERT_EQ(replay.Hash(), game.Hash()) << "ply " << ply;
      if (ply < playout.actions.size()) replay.Apply(playout.actions[ply]);

      // Equal positions hash equally; different positions (as far as the encoding and the
      // player to move tell) hash differently.
      const Key key = key_of(game);
      const auto [it, inserted] = hash_of_key.emplace(key, game.Hash());
      if (!inserted) {
        ASSERT_EQ(it->second, game.Hash()) << "equal positions hash differently:\n"
                                           << game.ToString();
      }
      const auto [hit, hash_inserted] = key_of_hash.emplace(game.Hash(), key);
      if (!hash_inserted) {
        ASSERT_TRUE(hit->second == key) << "hash collision between different positions:\n"
                                        << game.ToString();
      }

      // Transpositions: (a, b, c) and (c, b, a) from here.
      if (game.IsTerminal()) continue;
      std::vector<int> legal = conformance_internal::Legal(game);
      if (legal.size() < 3) continue;
      std::shuffle(legal.begin(), legal.end(), rng);
      const int a = legal[0];
      const int b = legal[1];
      const int c = legal[2];
      G first = game;
      G second = game;
      bool ok = true;
      for (int action : {a, b, c}) {
        if (!first.IsLegal(action)) ok = false;
        if (ok) first.Apply(action);
      }
      for (int action : {c, b, a}) {
        if (!second.IsLegal(action)) ok = false;
        if (ok) second.Apply(action);
      }
      if (ok && key_of(first) == key_of(second)) {
        ++transpositions;
        ASSERT_EQ(first.Hash(), second.Hash()) << "transposition hashes differently:\n"
                                               << first.ToString();
      }
    }
  }
  EXPECT_GT(transpositions, 0) << "the test found no transposition to check";
  EXPECT_GT(hash_of_key.size(), static_cast<size_t>(TestFixture::Start().NumActions()));
}

TYPED_TEST_P(GameConformanceTest, EncodeWritesExactlyShapeBytesOfZeroOrOne) {
  using G = typename TestFixture::G;
  constexpr uint8_t kCanary = 0xA5;
  for (const auto& playout :
       TestFixture::Playouts(/*seed=*/505, std::min(TestFixture::NumPlayouts(), 20))) {
    for (const G& game : playout.positions) {
      const int size = game.Shape().Size();
      for (uint8_t fill : {uint8_t{0xCD}, uint8_t{0x00}}) {
        std::vector<uint8_t> buffer(size + 1, fill);
        buffer[size] = kCanary;
        game.Encode(buffer.data());
        ASSERT_EQ(buffer[size], kCanary) << "Encode wrote past Shape().Size()";
        for (int i = 0; i < size; ++i) {
          ASSERT_TRUE(buffer[i] == 0 || buffer[i] == 1)
              << "byte " << i << " = " << int{buffer[i]} << "\n"
              << game.ToString();
        }
        buffer.pop_back();
        ASSERT_EQ(buffer, conformance_internal::EncodeOf(game)) << "Encode is not deterministic";
      }
    }
  }
}

TYPED_TEST_P(GameConformanceTest, SymmetriesMapPlayConsistently) {
  using G = typename TestFixture::G;
  using conformance_internal::EncodeOf;
  using conformance_internal::IsPermutation;
  using conformance_internal::Legal;
  const G start = TestFixture::Start();
  const int n = start.NumActions();
  const PlaneShape shape = start.Shape();
  const std::vector<Symmetry> symmetries = start.Symmetries();
  ASSERT_FALSE(symmetries.empty());
  for (int a = 0; a < n; ++a) ASSERT_EQ(symmetries[0].action_map[a], a) << "identity first";
  for (int i = 0; i < shape.Cells(); ++i) ASSERT_EQ(symmetries[0].cell_map[i], i);
  std::set<std::string> names;
  for (const Symmetry& s : symmetries) {
    EXPECT_FALSE(s.name.empty());
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate symmetry " << s.name;
    ASSERT_TRUE(IsPermutation(s.action_map, n)) << s.name;
    ASSERT_TRUE(IsPermutation(s.cell_map, shape.Cells())) << s.name;
  }

  const int cells = shape.Cells();
  const int num_playouts = std::min(TestFixture::NumPlayouts(), 50);
  for (const auto& playout : TestFixture::Playouts(/*seed=*/606, num_playouts)) {
    for (const Symmetry& s : symmetries) {
      SCOPED_TRACE(s.name);
      G mapped = start;
      for (size_t ply = 0; ply < playout.positions.size(); ++ply) {
        const G& game = playout.positions[ply];
        // Built only when an assertion fails (ToString on every ply is slow on big boards).
        const auto where = [&] {
          return absl::StrCat("ply ", ply, "; original:\n", game.ToString(), "mapped:\n",
                              mapped.ToString());
        };
        ASSERT_EQ(mapped.IsTerminal(), game.IsTerminal()) << where();
        if (game.IsTerminal()) {
          ASSERT_EQ(mapped.Returns(), game.Returns()) << where();
        } else {
          ASSERT_EQ(mapped.ToPlay(), game.ToPlay()) << where();
        }
        std::vector<int> expected_legal = Legal(game);
        for (int& a : expected_legal) a = s.action_map[a];
        std::sort(expected_legal.begin(), expected_legal.end());
        ASSERT_EQ(Legal(mapped), expected_legal) << where();

        const std::vector<uint8_t> planes = EncodeOf(game);
        std::vector<uint8_t> expected(planes.size(), 0xFF);
        for (int ch = 0; ch < shape.channels; ++ch) {
          for (int i = 0; i < cells; ++i) {
            expected[ch * cells + s.cell_map[i]] = planes[ch * cells + i];
          }
        }
        ASSERT_EQ(EncodeOf(mapped), expected) << where();

        if (ply < playout.actions.size()) {
          const int action = s.action_map[playout.actions[ply]];
          ASSERT_TRUE(mapped.IsLegal(action)) << "mapped action " << action << "; " << where();
          mapped.Apply(action);
        }
      }
    }
  }
}

TYPED_TEST_P(GameConformanceTest, ActionTextRoundTrips) {
  const auto start = TestFixture::Start();
  const int n = start.NumActions();
  std::set<std::string> texts;
  for (int a = 0; a < n; ++a) {
    const std::string text = start.ActionToString(a);
    EXPECT_FALSE(text.empty()) << a;
    EXPECT_TRUE(texts.insert(text).second) << "two actions print as " << text;
    const absl::StatusOr<int> parsed = start.ParseAction(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    EXPECT_EQ(*parsed, a) << text;
    const absl::StatusOr<int> number = start.ParseAction(std::to_string(a));
    ASSERT_TRUE(number.ok()) << a << ": " << number.status();
    EXPECT_EQ(*number, a);
  }
  // Text forms do not depend on the position.
  const auto playouts = TestFixture::Playouts(/*seed=*/707, 1);
  const auto& later = playouts[0].positions.back();
  for (int a = 0; a < n; ++a) EXPECT_EQ(later.ActionToString(a), start.ActionToString(a));

  for (const std::string& garbage :
       {std::string(""), std::string("zz"), std::string("-1"), std::string("@"),
        std::string("99999999999999999999999"), std::to_string(n), std::to_string(n + 100)}) {
    const absl::StatusOr<int> parsed = start.ParseAction(garbage);
    ASSERT_FALSE(parsed.ok()) << "\"" << garbage << "\" parsed as " << *parsed;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << parsed.status();
    EXPECT_THAT(std::string(parsed.status().message()), ::testing::HasSubstr(garbage));
  }
}

TYPED_TEST_P(GameConformanceTest, ToStringChangesWithEveryMove) {
  for (const auto& playout :
       TestFixture::Playouts(/*seed=*/808, std::min(TestFixture::NumPlayouts(), 20))) {
    for (size_t ply = 0; ply < playout.positions.size(); ++ply) {
      const std::string text = playout.positions[ply].ToString();
      ASSERT_FALSE(text.empty());
      if (ply > 0) {
        ASSERT_NE(text, playout.positions[ply - 1].ToString())
            << "after " << playout.positions[ply - 1].ActionToString(playout.actions[ply - 1]);
      }
    }
  }
}

REGISTER_TYPED_TEST_SUITE_P(GameConformanceTest, StartPosition, LegalActionsAgreeWithIsLegal,
                            RandomPlayoutsEndWithValidReturns, CopiesAreIndependent,
                            HashIdentifiesPositions, EncodeWritesExactlyShapeBytesOfZeroOrOne,
                            SymmetriesMapPlayConsistently, ActionTextRoundTrips,
                            ToStringChangesWithEveryMove);

}  // namespace zf::games
