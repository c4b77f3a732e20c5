#include "common/metrics/check_names.h"

#include "absl/strings/match.h"

namespace zf::metrics {
namespace {

bool IsAsciiLetterOrUnderscore(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool IsValidMetricName(absl::string_view name) {
  if (name.empty() || absl::StartsWith(name, "__")) return false;
  if (!IsAsciiLetterOrUnderscore(name[0]) && name[0] != ':') return false;
  for (char c : name.substr(1)) {
    if (!IsAsciiLetterOrUnderscore(c) && !IsAsciiDigit(c) && c != ':') return false;
  }
  return true;
}

bool IsValidLabelName(absl::string_view name) {
  if (name.empty() || absl::StartsWith(name, "__")) return false;
  if (!IsAsciiLetterOrUnderscore(name[0])) return false;
  for (char c : name.substr(1)) {
    if (!IsAsciiLetterOrUnderscore(c) && !IsAsciiDigit(c)) return false;
  }
  return true;
}

}  // namespace zf::metrics
