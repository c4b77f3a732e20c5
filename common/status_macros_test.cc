#include "common/status_macros.h"

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace zf {
namespace {

using ::testing::HasSubstr;
using ::zf::testing::IsOkAndHolds;
using ::zf::testing::StatusIs;

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  ZF_ASSIGN_OR_RETURN(int half, Half(x));
  ZF_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

absl::Status CheckEven(int x, int* calls) {
  ++*calls;
  ZF_RETURN_IF_ERROR(Half(x));
  return absl::OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnPropagatesFirstError) {
  EXPECT_THAT(Quarter(8), IsOkAndHolds(2));
  EXPECT_THAT(Quarter(6), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("odd: 3")));
  EXPECT_THAT(Quarter(5), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("odd: 5")));
}

TEST(StatusMacrosTest, ReturnIfErrorEvaluatesOnce) {
  int calls = 0;
  EXPECT_OK(CheckEven(4, &calls));
  EXPECT_THAT(CheckEven(3, &calls), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(calls, 2);
}

TEST(StatusMatchersTest, MatchersReject) {
  EXPECT_THAT(absl::InternalError("x"), ::testing::Not(::zf::testing::IsOk()));
  EXPECT_THAT(absl::StatusOr<int>(3), ::testing::Not(IsOkAndHolds(4)));
  EXPECT_THAT(absl::NotFoundError("x"), ::testing::Not(StatusIs(absl::StatusCode::kInternal)));
}

}  // namespace
}  // namespace zf
