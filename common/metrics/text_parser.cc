#include "common/metrics/text_parser.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "prometheus/check_names.h"

namespace zf::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Label = ClientMetric::Label;

bool IsNameStart(char c) { return absl::ascii_isalpha(c) || c == '_' || c == ':'; }
bool IsNameChar(char c) { return IsNameStart(c) || absl::ascii_isdigit(c); }
bool IsBlank(char c) { return c == ' ' || c == '\t'; }

void SkipBlanks(absl::string_view s, size_t* i) {
  while (*i < s.size() && IsBlank(s[*i])) ++*i;
}

// "+Inf", "-Inf", "NaN" in any case, or a decimal/exponent float.
bool ParseValue(absl::string_view token, double* value) {
  const std::string lower = absl::AsciiStrToLower(token);
  if (lower == "+inf" || lower == "inf") {
    *value = std::numeric_limits<double>::infinity();
    return true;
  }
  if (lower == "-inf") {
    *value = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (lower == "nan") {
    *value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (token.empty()) return false;
  // SimpleAtod also takes "infinity" and hex; restrict to what the format allows.
  for (char c : token) {
    if (!absl::ascii_isdigit(c) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') {
      return false;
    }
  }
  return absl::SimpleAtod(token, value);
}

std::string UnescapeHelp(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '\\' || s[i + 1] == 'n')) {
      out += s[i + 1] == 'n' ? '\n' : '\\';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct Sample {
  std::string name;
  std::vector<Label> labels;  // sorted by name
  double value = 0.0;
};

// Parses `line` (no trailing newline) as a sample. Returns an error message, or "" on success.
std::string ParseSample(absl::string_view line, Sample* sample) {
  size_t i = 0;
  if (i >= line.size() || !IsNameStart(line[i])) return "expected a metric name";
  while (i < line.size() && IsNameChar(line[i])) ++i;
  sample->name = std::string(line.substr(0, i));
  size_t brace = i;
  SkipBlanks(line, &brace);
  if (brace < line.size() && line[brace] == '{') {
    i = brace + 1;
    while (true) {
      SkipBlanks(line, &i);
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      const size_t name_begin = i;
      while (i < line.size() && IsNameChar(line[i])) ++i;
      Label label;
      label.name = std::string(line.substr(name_begin, i - name_begin));
      if (!prometheus::CheckLabelName(std::string(label.name))) {
        return absl::StrCat("bad label name \"", label.name, "\"");
      }
      SkipBlanks(line, &i);
      if (i >= line.size() || line[i] != '=') return "expected '=' after a label name";
      ++i;
      SkipBlanks(line, &i);
      if (i >= line.size() || line[i] != '"') return "expected '\"' to open a label value";
      ++i;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (i >= line.size()) break;
          const char e = line[i++];
          if (e == 'n') {
            label.value += '\n';
          } else if (e == '\\' || e == '"') {
            label.value += e;
          } else {
            return absl::StrCat("bad escape \\", std::string(1, e), " in a label value");
          }
        } else {
          label.value += c;
        }
      }
      if (!closed) return "unterminated label value";
      for (const Label& l : sample->labels) {
        if (l.name == label.name) return absl::StrCat("label \"", label.name, "\" repeated");
      }
      sample->labels.push_back(std::move(label));
      SkipBlanks(line, &i);
      if (i < line.size() && line[i] == ',') {
        ++i;
        continue;
      }
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      return "expected ',' or '}' in a label set";
    }
  }
  std::sort(sample->labels.begin(), sample->labels.end());
  if (i >= line.size() || !IsBlank(line[i])) return "expected a blank before the value";
  const std::vector<absl::string_view> rest =
      absl::StrSplit(line.substr(i), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (rest.empty()) return "missing value";
  if (rest.size() > 2) return "unexpected text after the timestamp";
  if (!ParseValue(rest[0], &sample->value)) {
    return absl::StrCat("bad value \"", std::string(rest[0]), "\"");
  }
  int64_t timestamp;
  if (rest.size() == 2 && !absl::SimpleAtoi(rest[1], &timestamp)) {
    return absl::StrCat("bad timestamp \"", std::string(rest[1]), "\"");
  }
  return "";
}

class Parser {
 public:
  absl::Status Line(int number, absl::string_view line) {
    number_ = number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t i = 0;
    SkipBlanks(line, &i);
    line.remove_prefix(i);
    if (line.empty()) return absl::OkStatus();
    if (line[0] == '#') return Comment(line);
    Sample sample;
    if (std::string error = ParseSample(line, &sample); !error.empty()) return Error(error);
    return AddSample(std::move(sample));
  }

  std::vector<MetricFamily> Finish() {
    for (size_t f = 0; f < families_.size(); ++f) {
      if (families_[f].type != MetricType::Histogram) continue;
      for (size_t s = 0; s < families_[f].metric.size(); ++s) {
        ClientMetric::Histogram& h = families_[f].metric[s].histogram;
        std::stable_sort(h.bucket.begin(), h.bucket.end(),
                         [](const ClientMetric::Bucket& a, const ClientMetric::Bucket& b) {
                           return a.upper_bound < b.upper_bound;
                         });
        if (!has_count_[{f, s}] && !h.bucket.empty() && std::isinf(h.bucket.back().upper_bound)) {
          h.sample_count = h.bucket.back().cumulative_count;
        }
      }
    }
    return std::move(families_);
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("exposition line ", number_, ": ", what));
  }

  absl::Status Comment(absl::string_view line) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(' ', 3));
    if (parts.size() < 3 || parts[0] != "#" || (parts[1] != "HELP" && parts[1] != "TYPE")) {
      return absl::OkStatus();  // an ordinary comment
    }
    const std::string name(parts[2]);
    if (!prometheus::CheckMetricName(std::string(name)))
      return Error(absl::StrCat("bad metric name \"", name, "\""));
    const absl::string_view rest = parts.size() > 3 ? parts[3] : absl::string_view();
    if (parts[1] == "HELP") {
      help_[name] = UnescapeHelp(rest);
      if (auto it = index_.find(name); it != index_.end()) families_[it->second].help = help_[name];
      return absl::OkStatus();
    }
    const std::string type(absl::StripAsciiWhitespace(rest));
    if (index_.contains(name) || declared_.contains(name)) {
      return Error(absl::StrCat("TYPE for \"", name, "\" after its samples or repeated"));
    }
    MetricType parsed;
    if (type == "counter") {
      parsed = MetricType::Counter;
    } else if (type == "gauge") {
      parsed = MetricType::Gauge;
    } else if (type == "histogram") {
      parsed = MetricType::Histogram;
    } else if (type == "untyped" || type == "summary") {
      parsed = MetricType::Untyped;
    } else {
      return Error(absl::StrCat("unknown type \"", type, "\" for \"", name, "\""));
    }
    declared_[name] = parsed;
    if (type != "summary") FamilyIndex(name, parsed);
    return absl::OkStatus();
  }

  size_t FamilyIndex(const std::string& name, MetricType type) {
    auto [it, inserted] = index_.try_emplace(name, families_.size());
    if (inserted) {
      MetricFamily family;
      family.name = name;
      family.type = type;
      if (auto h = help_.find(name); h != help_.end()) family.help = h->second;
      families_.push_back(std::move(family));
    }
    return it->second;
  }

  ClientMetric& Series(size_t family, const std::vector<Label>& labels, size_t* series_index) {
    auto [it, inserted] = series_.try_emplace({family, labels}, families_[family].metric.size());
    if (inserted) {
      ClientMetric metric;
      metric.label = labels;
      families_[family].metric.push_back(std::move(metric));
    }
    *series_index = it->second;
    return families_[family].metric[it->second];
  }

  absl::Status AddSample(Sample sample) {
    if (!prometheus::CheckMetricName(std::string(sample.name))) {
      return Error(absl::StrCat("bad metric name \"", sample.name, "\""));
    }
    size_t series_index;
    // A histogram's series?
    for (absl::string_view suffix : {"_bucket", "_sum", "_count"}) {
      if (!absl::EndsWith(sample.name, suffix)) continue;
      const std::string base = sample.name.substr(0, sample.name.size() - suffix.size());
      auto declared = declared_.find(base);
      if (declared == declared_.end() || declared->second != MetricType::Histogram) continue;
      const size_t family = FamilyIndex(base, MetricType::Histogram);
      if (suffix == "_bucket") {
        auto le = std::find_if(sample.labels.begin(), sample.labels.end(),
                               [](const Label& l) { return l.name == "le"; });
        if (le == sample.labels.end()) return Error(absl::StrCat(sample.name, " without \"le\""));
        ClientMetric::Bucket bucket;
        if (!ParseValue(le->value, &bucket.upper_bound) || std::isnan(bucket.upper_bound)) {
          return Error(absl::StrCat("bad le=\"", le->value, "\""));
        }
        if (!(sample.value >= 0)) return Error("negative or NaN bucket count");
        bucket.cumulative_count = static_cast<std::uint64_t>(std::llround(sample.value));
        sample.labels.erase(le);
        Series(family, sample.labels, &series_index).histogram.bucket.push_back(bucket);
      } else if (suffix == "_sum") {
        Series(family, sample.labels, &series_index).histogram.sample_sum = sample.value;
      } else {
        if (!(sample.value >= 0)) return Error("negative or NaN histogram count");
        Series(family, sample.labels, &series_index).histogram.sample_count =
            static_cast<std::uint64_t>(std::llround(sample.value));
        has_count_[{family, series_index}] = true;
      }
      return absl::OkStatus();
    }
    auto declared = declared_.find(sample.name);
    MetricType type = MetricType::Untyped;
    if (declared != declared_.end() && declared->second != MetricType::Histogram) {
      type = declared->second;
    } else if (declared != declared_.end()) {
      return Error(
          absl::StrCat("histogram \"", sample.name, "\" sample without _bucket, _sum or _count"));
    }
    const size_t family = FamilyIndex(sample.name, type);
    ClientMetric& metric = Series(family, sample.labels, &series_index);
    switch (families_[family].type) {
      case MetricType::Counter:
        metric.counter.value = sample.value;
        break;
      case MetricType::Gauge:
        metric.gauge.value = sample.value;
        break;
      default:
        metric.untyped.value = sample.value;
        break;
    }
    return absl::OkStatus();
  }

  int number_ = 0;
  std::vector<MetricFamily> families_;
  std::map<std::string, size_t> index_;         // family name -> families_ index
  std::map<std::string, MetricType> declared_;  // TYPE lines seen
  std::map<std::string, std::string> help_;     // HELP lines seen
  std::map<std::pair<size_t, std::vector<Label>>, size_t> series_;  // (family, labels) -> series
  std::map<std::pair<size_t, size_t>, bool> has_count_;  // histogram series with a _count line
};

}  // namespace

absl::StatusOr<std::vector<prometheus::MetricFamily>> ParseText(absl::string_view text) {
  Parser parser;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    if (absl::Status status = parser.Line(number, line); !status.ok()) return status;
  }
  return parser.Finish();
}

}  // namespace zf::metrics
