// zerotron train: parse and validate every flag first, then allocate and train.
#include "apps/commands.h"
#include "src/core/memory_pool.h"
#include "src/train/options.h"
#include "src/train/trainer.h"

namespace zt::app {

int train(Args args) {
  TrainOptions o;
  if (!parse_train_options(args, o)) return 0;
  validate_train_options(o, 1);
  MemoryPool pool(make_host_allocator());
  Trainer trainer(o, pool);
  trainer.run();
  return 0;
}

}  // namespace zt::app
