// The checkpoint file: one file per published model, written atomically and verified on read.
// Torch-free: it moves opaque byte blobs (the LibTorch archive of the weights, the optimizer
// state) and knows nothing of tensors. model/internal/network_ops.h turns a network into the
// weights blob and back; InferenceSession::Create and Save use both.
//
// Layout, format versions 1 and 2 (all integers little-endian):
//
//   magic           8 bytes  "\x89ZFCKPT\n" (the high byte and the newline catch text-mode
//                            transfers, as PNG's signature does)
//   format_version  u32      1, or 2 (see below)
//   section_count   u32      2..16 (this writer: 2, or 3 with an optimizer state)
//   section_count times:
//     name_length   u32      1..64
//     name          bytes    "manifest" (always first), "weights", "optimizer" (optional)
//     payload_size  u64
//     payload_sha   32 bytes SHA-256 of the payload
//     payload       payload_size bytes
//   end of file, exactly (trailing bytes are corruption)
//
// The manifest payload is UTF-8 text, one `key=value` line per field (keys below, in
// CheckpointManifest; `created` in RFC 3339 UTC), so `head -c 600 model.zfckpt` shows it.
// Readers ignore manifest keys and sections they do not know, so a later writer can add
// either without a new format version; removing or changing one needs a new version.
// Version 2 is version 1 whose manifest may say global_pooling=1, a key that changes what the
// weights compute: a build that reads only version 1 would ignore it and the extra tensors and
// silently run a different network, so such a file must be one it refuses. The writer writes
// version 1 when it can (CheckpointFormatVersionFor), so other checkpoints stay readable by
// older builds.
//
// Every section carries its own SHA-256; the manifest also records the weights' (and the
// optimizer state's) SHA-256 in hex, and readers check that it agrees.
//
// Thread-safety: free functions; thread-safe. Concurrent writers of one path each write their
// own temporary file and the last rename wins; a reader sees the old file or the new one,
// never a mixture.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "model/network.h"

namespace zf::model {

// The newest format version this build reads and writes, and the oldest it reads.
inline constexpr int kCheckpointFormatVersion = 2;
inline constexpr int kOldestCheckpointFormatVersion = 1;

// The format version a checkpoint of `shape` is written in: 2 with global pooling, else 1.
inline int CheckpointFormatVersionFor(const NetworkShape& shape) {
  return shape.global_pooling ? 2 : 1;
}
// Conventional file name extension (nothing checks it).
inline constexpr absl::string_view kCheckpointExtension = ".zfckpt";

// What a checkpoint says about itself. Keys in the file are the field names (the shape's
// fields flattened: input_channels, board_height, ...).
struct CheckpointManifest {
  // Set by WriteCheckpoint (to CheckpointFormatVersionFor(shape)) and by the readers.
  int format_version = 0;
  // The game's canonical name, e.g. "connect4" or "dotsboxes:3x3". 1..256 printable
  // characters, no '\n'.
  std::string game;
  NetworkShape shape;
  // The model version: assigned by the learner, strictly increasing over a run; >= 0.
  int64_t version = 0;
  // Optimizer steps taken to produce these weights; >= 0.
  int64_t training_step = 0;
  // When the weights were produced. WriteCheckpoint stamps absl::Now() if this is
  // absl::InfinitePast() (the default). Stored with nanosecond precision.
  absl::Time created = absl::InfinitePast();
  // The LibTorch version that serialized the weights ("1.13.0"), informational: archives are
  // not verified to be readable across LibTorch versions. Same character rules as `game`;
  // may be empty.
  std::string torch_version;
  // Lower-case hex SHA-256 of the weights and of the optimizer state (empty when there is
  // none). Computed by WriteCheckpoint (whatever the caller put here is ignored) and checked
  // by ReadCheckpoint.
  std::string weights_sha256;
  std::string optimizer_sha256;
};

// A whole checkpoint in memory.
struct Checkpoint {
  CheckpointManifest manifest;
  // The network's parameters and buffers as a LibTorch archive; never empty in a valid file.
  std::string weights;
  // The learner's optimizer state, in whatever form the learner wrote it; empty when absent.
  std::string optimizer_state;
};

// Writes `checkpoint` to `path` atomically: writes a temporary file in the same directory
// (hidden: ".NAME.tmp.XXXXXX"), fsyncs it, renames it over `path`, then fsyncs the directory.
// On failure the temporary file is removed and `path` is untouched (the old file, or none); a
// writer that crashes can leave the hidden temporary file behind, so directory watchers skip
// names starting with '.'. Blocks on disk I/O.
// Returns the manifest as written (format version, hashes and `created` filled in), or:
//   InvalidArgument: a manifest field is out of range (the message names it), or the weights
//     are empty;
//   the errno-derived code (NotFound for a missing directory, PermissionDenied,
//     ResourceExhausted for a full disk, ...) with a message naming the file and the call
//     that failed.
absl::StatusOr<CheckpointManifest> WriteCheckpoint(const std::string& path,
                                                   const Checkpoint& checkpoint);

// Reads and verifies a whole checkpoint: magic, format version, section sizes against the file
// size, every section's SHA-256, the manifest's fields and its hashes. Blocks on disk I/O.
// Returns the checkpoint, or:
//   NotFound: no file at `path`;
//   DataLoss: anything wrong with the contents (truncated, trailing bytes, a flipped byte,
//     unknown format version, a malformed or inconsistent manifest); the message names the
//     file and what was wrong;
//   another errno-derived code if the file cannot be read.
absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path);

// ReadCheckpoint of a file's bytes already in memory (`path` names them in messages): for a
// reader that needs the bytes too, e.g. the model service, which serves what it verified.
// Returns: as ReadCheckpoint (DataLoss for anything wrong with the contents).
absl::StatusOr<Checkpoint> ParseCheckpoint(absl::string_view data, const std::string& path);

// Reads and verifies only the header and the manifest (its SHA-256 included), without reading
// or verifying the rest of the file. Cheap enough to poll a directory with.
// Returns: as ReadCheckpoint (a corrupt weights section is not detected here).
absl::StatusOr<CheckpointManifest> ReadManifest(const std::string& path);

// Lower-case hex SHA-256 of `data` (OpenSSL EVP).
std::string Sha256Hex(absl::string_view data);

}  // namespace zf::model
