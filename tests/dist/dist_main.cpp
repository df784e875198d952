#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/dist/dist_env.h"

namespace zt::dist {
namespace {

comm::MpiRuntime* g_runtime = nullptr;
comm::MpiCommunicator* g_world = nullptr;
MemoryPool* g_pool = nullptr;
std::vector<std::function<void()>> g_teardown;

// Prints every failure on every rank (stderr, one line each) so the log says which rank failed.
class RankListener : public testing::EmptyTestEventListener {
 public:
  explicit RankListener(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] FAILURE %s:%d: %s\n", rank_,
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
    std::fflush(stderr);
  }
  void OnTestEnd(const testing::TestInfo& t) override {
    if (t.result()->Failed()) {
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, t.test_suite_name(), t.name());
      std::fflush(stderr);
    }
    // Keep the ranks in step: a test's collectives never meet the next test's.
    g_world->barrier();
  }

 private:
  int rank_;
};

}  // namespace

comm::MpiRuntime& runtime() {
  return *g_runtime;
}
comm::MpiCommunicator& world() {
  return *g_world;
}
MemoryPool& pool() {
  return *g_pool;
}
void on_teardown(std::function<void()> f) {
  g_teardown.push_back(std::move(f));
}
std::string scratch_dir() {
  std::filesystem::create_directories(ZT_DIST_SCRATCH);
  return std::string(ZT_DIST_SCRATCH) + "/";
}

}  // namespace zt::dist

int main(int argc, char** argv) {
  zt::comm::RuntimeOptions opts;
  const char* t = std::getenv("ZT_COMM_TIMEOUT");
  opts.comm_timeout_s = t ? std::atof(t) : 60.0;
  zt::comm::MpiRuntime rt(argc, argv, opts);
  return rt.run_guarded([&] {
    zt::MemoryPool pool(zt::make_host_allocator());
    auto world = rt.world(pool);
    zt::dist::g_runtime = &rt;
    zt::dist::g_world = world.get();
    zt::dist::g_pool = &pool;

    testing::InitGoogleTest(&argc, argv);
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    const char* verbose = std::getenv("ZT_DIST_VERBOSE");
    if (rt.rank() != 0 && !(verbose && *verbose == '1'))
      delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new zt::dist::RankListener(rt.rank()));  // gtest owns listeners

    const int rc = RUN_ALL_TESTS();
    for (auto& f : zt::dist::g_teardown) f();
    // Gather every rank's verdict so all agree and rank 0 can name the failing ranks.
    std::vector<float> flags(static_cast<size_t>(rt.world_size()), 0.0f);
    flags[static_cast<size_t>(rt.rank())] = rc != 0 ? 1.0f : 0.0f;
    world->all_gather(
        zt::Tensor(flags.data(), zt::Shape{static_cast<int64_t>(flags.size())}, zt::DType::F32));
    std::string failed;
    for (size_t r = 0; r < flags.size(); ++r)
      if (flags[r] != 0.0f) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
    if (rt.rank() == 0) {
      if (failed.empty())
        std::printf("dist: PASSED on all %d ranks\n", rt.world_size());
      else
        std::printf("dist: FAILED on rank(s) %s of %d\n", failed.c_str(), rt.world_size());
      std::fflush(stdout);
    }
    world.reset();
    zt::dist::g_world = nullptr;
    return failed.empty() ? 0 : 1;
  });
}
