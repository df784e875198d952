#pragma once
// The small models the trainer-level tests train, as TrainOptions. A test that needs something
// else states its difference by overriding fields of one of these.
#include <string>
#include <string_view>
#include <vector>

#include "src/config/options.h"

namespace zt::test {

// The small GPT the trainer-level layout tests train: 2 layers, hidden 32, 4 heads, sequence 16,
// vocabulary 50 padded to 64 at tp 1, 2 and 4 (the padded tables line up), micro-batch 1 and
// global batch 8 (8 micro-batches per rank at dp 1, 2 at dp 4), lr 3e-3 on mock data, `dropout`
// on attention and hidden states, `train_iters` steps.
inline TrainOptions small_gpt(double dropout, int train_iters) {
  TrainOptions o;
  o.num_layers = 2;
  o.hidden_size = 32;
  o.num_attention_heads = 4;
  o.seq_length = 16;
  o.vocab_size = 50;
  o.make_vocab_size_divisible_by = 16;
  o.attention_dropout = dropout;
  o.hidden_dropout = dropout;
  o.micro_batch_size = 1;
  o.global_batch_size = 8;
  o.train_iters = train_iters;
  o.lr = 3e-3;
  o.mock_data = true;
  o.log_interval = 1000;
  return o;
}

// Llama's shape on top of `o`: rotary positions, RMSNorm, SwiGLU, `groups` key/value groups,
// an untied output layer and no linear biases.
inline void set_llama_shape(TrainOptions& o, int groups) {
  o.position_embedding_type = "rope";
  o.normalization = "RMSNorm";
  o.swiglu = true;
  o.group_query_attention = true;
  o.num_query_groups = groups;
  o.untie_embeddings_and_output_weights = true;
  o.disable_bias_linear = true;
}

// The small mixture of experts the layout tests share: small_gpt in Llama's shape (8 heads in 4
// key/value groups), 4 layers of which 0 and 2 are MoE: 4 experts of width 48, top 2, the
// load-balancing loss at 0.01. A router's choice is a step function of its input: where two
// experts' scores nearly tie, a rounding-level difference between layouts picks the other one and
// the loss moves by far more than rounding. Adam turns rounding-level gradient differences into
// parameter differences up to lr per step, so the ties a layout meets grow with lr: at the small
// model's 3e-3 one of the 2,560 choices of 10 steps flipped at tp 4; at 1e-3 none does.
inline TrainOptions small_moe(double dropout, int train_iters) {
  TrainOptions o = small_gpt(dropout, train_iters);
  o.num_layers = 4;
  o.num_attention_heads = 8;
  set_llama_shape(o, 4);
  o.num_experts = 4;
  o.moe_router_topk = 2;
  o.moe_ffn_hidden_size = 48;
  o.moe_layer_freq = 2;
  o.moe_aux_loss_coeff = 0.01;
  o.lr = 1e-3;
  return o;
}

// The defaults with `args` applied as `zerotron train` applies its flags.
inline TrainOptions parse_options(std::vector<std::string_view> args) {
  TrainOptions o;
  parse_train_options(args, o);
  return o;
}

// `pp` pipeline stages of `chunks` model chunks each (the interleaved schedule when > 1).
inline void set_pipeline(TrainOptions& o, int pp, int chunks) {
  o.pipeline_model_parallel_size = pp;
  o.num_layers_per_virtual_pipeline_stage = chunks > 1 ? o.num_layers / (pp * chunks) : 0;
}

// The GPT the GPU tests train on `device` and compare with the CPU backend: 3 layers, hidden 64,
// 4 heads, sequence 32, vocabulary 100 padded to 128, dropout 0.1, lr 3e-3 on mock data for 10
// steps, exact fp32 GEMMs (no TF32), buckets of a few units per layer. The batch is the caller's.
inline TrainOptions device_gpt(const std::string& device) {
  TrainOptions o;
  o.device = device;
  o.tf32 = false;  // exact fp32 GEMMs, comparable with the CPU backend
  o.num_layers = 3;
  o.hidden_size = 64;
  o.num_attention_heads = 4;
  o.seq_length = 32;
  o.vocab_size = 100;
  o.make_vocab_size_divisible_by = 64;
  o.attention_dropout = 0.1;
  o.hidden_dropout = 0.1;
  o.train_iters = 10;
  o.lr = 3e-3;
  o.mock_data = true;
  o.log_interval = 1000;
  o.reduce_bucket_size = 5000;  // several units per layer
  o.allgather_bucket_size = 10000;
  return o;
}

}  // namespace zt::test
