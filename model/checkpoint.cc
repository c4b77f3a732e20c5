#include "model/checkpoint.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace zf::model {
namespace {

constexpr char kMagic[8] = {'\x89', 'Z', 'F', 'C', 'K', 'P', 'T', '\n'};
constexpr size_t kShaSize = 32;
constexpr uint32_t kMaxSections = 16;
constexpr uint32_t kMaxSectionNameLength = 64;
// A manifest is a few hundred bytes; the bound keeps ReadManifest's read small and stops a
// corrupt size field from asking for gigabytes.
constexpr uint64_t kMaxManifestSize = 64 * 1024;
constexpr size_t kMaxTextField = 256;
// Header: magic, format version, section count.
constexpr size_t kHeaderSize = sizeof(kMagic) + 4 + 4;

constexpr absl::string_view kManifestSection = "manifest";
constexpr absl::string_view kWeightsSection = "weights";
constexpr absl::string_view kOptimizerSection = "optimizer";

// ---- bytes -----------------------------------------------------------------------------

void AppendU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void AppendU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t LoadLittleEndian(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

std::array<unsigned char, kShaSize> Sha256(absl::string_view data) {
  std::array<unsigned char, kShaSize> digest{};
  unsigned int size = 0;
  // EVP_Digest fails only on allocation failure or a broken OpenSSL installation.
  ZF_CHECK(EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr) == 1 &&
           size == kShaSize)
      << "OpenSSL EVP_Digest(SHA-256) failed";
  return digest;
}

// Lowercase hex, as the manifest stores digests.
std::string Hex(const unsigned char* bytes, size_t n) {
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(bytes), n));
}

// ---- manifest text -------------------------------------------------------------------------

bool IsValidTextField(absl::string_view s) {
  if (s.size() > kMaxTextField) return false;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;  // control characters, '\n' among them
  }
  return true;
}

absl::Status ValidateForWrite(const Checkpoint& c) {
  const CheckpointManifest& m = c.manifest;
  if (m.game.empty() || !IsValidTextField(m.game)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint manifest: game must be 1..", kMaxTextField,
        " characters without control characters, got \"", absl::CHexEscape(m.game), "\""));
  }
  if (!IsValidTextField(m.torch_version)) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint manifest: torch_version must be at most ", kMaxTextField,
                     " characters without control characters"));
  }
  ZF_RETURN_IF_ERROR(m.shape.Validate());
  if (m.version < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint manifest: version must be >= 0, got ", m.version));
  }
  if (m.training_step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint manifest: training_step must be >= 0, got ", m.training_step));
  }
  if (m.created == absl::InfiniteFuture()) {
    return absl::InvalidArgumentError("checkpoint manifest: created must be a finite time");
  }
  if (c.weights.empty()) return absl::InvalidArgumentError("checkpoint: the weights are empty");
  return absl::OkStatus();
}

std::string FormatManifest(const CheckpointManifest& m) {
  std::string out;
  auto line = [&out](absl::string_view key, const auto& value) {
    absl::StrAppend(&out, key, "=", value, "\n");
  };
  line("format_version", m.format_version);
  line("game", m.game);
  line("input_channels", m.shape.input_channels);
  line("board_height", m.shape.board_height);
  line("board_width", m.shape.board_width);
  line("num_actions", m.shape.num_actions);
  line("blocks", m.shape.blocks);
  line("filters", m.shape.filters);
  line("value_hidden", m.shape.value_hidden);
  // Written only when set, so manifests of networks without them are unchanged.
  if (m.shape.aux_heads) line("aux_heads", 1);
  if (m.shape.global_pooling) line("global_pooling", 1);
  line("version", m.version);
  line("training_step", m.training_step);
  line("created", absl::FormatTime(absl::RFC3339_full, m.created, absl::UTCTimeZone()));
  line("torch_version", m.torch_version);
  line("weights_sha256", m.weights_sha256);
  line("optimizer_sha256", m.optimizer_sha256);
  return out;
}

