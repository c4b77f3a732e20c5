// GoogleTest matchers and macros for absl::Status and absl::StatusOr (Abseil 20220623 ships
// none).
//
//   EXPECT_OK(DoThing());
//   ASSERT_OK_AND_ASSIGN(auto value, MakeThing());
//   EXPECT_THAT(DoThing(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rows")));
//   EXPECT_THAT(MakeThing(), IsOkAndHolds(42));
#pragma once

#include <ostream>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zf::testing {
namespace internal {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

}  // namespace internal

// Matches an OK absl::Status or absl::StatusOr.
MATCHER(IsOk, negation ? "is not OK" : "is OK") {
  const absl::Status& status = internal::GetStatus(arg);
  if (!status.ok()) *result_listener << "status is " << status;
  return status.ok();
}

// Matches a Status/StatusOr whose code equals `code` and whose message matches `message`.
MATCHER_P2(StatusIs, code, message_matcher,
           std::string("has code ") + absl::StatusCodeToString(code)) {
  const absl::Status& status = internal::GetStatus(arg);
  *result_listener << "status is " << status;
  return status.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(status.message()),
                                       result_listener);
}

// Matches a Status/StatusOr whose code equals `code`, whatever the message.
MATCHER_P(StatusIs, code, std::string("has code ") + absl::StatusCodeToString(code)) {
  const absl::Status& status = internal::GetStatus(arg);
  *result_listener << "status is " << status;
  return status.code() == code;
}

// Matches an OK StatusOr whose value matches `value_matcher`.
MATCHER_P(IsOkAndHolds, value_matcher, "is OK and holds a matching value") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  return ::testing::ExplainMatchResult(value_matcher, *arg, result_listener);
}

}  // namespace zf::testing

#define EXPECT_OK(expr) EXPECT_THAT((expr), ::zf::testing::IsOk())
#define ASSERT_OK(expr) ASSERT_THAT((expr), ::zf::testing::IsOk())

#define ZF_TESTING_CONCAT_INNER_(a, b) a##b
#define ZF_TESTING_CONCAT_(a, b) ZF_TESTING_CONCAT_INNER_(a, b)
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(ZF_TESTING_CONCAT_(zf_statusor_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, expr)               \
  auto statusor = (expr);                                             \
  ASSERT_TRUE(statusor.ok()) << "status is " << statusor.status(); \
  lhs = std::move(statusor).value()
