#include "common/grpc/authorization.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace zf::grpc_util {
namespace {

struct RoleEntry {
  Role role;
  absl::string_view name;
};
constexpr RoleEntry kRoles[] = {
    {Role::kActor, "actor"},   {Role::kLearner, "learner"},     {Role::kInference, "inference"},
    {Role::kReplay, "replay"}, {Role::kEvaluator, "evaluator"}, {Role::kOperator, "operator"},
};

std::string Str(const grpc::string_ref& s) { return std::string(s.data(), s.size()); }

const MethodRule* FindRule(absl::string_view method) {
  for (const MethodRule& rule : AuthorizationPolicy()) {
    if (rule.method == method) return &rule;
  }
  return nullptr;
}

std::string RoleList(const std::vector<Role>& roles) {
  return absl::StrJoin(roles, ", ",
                       [](std::string* out, Role r) { absl::StrAppend(out, RoleName(r)); });
}

}  // namespace

const std::vector<Role>& AllRoles() {
  static const auto* roles = [] {
    auto* v = new std::vector<Role>;
    for (const RoleEntry& e : kRoles) v->push_back(e.role);
    return v;
  }();
  return *roles;
}

absl::string_view RoleName(Role role) {
  for (const RoleEntry& e : kRoles) {
    if (e.role == role) return e.name;
  }
  return "unknown";
}

std::optional<Role> RoleFromName(absl::string_view name) {
  for (const RoleEntry& e : kRoles) {
    if (e.name == name) return e.role;
  }
  return std::nullopt;
}

const std::vector<MethodRule>& AuthorizationPolicy() {
  using R = Role;
  static const auto* policy = new std::vector<MethodRule>{
      // Every role may ask whether a server is up (probes run with the role's own certificate).
      {"/grpc.health.v1.Health/Check",
       {R::kActor, R::kLearner, R::kInference, R::kReplay, R::kEvaluator, R::kOperator}},
      {"/grpc.health.v1.Health/Watch",
       {R::kActor, R::kLearner, R::kInference, R::kReplay, R::kEvaluator, R::kOperator}},
      {"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", {R::kOperator}},
      // Inference: actors and the evaluator play through it.
      {"/zerofleet.v1.Inference/Evaluate", {R::kActor, R::kEvaluator}},
      {"/zerofleet.v1.Inference/GetModelInfo", {R::kActor, R::kEvaluator, R::kOperator}},
      // Replay: only actors write games, only the learner reads training data.
      {"/zerofleet.v1.Replay/Insert", {R::kActor}},
      {"/zerofleet.v1.Replay/Sample", {R::kLearner}},
      {"/zerofleet.v1.Replay/GetInfo", {R::kLearner, R::kOperator}},
      // The learner's model service: inference servers (and the evaluator) load checkpoints.
      {"/zerofleet.v1.ModelService/GetLatest", {R::kInference, R::kEvaluator, R::kOperator}},
      {"/zerofleet.v1.ModelService/WatchVersions", {R::kInference, R::kEvaluator, R::kOperator}},
      {"/zerofleet.v1.ModelService/FetchCheckpoint", {R::kInference, R::kEvaluator}},
  };
  return *policy;
}

absl::StatusOr<Role> PeerRole(const grpc::AuthContext& context) {
  std::string named;
  for (const grpc::string_ref& san : context.FindPropertyValues("x509_subject_alternative_name")) {
    const std::string value = Str(san);
    if (!absl::StartsWith(value, kRoleUriPrefix)) continue;
    std::optional<Role> role = RoleFromName(value.substr(kRoleUriPrefix.size()));
    if (role.has_value()) return *role;
    named = value;
  }
  std::string cn;
  for (const grpc::string_ref& v : context.FindPropertyValues("x509_common_name")) cn = Str(v);
  if (std::optional<Role> role = RoleFromName(cn); role.has_value() && named.empty()) return *role;
  if (!context.IsPeerAuthenticated()) {
    return absl::PermissionDeniedError("the caller presented no client certificate");
  }
  return absl::PermissionDeniedError(
      absl::StrCat("the client certificate (CN=\"", cn, "\"", named.empty() ? "" : ", URI ", named,
                   ") names no zerofleet role; expected a URI SAN ", kRoleUriPrefix,
                   "ROLE or CN=ROLE with ", "ROLE one of ", RoleList(AllRoles())));
}

absl::Status Authorize(const grpc::AuthContext& context, absl::string_view method) {
  absl::StatusOr<Role> role = PeerRole(context);
  if (!role.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat("no role may call ", method, ": ", role.status().message()));
  }
  const MethodRule* rule = FindRule(method);
  if (rule == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("role ", RoleName(*role), " may not call ", method,
                     ": the method is not in the authorization policy"));
  }
  if (std::find(rule->roles.begin(), rule->roles.end(), *role) == rule->roles.end()) {
    return absl::PermissionDeniedError(absl::StrCat("role ", RoleName(*role), " may not call ",
                                                    method, " (allowed: ", RoleList(rule->roles),
                                                    ")"));
  }
  return absl::OkStatus();
}

namespace {

prometheus::Family<prometheus::Counter>* RegisterDeniedCalls(prometheus::Registry* registry) {
  if (registry == nullptr) return nullptr;
  return &prometheus::BuildCounter()
              .Name("zf_grpc_server_calls_denied_total")
              .Help(
                  "Calls refused with PERMISSION_DENIED by the per-role authorization policy, by "
                  "method (\"other\" outside the policy) and the caller's role (\"none\" "
                  "without one).")
              .Register(*registry);
}

}  // namespace

ServerAuthorization::ServerAuthorization(prometheus::Registry* registry)
    : denied_(RegisterDeniedCalls(registry)) {}

grpc::Status ServerAuthorization::Process(const InputMetadata& auth_metadata,
                                          grpc::AuthContext* context, OutputMetadata*,
                                          OutputMetadata*) {
  std::string method;
  if (auto it = auth_metadata.find(":path"); it != auth_metadata.end()) method = Str(it->second);
  absl::Status decision = Authorize(*context, method);
  if (decision.ok()) return grpc::Status::OK;
  if (denied_ != nullptr) {
    absl::StatusOr<Role> role = PeerRole(*context);
    denied_
        ->Add({{"method", FindRule(method) != nullptr ? method : "other"},
               {"role", role.ok() ? std::string(RoleName(*role)) : "none"}})
        .Increment();
  }
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::string(decision.message()));
}

}  // namespace zf::grpc_util
