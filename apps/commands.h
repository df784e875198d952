#pragma once
// The subcommands of the zerotron binary. Each takes the arguments after its name and returns
// the process exit code (2 for bad input).
#include <span>
#include <string_view>

namespace zt::app {

using Args = std::span<const std::string_view>;

int train(Args args);
int evaluate(Args args);
int prepare_data(Args args);
int train_tokenizer(Args args);
int export_model(Args args);
int import_model(Args args);
int estimate(Args args);
int simulate(Args args);
int generate(Args args);
int version(Args args);

}  // namespace zt::app
