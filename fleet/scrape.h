// Scrapes Prometheus /metrics endpoints over HTTP (cpp-httplib's client) for `zf top`.
//
// Thread-safe (no shared state). Each call blocks for at most about `timeout` per target
// (connect, then read), targets one after another.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "fleet/fleet_view.h"

namespace zf::fleet {

struct ScrapeAddress {
  std::string host;
  int port = 0;
  std::string path = "/metrics";
};

// Parses "HOST:PORT" or "HOST:PORT/PATH" (an optional "http://" prefix is dropped). HOST is a
// name or an IPv4 address; IPv6 literals go in brackets ("[::1]:9090").
// Returns: the address; InvalidArgument naming what is wrong (no port, port not 1..65535, empty
//          host).
absl::StatusOr<ScrapeAddress> ParseScrapeAddress(const std::string& text);

// GETs the exposition text at `address`.
// Returns: the body; Unavailable when the connection fails or the status is not 200;
//          DeadlineExceeded when `timeout` passes first.
absl::StatusOr<std::string> FetchMetrics(const ScrapeAddress& address, absl::Duration timeout);

// Scrapes and parses one target named `target` (already parsed into `address`); a failure is the
// returned TargetScrape's status, never a crash.
TargetScrape ScrapeTarget(const std::string& target, const ScrapeAddress& address,
                          absl::Duration timeout);

}  // namespace zf::fleet
