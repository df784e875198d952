#include "src/core/cuda_stream.h"

#include "src/core/cuda_check.h"

namespace zt::cuda {

Stream::Stream(int priority) {
  ZT_CUDA_CHECK(cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, priority));
}

Stream::~Stream() {
  if (s_ != nullptr) (void)cudaStreamDestroy(s_);
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (s_ != nullptr) (void)cudaStreamDestroy(s_);
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

void Stream::synchronize() const {
  ZT_CUDA_CHECK(cudaStreamSynchronize(s_));
}

bool Stream::query() const {
  const cudaError_t rc = cudaStreamQuery(s_);
  if (rc == cudaErrorNotReady) return false;
  ZT_CUDA_CHECK(rc);
  return true;
}

void Stream::wait(const Event& e) const {
  ZT_CUDA_CHECK(cudaStreamWaitEvent(s_, e.get(), 0));
}

int Stream::greatest_priority() {
  int least = 0, greatest = 0;
  ZT_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  return greatest;
}

Event::Event() {
  ZT_CUDA_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming));
}

Event::Event(Timing) {
  ZT_CUDA_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDefault));
}

float Event::elapsed_ms(const Event& start) const {
  start.synchronize();
  synchronize();
  float ms = 0;
  ZT_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
  return ms;
}

Event::~Event() {
  if (e_ != nullptr) (void)cudaEventDestroy(e_);
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (e_ != nullptr) (void)cudaEventDestroy(e_);
    e_ = o.e_;
    o.e_ = nullptr;
  }
  return *this;
}

void Event::record(cudaStream_t stream) {
  ZT_CUDA_CHECK(cudaEventRecord(e_, stream));
}

void Event::wait(cudaStream_t stream) const {
  ZT_CUDA_CHECK(cudaStreamWaitEvent(stream, e_, 0));
}

bool Event::query() const {
  const cudaError_t rc = cudaEventQuery(e_);
  if (rc == cudaErrorNotReady) return false;
  ZT_CUDA_CHECK(rc);
  return true;
}

void Event::synchronize() const {
  ZT_CUDA_CHECK(cudaEventSynchronize(e_));
}

}  // namespace zt::cuda
