// hang_probe <mode> [timeout_s]: a small job that fails on purpose; the CTest tests
// dist.hang_* run it under launch/mpirun.sh and check the whole job ends non-zero, in bounded
// time, with the expected message.
//   throw       rank 1 throws while the others are inside an all_reduce
//               -> "zerotron: error: rank 1: injected failure ..." + MPI_Abort
//   skip        rank 1 skips an all_reduce and goes on to a barrier
//               -> watchdog: "zerotron: error: collective all_reduce on group world timed out"
//   skip-async  the others wait() on an async all_reduce rank 1 never joins -> watchdog
//   exit        rank 1 returns from main early (no MPI_Finalize) -> the others time out
//   send-first  ranks 0 and 1 exchange a small message each way, each sending before it receives:
//   an
//               order that relies on MPI buffering the send (passes, exit 0); under
//               ZT_SYNCHRONOUS_SENDS=1 both sends wait for receives never posted
//               -> watchdog: "... collective send on group world timed out ..."
//   send-recv   the same exchange through send_recv_async (each receive posted with its
//               send): passes in both modes
//   ok          everything matches; exits 0 (the control)
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "src/comm/runtime.h"
#include "src/comm/topology.h"

int main(int argc, char** argv) {
  zt::comm::RuntimeOptions opts;
  opts.comm_timeout_s = argc > 2 ? std::atof(argv[2]) : 3.0;
  zt::comm::MpiRuntime rt(argc, argv, opts);
  const std::string mode = argc > 1 ? argv[1] : "ok";
  return rt.run_guarded([&]() -> int {
    zt::MemoryPool pool(zt::make_host_allocator());
    auto world = rt.world(pool);
    std::vector<float> v(1024, 1.0f);
    zt::Tensor t(v.data(), zt::Shape{1024}, zt::DType::F32);
    world->all_reduce(t);  // everyone healthy so far
    const bool culprit = rt.rank() == 1;
    if (mode == "throw") {
      if (culprit) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the others are waiting
        throw zt::Error("injected failure in the middle of a step");
      }
      world->all_reduce(t);
    } else if (mode == "skip") {
      if (!culprit) world->all_reduce(t);
      world->barrier();
    } else if (mode == "skip-async") {
      if (!culprit) {
        zt::comm::Handle h = world->all_reduce_async(t);
        h.wait();
      }
      world->barrier();
    } else if (mode == "exit") {
      if (culprit) std::_Exit(0);
      world->all_reduce(t);
    } else if (mode == "send-first" || mode == "send-recv") {
      // 256 bytes: well inside the eager limit of every Open MPI transport (vader's is 4 KiB
      // including its header)
      std::vector<float> in(64, 0.0f);
      zt::Tensor r(in.data(), zt::Shape{64}, zt::DType::F32);
      const zt::Tensor small = t.slice(0, zt::Shape{64});
      if (rt.rank() < 2) {
        const int peer = 1 - rt.rank();
        if (mode == "send-first") {
          world->send(small, peer, 7);
          world->recv(r, peer, 7);
        } else {
          auto [s, h] = world->send_recv_async(small, peer, 7, r, peer, 7);
          h.wait();
          s.wait();
        }
        if (in[0] != v[0]) throw zt::Error("send-first: wrong data received");
      }
    } else if (mode != "ok") {
      throw zt::InputError("hang_probe: unknown mode " + mode);
    }
    world->barrier();
    world.reset();
    return 0;
  });
}
