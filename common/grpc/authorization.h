// Per-role authorization of gRPC calls, for servers running mutual TLS (tls.h).
//
// Each caller's role comes from its verified client certificate: the URI SAN
// spiffe://zerofleet/role/ROLE (what scripts/make-certs writes), or else a CN that is a role
// name. Each method allows the roles in one table, AuthorizationPolicy(); the check runs in the
// server's transport security filter, before the call reaches any handler (health and
// reflection included), so a denied call never touches a service. Anything not allowed is
// PERMISSION_DENIED with the role and the method in its message, and is counted in
// zf_grpc_server_calls_denied_total{method, role} (both labels bounded: methods outside the
// table count as "other", a certificate without a role as "none"). Default deny: a method not in
// the table is refused for every role.
//
// Thread-safety: everything here is thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace zf::grpc_util {

enum class Role { kActor, kLearner, kInference, kReplay, kEvaluator, kOperator };

// Every role, in the order the docs list them.
const std::vector<Role>& AllRoles();
absl::string_view RoleName(Role role);
std::optional<Role> RoleFromName(absl::string_view name);

// The URI SAN prefix that names a role in a certificate.
inline constexpr absl::string_view kRoleUriPrefix = "spiffe://zerofleet/role/";

struct MethodRule {
  std::string method;  // the full gRPC path, "/package.Service/Method"
  std::vector<Role> roles;
};

// The whole policy: which roles may call each method. docs/security.md prints it.
const std::vector<MethodRule>& AuthorizationPolicy();

// The role of the peer whose verified certificate `context` describes.
// Returns: the role; PermissionDenied if the certificate names no role (the message says what
// it does name).
absl::StatusOr<Role> PeerRole(const grpc::AuthContext& context);

// Decides one call. Returns: OK; PermissionDenied naming the role (or "no role") and the method.
absl::Status Authorize(const grpc::AuthContext& context, absl::string_view method);

// The processor a mutual-TLS server's credentials carry (MakeServerCredentials). Counts denials
// in `registry` when it is not null (the registry must outlive the server; the counter family
// is registered once, at construction).
class ServerAuthorization : public grpc::AuthMetadataProcessor {
 public:
  explicit ServerAuthorization(prometheus::Registry* registry);

  // Runs inline in gRPC's filter: a table lookup, never blocks.
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  prometheus::Family<prometheus::Counter>* const denied_;  // null without a registry
};

}  // namespace zf::grpc_util
