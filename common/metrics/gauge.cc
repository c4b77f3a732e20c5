#include "common/metrics/gauge.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace zf::metrics {

void Gauge::SetToCurrentTime() { Set(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch())); }

ClientMetric Gauge::Collect() const {
  ClientMetric metric;
  metric.gauge.value = Value();
  return metric;
}

}  // namespace zf::metrics
