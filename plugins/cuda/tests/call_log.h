// The record the fake libraries (fake_cublas.cc, fake_nccl.cc) keep of the
// calls they receive, one line each, which the tests read and clear through
// each fake's exported functions.
#pragma once

#include <cstdio>
#include <mutex>
#include <string>

namespace oar_cuda_fake {

class CallLog {
 public:
  void add(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    text_ += line + "\n";
  }
  // The lines so far; valid until the next call of text().
  const char* text() {
    std::lock_guard<std::mutex> lock(mutex_);
    copy_ = text_;
    return copy_.c_str();
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    text_.clear();
  }

 private:
  std::mutex mutex_;
  std::string text_, copy_;
};

inline std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

}  // namespace oar_cuda_fake
