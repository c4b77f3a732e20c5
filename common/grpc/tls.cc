#include "common/grpc/tls.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/grpc/authorization.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace zf::grpc_util {
namespace {

using grpc::experimental::FileWatcherCertificateProvider;

// Reads `path` and checks it holds a PEM block whose label contains `kind` ("CERTIFICATE",
// "PRIVATE KEY").
absl::Status CheckPem(absl::string_view flag, const std::string& path, absl::string_view kind) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read \"", path, "\""));
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  size_t begin = s.find("-----BEGIN ");
  size_t end_of_label = begin == std::string::npos ? begin : s.find("-----", begin + 11);
  if (end_of_label == std::string::npos ||
      !absl::StrContains(s.substr(begin + 11, end_of_label - begin - 11), kind)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", path, "\" holds no PEM ", absl::AsciiStrToLower(kind)));
  }
  return absl::OkStatus();
}

unsigned int ReloadSeconds(const TlsSettings& tls) {
  return static_cast<unsigned int>(absl::ToInt64Seconds(tls.reload_interval));
}

}  // namespace

absl::Status TlsSettings::Validate() const {
  if (cert_file.empty() != key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together: set both or neither");
  }
  if (!client_ca_file.empty() && cert_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_client_ca (mutual TLS) needs the server's own --tls_cert and --tls_key");
  }
  if (!server_name.empty() && ca_file.empty()) {
    return absl::InvalidArgumentError("--tls_server_name needs --tls_ca");
  }
  if (reload_interval < absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat("the TLS reload interval must be >= 1 s, got ",
                                                   absl::FormatDuration(reload_interval)));
  }
  if (!cert_file.empty()) {
    if (absl::Status s = CheckPem("--tls_cert", cert_file, "CERTIFICATE"); !s.ok()) return s;
    if (absl::Status s = CheckPem("--tls_key", key_file, "PRIVATE KEY"); !s.ok()) return s;
  }
  if (!ca_file.empty()) {
    if (absl::Status s = CheckPem("--tls_ca", ca_file, "CERTIFICATE"); !s.ok()) return s;
  }
  if (!client_ca_file.empty()) {
    if (absl::Status s = CheckPem("--tls_client_ca", client_ca_file, "CERTIFICATE"); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsSettings& tls, std::shared_ptr<ServerAuthorization> authorization) {
  if (!tls.server_tls()) return grpc::InsecureServerCredentials();
  if (absl::Status valid = tls.Validate(); !valid.ok()) return valid;
  // The provider re-reads the files every reload interval and hands changed ones to gRPC, which
  // uses them for the handshakes that follow (connections already up keep theirs).
  auto provider = tls.mutual_tls()
                      ? std::make_shared<FileWatcherCertificateProvider>(
                            tls.key_file, tls.cert_file, tls.client_ca_file, ReloadSeconds(tls))
                      : std::make_shared<FileWatcherCertificateProvider>(
                            tls.key_file, tls.cert_file, ReloadSeconds(tls));
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (tls.mutual_tls()) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::experimental::TlsServerCredentials(options);
  if (credentials == nullptr) {
    return absl::InvalidArgumentError("gRPC refused the TLS server settings");
  }
  if (tls.mutual_tls()) {
    if (authorization == nullptr) authorization = std::make_shared<ServerAuthorization>(nullptr);
    credentials->SetAuthMetadataProcessor(std::move(authorization));
  }
  return credentials;
}

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsSettings& tls) {
  if (!tls.client_tls()) return grpc::InsecureChannelCredentials();
  auto provider =
      tls.cert_file.empty()
          ? std::make_shared<FileWatcherCertificateProvider>(tls.ca_file, ReloadSeconds(tls))
          : std::make_shared<FileWatcherCertificateProvider>(tls.key_file, tls.cert_file,
                                                             tls.ca_file, ReloadSeconds(tls));
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(provider);
  options.watch_root_certs();
  if (!tls.cert_file.empty()) options.watch_identity_key_cert_pairs();
  // The server's chain is verified against ca_file and its name against the target's host
  // (or server_name): gRPC's default verifier for TLS channels.
  options.set_verify_server_certs(true);
  return grpc::experimental::TlsCredentials(options);
}

}  // namespace zf::grpc_util
