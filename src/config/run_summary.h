#pragma once
// The line a run prints at its start: the model, the precision, the batch and the layout.
#include <string>

#include "src/config/derive.h"

namespace zt {

std::string run_summary(const TrainOptions& o, const DerivedConfig& d);

}  // namespace zt
