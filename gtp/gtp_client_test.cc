// GtpClient against GNU Go (Debian package `gnugo`), the engine it exists to talk to.
#include "gtp/gtp_client.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace zf::gtp {
namespace {

std::unique_ptr<GtpClient> StartGnuGo() {
  absl::StatusOr<std::string> gnugo = FindGnuGo();
  EXPECT_TRUE(gnugo.ok()) << gnugo.status();
  if (!gnugo.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<GtpClient>> client =
      GtpClient::Create({.argv = {*gnugo, "--mode", "gtp", "--level", "0"}});
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

TEST(GtpClientTest, SendsCommandsAndReadsReplies) {
  std::unique_ptr<GtpClient> gnugo = StartGnuGo();
  ASSERT_NE(gnugo, nullptr);
  EXPECT_EQ(*gnugo->Send("protocol_version"), "2");
  EXPECT_EQ(*gnugo->Send("name"), "GNU Go");
  ASSERT_TRUE(gnugo->Send("boardsize 5").ok());
  ASSERT_TRUE(gnugo->Send("play black C3").ok());
  EXPECT_EQ(*gnugo->Send("list_stones black"), "C3");
  // Multi-line replies come back whole, lines joined.
  absl::StatusOr<std::string> board = gnugo->Send("showboard");
  ASSERT_TRUE(board.ok()) << board.status();
  EXPECT_NE(board->find('\n'), std::string::npos);
  // The next reply is still in step after a multi-line one.
  EXPECT_EQ(*gnugo->Send("list_stones black"), "C3");
}

TEST(GtpClientTest, ErrorRepliesAreFailedPrecondition) {
  std::unique_ptr<GtpClient> gnugo = StartGnuGo();
  ASSERT_NE(gnugo, nullptr);
  ASSERT_TRUE(gnugo->Send("boardsize 5").ok());
  ASSERT_TRUE(gnugo->Send("play black C3").ok());
  absl::StatusOr<std::string> again = gnugo->Send("play white C3");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("illegal move"), absl::string_view::npos)
      << again.status();
  EXPECT_EQ(gnugo->Send("no_such_command").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(gnugo->Send("name\nname").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*gnugo->Send("1 protocol_version"), "2");  // the id is not part of the reply text
}

TEST(GtpClientTest, AnEngineThatExitedIsUnavailable) {
  std::unique_ptr<GtpClient> gnugo = StartGnuGo();
  ASSERT_NE(gnugo, nullptr);
  ASSERT_TRUE(gnugo->Send("quit").ok());
  EXPECT_EQ(gnugo->Send("name").status().code(), absl::StatusCode::kUnavailable);
}

TEST(GtpClientTest, MissingBinaryAndBadOptions) {
  EXPECT_EQ(GtpClient::Create({.argv = {"/nonexistent/engine"}}).status().code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(GtpClient::Create({}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zf::gtp