// `where` names the file in error messages; `header_version` is the file header's format version.
absl::StatusOr<CheckpointManifest> ParseManifest(absl::string_view text, absl::string_view where,
                                                 int header_version) {
  auto corrupt = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat(where, ": manifest: ", what));
  };
  if (text.empty() || text.back() != '\n') return corrupt("does not end with a newline");
  text.remove_suffix(1);
  absl::flat_hash_map<std::string, std::string> fields;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return corrupt(absl::StrCat("malformed line \"", absl::CHexEscape(line), "\""));
    }
    auto [it, inserted] = fields.emplace(line.substr(0, eq), line.substr(eq + 1));
    if (!inserted) return corrupt(absl::StrCat("duplicate key \"", it->first, "\""));
  }
  auto get = [&](absl::string_view key) -> absl::StatusOr<absl::string_view> {
    auto it = fields.find(key);
    if (it == fields.end()) return corrupt(absl::StrCat("missing key \"", key, "\""));
    return absl::string_view(it->second);
  };
  auto get_int = [&](absl::string_view key, auto* out) -> absl::Status {
    ZF_ASSIGN_OR_RETURN(absl::string_view value, get(key));
    if (!absl::SimpleAtoi(value, out)) {
      return corrupt(
          absl::StrCat("key \"", key, "\" is not an integer: \"", absl::CHexEscape(value), "\""));
    }
    return absl::OkStatus();
  };
  auto get_text = [&](absl::string_view key, std::string* out) -> absl::Status {
    ZF_ASSIGN_OR_RETURN(absl::string_view value, get(key));
    *out = std::string(value);
    return absl::OkStatus();
  };
  auto get_sha = [&](absl::string_view key, bool may_be_empty, std::string* out) -> absl::Status {
    ZF_RETURN_IF_ERROR(get_text(key, out));
    if (out->empty() && may_be_empty) return absl::OkStatus();
    bool ok = out->size() == 2 * kShaSize;
    for (char c : *out) ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    if (!ok) return corrupt(absl::StrCat("key \"", key, "\" is not a SHA-256 in hex"));
    return absl::OkStatus();
  };

  CheckpointManifest m;
  ZF_RETURN_IF_ERROR(get_int("format_version", &m.format_version));
  if (m.format_version != header_version) {
    return corrupt(absl::StrCat("format_version is ", m.format_version, " but the header says ",
                                header_version));
  }
  ZF_RETURN_IF_ERROR(get_text("game", &m.game));
  if (m.game.empty()) return corrupt("game is empty");
  ZF_RETURN_IF_ERROR(get_int("input_channels", &m.shape.input_channels));
  ZF_RETURN_IF_ERROR(get_int("board_height", &m.shape.board_height));
  ZF_RETURN_IF_ERROR(get_int("board_width", &m.shape.board_width));
  ZF_RETURN_IF_ERROR(get_int("num_actions", &m.shape.num_actions));
  ZF_RETURN_IF_ERROR(get_int("blocks", &m.shape.blocks));
  ZF_RETURN_IF_ERROR(get_int("filters", &m.shape.filters));
  ZF_RETURN_IF_ERROR(get_int("value_hidden", &m.shape.value_hidden));
  if (fields.contains("aux_heads")) {
    int aux = 0;
    ZF_RETURN_IF_ERROR(get_int("aux_heads", &aux));
    if (aux != 0 && aux != 1) return corrupt(absl::StrCat("aux_heads is ", aux, ", not 0 or 1"));
    m.shape.aux_heads = aux == 1;
  }
  if (fields.contains("global_pooling")) {
    int pooling = 0;
    ZF_RETURN_IF_ERROR(get_int("global_pooling", &pooling));
    if (pooling != 0 && pooling != 1) {
      return corrupt(absl::StrCat("global_pooling is ", pooling, ", not 0 or 1"));
    }
    m.shape.global_pooling = pooling == 1;
    if (m.shape.global_pooling && m.format_version < 2) {
      return corrupt(absl::StrCat("global_pooling needs format version 2, the file is version ",
                                  m.format_version));
    }
  }
  if (absl::Status s = m.shape.Validate(); !s.ok()) return corrupt(s.message());
  ZF_RETURN_IF_ERROR(get_int("version", &m.version));
  if (m.version < 0) return corrupt(absl::StrCat("version is negative: ", m.version));
  ZF_RETURN_IF_ERROR(get_int("training_step", &m.training_step));
  if (m.training_step < 0) {
    return corrupt(absl::StrCat("training_step is negative: ", m.training_step));
  }
  ZF_ASSIGN_OR_RETURN(absl::string_view created, get("created"));
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, created, &m.created, &error)) {
    return corrupt(absl::StrCat("created is not an RFC 3339 time: ", error));
  }
  ZF_RETURN_IF_ERROR(get_text("torch_version", &m.torch_version));
  ZF_RETURN_IF_ERROR(get_sha("weights_sha256", /*may_be_empty=*/false, &m.weights_sha256));
  ZF_RETURN_IF_ERROR(get_sha("optimizer_sha256", /*may_be_empty=*/true, &m.optimizer_sha256));
  return m;
}

