// `zf checkpoint new`: a freshly initialised network for a game, written as a checkpoint (the
// starting model of a run, and a fixture for tests and benchmarks).
// `zf checkpoint show`: a checkpoint's manifest, verified.
#include "cli/commands/model_commands.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/common_flags.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "games/registry.h"
#include "model/checkpoint.h"
#include "model/game_network.h"
#include "model/inference_session.h"

namespace zf::cli {
namespace {

std::string ManifestJson(const model::CheckpointManifest& m) {
  const model::NetworkShape& s = m.shape;
  return absl::StrCat(
      "{\"game\": ", JsonString(m.game), ", \"version\": ", m.version,
      ", \"training_step\": ", m.training_step, ", \"blocks\": ", s.blocks,
      ", \"filters\": ", s.filters, ", \"global_pooling\": ", s.global_pooling ? "true" : "false",
      ", \"aux_heads\": ", s.aux_heads ? "true" : "false", ", \"input\": [", s.input_channels, ", ",
      s.board_height, ", ", s.board_width, "], \"num_actions\": ", s.num_actions, ", \"created\": ",
      JsonString(absl::FormatTime(absl::RFC3339_sec, m.created, absl::UTCTimeZone())),
      ", \"weights_sha256\": ", JsonString(m.weights_sha256), "}");
}

absl::Status RunNew(const std::string& out) {
  if (out.empty()) return absl::InvalidArgumentError("--out FILE is required");
  ZF_ASSIGN_OR_RETURN(games::GameConfig config, games::ParseGameName(absl::GetFlag(FLAGS_game)));
  ZF_ASSIGN_OR_RETURN(const model::NetworkShape shape,
                      model::NetworkShapeForGame(
                          config, absl::GetFlag(FLAGS_blocks), absl::GetFlag(FLAGS_filters),
                          absl::GetFlag(FLAGS_global_pooling), absl::GetFlag(FLAGS_aux_heads)));
  ZF_RETURN_IF_ERROR(shape.Validate());
  model::InferenceSession::Options options;
  options.shape = shape;
  options.seed = absl::GetFlag(FLAGS_seed);
  options.game = config.name;
  ZF_ASSIGN_OR_RETURN(std::unique_ptr<model::InferenceSession> session,
                      model::InferenceSession::Create(options));
  model::InferenceSession::SaveOptions save;
  save.version = 0;
  ZF_ASSIGN_OR_RETURN(model::CheckpointManifest manifest, session->Save(out, save));
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ManifestJson(manifest) << "\n";
  } else {
    std::cout << "wrote " << out << ": " << manifest.game << ", " << shape.DebugString()
              << ", version " << manifest.version << "\n";
  }
  return absl::OkStatus();
}

absl::Status RunShow(const std::string& path) {
  // ReadCheckpoint verifies every section's checksum, not just the manifest's.
  ZF_ASSIGN_OR_RETURN(model::Checkpoint checkpoint, model::ReadCheckpoint(path));
  const model::CheckpointManifest& m = checkpoint.manifest;
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << ManifestJson(m) << "\n";
  } else {
    std::cout << path << " (verified)\n  game           " << m.game << "\n  network        "
              << m.shape.DebugString() << "\n  version        " << m.version
              << "\n  training step  " << m.training_step << "\n  created        "
              << absl::FormatTime(absl::RFC3339_sec, m.created, absl::UTCTimeZone())
              << "\n  weights sha256 " << m.weights_sha256 << "\n";
  }
  return absl::OkStatus();
}

absl::Status RunCheckpoint(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "new") return RunNew(absl::GetFlag(FLAGS_out));
  if (args.size() == 2 && args[0] == "show") return RunShow(args[1]);
  return absl::InvalidArgumentError(
      "usage: zf checkpoint new --game G --out FILE [--blocks B --filters F --seed S] | "
      "zf checkpoint show FILE");
}

}  // namespace

std::vector<Command> ModelCommands() {
  return {
      {"checkpoint",
       "'new': write a freshly initialised network; 'show FILE': verify and print a manifest",
       "zf checkpoint new --game G --out FILE [--blocks B] [--filters F] [--aux_heads] "
       "[--global_pooling] "
       "[--seed S] [--json] | "
       "zf checkpoint show FILE [--json]",
       {"game", "out", "blocks", "filters", "aux_heads", "global_pooling", "seed", "json"},
       RunCheckpoint},
  };
}

}  // namespace zf::cli
