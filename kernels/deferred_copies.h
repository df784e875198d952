#pragma once
// The staging backend's side stream (Backend::offload/fetch/join_copies/wait_copies) on the CPU,
// run so that every use the contract forbids shows: a copy runs at the latest moment the rules
// allow, and what it leaves undefined until then holds a poison.
//
//   offload(host, device) / fetch(device, host): recorded; the destination is filled with 0xff
//     bytes (NaN in fp32, bf16 and fp16), so compute or the host reading it early reads NaN.
//   join_copies(): the recorded copies run, in order. A fetch's bytes reach the device (compute
//     enqueued after the join may read them); an offload's are kept aside and reach the host
//     only at the wait. An offload's source that changed since offload() fails the join (compute
//     enqueued before the join overwrote what the copy was still reading).
//   wait_copies(): joins, then the offloads' bytes reach the host; a fetch's host source that
//     changed since its copy ran fails the wait (the host reused it before the wait).
//
// A destination that a recorded copy still reads is not poisoned, and a fetch reading the host
// range of an offload ahead of it in the queue gets that offload's bytes, as stream order says.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace zt {

class DeferredCopies {
 public:
  void offload(void* host_dst, const void* src, size_t bytes) { add(host_dst, src, bytes, true); }
  void fetch(void* dst, const void* host_src, size_t bytes) { add(dst, host_src, bytes, false); }
  void join();
  void wait();

 private:
  struct Copy {
    void* dst;
    const void* src;
    size_t bytes;
    bool to_host;
    bool ran = false;
    bool delivered = false;  // an offload's bytes reached the host
    bool check_src = true;   // an offload's: false when a copy ahead of it writes its source
    uint32_t src_sum = 0;    // an offload's source at offload(), a fetch's when it ran
    size_t kept = 0;         // an offload's bytes in kept_ once it ran
  };
  void add(void* dst, const void* src, size_t bytes, bool to_host);
  void run_locked();
  void deliver_locked(Copy& c);  // an offload's kept bytes to the host
  bool written_ahead(const void* p, size_t bytes, size_t before) const;
  bool read_ahead(const void* p, size_t bytes) const;

  std::mutex mu_;  // an update thread shares the backend (Backend::bind_thread)
  std::vector<Copy> queue_;
  std::vector<std::byte> kept_;  // offloads that ran, until the wait; reused
};

}  // namespace zt
