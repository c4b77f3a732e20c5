// Status propagation macros for absl::Status / absl::StatusOr.
//
//   ZF_RETURN_IF_ERROR(DoThing());            // returns the status if it is not OK
//   ZF_ASSIGN_OR_RETURN(auto x, MakeThing()); // declares x, or returns the error status
//
// Both evaluate their argument exactly once.
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define ZF_STATUS_CONCAT_INNER_(a, b) a##b
#define ZF_STATUS_CONCAT_(a, b) ZF_STATUS_CONCAT_INNER_(a, b)

#define ZF_RETURN_IF_ERROR(expr)                                  \
  do {                                                            \
    ::absl::Status zf_status_ = ::zf::internal::ToStatus((expr)); \
    if (!zf_status_.ok()) return zf_status_;                      \
  } while (0)

#define ZF_ASSIGN_OR_RETURN(lhs, expr) \
  ZF_ASSIGN_OR_RETURN_IMPL_(ZF_STATUS_CONCAT_(zf_statusor_, __LINE__), lhs, expr)

#define ZF_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                              \
  if (!statusor.ok()) return statusor.status();        \
  lhs = std::move(statusor).value()

namespace zf::internal {
inline const absl::Status& ToStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& ToStatus(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace zf::internal
