// zerotron generate --load DIR (--prompt TEXT | --prompt-file F | --prompt-ids 1,2,3)
// --max-new-tokens N [--greedy | --temperature --top-k --top-p --seed] [--print-ids]: text from a
// saved model. Any saved layout loads (each rank reads its tensor-parallel shard of the fp32
// master parameters from whichever files hold them: src/checkpoint/weights.h), on one process or
// on the `--tensor-model-parallel-size` ranks of the mpirun job; the model runs with a key/value
// cache (src/model/gpt_decoder.h), one position per new token. Text goes through the tokenizer
// the run trained with (meta.json's record of --vocab-file/--merge-file, or those flags here);
// generation stops after <|endoftext|> (without a tokenizer: the last id, GPT-2's layout and the
// exported config's eos_token_id) and never picks a padded vocabulary row. Rank 0 prints the
// prompt and the continuation as it is produced, or with --print-ids the new ids.
// Every check runs on every rank before anything is allocated: bad input is one line, exit 2.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "src/checkpoint/checkpoint.h"
#include "src/checkpoint/reader.h"
#include "src/checkpoint/weights.h"
#include "src/comm/runtime.h"
#include "src/config/command_flags.h"
#include "src/config/options.h"
#include "src/core/error.h"
#include "src/core/input_file.h"
#include "src/data/bpe_tokenizer.h"
#include "src/model/gpt_decoder.h"
#include "src/model/resident_weights.h"
#include "src/model/sampler.h"
#include "src/train/train_device.h"

namespace zt::app {
namespace {

namespace fs = std::filesystem;
constexpr size_t kMaxPromptFileBytes = size_t{16} << 20;

const std::vector<FlagSpec>& generate_flags() {
  static const std::vector<FlagSpec> specs = {
      {"--load", "DIR", "checkpoint directory (any saved layout)", true},
      {"--ckpt-step", "N", "the saved iteration to load (default: the one `latest` names)"},
      {"--iteration", "N", "the same as --ckpt-step"},
      {"--prompt", "TEXT", "the text to continue"},
      {"--prompt-file", "FILE", "the text to continue, from a file"},
      {"--prompt-ids", "IDS", "the token ids to continue, comma-separated (no tokenizer needed)"},
      {"--max-new-tokens", "N", "tokens to generate at most", true},
      {"--greedy", "", "always the most likely token (default: sampling)"},
      {"--temperature", "T", "sampling temperature, > 0 (default 1)"},
      {"--top-k", "K", "sample among the K most likely tokens only (default 0: all)"},
      {"--top-p", "P",
       "sample among the most likely tokens whose probability reaches P (default 1)"},
      {"--seed", "N", "seed of the sampling draws (default 1234)"},
      {"--print-ids", "", "print the new token ids (comma-separated) instead of text"},
      {"--vocab-file", "FILE", "GPT-2 vocab.json (default: the one the checkpoint's run used)"},
      {"--tokenizer-model", "PATH",
       "tokenizer.json or its directory (default: the one the checkpoint's run used)"},
      {"--merge-file", "FILE", "GPT-2 merges.txt (default: the one the checkpoint's run used)"},
      {"--tensor-model-parallel-size", "N",
       "tensor-parallel ranks (= the mpirun ranks; default 1)"},
      {"--device", "D", "auto, cpu or cuda (default auto)"},
  };
  return specs;
}

// Everything a run needs, checked.
struct Request {
  std::string iter_dir;
  nlohmann::json meta;
  GptConfig model;
  std::optional<data::BpeTokenizer> tokenizer;
  std::vector<int32_t> prompt;
  std::string prompt_text;  // printed before the continuation (text mode)
  int max_new = 0;
  int32_t eos = -1;
  SamplingSettings sampling;
  bool print_ids = false;
  int tp = 1;
  std::string device;
};

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  if (text.empty()) return ids;  // refused as an empty prompt
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item(text.data() + at, comma - at);
    int32_t v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    ZT_REQUIRE(!item.empty() && ec == std::errc{} && end == item.data() + item.size(),
               "generate: --prompt-ids must be comma-separated integers, got '{}'", excerpt(text));
    ids.push_back(v);
    at = comma + 1;
  }
  return ids;
}

