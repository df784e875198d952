#include "src/config/derive.h"

#include <algorithm>

#include "src/core/error.h"

namespace zt {

int data_parallel_size(const TrainOptions& o, int world) {
  const int mp =
      o.tensor_model_parallel_size * o.pipeline_model_parallel_size * o.context_parallel_size;
  ZT_REQUIRE(world % mp == 0,
             "world size {} is not divisible by --tensor-model-parallel-size {} x "
             "--pipeline-model-parallel-size {} x --context-parallel-size {}",
             world, o.tensor_model_parallel_size, o.pipeline_model_parallel_size,
             o.context_parallel_size);
  return world / mp;
}

int model_chunks(const TrainOptions& o) {
  const int per_stage = o.num_layers / o.pipeline_model_parallel_size;
  const int k = o.num_layers_per_virtual_pipeline_stage;
  return k == 0 ? 1 : per_stage / k;
}

BatchConfig batch_config(const TrainOptions& o, int dp) {
  BatchConfig b;
  b.micro = o.micro_batch_size;
  const int64_t per_step = int64_t{o.micro_batch_size} * dp;
  const int64_t derived = per_step * std::max(o.gradient_accumulation_steps, 1);
  b.global = o.global_batch_size == 0 ? derived : int64_t{o.global_batch_size};
  b.accumulation = static_cast<int>(b.global / per_step);
  return b;
}

std::optional<int64_t> checkpoint_step(const TrainOptions& o) {
  if (o.ckpt_step < 0) return std::nullopt;
  return o.ckpt_step;
}

int lr_decay_iters(const TrainOptions& o) {
  return o.lr_decay_iters == 0 ? o.train_iters : o.lr_decay_iters;
}

DType working_dtype(const TrainOptions& o) {
  if (o.bf16) return DType::BF16;
  if (o.fp16) return DType::F16;
  return DType::F32;
}

GptConfig gpt_config_from(const TrainOptions& o) {
  GptConfig c;
  c.num_layers = o.num_layers;
  c.hidden = o.hidden_size;
  c.heads = o.num_attention_heads;
  c.seq_length = o.seq_length;
  c.vocab_size = o.vocab_size;
  c.padded_vocab_size =
      padded_vocab_size(o.vocab_size, o.make_vocab_size_divisible_by, o.tensor_model_parallel_size);
  c.attention_dropout = static_cast<float>(o.attention_dropout);
  c.hidden_dropout = static_cast<float>(o.hidden_dropout);
  c.dtype = working_dtype(o);
  c.sequence_parallel = o.sequence_parallel;
  c.context_parallel = o.context_parallel_size;
  c.context_comm = o.cp_comm_type == "a2a" ? ContextComm::AllToAll : ContextComm::Ring;
  c.position_embedding = o.position_embedding_type == "rope" ? PositionEmbedding::Rope
                                                             : PositionEmbedding::LearnedAbsolute;
  c.rotary_base = static_cast<float>(o.rotary_base);
  c.rope_scaling.type = rope_scaling_type(o.rope_scaling_type);
  c.rope_scaling.factor = o.rope_scaling_factor;
  c.rope_scaling.low_freq_factor = o.rope_scaling_low_freq_factor;
  c.rope_scaling.high_freq_factor = o.rope_scaling_high_freq_factor;
  c.rope_scaling.original_max_positions = o.rope_scaling_original_max_positions;
  c.normalization =
      o.normalization == "RMSNorm" ? Normalization::RMSNorm : Normalization::LayerNorm;
  c.norm_epsilon = static_cast<float>(o.norm_epsilon);
  c.swiglu = o.swiglu;
  c.ffn_hidden_size = o.ffn_hidden_size;
  c.num_query_groups = o.group_query_attention ? o.num_query_groups : 0;
  c.untie_embeddings = o.untie_embeddings_and_output_weights;
  c.add_bias_linear = !o.disable_bias_linear;
  c.add_qkv_bias = o.add_qkv_bias;
  c.max_position_embeddings = o.max_position_embeddings;
  c.init_method_std = static_cast<float>(o.init_method_std);
  c.num_experts = o.num_experts;
  c.moe_topk = o.moe_router_topk;
  c.moe_ffn_hidden_size = o.moe_ffn_hidden_size;
  c.moe_layer_freq = o.moe_layer_freq;
  c.moe_sigmoid = o.moe_router_score_function == "sigmoid";
  c.moe_renormalize = !o.moe_router_pre_softmax;
  c.moe_aux_loss_coeff = static_cast<float>(o.moe_aux_loss_coeff);
  c.moe_capacity_factor = static_cast<float>(o.moe_expert_capacity_factor);
  c.moe_shared_ffn = o.moe_shared_expert_intermediate_size;
  c.moe_shared_gate = o.moe_shared_expert_gate;
  c.expert_parallel = o.expert_model_parallel_size;
  return c;
}

namespace {

LossScalerConfig scaler_config(const TrainOptions& o) {
  LossScalerConfig c;
  if (!o.fp16) return c;  // bf16 and fp32 need no scaling
  c.dynamic = o.loss_scale == 0;
  c.scale = c.dynamic ? o.initial_loss_scale : o.loss_scale;
  c.window = o.loss_scale_window;
  c.hysteresis = o.hysteresis;
  c.min_scale = o.min_loss_scale;
  c.max_scale = o.max_loss_scale;
  c.max_consecutive_skips = o.max_consecutive_skips;
  return c;
}

// The options' part of ZeroConfig.
ZeroConfig zero_config(const TrainOptions& o) {
  ZeroConfig z;
  z.stage = o.zero_stage;
  z.reduce_bucket_elems = o.reduce_bucket_size;
  z.allgather_bucket_elems = o.allgather_bucket_size;
  // The data-parallel reduction of a pipeline waits for the whole schedule and the tied
  // embedding's sum (DeepSpeed's pipeline order: tied gradients, then data-parallel gradients).
  z.overlap_comm = o.overlap_comm && o.pipeline_model_parallel_size == 1;
  z.param_persistence_threshold = o.param_persistence_threshold;
  z.prefetch_bucket_elems = o.prefetch_bucket_size;
  z.max_live_parameters = o.max_live_parameters;
  z.fp32_grads = o.accumulate_allreduce_grads_in_fp32;
  z.cast_params = o.working_params == "cast";  // held_params_elems: the model's, per rank
  z.optimizer_tier.tier = parse_state_tier(o.offload_optimizer);
  z.optimizer_tier.nvme_path = o.nvme_path;
  z.optimizer_tier.chunk_elems = (o.sub_group_size + 1023) / 1024 * 1024;
  z.optimizer_tier.aio_block_bytes = o.aio_block_size;
  z.optimizer_tier.aio_queue_depth = o.aio_queue_depth;
  z.overlap_offloaded_step = !o.no_overlap_optimizer_step;
  z.param_tier = z.optimizer_tier;
  z.param_tier.tier = parse_state_tier(o.offload_param);
  z.param_tier.on_write_back = nullptr;
  return z;
}

}  // namespace

DerivedConfig derive_validated(const TrainOptions& o, int dp) {
  DerivedConfig d;
  d.tp = o.tensor_model_parallel_size;
  d.pp = o.pipeline_model_parallel_size;
  d.dp = dp;
  d.cp = o.context_parallel_size;
  d.world = d.tp * d.pp * d.cp * dp;
  d.chunks = model_chunks(o);
  d.first_stage_layers = o.decoder_first_pipeline_num_layers;
  d.last_stage_layers = o.decoder_last_pipeline_num_layers;
  d.batch = batch_config(o, dp);
  d.lr_decay_iters = lr_decay_iters(o);
  d.working = working_dtype(o);
  d.model = gpt_config_from(o);
  d.zero = zero_config(o);
  d.adam = AdamConfig{o.adam_beta1, o.adam_beta2, o.adam_eps, o.weight_decay, o.clip_grad};
  d.scaler = scaler_config(o);
  d.checkpoint_activations = o.checkpoint_activations;
  d.checkpoint.span = o.checkpoint_num_layers;
  d.checkpoint.partition = o.partition_activations;
  d.checkpoint.cpu = o.cpu_checkpointing;
  return d;
}

DerivedConfig derive(const TrainOptions& o, int world) {
  const int dp = data_parallel_size(o, world);
  validate_train_options(o, dp);
  return derive_validated(o, dp);
}

}  // namespace zt
