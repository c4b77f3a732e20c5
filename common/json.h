// Small helpers for writing the JSON that `zf ... --json` and the benchmarks print (flat objects
// and arrays).
#pragma once

#include <charconv>
#include <cmath>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace zf {

// `s` as a JSON string literal, quotes included, with control characters escaped.
inline std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

// `x` as a JSON number: the shortest text that reads back as the same double ("0.1", "2",
// "1e-07"); "null" for NaN and the infinities, which JSON cannot spell.
inline std::string JsonNumber(double x) {
  if (!std::isfinite(x)) return "null";
  char buffer[32];
  const std::to_chars_result end = std::to_chars(buffer, buffer + sizeof(buffer), x);
  return std::string(buffer, end.ptr);
}

}  // namespace zf
