#include "actor/game_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace zf::actor {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

void PutU32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t GetU32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return v;
}

}  // namespace

absl::Status FileGameSinkOptions::Validate() const {
  if (dir.empty()) return absl::InvalidArgumentError("FileGameSink: dir is empty");
  if (actor_id.empty()) return absl::InvalidArgumentError("FileGameSink: actor_id is empty");
  for (char c : actor_id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) {
      return absl::InvalidArgumentError(
          absl::StrCat("FileGameSink: actor_id \"", actor_id, "\" may hold only [A-Za-z0-9_.-]"));
    }
  }
  if (max_file_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("FileGameSink: max_file_bytes is ", max_file_bytes, ", must be >= 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FileGameSink>> FileGameSink::Create(FileGameSinkOptions options) {
  ZF_RETURN_IF_ERROR(options.Validate());
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create directory ", options.dir, ": ", ec.message()));
  }
  std::unique_ptr<FileGameSink> sink(new FileGameSink(std::move(options)));
  absl::MutexLock lock(&sink->mu_);
  ZF_RETURN_IF_ERROR(sink->OpenNext());
  return sink;
}

FileGameSink::~FileGameSink() { Close(); }

absl::Status FileGameSink::OpenNext() {
  if (fd_ >= 0) {
    ::fsync(fd_);
    ::close(fd_);
    fd_ = -1;
  }
  for (;; ++next_index_) {
    const std::string path =
        absl::StrCat(options_.dir, "/games-", options_.actor_id, "-", next_index_, ".zfgames");
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return Errno(absl::StrCat("cannot create ", path));
    fd_ = fd;
    file_bytes_ = 0;
    files_.push_back(path);
    ++next_index_;
    return absl::OkStatus();
  }
}

absl::Status FileGameSink::Put(zerofleet::v1::GameRecord game, absl::Time /*deadline*/) {
  std::string bytes(8, '\0');
  if (!game.AppendToString(&bytes)) return absl::InternalError("cannot serialize game record");
  const size_t payload = bytes.size() - 8;
  PutU32(static_cast<uint32_t>(payload), bytes.data());
  PutU32(static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(bytes.data() + 8),
                                     static_cast<uInt>(payload))),
         bytes.data() + 4);
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::CancelledError("FileGameSink is closed");
  if (file_bytes_ >= options_.max_file_bytes) ZF_RETURN_IF_ERROR(OpenNext());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(absl::StrCat("write ", files_.back()));
    done += static_cast<size_t>(n);
  }
  file_bytes_ += static_cast<int64_t>(bytes.size());
  ++games_written_;
  return absl::OkStatus();
}

absl::Status FileGameSink::Flush(absl::Time /*deadline*/) {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::CancelledError("FileGameSink is closed");
  if (::fsync(fd_) != 0) return Errno(absl::StrCat("fsync ", files_.back()));
  return absl::OkStatus();
}

void FileGameSink::Close() {
  absl::MutexLock lock(&mu_);
  if (closed_) return;
  closed_ = true;
  if (fd_ >= 0) {
    ::fsync(fd_);
    ::close(fd_);
    fd_ = -1;
  }
}

std::vector<std::string> FileGameSink::files() const {
  absl::MutexLock lock(&mu_);
  return files_;
}

int64_t FileGameSink::games_written() const {
  absl::MutexLock lock(&mu_);
  return games_written_;
}

absl::StatusOr<GameFile> ReadGameFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(path)) return absl::NotFoundError(absl::StrCat("no file ", path));
    return absl::InternalError(absl::StrCat("cannot open ", path));
  }
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::InternalError(absl::StrCat("cannot read ", path));
  GameFile out;
  size_t offset = 0;
  while (offset < data.size()) {
    const size_t left = data.size() - offset;
    if (left < 8) {
      out.torn_tail = absl::StrCat("torn tail: ", left, " bytes after record ", out.games.size(),
                                   " (less than a record header)");
      break;
    }
    const uint32_t length = GetU32(data.data() + offset);
    const uint32_t crc = GetU32(data.data() + offset + 4);
    if (left - 8 < length) {
      out.torn_tail = absl::StrCat("torn tail: ", left, " bytes after record ", out.games.size(),
                                   " (its header says ", length, " + 8)");
      break;
    }
    const char* payload = data.data() + offset + 8;
    const uint32_t actual = static_cast<uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(payload), static_cast<uInt>(length)));
    if (actual != crc) {
      return absl::DataLossError(absl::StrCat(path, ": record ", out.games.size(), " at offset ",
                                              offset, " has a bad CRC"));
    }
    zerofleet::v1::GameRecord game;
    if (!game.ParseFromArray(payload, static_cast<int>(length))) {
      return absl::DataLossError(absl::StrCat(path, ": record ", out.games.size(), " at offset ",
                                              offset, " does not parse as a GameRecord"));
    }
    out.games.push_back(std::move(game));
    offset += 8 + length;
    out.valid_bytes = static_cast<int64_t>(offset);
  }
  return out;
}

}  // namespace zf::actor