// The tokenizer: --vocab-file/--merge-file or --tokenizer-model, else the files the checkpoint's
// run recorded.
std::optional<data::BpeTokenizer> find_tokenizer(const ParsedFlags& f, const nlohmann::json& meta,
                                                 const std::string& where) {
  ZT_REQUIRE(f.has("--vocab-file") == f.has("--merge-file"),
             "generate: --vocab-file and --merge-file go together");
  ZT_REQUIRE(!(f.has("--vocab-file") && f.has("--tokenizer-model")),
             "generate: --tokenizer-model and --vocab-file/--merge-file are exclusive");
  if (f.has("--vocab-file"))
    return data::BpeTokenizer::from_files(f.str("--vocab-file"), f.str("--merge-file"));
  if (f.has("--tokenizer-model"))
    return data::BpeTokenizer::from_hf_file(f.str("--tokenizer-model"));
  const nlohmann::json settings = meta.value("settings", nlohmann::json::object());
  if (settings.is_object() && settings.contains("tokenizer-model")) {
    const nlohmann::json& t = settings["tokenizer-model"];
    ZT_REQUIRE(t.is_string(), "'{}': settings.tokenizer-model must be a file name", where);
    std::error_code ec;
    ZT_REQUIRE(fs::exists(t.get<std::string>(), ec),
               "generate: the tokenizer '{}' the checkpoint's run used is gone; pass "
               "--tokenizer-model",
               excerpt(t.get<std::string>(), 200));
    return data::BpeTokenizer::from_hf_file(t.get<std::string>());
  }
  if (!settings.is_object() || !settings.contains("vocab-file")) return std::nullopt;
  const nlohmann::json &v = settings["vocab-file"],
                       &m = settings.value("merge-file", nlohmann::json());
  ZT_REQUIRE(v.is_string() && m.is_string(),
             "'{}': settings.vocab-file and settings.merge-file must be file names", where);
  for (const std::string& file : {v.get<std::string>(), m.get<std::string>()}) {
    std::error_code ec;
    ZT_REQUIRE(fs::is_regular_file(file, ec),
               "generate: the tokenizer file '{}' the checkpoint's run used is gone; pass "
               "--vocab-file and --merge-file",
               excerpt(file, 200));
  }
  return data::BpeTokenizer::from_files(v.get<std::string>(), m.get<std::string>());
}

Request read_request(const ParsedFlags& f, int world) {
  Request r;
  const std::optional<int64_t> iteration = checkpoint_step_flag(f);
  const int sources =
      int{f.has("--prompt")} + int{f.has("--prompt-file")} + int{f.has("--prompt-ids")};
  ZT_REQUIRE(sources == 1, "generate: give one of --prompt, --prompt-file and --prompt-ids");
  r.max_new = static_cast<int>(f.integer("--max-new-tokens", 0, 1, 1 << 24));
  r.sampling.greedy = f.has("--greedy");
  r.sampling.temperature = static_cast<float>(f.real("--temperature", 1.0, 1e-6, 1e6));
  r.sampling.top_k = static_cast<int>(f.integer("--top-k", 0, 0, 1 << 30));
  r.sampling.top_p = static_cast<float>(f.real("--top-p", 1.0, 1e-6, 1.0));
  r.sampling.seed = static_cast<uint64_t>(f.integer("--seed", 1234, 0, int64_t{1} << 62));
  r.print_ids = f.has("--print-ids");
  r.tp = static_cast<int>(f.integer("--tensor-model-parallel-size", 1, 1, 1 << 16));
  r.device = f.str("--device", "auto");
  ZT_REQUIRE(r.device == "auto" || r.device == "cpu" || r.device == "cuda",
             "generate: --device must be auto, cpu or cuda, got '{}'", excerpt(r.device));
  ZT_REQUIRE(world == r.tp,
             "generate: {} ranks but --tensor-model-parallel-size {}: run it on exactly the "
             "tensor-parallel ranks (mpirun -np {})",
             world, r.tp, r.tp);
  resolve_device(r.device);  // cuda without the backend or a GPU: refused here

  r.iter_dir = checkpoint_iteration_dir(f.str("--load"), iteration, r.meta);
  const std::string where = (fs::path(r.iter_dir) / "meta.json").string();
  r.model = SavedCheckpoint(r.iter_dir, r.meta).model();
  r.model.dtype = DType::F32;
  r.model.attention_dropout = r.model.hidden_dropout = 0;
  // The saved padding, widened where it does not split over this tp (the extra rows are zero
  // and never chosen).
  if (r.model.padded_vocab_size % r.tp != 0)
    r.model.padded_vocab_size = pad_vocab(r.model.padded_vocab_size, r.tp);
  validate_tensor_parallel(r.model, r.tp);

  r.tokenizer = find_tokenizer(f, r.meta, where);
  if (r.tokenizer) {
    ZT_REQUIRE(r.tokenizer->vocab_size() == r.model.vocab_size,
               "generate: the tokenizer has {} tokens but the model's vocabulary is {}",
               r.tokenizer->vocab_size(), r.model.vocab_size);
    r.eos = r.tokenizer->eod().value_or(-1);
  } else {
    ZT_REQUIRE(f.has("--prompt-ids") && r.print_ids,
               "generate: '{}' records no tokenizer (it was trained on mock data or imported): "
               "pass --vocab-file and --merge-file, or use --prompt-ids with --print-ids",
               where);
    r.eos = r.model.vocab_size - 1;
  }
  if (f.has("--prompt-ids")) {
    r.prompt = parse_ids(f.str("--prompt-ids"));
    for (int32_t id : r.prompt)
      ZT_REQUIRE(id >= 0 && id < r.model.vocab_size,
                 "generate: --prompt-ids holds {}, outside the vocabulary [0, {})", id,
                 r.model.vocab_size);
    if (r.tokenizer) r.prompt_text = r.tokenizer->decode(r.prompt);
  } else {
    r.prompt_text = f.has("--prompt") ? f.str("--prompt")
                                      : read_input_file(f.str("--prompt-file"), kMaxPromptFileBytes,
                                                        "--prompt-file");
    r.prompt = r.tokenizer->encode(r.prompt_text);
  }
  ZT_REQUIRE(!r.prompt.empty(), "generate: the prompt is empty");
  ZT_REQUIRE(static_cast<int>(r.prompt.size()) <= r.model.seq_length,
             "generate: the prompt is {} tokens, longer than the model's {} positions "
             "(--seq-length it was trained with); shorten it",
             r.prompt.size(), r.model.seq_length);
  return r;
}

