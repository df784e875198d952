#pragma once
// BackgroundJob: one job at a time on a thread of its own, with a progress mark the job
// publishes and its owner can wait for — an offloaded optimizer step streaming behind the next
// forward, which waits only for the parameters it reaches. An exception thrown by the job is
// kept and rethrown by every later wait, so nothing reads what a failed job left half done.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace zt {

class BackgroundJob {
 public:
  // `bind` runs once on the worker thread before its first job (the rank's CUDA device).
  explicit BackgroundJob(std::function<void()> bind = {});
  ~BackgroundJob();  // waits for the running job; its error, if any, is dropped
  BackgroundJob(const BackgroundJob&) = delete;
  BackgroundJob& operator=(const BackgroundJob&) = delete;

  // Starts `job` with the mark at 0 (the previous job must have ended: wait() first).
  void start(std::function<void()> job);
  bool busy() const;
  // From the job: everything below `mark` is done (non-decreasing within a job).
  void publish(int64_t mark);
  // Until the running job has published `mark` or ended (at once when none runs); rethrows the
  // error a job ended with.
  void wait_for(int64_t mark);
  // Until the running job has ended; rethrows the error a job ended with.
  void wait();

 private:
  void loop();
  void rethrow_locked() const;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> bind_;
  std::function<void()> job_;
  bool busy_ = false;
  bool stop_ = false;
  int64_t mark_ = 0;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once every member it reads exists
};

}  // namespace zt
