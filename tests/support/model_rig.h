#pragma once
// One single-process model for the model and optimizer tests: its parameter layout, a host
// memory pool, the ZeRO optimizer of one rank holding the parameters, an activation store that
// keeps everything, and the model, built in that order.
#include <cstdint>

#include "src/core/memory_pool.h"
#include "src/model/activation_store.h"
#include "src/model/gpt.h"
#include "src/zero/zero_optimizer.h"

namespace zt::test {

struct ModelRig {
  ModelRig(const GptConfig& c, int batch, DType working, uint64_t seed, const ZeroConfig& zero = {})
      : config(c),
        layout(ParamLayout::gpt(config)),
        pool(make_host_allocator()),
        opt(layout, working, AdamConfig{}, pool, seed, zero),
        acts(pool, config, batch),
        model(config, layout, batch, pool) {}
  GptConfig config;
  ParamLayout layout;
  MemoryPool pool;
  ZeroOptimizer opt;
  KeepAllActivations acts;
  Gpt model;
};

}  // namespace zt::test