void print_text(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

int generate(Args args) {
  for (std::string_view a : args)
    if (a == "--help" || a == "-h") {  // usage without MPI, once
      print_usage("generate", generate_flags());
      return 0;
    }
  int argc = 0;
  char** argv = nullptr;
  comm::MpiRuntime rt(argc, argv);
  return rt.run_guarded([&] {
    Request r;
    const int verdict = rt.agree_on_input([&] {
      const std::optional<ParsedFlags> flags =
          ParsedFlags::parse("generate", generate_flags(), args);
      r = read_request(*flags, rt.world_size());
    });
    if (verdict != 0) return verdict;
    const bool printer = rt.rank() == 0;
    const int room = r.model.seq_length - static_cast<int>(r.prompt.size()) + 1;
    if (printer && r.max_new > room)
      std::fprintf(stderr,
                   "zerotron: note: %d positions leave room for %d new tokens after the "
                   "prompt's %zu\n",
                   r.model.seq_length, room, r.prompt.size());
    TrainOptions o;
    o.device = r.device;
    o.tensor_model_parallel_size = r.tp;
    TrainDevice device(o, &rt);
    comm::Topology& topo = device.topology();
    const ParamLayout layout = ParamLayout::gpt(r.model, r.tp, topo.tp_rank());
    ResidentWeights weights(layout, r.model.dtype, device.context());
    {
      SavedCheckpoint saved(r.iter_dir, r.meta);
      read_weights(saved, layout,
                   [&](int64_t at, const float* v, int64_t n) { weights.set(at, v, n); });
    }
    GptDecoder decoder(r.model, layout, r.model.seq_length, device.context(), &topo.tp());
    Sampler sampler(r.sampling);
    if (printer && !r.print_ids) print_text(r.prompt_text);
    const Generation g =
        generate(decoder, weights, r.prompt, r.max_new, r.eos, sampler, [&](int32_t id) {
          if (printer && !r.print_ids && id != r.eos)
            print_text(r.tokenizer->decode(std::span<const int32_t>(&id, 1)));
        });
    if (printer) {
      if (r.print_ids) print_text(fmt::format("{}", fmt::join(g.tokens, ",")));
      print_text("\n");
    }
    return 0;
  });
}

}  // namespace zt::app