// ---- files ---------------------------------------------------------------------------------

absl::Status ErrnoError(int error_number, absl::string_view call, absl::string_view path) {
  return absl::ErrnoToStatus(error_number, absl::StrCat(call, " ", path));
}

// Owns a file descriptor.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now, reporting the error (close can report a deferred write error).
  int Close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

absl::Status WriteAll(int fd, absl::string_view data, absl::string_view path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Reads up to `size` bytes at `offset` into a string; stops early only at end of file.
absl::StatusOr<std::string> ReadAt(int fd, uint64_t offset, uint64_t size, absl::string_view path) {
  std::string out(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n =
        ::pread(fd, out.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "read", path);
    }
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
  }
  out.resize(done);
  return out;
}

struct OpenFile {
  std::unique_ptr<Fd> fd;
  uint64_t size = 0;
};

absl::StatusOr<OpenFile> OpenForRead(const std::string& path) {
  int raw;
  do {
    raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (raw < 0 && errno == EINTR);
  if (raw < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no checkpoint at ", path));
    return ErrnoError(errno, "open", path);
  }
  OpenFile f{std::make_unique<Fd>(raw), 0};
  struct stat st;
  if (::fstat(raw, &st) != 0) return ErrnoError(errno, "fstat", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
  }
  f.size = static_cast<uint64_t>(st.st_size);
  return f;
}

// ---- parsing -------------------------------------------------------------------------------

struct Section {
  std::string name;
  absl::string_view payload;
};

// Walks the header and sections of `data`, which holds the first data.size() bytes of a
// file of `file_size` bytes. With `manifest_only`, stops after the first section.
class Parser {
 public:
  Parser(absl::string_view data, uint64_t file_size, absl::string_view path)
      : data_(data), file_size_(file_size), path_(path) {}

  absl::StatusOr<std::vector<Section>> Parse(bool manifest_only) {
    ZF_RETURN_IF_ERROR(Need(kHeaderSize, "the header"));
    if (std::memcmp(data_.data(), kMagic, sizeof(kMagic)) != 0) {
      return Corrupt("bad magic: not a zerofleet checkpoint");
    }
    pos_ = sizeof(kMagic);
    format_version_ = U32();
    if (format_version_ < static_cast<uint32_t>(kOldestCheckpointFormatVersion) ||
        format_version_ > static_cast<uint32_t>(kCheckpointFormatVersion)) {
      return Corrupt(absl::StrCat("unsupported format version ", format_version_,
                                  " (this build reads ", kOldestCheckpointFormatVersion, " to ",
                                  kCheckpointFormatVersion, ")"));
    }
    const uint32_t count = U32();
    if (count < 2 || count > kMaxSections) {
      return Corrupt(absl::StrCat("bad section count ", count));
    }
    std::vector<Section> sections;
    absl::flat_hash_set<std::string> seen;
    for (uint32_t i = 0; i < count; ++i) {
      ZF_RETURN_IF_ERROR(Need(4, absl::StrCat("section ", i, "'s name length")));
      const uint32_t name_length = U32();
      if (name_length == 0 || name_length > kMaxSectionNameLength) {
        return Corrupt(absl::StrCat("section ", i, " has a bad name length ", name_length));
      }
      ZF_RETURN_IF_ERROR(
          Need(name_length + 8 + kShaSize, absl::StrCat("section ", i, "'s header")));
      Section section;
      section.name = std::string(data_.substr(pos_, name_length));
      pos_ += name_length;
      for (char c : section.name) {
        if (!((c >= 'a' && c <= 'z') || c == '_')) {
          return Corrupt(absl::StrCat("section ", i, " has a bad name \"",
                                      absl::CHexEscape(section.name), "\""));
        }
      }
      if (i == 0 && section.name != kManifestSection) {
        return Corrupt(
            absl::StrCat("the first section is \"", section.name, "\", not \"manifest\""));
      }
      if (!seen.insert(section.name).second) {
        return Corrupt(absl::StrCat("duplicate section \"", section.name, "\""));
      }
      const uint64_t size = U64();
      const absl::string_view sha = data_.substr(pos_, kShaSize);
      pos_ += kShaSize;
      if (i == 0 && size > kMaxManifestSize) {
        return Corrupt(absl::StrCat("manifest size ", size, " exceeds ", kMaxManifestSize));
      }
      ZF_RETURN_IF_ERROR(Need(size, absl::StrCat("section \"", section.name, "\"")));
      section.payload = data_.substr(pos_, size);
      pos_ += size;
      const auto actual = Sha256(section.payload);
      if (std::memcmp(actual.data(), sha.data(), kShaSize) != 0) {
        return Corrupt(
            absl::StrCat("section \"", section.name, "\" fails its SHA-256 check (stored ",
                         Hex(reinterpret_cast<const unsigned char*>(sha.data()), kShaSize),
                         ", computed ", Hex(actual.data(), kShaSize), ")"));
      }
      sections.push_back(std::move(section));
      if (manifest_only) return sections;
    }
    if (pos_ != file_size_) {
      return Corrupt(absl::StrCat(file_size_ - pos_, " unexpected bytes after the last section"));
    }
    return sections;
  }

  // The header's format version (after a successful Parse).
  int format_version() const { return static_cast<int>(format_version_); }

 private:
  absl::Status Corrupt(absl::string_view what) const {
    return absl::DataLossError(absl::StrCat(path_, ": ", what));
  }

  // Checks that `n` more bytes are in the file (and in `data_`).
  absl::Status Need(uint64_t n, absl::string_view what) const {
    if (n > file_size_ - pos_) {
      return Corrupt(absl::StrCat("truncated: ", what, " needs ", n, " bytes at offset ", pos_,
                                  " but the file has ", file_size_, " bytes"));
    }
    // Only ReadManifest reads a prefix, and it reads enough for a manifest of the maximum
    // size, which Parse checks before asking for the payload.
    ZF_CHECK(n <= data_.size() - pos_) << "checkpoint parser read past its buffer";
    return absl::OkStatus();
  }

  uint32_t U32() {
    const auto v = static_cast<uint32_t>(LoadLittleEndian(data_.data() + pos_, 4));
    pos_ += 4;
    return v;
  }
  uint64_t U64() {
    const uint64_t v = LoadLittleEndian(data_.data() + pos_, 8);
    pos_ += 8;
    return v;
  }

  absl::string_view data_;
  uint64_t file_size_;
  absl::string_view path_;
  uint64_t pos_ = 0;
  uint32_t format_version_ = 0;
};

std::string TempPathFor(const std::filesystem::path& target) {
  const std::filesystem::path dir = target.parent_path();
  // StrCat, not std::string operator+: g++ 12 at -O3 (Release) reports a false -Wrestrict in the
  // inlined operator+ here, which -Werror made fatal in the image build.
  const std::string name = absl::StrCat(".", target.filename().string(), ".tmp.XXXXXX");
  return dir.empty() ? name : (dir / name).string();
}

}  // namespace

