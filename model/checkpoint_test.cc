#include "model/checkpoint.h"

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/network.h"

namespace zf::model {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::zf::testing::StatusIs;
namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const fs::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

std::vector<std::string> ListDir(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

Checkpoint MakeCheckpoint(int64_t version, bool with_optimizer) {
  Checkpoint c;
  c.manifest.game = "dotsboxes:2x3";
  c.manifest.shape = {.input_channels = 4,
                      .board_height = 5,
                      .board_width = 7,
                      .num_actions = 17,
                      .blocks = 2,
                      .filters = 16,
                      .value_hidden = 8};
  c.manifest.version = version;
  c.manifest.training_step = 1000 * version;
  c.manifest.created = absl::FromUnixNanos(1'700'000'000'123'456'789);
  c.manifest.torch_version = "1.13.0";
  c.weights = std::string(5000, '\0');
  for (size_t i = 0; i < c.weights.size(); ++i) c.weights[i] = static_cast<char>(i * 7 + version);
  if (with_optimizer) c.optimizer_state = "momentum buffers " + std::to_string(version);
  return c;
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::path(::testing::TempDir()) / "zf_checkpoint_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    path_ = dir_ / "model.zfckpt";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a valid checkpoint and returns its bytes.
  std::string WriteValid(bool with_optimizer = true) {
    auto written = WriteCheckpoint(path_.string(), MakeCheckpoint(3, with_optimizer));
    EXPECT_OK(written);
    return ReadFile(path_);
  }

  fs::path dir_;
  fs::path path_;
};

TEST(Sha256HexTest, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(CheckpointTest, RoundTripsEverything) {
  const Checkpoint original = MakeCheckpoint(7, /*with_optimizer=*/true);
  ASSERT_OK_AND_ASSIGN(CheckpointManifest written, WriteCheckpoint(path_.string(), original));
  EXPECT_EQ(written.format_version, 1);  // the lowest that says what it holds
  EXPECT_EQ(written.weights_sha256, Sha256Hex(original.weights));
  EXPECT_EQ(written.optimizer_sha256, Sha256Hex(original.optimizer_state));

  ASSERT_OK_AND_ASSIGN(Checkpoint read, ReadCheckpoint(path_.string()));
  EXPECT_EQ(read.weights, original.weights);
  EXPECT_EQ(read.optimizer_state, original.optimizer_state);
  const CheckpointManifest& m = read.manifest;
  EXPECT_EQ(m.format_version, 1);
  EXPECT_EQ(m.game, "dotsboxes:2x3");
  EXPECT_EQ(m.shape, original.manifest.shape);
  EXPECT_EQ(m.version, 7);
  EXPECT_EQ(m.training_step, 7000);
  EXPECT_EQ(m.created, original.manifest.created);
  EXPECT_EQ(m.torch_version, "1.13.0");
  EXPECT_EQ(m.weights_sha256, written.weights_sha256);
  EXPECT_EQ(m.optimizer_sha256, written.optimizer_sha256);

  ASSERT_OK_AND_ASSIGN(CheckpointManifest manifest_only, ReadManifest(path_.string()));
  EXPECT_EQ(manifest_only.version, 7);
  EXPECT_EQ(manifest_only.shape, original.manifest.shape);
  EXPECT_EQ(manifest_only.weights_sha256, written.weights_sha256);
}

TEST_F(CheckpointTest, OptimizerStateIsOptional) {
  WriteValid(/*with_optimizer=*/false);
  ASSERT_OK_AND_ASSIGN(Checkpoint read, ReadCheckpoint(path_.string()));
  EXPECT_THAT(read.optimizer_state, IsEmpty());
  EXPECT_THAT(read.manifest.optimizer_sha256, IsEmpty());
}

TEST_F(CheckpointTest, StampsCreatedWhenUnset) {
  Checkpoint c = MakeCheckpoint(1, false);
  c.manifest.created = absl::InfinitePast();
  const absl::Time before = absl::Now();
  ASSERT_OK_AND_ASSIGN(CheckpointManifest written, WriteCheckpoint(path_.string(), c));
  EXPECT_GE(written.created, before);
  EXPECT_LE(written.created, absl::Now());
  ASSERT_OK_AND_ASSIGN(CheckpointManifest read, ReadManifest(path_.string()));
  EXPECT_EQ(read.created, written.created);
}

TEST_F(CheckpointTest, AuxHeadsAreWrittenOnlyWhenSet) {
  EXPECT_THAT(WriteValid(), ::testing::Not(HasSubstr("aux_heads")));
  Checkpoint c = MakeCheckpoint(4, false);
  c.manifest.shape.aux_heads = true;
  ASSERT_OK(WriteCheckpoint(path_.string(), c).status());
  EXPECT_THAT(ReadFile(path_), HasSubstr("\naux_heads=1\n"));
  ASSERT_OK_AND_ASSIGN(CheckpointManifest read, ReadManifest(path_.string()));
  EXPECT_TRUE(read.shape.aux_heads);
  EXPECT_EQ(read.shape, c.manifest.shape);
}

TEST_F(CheckpointTest, GlobalPoolingIsWrittenOnlyWhenSet) {
  EXPECT_THAT(WriteValid(), ::testing::Not(HasSubstr("global_pooling")));
  Checkpoint c = MakeCheckpoint(4, false);
  c.manifest.shape.global_pooling = true;
  ASSERT_OK(WriteCheckpoint(path_.string(), c).status());
  EXPECT_THAT(ReadFile(path_), HasSubstr("\nglobal_pooling=1\n"));
  ASSERT_OK_AND_ASSIGN(CheckpointManifest read, ReadManifest(path_.string()));
  EXPECT_TRUE(read.shape.global_pooling);
  EXPECT_EQ(read.shape, c.manifest.shape);
}

TEST_F(CheckpointTest, ManifestIsReadableText) {
  const std::string bytes = WriteValid();
  EXPECT_THAT(bytes, HasSubstr("\ngame=dotsboxes:2x3\n"));
  EXPECT_THAT(bytes, HasSubstr("\nversion=3\n"));
  EXPECT_THAT(bytes, HasSubstr("\ncreated=2023-11-14T22:13:20.123456789+00:00\n"));
}

TEST_F(CheckpointTest, MissingFileIsNotFound) {
  EXPECT_THAT(ReadCheckpoint((dir_ / "nope.zfckpt").string()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope.zfckpt")));
  EXPECT_THAT(ReadManifest((dir_ / "nope.zfckpt").string()), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(CheckpointTest, EveryTruncationIsDataLoss) {
  const std::string bytes = WriteValid();
  // Every prefix, from the empty file to one byte short.
  for (size_t size = 0; size < bytes.size(); size += (size < 400 ? 1 : 97)) {
    WriteFile(path_, bytes.substr(0, size));
    EXPECT_THAT(ReadCheckpoint(path_.string()),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path_.string())))
        << "truncated to " << size << " of " << bytes.size() << " bytes";
  }
  WriteFile(path_, bytes.substr(0, bytes.size() - 1));
  EXPECT_THAT(ReadCheckpoint(path_.string()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated")));
}

TEST_F(CheckpointTest, TrailingBytesAreDataLoss) {
  WriteFile(path_, WriteValid() + "x");
  EXPECT_THAT(ReadCheckpoint(path_.string()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("1 unexpected bytes")));
}

TEST_F(CheckpointTest, FlippedByteInTheWeightsIsDataLoss) {
  std::string bytes = WriteValid(/*with_optimizer=*/false);
  // The weights are the last section when there is no optimizer state.
  bytes[bytes.size() - 100] ^= 0x10;
  WriteFile(path_, bytes);
  EXPECT_THAT(ReadCheckpoint(path_.string()),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("section \"weights\" fails its SHA-256 check")));
  // ReadManifest does not look at the weights.
  EXPECT_OK(ReadManifest(path_.string()));
}

TEST_F(CheckpointTest, FlippedByteInTheManifestIsDataLoss) {
  std::string bytes = WriteValid();
  const size_t at = bytes.find("version=3");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 8] = '4';
  WriteFile(path_, bytes);
  EXPECT_THAT(ReadCheckpoint(path_.string()),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("section \"manifest\" fails its SHA-256 check")));
  EXPECT_THAT(ReadManifest(path_.string()), StatusIs(absl::StatusCode::kDataLoss));
}

TEST_F(CheckpointTest, AnyFlippedBitIsDataLoss) {
  const std::string bytes = WriteValid();
  for (size_t i = 0; i < bytes.size(); i += (i < 600 ? 1 : 211)) {
    std::string corrupt = bytes;
    corrupt[i] ^= static_cast<char>(1 << (i % 8));
    WriteFile(path_, corrupt);
    EXPECT_THAT(ReadCheckpoint(path_.string()), StatusIs(absl::StatusCode::kDataLoss))
        << "bit " << i % 8 << " of byte " << i << " flipped";
  }
}

TEST_F(CheckpointTest, BadMagicAndFormatVersionAreDataLoss) {
  std::string bytes = WriteValid();
  std::string bad_magic = bytes;
  bad_magic[1] = 'X';
  WriteFile(path_, bad_magic);
  EXPECT_THAT(ReadCheckpoint(path_.string()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bad magic")));
  std::string bad_version = bytes;
  bad_version[8] = kCheckpointFormatVersion + 1;
  WriteFile(path_, bad_version);
  EXPECT_THAT(
      ReadManifest(path_.string()),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr(absl::StrCat("unsupported format version ",
                                                                   kCheckpointFormatVersion + 1))));
  // The header and the manifest must agree.
  std::string other_version = bytes;
  other_version[8] = 2;
  WriteFile(path_, other_version);
  EXPECT_THAT(ReadManifest(path_.string()),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("format_version is 1 but the header says 2")));
}

// A file laid out as checkpoint.h says, from its parts (to write what the writer never would).
std::string BuildFile(uint32_t format_version,
                      const std::vector<std::pair<std::string, std::string>>& sections) {
  auto u32 = [](std::string* out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  std::string out("\x89ZFCKPT\n", 8);
  u32(&out, format_version);
  u32(&out, static_cast<uint32_t>(sections.size()));
  for (const auto& [name, payload] : sections) {
    u32(&out, static_cast<uint32_t>(name.size()));
    out += name;
    const uint64_t size = payload.size();
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((size >> (8 * i)) & 0xff));
    const std::string hex = Sha256Hex(payload);
    for (size_t i = 0; i < hex.size(); i += 2) {
      out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    out += payload;
  }
  return out;
}

// Global pooling changes what the weights compute, so its checkpoints are format version 2: a
// build that reads only version 1 refuses them instead of running another network. A version-1
// file that claims it is corrupt.
TEST_F(CheckpointTest, GlobalPoolingNeedsFormatVersion2) {
  Checkpoint c = MakeCheckpoint(4, false);
  c.manifest.shape.global_pooling = true;
  ASSERT_OK_AND_ASSIGN(CheckpointManifest written, WriteCheckpoint(path_.string(), c));
  EXPECT_EQ(written.format_version, 2);
  const std::string bytes = ReadFile(path_);
  EXPECT_EQ(bytes[8], 2);
  ASSERT_OK_AND_ASSIGN(Checkpoint read, ReadCheckpoint(path_.string()));
  EXPECT_EQ(read.manifest.format_version, 2);

  // The manifest section: header (16 bytes), name length, "manifest", size, SHA-256, payload.
  uint64_t manifest_size = 0;
  for (int i = 0; i < 8; ++i) {
    manifest_size |= uint64_t{static_cast<uint8_t>(bytes[16 + 4 + 8 + i])} << (8 * i);
  }
  std::string manifest = bytes.substr(16 + 4 + 8 + 8 + 32, manifest_size);
  ASSERT_THAT(manifest, HasSubstr("\nglobal_pooling=1\n"));
  const size_t at = manifest.find("format_version=2\n");
  ASSERT_EQ(at, 0u);
  manifest.replace(at, 17, "format_version=1\n");
  WriteFile(path_, BuildFile(1, {{"manifest", manifest}, {"weights", c.weights}}));
  EXPECT_THAT(ReadCheckpoint(path_.string()),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("global_pooling needs format version 2, the file is version 1")));
  // The same file as version 2 reads.
  manifest.replace(at, 17, "format_version=2\n");
  WriteFile(path_, BuildFile(2, {{"manifest", manifest}, {"weights", c.weights}}));
  EXPECT_OK(ReadCheckpoint(path_.string()));
}

TEST_F(CheckpointTest, ManifestSha256MustMatchTheWeights) {
  // A writer that put a wrong hash into an otherwise intact file: built by hand from a valid
  // file whose weights section is replaced, section checksum included.
  const Checkpoint a = MakeCheckpoint(1, false);
  Checkpoint b = a;
  b.weights[0] ^= 1;
  ASSERT_OK(WriteCheckpoint(path_.string(), a));
  const std::string bytes_a = ReadFile(path_);
  ASSERT_OK(WriteCheckpoint(path_.string(), b));
  const std::string bytes_b = ReadFile(path_);
  ASSERT_EQ(bytes_a.size(), bytes_b.size());
  // Take the manifest section of a and the weights section of b.
  const size_t weights_name = bytes_a.find("weights", bytes_a.find("optimizer_sha256"));
  ASSERT_NE(weights_name, std::string::npos);
  const size_t section_start = weights_name - 4;
  WriteFile(path_, bytes_a.substr(0, section_start) + bytes_b.substr(section_start));
  EXPECT_THAT(ReadCheckpoint(path_.string()),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("weights_sha256 does not match the weights")));
}

TEST_F(CheckpointTest, NotARegularFile) {
  EXPECT_THAT(ReadCheckpoint(dir_.string()), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(CheckpointTest, WriteReplacesAtomicallyAndLeavesNoTemporaryFiles) {
  ASSERT_OK(WriteCheckpoint(path_.string(), MakeCheckpoint(1, true)));
  ASSERT_OK(WriteCheckpoint(path_.string(), MakeCheckpoint(2, false)));
  EXPECT_THAT(ListDir(dir_), ::testing::ElementsAre("model.zfckpt"));
  ASSERT_OK_AND_ASSIGN(Checkpoint read, ReadCheckpoint(path_.string()));
  EXPECT_EQ(read.manifest.version, 2);
  EXPECT_EQ(read.weights, MakeCheckpoint(2, false).weights);
  EXPECT_THAT(read.optimizer_state, IsEmpty());
  EXPECT_EQ(fs::status(path_).permissions() & fs::perms::others_read, fs::perms::others_read);
}

TEST_F(CheckpointTest, FailedWriteLeavesNoTemporaryFileAndNoTarget) {
  // rename() cannot replace a non-empty directory: the write fails after the temporary file
  // is complete, and must clean it up.
  const fs::path target = dir_ / "occupied";
  fs::create_directory(target);
  WriteFile(target / "keep", "x");
  const absl::Status status = WriteCheckpoint(target.string(), MakeCheckpoint(1, false)).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("rename"));
  EXPECT_THAT(ListDir(dir_), ::testing::ElementsAre("occupied"));
  EXPECT_THAT(ListDir(target), ::testing::ElementsAre("keep"));
}

TEST_F(CheckpointTest, WriteIntoAMissingDirectoryIsNotFound) {
  EXPECT_THAT(WriteCheckpoint((dir_ / "no" / "model.zfckpt").string(), MakeCheckpoint(1, false)),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(CheckpointTest, WriteValidatesTheManifest) {
  Checkpoint c = MakeCheckpoint(1, false);
  c.manifest.game = "";
  EXPECT_THAT(WriteCheckpoint(path_.string(), c),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("game")));
  c = MakeCheckpoint(1, false);
  c.manifest.game = "connect4\nversion=99";
  EXPECT_THAT(WriteCheckpoint(path_.string(), c), StatusIs(absl::StatusCode::kInvalidArgument));
  c = MakeCheckpoint(1, false);
  c.manifest.version = -1;
  EXPECT_THAT(WriteCheckpoint(path_.string(), c),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("version")));
  c = MakeCheckpoint(1, false);
  c.manifest.shape.filters = 0;
  EXPECT_THAT(WriteCheckpoint(path_.string(), c),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("filters")));
  c = MakeCheckpoint(1, false);
  c.weights.clear();
  EXPECT_THAT(WriteCheckpoint(path_.string(), c),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("weights")));
  EXPECT_THAT(ListDir(dir_), IsEmpty());
}

}  // namespace
}  // namespace zf::model
