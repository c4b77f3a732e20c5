// libFuzzer target: the Prometheus text parser (`zf top` and the tests read other processes'
// /metrics with it). Whatever it accepts must serialize and parse back to the same families.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "common/logging.h"
#include "common/metrics/text_parser.h"
#include "common/metrics/text_serializer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto families = zf::metrics::ParseText(text);
  if (!families.ok()) return 0;
  const zf::metrics::TextSerializer serializer;
  const std::string again = serializer.Serialize(*families);
  auto reparsed = zf::metrics::ParseText(again);
  ZF_CHECK(reparsed.ok()) << "the parser refused what the serializer wrote from its output: "
                          << reparsed.status();
  ZF_CHECK(serializer.Serialize(*reparsed) == again) << "not a fixed point:\n" << again;
  return 0;
}
