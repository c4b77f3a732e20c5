// The one place that converts between absl::Status and grpc::Status. Codes map one to one
// (both follow google.rpc.Code); the message is kept.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace zf::grpc_util {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace zf::grpc_util
