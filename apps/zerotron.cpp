// zerotron: one binary, subcommands. Usage: zerotron <command> [flags]; zerotron <command> --help.
#include <cstdio>
#include <string_view>
#include <vector>

#include "apps/commands.h"
#include "src/config/flag_scan.h"
#include "src/core/error.h"
#include "src/core/log.h"

namespace {

struct Command {
  std::string_view name;
  int (*run)(zt::app::Args);
  std::string_view help;
};

constexpr Command kCommands[] = {
    {"train", zt::app::train, "train a GPT model"},
    {"evaluate", zt::app::evaluate,
     "validation (and test) loss and perplexity of a checkpoint on --data-path"},
    {"generate", zt::app::generate, "continue a prompt with a saved model (key/value cached)"},
    {"prepare-data", zt::app::prepare_data, "tokenize text into a Megatron indexed dataset"},
    {"train-tokenizer", zt::app::train_tokenizer, "learn a GPT-2 byte-level BPE from a corpus"},
    {"estimate", zt::app::estimate, "per-rank memory and communication of a model and layout"},
    {"simulate", zt::app::simulate, "step time, TFLOP/s and memory of a layout on a cluster"},
    {"export", zt::app::export_model,
     "consolidate a checkpoint into Hugging Face GPT-2 or Llama safetensors"},
    {"import", zt::app::import_model,
     "turn Hugging Face GPT-2 or Llama safetensors into a checkpoint for any layout"},
    {"version", zt::app::version,
     "version, commit, backends, CPU ISA and CUDA of this build (also --version)"},
};

int usage(FILE* out) {
  std::fprintf(out, "usage: zerotron <command> [flags]\n\ncommands:\n");
  for (const auto& c : kCommands)
    std::fprintf(out, "  %-16.*s %.*s\n", static_cast<int>(c.name.size()), c.name.data(),
                 static_cast<int>(c.help.size()), c.help.data());
  std::fprintf(out, "\n'zerotron <command> --help' lists a command's flags.\n");
  return out == stdout ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(stderr);
  const std::string_view name = argv[1] == std::string_view("--version") ? "version" : argv[1];
  if (name == "--help" || name == "-h" || name == "help") return usage(stdout);
  std::vector<std::string_view> rest(argv + 2, argv + argc);
  for (const auto& c : kCommands) {
    if (c.name != name) continue;
    try {
      return c.run(rest);
    } catch (const zt::InputError& e) {
      zt::log::error_line(e.what());
      return 2;
    } catch (const std::exception& e) {
      zt::log::error_line(e.what());
      return 1;
    }
  }
  std::vector<std::string_view> names;
  for (const auto& c : kCommands) names.push_back(c.name);
  const std::string_view near = zt::nearest_flag(name, names);
  zt::log::error_line("unknown command '" + std::string(name) + "'" +
                      (near.empty() ? "" : " (did you mean '" + std::string(near) + "'?)") +
                      ", run 'zerotron --help'");
  return 2;
}
