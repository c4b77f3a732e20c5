// An owned, named thread that is joined by its owner's destructor.
//
// Every thread in zerofleet has an owner; shutdown is signal, close, join. `Thread` makes the
// join part impossible to forget: destroying a Thread joins it (it never detaches).
//
//   zf::Thread worker("batcher", [this] { Loop(); });
//   ...                       // on destruction: worker.Join()
//
// The name (at most 15 characters are kept) is visible in `top -H`, gdb and perf.
// Thread-compatible: Join() must not race with the destructor or another Join().
#pragma once

#include <functional>
#include <string>
#include <thread>

namespace zf {

class Thread {
 public:
  // Starts `body` on a new thread named `name`.
  Thread(std::string name, std::function<void()> body);
  // Joins the thread if it is still joinable. Blocks until `body` returns.
  ~Thread();

  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;
  Thread(Thread&&) = default;
  Thread& operator=(Thread&&) = delete;

  // Blocks until `body` has returned. Idempotent.
  void Join();
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::thread thread_;
};

}  // namespace zf
