// Facts about the machine a benchmark ran on, for its table and JSON (every figure names its
// hardware: design.md, "what is measured").
//
// Thread-safety: free functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace zf {

// The CPU's model name from /proc/cpuinfo (e.g. "AMD EPYC 7B13"), or "unknown CPU" where it
// cannot be read.
std::string CpuModelName();

// Peak resident memory of process `pid` ("self" for this one) in bytes, from VmHWM in
// /proc/PID/status; 0 where it cannot be read.
int64_t PeakResidentBytes(const std::string& pid);

// The number of field `name` of /proc/PID/status (e.g. "VmRSS" and "VmHWM" in kB, "Threads"), or
// 0 where it cannot be read.
int64_t ProcStatusField(const std::string& pid, const std::string& name);

// User + system CPU seconds process `pid` has used so far (/proc/PID/stat), or 0.
double ProcessCpuSeconds(const std::string& pid);

// User + system CPU seconds that the live threads of process `pid` whose names start with
// `name_prefix` have used so far (/proc/PID/task/TID/comm and stat), or 0. A thread that has
// exited is no longer counted (ProcessCpuSeconds still counts it).
double ThreadsCpuSeconds(const std::string& pid, const std::string& name_prefix);

}  // namespace zf
