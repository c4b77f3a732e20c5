#include "common/thread.h"

#include <pthread.h>

#include <utility>

namespace zf {

Thread::Thread(std::string name, std::function<void()> body) : name_(std::move(name)) {
  thread_ = std::thread([thread_name = name_, body = std::move(body)] {
    // Linux limits thread names to 15 characters plus the terminator.
    pthread_setname_np(pthread_self(), thread_name.substr(0, 15).c_str());
    body();
  });
}

Thread::~Thread() { Join(); }

void Thread::Join() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace zf
