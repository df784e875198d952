#pragma once
// A GPT shape for a parameter count, for planning models given only as "7.5e9 parameters": head
// size 128 and hidden ~ 128 x layers (GPT-3's aspect ratios), so P ~ h^3 * 12/128. Among hidden
// sizes (multiples of 128) near that, the one whose best layer count gives the parameter count
// closest to P, embeddings included. With tensor parallelism the hidden size steps in 128·tp so
// the heads divide evenly across the tp ranks.
#include "src/model/gpt_config.h"

namespace zt {

// Sets model.hidden, heads and num_layers; vocab_size and seq_length are taken as given.
void shape_for_parameters(double parameters, GptConfig& model, int tp = 1);

}  // namespace zt
