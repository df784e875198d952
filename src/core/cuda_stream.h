#pragma once
// Owning wrappers of a CUDA stream and a CUDA event. Move-only; the destructor releases the
// handle (errors there are ignored: a destructor has nobody to report to, and a sticky device
// error has already been thrown by the call that met it).
#include <cuda_runtime_api.h>

namespace zt::cuda {

class Event;

// A non-blocking stream: it never synchronises implicitly with the legacy default stream, so
// work on it overlaps work elsewhere; ordering with other streams is explicit, through events.
class Stream {
 public:
  // `priority` follows CUDA: lower numbers run first; see greatest_priority().
  explicit Stream(int priority = 0);
  ~Stream();
  Stream(Stream&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return s_; }
  void synchronize() const;
  // True when everything enqueued so far has completed.
  bool query() const;
  // Later work on this stream waits for `e`'s most recent record.
  void wait(const Event& e) const;
  // The highest priority this device offers (communication streams use it so their kernels are
  // scheduled ahead of compute that is already queued).
  static int greatest_priority();

 private:
  cudaStream_t s_ = nullptr;
};

// An event without timing (the cheapest kind) unless asked: record, wait, query, synchronize.
class Event {
 public:
  struct Timing {};
  Event();
  // An event that also times: elapsed_ms() between two such events.
  explicit Event(Timing);
  ~Event();
  Event(Event&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return e_; }
  // Captures the work enqueued on `stream` so far (nullptr: the legacy default stream).
  void record(cudaStream_t stream);
  // Later work on `stream` waits until the captured work has completed (no host blocking).
  void wait(cudaStream_t stream) const;
  // True when the captured work has completed (or nothing was recorded); throws on a device error.
  bool query() const;
  // Blocks the host until the captured work has completed.
  void synchronize() const;
  // Milliseconds from `start`'s record to this one's, both timing events, once both completed
  // (blocks the host until they have).
  float elapsed_ms(const Event& start) const;

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace zt::cuda
