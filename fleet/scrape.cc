#include "fleet/scrape.h"

#include <httplib.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace zf::fleet {

absl::StatusOr<ScrapeAddress> ParseScrapeAddress(const std::string& text) {
  std::string rest = text;
  if (absl::StartsWith(rest, "http://")) rest = rest.substr(7);
  ScrapeAddress address;
  if (const size_t slash = rest.find('/'); slash != std::string::npos) {
    address.path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || (rest.front() == '[' && rest[colon - 1] != ']')) {
    return absl::InvalidArgumentError(
        absl::StrCat("target \"", text, "\" has no port (want HOST:PORT)"));
  }
  address.host = rest.substr(0, colon);
  if (address.host.size() >= 2 && address.host.front() == '[' && address.host.back() == ']') {
    address.host = address.host.substr(1, address.host.size() - 2);
  }
  if (address.host.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("target \"", text, "\" has an empty host"));
  }
  if (!absl::SimpleAtoi(rest.substr(colon + 1), &address.port) || address.port < 1 ||
      address.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("target \"", text, "\": port must be 1..65535"));
  }
  return address;
}

absl::StatusOr<std::string> FetchMetrics(const ScrapeAddress& address, absl::Duration timeout) {
  httplib::Client client(address.host, address.port);
  const int64_t micros = std::max<int64_t>(1, absl::ToInt64Microseconds(timeout));
  client.set_connection_timeout(micros / 1'000'000, micros % 1'000'000);
  client.set_read_timeout(micros / 1'000'000, micros % 1'000'000);
  client.set_write_timeout(micros / 1'000'000, micros % 1'000'000);
  httplib::Result result = client.Get(address.path.c_str());
  const std::string where = absl::StrCat(address.host, ":", address.port, address.path);
  if (!result) {
    const httplib::Error error = result.error();
    const std::string message = absl::StrCat(
        where, ": ",
        error == httplib::Error::Connection ? "cannot connect" : httplib::to_string(error));
    if (error == httplib::Error::ConnectionTimeout || error == httplib::Error::Read) {
      return absl::DeadlineExceededError(message);
    }
    return absl::UnavailableError(message);
  }
  if (result->status != 200) {
    return absl::UnavailableError(absl::StrCat(where, ": HTTP ", result->status));
  }
  return result->body;
}

TargetScrape ScrapeTarget(const std::string& target, const ScrapeAddress& address,
                          absl::Duration timeout) {
  absl::StatusOr<std::string> body = FetchMetrics(address, timeout);
  if (!body.ok()) {
    TargetScrape scrape;
    scrape.target = target;
    scrape.status = body.status();
    return scrape;
  }
  return TargetFromText(target, *body);
}

}  // namespace zf::fleet
