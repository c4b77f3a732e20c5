#include "games/registry.h"

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace zf::games {
namespace {

template <typename G>
absl::StatusOr<GameConfig> ParseAs(absl::string_view full,
                                   std::optional<absl::string_view> params) {
  absl::StatusOr<G> start = G::FromParameters(params);
  if (!start.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(full, ": ", start.status().message()));
  }
  GameConfig config;
  config.name = start->Name();
  config.start = *std::move(start);
  return config;
}

struct Entry {
  absl::string_view syntax;
  absl::string_view description;
};

std::vector<Entry> Entries() {
  std::vector<Entry> entries;
  RegisteredGames::ForEach([&entries](auto type) {
    using G = typename decltype(type)::type;
    entries.push_back({G::kSyntax, G::kDescription});
  });
  return entries;
}

}  // namespace

absl::StatusOr<GameConfig> ParseGameName(absl::string_view name) {
  const size_t colon = name.find(':');
  const absl::string_view family = name.substr(0, colon);
  std::optional<absl::string_view> params;
  if (colon != absl::string_view::npos) params = name.substr(colon + 1);
  std::optional<absl::StatusOr<GameConfig>> parsed;
  RegisteredGames::ForEach([&](auto type) {
    using G = typename decltype(type)::type;
    if (!parsed.has_value() && G::kFamily == family) parsed = ParseAs<G>(name, params);
  });
  if (parsed.has_value()) return *std::move(parsed);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown game \"", name, "\"; known games: ", KnownGameNames()));
}

std::string KnownGameNames() {
  std::string out;
  for (const Entry& entry : Entries()) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", entry.syntax);
  }
  return out;
}

std::string KnownGamesHelp() {
  std::string out;
  for (const Entry& entry : Entries()) {
    absl::StrAppendFormat(&out, "  %-16s %s\n", entry.syntax, entry.description);
  }
  return out;
}

}  // namespace zf::games
