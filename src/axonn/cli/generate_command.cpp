// `axonn generate`: continue prompts with a trained model on any grid (train/generation_job.h).
#include "axonn/cli/commands.h"
#include "axonn/cli/grid_order_option.h"
#include "axonn/cli/model_options.h"
#include "axonn/cli/sampling_options.h"
#include "axonn/cli/seed_option.h"
#include "axonn/cli/tokenizer_dir_option.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/io/pretokenize.h"
#include "axonn/io/prompt_records.h"
#include "axonn/io/utf8.h"
#include "axonn/io/tokenizer.h"
#include "axonn/train/generation_job.h"

#include <fmt/format.h>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

namespace axonn {
namespace {

// One prompt per line; blank lines (white space alone) are skipped, and so is a byte-order mark that starts the
// file. Prompts are text: a binary file or bytes that are not UTF-8 (a token shard named by mistake) are refused,
// as `axonn prepare` refuses them.
std::vector<std::string> read_prompt_file(std::filesystem::path const& path) {
    std::string text =
        read_input_file(path, "prompt file", "pass a text file with one prompt per line", std::uint64_t{64} << 20);
    require_utf8_text(text, "prompt file " + path.string(), "pass a text file with one prompt per line");
    drop_byte_order_mark(text);
    std::istringstream lines(text);
    std::vector<std::string> prompts;
    for (std::string line; std::getline(lines, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (run_end(line, 0, CharClass::space) < line.size()) prompts.push_back(line);  // not White_Space alone
    }
    AXONN_REQUIRE(!prompts.empty(), "prompt file {} holds no prompt: write one prompt per line", path.string());
    return prompts;
}

void print_json(GenerationJobOptions const& options, GenerationJobResult const& result) {
    nlohmann::json list = nlohmann::json::array();
    for (std::size_t p = 0; p < result.completions.size(); ++p) {
        list.push_back({{"prompt", options.prompts[p]},
                        {"completion", result.completions[p]},
                        {"prompt_tokens", result.prompt_tokens[p]},
                        {"tokens", result.tokens[p]}});
    }
    // Bytes that are not UTF-8 (a token may end inside a character) are replaced rather than refused.
    fmt::print("{}\n", list.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void print_rate(GenerationJobResult const& result) {
    std::size_t generated = 0;
    for (auto const& tokens : result.tokens) generated += tokens.size();
    fmt::print(stderr, "generated {} tokens for {} prompt(s) in {:.2f} s: {:.1f} tokens/s\n", generated,
               result.tokens.size(), result.seconds, generated / std::max(result.seconds, 1e-9));
}

}  // namespace

void add_generate_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("generate", "Continue text prompts with a trained model, on any grid");
    command->footer(
        "The model is " + model_source_help() + ".\n"
        "Each prompt is taken in once, then every new token costs one forward of one token over a cache of the\n"
        "keys and values (sharded over the grid as the activations are; the model is never gathered onto one\n"
        "rank). Prompts are shared out over the data x z replicas. Tokens are drawn with --temperature, --top-k\n"
        "and --top-p from --seed, so every grid gives the same text; --greedy takes the most likely token. One\n"
        "prompt streams its text as it comes. --template writes each prompt as a fine-tuned model saw its\n"
        "prompts in training (docs/FINETUNING.md). Examples:\n"
        "  axonn generate --model-dir runs/demo/ckpt --prompt \"It is a truth\" --max-new-tokens 40 --greedy\n"
        "  mpirun -np 4 axonn generate --model-dir runs/demo/ckpt --grid data=1,z=1,y=2,x=2 --prompt-file p.txt\n"
        "  axonn generate --model-dir runs/llama-qa --tokenizer llama3 --template llama3 --greedy --stop-token eot\n"
        "      --prompt \"Where do we meet Lady Russell?\"");
    auto options = std::make_shared<GenerationJobOptions>();
    auto grid_spec = std::make_shared<std::string>("data=1,z=1,y=1,x=1");
    auto prompt = std::make_shared<std::string>();
    auto prompt_file = std::make_shared<std::filesystem::path>();
    auto greedy = std::make_shared<bool>(false);
    auto json = std::make_shared<bool>(false);
    auto template_name = std::make_shared<std::string>("plain");
    command->add_option("--model-dir", options->model_dir, model_source_help())
        ->required();
    CLI::Option* text = command->add_option("--prompt", *prompt, "the text to continue");
    command->add_option("--prompt-file", *prompt_file,
                        "a UTF-8 text file of prompts, one per line (blank lines skipped)")
        ->excludes(text);
    command->add_option("--template", *template_name,
                        "write each prompt as the prompt part of a fine-tuning template: plain (as it is), alpaca or "
                        "llama3, as `axonn prepare --template` does")
        ->capture_default_str();
    command->add_option("--max-new-tokens", options->sample.new_tokens,
                        "tokens to generate for each prompt (at most " +
                            std::to_string(SampleOptions::max_new_tokens) + ")")->capture_default_str();
    CLI::Option* const greedy_flag =
        command->add_flag("--greedy", *greedy, "always take the most likely token (the same as --temperature 0)");
    add_sampling_options(*command, options->sample);
    for (char const* sampling : {"--temperature", "--top-k", "--top-p"}) greedy_flag->excludes(sampling);
    command->add_option("--stop-token", options->stop_token,
                        "end a prompt's continuation after this token: an id, or \"eot\" for end of text");
    add_seed_option(*command, options->sample.seed, "seed of the draws");
    command->add_option("--tokenizer", options->tokenizer, "the tokenizer the model was trained with: gpt2, llama3, byte or a tokenizer.json folder")
        ->capture_default_str();
    add_tokenizer_dir_option(*command, options->tokenizer_dir, options->tokenizer);
    command->add_option("--grid", *grid_spec, "process grid: data=D,z=Z,y=Y,x=X (product = number of MPI ranks)")
        ->capture_default_str();
    add_grid_order_option(*command, options->grid_order);
    command->add_option("--prompt-chunk", options->prompt_chunk, "prompt tokens taken in per forward")
        ->capture_default_str();
    command->add_option("--threads", options->threads, "OpenMP threads per rank")->capture_default_str();
    command->add_flag("--json", *json, "print one JSON list of {prompt, completion, prompt_tokens, tokens}");
    command->callback([=] {
        as_usage_errors([&] {
            options->grid = GridShape::parse(*grid_spec);
            AXONN_REQUIRE(command->count("--prompt") > 0 || !prompt_file->empty(),
                          "no prompt: pass --prompt TEXT or --prompt-file FILE");
            require_utf8_text(*prompt, "--prompt", "write the prompt in UTF-8");
        });
        options->prompts = prompt_file->empty() ? std::vector<std::string>{*prompt} : read_prompt_file(*prompt_file);
        PromptTemplate const format = parse_prompt_template(*template_name);
        // GPT-2's and the byte tokenizer read Llama 3's special-token strings as plain text (prepare checks the
        // same of any tokenizer it loads).
        if (format == PromptTemplate::llama3 && (options->tokenizer == "gpt2" || options->tokenizer == "byte")) {
            throw UsageError(fmt::format("--template llama3 is written with Llama 3's special tokens, which the {} "
                                         "tokenizer reads as plain text: use --tokenizer llama3, or another --template",
                                         options->tokenizer));
        }
        for (std::string& text : options->prompts) text = apply_template(format, {text, ""}).prompt_part;
        if (*greedy) options->sample.temperature = 0.0f;
        if (options->tokenizer_dir.empty()) options->tokenizer_dir = default_gpt2_dir();
        // One prompt streams: the prompt once the model is loaded and checked, then each token's text.
        bool const stream = !*json && options->prompts.size() == 1;
        bool echoed = false;
        auto const echo_prompt = [&] {
            if (!std::exchange(echoed, true)) fmt::print("{}", options->prompts.front());
        };
        GenerationJobResult const result = run_generation(*options, [&](std::string_view piece) {
            if (!stream) return;
            echo_prompt();
            fmt::print("{}", piece);
            std::fflush(stdout);
        });
        if (!is_leader()) return;
        if (*json) {
            print_json(*options, result);
        } else if (stream) {
            echo_prompt();
            fmt::print("\n");
        } else {
            for (std::size_t p = 0; p < result.completions.size(); ++p) {
                fmt::print("---- prompt {} ----\n{}{}\n", p + 1, options->prompts[p], result.completions[p]);
            }
        }
        print_rate(result);
    });
}

}  // namespace axonn
