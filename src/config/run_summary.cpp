#include "src/config/run_summary.h"

#include <fmt/format.h>

namespace zt {

std::string run_summary(const TrainOptions& o, const DerivedConfig& d) {
  const GptConfig& c = d.model;
  return fmt::format(
      "zerotron: {} parameters, {} layers, hidden {}, {} heads, seq {}, vocab {} (padded {}), "
      "{} precision, global batch {} = micro {} x data-parallel {} x accumulation {}; "
      "tensor-parallel {}{}{}, pipeline {}{}, ZeRO stage {}, activations: {}",
      c.num_parameters(), c.num_layers, c.hidden, c.heads, c.seq_length, c.vocab_size,
      c.padded_vocab_size, dtype_name(d.working), d.batch.global, d.batch.micro, d.dp,
      d.batch.accumulation, d.tp, c.sequence_parallel && d.tp > 1 ? " (sequence)" : "",
      (d.cp > 1 ? fmt::format(", context-parallel {}", d.cp) : std::string()) +
          (c.expert_parallel > 1 ? fmt::format(", expert-parallel {}", c.expert_parallel)
                                 : std::string()),
      d.pp,
      d.pp == 1      ? std::string()
      : d.chunks > 1 ? fmt::format(" ({} chunks per stage, interleaved)", d.chunks)
                     : std::string(" (1F1B)"),
      o.zero_stage,
      !o.checkpoint_activations ? "all kept"
      : o.cpu_checkpointing     ? "checkpointed, partitioned, in host memory"
      : o.partition_activations ? "checkpointed, partitioned (Pa)"
                                : "checkpointed");
}

}  // namespace zt
