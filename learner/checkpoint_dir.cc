#include "learner/checkpoint_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace zf::learner {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kPrefix = "ckpt-";

absl::Status FsError(const std::error_code& ec, absl::string_view what, const std::string& path) {
  return absl::ErrnoToStatus(ec.value(), absl::StrCat(what, " ", path, ": ", ec.message()));
}

absl::Status FsyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open directory ", dir));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0) return absl::ErrnoToStatus(saved, absl::StrCat("fsync directory ", dir));
  return absl::OkStatus();
}

}  // namespace

std::string CheckpointFileName(int64_t version) {
  return absl::StrFormat("%s%012d%s", kPrefix, version, model::kCheckpointExtension);
}

int64_t VersionFromFileName(const std::string& name) {
  absl::string_view s = name;
  if (!absl::ConsumePrefix(&s, kPrefix) || !absl::ConsumeSuffix(&s, model::kCheckpointExtension)) {
    return -1;
  }
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  int64_t version = -1;
  if (!absl::SimpleAtoi(s, &version)) return -1;
  return version;
}

absl::StatusOr<std::vector<std::string>> ListCheckpoints(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("no checkpoint directory ", dir));
  }
  std::vector<std::pair<int64_t, std::string>> found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const int64_t version = VersionFromFileName(name);
    if (version >= 0) found.emplace_back(version, entry.path().string());
  }
  if (ec) return FsError(ec, "list", dir);
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  out.reserve(found.size());
  for (auto& [version, path] : found) out.push_back(std::move(path));
  return out;
}

absl::StatusOr<std::string> LatestCheckpointPath(const std::string& dir) {
  const fs::path link = fs::path(dir) / kLatestName;
  std::error_code ec;
  const fs::path target = fs::read_symlink(link, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) {
      return absl::NotFoundError(absl::StrCat("no ", link.string(), " yet"));
    }
    return FsError(ec, "readlink", link.string());
  }
  return target.is_absolute() ? target.string() : (fs::path(dir) / target).string();
}

absl::StatusOr<NewestCheckpoint> ReadNewestCheckpoint(const std::string& dir) {
  std::vector<std::string> candidates;
  if (absl::StatusOr<std::string> latest = LatestCheckpointPath(dir); latest.ok()) {
    candidates.push_back(*latest);
  }
  if (absl::StatusOr<std::vector<std::string>> all = ListCheckpoints(dir); all.ok()) {
    candidates.insert(candidates.end(), all->rbegin(), all->rend());
  }
  NewestCheckpoint best;
  bool found = false;
  for (const std::string& path : candidates) {
    absl::StatusOr<model::Checkpoint> checkpoint = model::ReadCheckpoint(path);
    if (!checkpoint.ok()) {
      ZF_LOG(WARNING) << "skipping checkpoint: " << checkpoint.status();
      const bool seen = std::any_of(best.damaged.begin(), best.damaged.end(), [&](const auto& d) {
        return fs::path(d.first).filename() == fs::path(path).filename();
      });
      if (!seen && fs::exists(path)) best.damaged.emplace_back(path, checkpoint.status());
      continue;
    }
    if (!found || checkpoint->manifest.version > best.checkpoint.manifest.version) {
      best.path = path;
      best.checkpoint = *std::move(checkpoint);
      found = true;
    }
    // Files are listed newest first after `latest`: the first good listed file is the newest.
    if (path != candidates.front() || candidates.size() == 1) break;
  }
  if (!found) return absl::NotFoundError(absl::StrCat("no readable checkpoint in ", dir));
  return best;
}

absl::Status CheckpointDirectory::Options::Validate() const {
  if (dir.empty()) return absl::InvalidArgumentError("checkpoint directory: dir is empty");
  if (keep < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint directory: keep must be >= 1, got ", keep));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CheckpointDirectory>> CheckpointDirectory::Create(Options options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec) return FsError(ec, "create directory", options.dir);
  auto out = std::unique_ptr<CheckpointDirectory>(new CheckpointDirectory(std::move(options)));
  ZF_ASSIGN_OR_RETURN(std::vector<std::string> existing, ListCheckpoints(out->dir()));
  if (!existing.empty()) {
    out->last_version_ = VersionFromFileName(fs::path(existing.back()).filename().string());
  }
  // Versions set aside as damaged count too: one may have been served, so its number is never
  // published again (also when a crash came between SetAside and the next Publish).
  for (const auto& entry : fs::directory_iterator(fs::path(out->dir()) / "damaged", ec)) {
    out->last_version_ =
        std::max(out->last_version_, VersionFromFileName(entry.path().filename().string()));
  }
  return out;
}

absl::StatusOr<model::CheckpointManifest> CheckpointDirectory::Publish(
    const model::Checkpoint& checkpoint) {
  const int64_t version = checkpoint.manifest.version;
  if (version <= last_version_) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint version ", version,
                                                   " is not greater than the last published ",
                                                   last_version_, " in ", dir()));
  }
  const std::string name = CheckpointFileName(version);
  ZF_ASSIGN_OR_RETURN(model::CheckpointManifest written,
                      model::WriteCheckpoint((fs::path(dir()) / name).string(), checkpoint));
  last_version_ = version;
  ZF_RETURN_IF_ERROR(PointLatestAt(name));
  Prune();
  return written;
}

absl::Status CheckpointDirectory::SetAside(
    const std::vector<std::pair<std::string, absl::Status>>& damaged) {
  if (damaged.empty()) return absl::OkStatus();
  const fs::path aside = fs::path(dir()) / "damaged";
  std::error_code ec;
  fs::create_directories(aside, ec);
  if (ec) return FsError(ec, "create directory", aside.string());
  for (const auto& [path, why] : damaged) {
    const fs::path to = aside / fs::path(path).filename();
    if (::rename(path.c_str(), to.c_str()) != 0) {
      return absl::ErrnoToStatus(errno, absl::StrCat("rename ", path, " to ", to.string()));
    }
    ZF_LOG(WARNING) << "checkpoint " << path << " is damaged (" << why.message()
                    << "); set aside as " << to.string();
  }
  ZF_RETURN_IF_ERROR(FsyncDir(aside.string()));
  return FsyncDir(dir());
}

absl::Status CheckpointDirectory::PointLatestAt(const std::string& file_name) {
  // A hidden temporary link renamed over `latest`: rename(2) replaces it atomically.
  const std::string tmp =
      (fs::path(dir()) / absl::StrCat(".", kLatestName, ".tmp.", ::getpid())).string();
  const std::string link = (fs::path(dir()) / kLatestName).string();
  ::unlink(tmp.c_str());
  if (::symlink(file_name.c_str(), tmp.c_str()) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("symlink ", tmp));
  }
  if (::rename(tmp.c_str(), link.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    return absl::ErrnoToStatus(saved, absl::StrCat("rename ", tmp, " to ", link));
  }
  return FsyncDir(dir());
}

void CheckpointDirectory::Prune() {
  absl::StatusOr<std::vector<std::string>> all = ListCheckpoints(dir());
  if (!all.ok()) return;
  absl::StatusOr<std::string> latest = LatestCheckpointPath(dir());
  const size_t keep = static_cast<size_t>(options_.keep);
  for (size_t i = 0; i + keep < all->size(); ++i) {
    const std::string& path = (*all)[i];
    if (latest.ok() && fs::path(*latest).filename() == fs::path(path).filename()) continue;
    std::error_code ec;
    fs::remove(path, ec);
    if (ec) ZF_LOG(WARNING) << "could not prune " << path << ": " << ec.message();
  }
}

}  // namespace zf::learner