std::string Sha256Hex(absl::string_view data) {
  const auto digest = Sha256(data);
  return Hex(digest.data(), digest.size());
}

absl::StatusOr<CheckpointManifest> WriteCheckpoint(const std::string& path,
                                                   const Checkpoint& checkpoint) {
  ZF_RETURN_IF_ERROR(ValidateForWrite(checkpoint));
  CheckpointManifest manifest = checkpoint.manifest;
  manifest.format_version = CheckpointFormatVersionFor(manifest.shape);
  if (manifest.created == absl::InfinitePast()) manifest.created = absl::Now();
  manifest.weights_sha256 = Sha256Hex(checkpoint.weights);
  manifest.optimizer_sha256 =
      checkpoint.optimizer_state.empty() ? "" : Sha256Hex(checkpoint.optimizer_state);

  const std::string manifest_text = FormatManifest(manifest);
  std::vector<std::pair<absl::string_view, absl::string_view>> sections = {
      {kManifestSection, manifest_text}, {kWeightsSection, checkpoint.weights}};
  if (!checkpoint.optimizer_state.empty()) {
    sections.emplace_back(kOptimizerSection, checkpoint.optimizer_state);
  }
  std::string header(kMagic, sizeof(kMagic));
  AppendU32(&header, static_cast<uint32_t>(manifest.format_version));
  AppendU32(&header, static_cast<uint32_t>(sections.size()));

  std::string tmp = TempPathFor(path);
  const int raw = ::mkstemp(tmp.data());
  if (raw < 0) return ErrnoError(errno, "mkstemp", tmp);
  Fd fd(raw);
  // From here on, any failure removes the temporary file.
  auto fail = [&tmp](absl::Status status) {
    ::unlink(tmp.c_str());
    return status;
  };
  // mkstemp creates the file 0600; a checkpoint is meant to be read by other processes.
  if (::fchmod(fd.get(), 0644) != 0) return fail(ErrnoError(errno, "fchmod", tmp));
  absl::Status status = WriteAll(fd.get(), header, tmp);
  for (const auto& [name, payload] : sections) {
    if (!status.ok()) break;
    std::string section_header;
    AppendU32(&section_header, static_cast<uint32_t>(name.size()));
    section_header.append(name.data(), name.size());
    AppendU64(&section_header, payload.size());
    const auto sha = Sha256(payload);
    section_header.append(reinterpret_cast<const char*>(sha.data()), sha.size());
    status = WriteAll(fd.get(), section_header, tmp);
    if (status.ok()) status = WriteAll(fd.get(), payload, tmp);
  }
  if (!status.ok()) return fail(status);
  if (::fsync(fd.get()) != 0) return fail(ErrnoError(errno, "fsync", tmp));
  if (fd.Close() != 0) return fail(ErrnoError(errno, "close", tmp));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return fail(ErrnoError(errno, absl::StrCat("rename ", tmp, " to"), path));
  }
  // Make the rename itself durable.
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return ErrnoError(errno, "open directory", dir.string());
  Fd dir_owner(dir_fd);
  if (::fsync(dir_fd) != 0) return ErrnoError(errno, "fsync directory", dir.string());
  return manifest;
}

absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path) {
  ZF_ASSIGN_OR_RETURN(OpenFile file, OpenForRead(path));
  ZF_ASSIGN_OR_RETURN(std::string data, ReadAt(file.fd->get(), 0, file.size, path));
  if (data.size() != file.size) {
    return absl::DataLossError(absl::StrCat(path, ": the file shrank while being read"));
  }
  return ParseCheckpoint(data, path);
}

absl::StatusOr<Checkpoint> ParseCheckpoint(absl::string_view data, const std::string& path) {
  Parser parser(data, data.size(), path);
  ZF_ASSIGN_OR_RETURN(std::vector<Section> sections, parser.Parse(/*manifest_only=*/false));
  Checkpoint checkpoint;
  ZF_ASSIGN_OR_RETURN(checkpoint.manifest,
                      ParseManifest(sections[0].payload, path, parser.format_version()));
  bool have_weights = false;
  for (const Section& s : sections) {
    if (s.name == kWeightsSection) {
      checkpoint.weights = std::string(s.payload);
      have_weights = true;
    } else if (s.name == kOptimizerSection) {
      checkpoint.optimizer_state = std::string(s.payload);
    }
  }
  if (!have_weights || checkpoint.weights.empty()) {
    return absl::DataLossError(absl::StrCat(path, ": no weights section"));
  }
  const CheckpointManifest& m = checkpoint.manifest;
  if (Sha256Hex(checkpoint.weights) != m.weights_sha256) {
    return absl::DataLossError(
        absl::StrCat(path, ": the manifest's weights_sha256 does not match the weights"));
  }
  const std::string optimizer_sha =
      checkpoint.optimizer_state.empty() ? "" : Sha256Hex(checkpoint.optimizer_state);
  if (optimizer_sha != m.optimizer_sha256) {
    return absl::DataLossError(absl::StrCat(
        path, ": the manifest's optimizer_sha256 does not match the optimizer section"));
  }
  return checkpoint;
}

absl::StatusOr<CheckpointManifest> ReadManifest(const std::string& path) {
  ZF_ASSIGN_OR_RETURN(OpenFile file, OpenForRead(path));
  // Enough for the header and a manifest section of the maximum size.
  const uint64_t prefix = kHeaderSize + 4 + kMaxSectionNameLength + 8 + kShaSize + kMaxManifestSize;
  ZF_ASSIGN_OR_RETURN(std::string data,
                      ReadAt(file.fd->get(), 0, std::min(prefix, file.size), path));
  if (data.size() != std::min(prefix, file.size)) {
    return absl::DataLossError(absl::StrCat(path, ": the file shrank while being read"));
  }
  Parser parser(data, file.size, path);
  ZF_ASSIGN_OR_RETURN(std::vector<Section> sections, parser.Parse(/*manifest_only=*/true));
  return ParseManifest(sections[0].payload, path, parser.format_version());
}

}  // namespace zf::model
