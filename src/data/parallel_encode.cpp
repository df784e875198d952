#include "src/data/parallel_encode.h"

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "src/core/error.h"

namespace zt::data {

ParallelEncoder::ParallelEncoder(const BpeTokenizer& tok, int workers, bool append_eod)
    : tok_(tok), caches_(static_cast<size_t>(std::max(1, workers))), append_eod_(append_eod) {
  ZT_REQUIRE(!append_eod || tok.eod().has_value(),
             "--append-eod: the tokenizer has no end-of-document token (a GPT-2 vocab's "
             "'<|endoftext|>', a tokenizer.json's eos token)");
}

void ParallelEncoder::encode(const std::vector<std::string>& docs,
                             std::vector<std::vector<int32_t>>& out) {
  out.resize(docs.size());
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&](EncodeCache& cache) {
    try {
      // Encode into a thread-local vector and store once: out[i] headers of neighbouring
      // documents share cache lines, and push_back on them from two threads thrashes.
      std::vector<int32_t> ids;
      for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < docs.size();) {
        ids.clear();
        tok_.encode(docs[i], cache, ids);
        if (append_eod_ && !ids.empty()) ids.push_back(*tok_.eod());  // as Megatron: not on empty
        out[i].assign(ids.begin(), ids.end());
      }
    } catch (...) {
      std::lock_guard lock(error_mu);
      if (!error) error = std::current_exception();
    }
  };
  if (caches_.size() == 1 || docs.size() < 2) {
    work(caches_[0]);
  } else {
    std::vector<std::jthread> threads;
    for (size_t t = 1; t < caches_.size(); ++t) threads.emplace_back(work, std::ref(caches_[t]));
    work(caches_[0]);
  }  // jthreads join here, before `error` is read
  if (error) std::rethrow_exception(error);
}

}  // namespace zt::data
