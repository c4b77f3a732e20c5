// CheckpointDirectory: the learner's published checkpoints in one folder (DIR/checkpoints/).
//
// Layout:
//   ckpt-000000000042.zfckpt   one file per published version (12-digit zero-padded version),
//                              written atomically by model::WriteCheckpoint
//   latest                     a relative symbolic link to the newest complete checkpoint file
//   .*                         temporary files of writes in progress (ignored by readers)
//   damaged/                   checkpoint files that failed to verify, set aside (SetAside)
//
// Publish writes the new file completely (fsynced, renamed into place), then replaces `latest`
// atomically (a new link renamed over the old one, then the directory is fsynced), then prunes
// old files. So `latest` always names a complete checkpoint, and anything that opens a path
// (ReadCheckpoint, `zf match net:DIR/checkpoints/latest:SIMS`, `zf checkpoint show`) follows it.
// Pruning keeps the newest `keep` files and never the one `latest` names.
//
// Thread-safety: thread-compatible for Publish (one writer: the learner); the read-only
// functions are thread-safe and may run in other processes concurrently with a writer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/checkpoint.h"

namespace zf::learner {

inline constexpr char kLatestName[] = "latest";

// "ckpt-000000000042.zfckpt" for version 42.
std::string CheckpointFileName(int64_t version);
// The version in a CheckpointFileName, or -1 if `name` is not one.
int64_t VersionFromFileName(const std::string& name);

// Published checkpoint files in `dir`, ordered by increasing version (names only, no check of
// their contents). Returns: the paths; NotFound if `dir` does not exist.
absl::StatusOr<std::vector<std::string>> ListCheckpoints(const std::string& dir);

// The file `dir`/latest names (resolved to a path inside `dir`).
// Returns: the path; NotFound when there is no `latest` yet.
absl::StatusOr<std::string> LatestCheckpointPath(const std::string& dir);

struct NewestCheckpoint {
  std::string path;
  model::Checkpoint checkpoint;
  // Files newer than `path` that failed to read or verify (damaged at rest, or cut short), each
  // once, newest first; with why.
  std::vector<std::pair<std::string, absl::Status>> damaged;
};

// The newest checkpoint in `dir` that reads and verifies completely (what a learner resumes
// from): `latest` if it is good, else the listed files from the newest down (a crash can leave
// `latest` behind a newer complete file, never ahead of it). Files that fail to read are
// skipped with a warning. Blocks on disk I/O.
// Returns: the checkpoint; NotFound if there is none.
absl::StatusOr<NewestCheckpoint> ReadNewestCheckpoint(const std::string& dir);

class CheckpointDirectory {
 public:
  struct Options {
    std::string dir;  // created (with parents) if missing
    int keep = 5;     // published files kept, >= 1
    // Returns: OK; InvalidArgument naming the bad field.
    absl::Status Validate() const;
  };

  // Returns: the directory; InvalidArgument (options); the errno-derived code if it cannot be
  // created.
  static absl::StatusOr<std::unique_ptr<CheckpointDirectory>> Create(Options options);

  // Writes `checkpoint` as CheckpointFileName(manifest.version), points `latest` at it and
  // prunes. Blocks on disk I/O (several fsyncs).
  // Returns: the manifest as written; InvalidArgument (a bad manifest, or a version not
  // greater than the latest published one); an errno-derived code for I/O errors (`latest`
  // then still names the previous checkpoint).
  absl::StatusOr<model::CheckpointManifest> Publish(const model::Checkpoint& checkpoint);

  // Moves each damaged checkpoint file (NewestCheckpoint::damaged) into dir/damaged/, keeping its
  // bytes for inspection and out of every reader's way. Versions keep counting above them: the
  // next Publish must still exceed last_version(), so a version number a damaged file once held
  // (and that may have been served) is never reused for other weights. Blocks on disk I/O.
  // Returns: OK; an errno-derived code (the files not yet moved stay where they were).
  absl::Status SetAside(const std::vector<std::pair<std::string, absl::Status>>& damaged);

  const std::string& dir() const { return options_.dir; }
  // The highest version published, or found in the directory or its damaged/ at Create; -1 when
  // none.
  int64_t last_version() const { return last_version_; }

 private:
  explicit CheckpointDirectory(Options options) : options_(std::move(options)) {}
  absl::Status PointLatestAt(const std::string& file_name);
  void Prune();

  const Options options_;
  int64_t last_version_ = -1;
};

}  // namespace zf::learner
