#include "common/metrics/counter.h"

namespace zf::metrics {

ClientMetric Counter::Collect() const {
  ClientMetric metric;
  metric.counter.value = Value();
  return metric;
}

}  // namespace zf::metrics
