#include "axonn/train/generation_job.h"

#include "axonn/core/error.h"
#include "axonn/core/timer.h"
#include "axonn/io/tokenizer.h"
#include "axonn/train/checkpointing.h"
#include "axonn/train/job.h"
#include "axonn/train/threads.h"
#include "axonn/train/train_step.h"

#include <mpi.h>

#include <charconv>

namespace axonn {
namespace {

// --stop-token: a token id, or "eot" for the tokenizer's end of text; -1 for none.
std::int32_t parse_stop_token(std::string const& text, Tokenizer const& tokenizer) {
    if (text.empty()) return -1;
    if (text == "eot") return tokenizer.eot_id();
    std::int32_t id = -1;
    auto const [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
    AXONN_REQUIRE(error == std::errc() && end == text.data() + text.size() && id >= 0 && id < tokenizer.vocab_size(),
                  "--stop-token '{}' is neither \"eot\" nor a token id of the {} tokenizer (0..{})", text,
                  tokenizer.name(), tokenizer.vocab_size() - 1);
    return id;
}

}  // namespace

GenerationJobResult run_generation(GenerationJobOptions const& options,
                                   std::function<void(std::string_view)> const& on_text) {
    int world = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    use_threads(options.threads);
    auto const tokenizer = make_tokenizer(options.tokenizer, options.tokenizer_dir);
    SampleOptions sample = options.sample;
    as_usage_errors([&] {
        sample.validate("--max-new-tokens");
        sample.stop_token = parse_stop_token(options.stop_token, *tokenizer);
        AXONN_REQUIRE(!options.prompts.empty(), "no prompt: pass --prompt TEXT or --prompt-file FILE");
        AXONN_REQUIRE(options.prompt_chunk >= 1, "--prompt-chunk must be at least 1, got {}", options.prompt_chunk);
    });
    std::filesystem::path const source = resolve_init_source(options.model_dir, "--model-dir");
    ModelConfig const model_config = init_source_config(source);
    Architecture const architecture = model_config.architecture();
    AXONN_REQUIRE(architecture.vocab_size == tokenizer->vocab_size(),
                  "the model in {} has a vocabulary of {} tokens, but "
                  "the tokenizer {} has {}: pass the --tokenizer it was trained with",
                  options.model_dir.string(), architecture.vocab_size, options.tokenizer, tokenizer->vocab_size());
    // One prompt per replica at a time; only the layer being run keeps its activations (nothing trains).
    DecoderOptions model_options;
    model_options.recompute = Recompute::layer;
    as_usage_errors([&] {
        require_grid_fits(architecture, model_options, options.grid, world, std::nullopt);
    });

    StepOptions step_options;
    Job job(step_options, {options.grid, options.grid_order});
    ProcessGrid& grid = job.grid();
    Backend& backend = job.backend();
    Decoder model(architecture, backend, grid, 1, std::min(options.prompt_chunk, architecture.context), model_options);
    load_initial_weights(source, model_config, model);

    std::vector<std::vector<std::int32_t>> prompts;
    GenerationJobResult result;
    for (std::string const& text : options.prompts) {
        prompts.push_back(tokenizer->encode(text));
        if (prompts.back().empty()) prompts.back().push_back(tokenizer->eot_id());
        result.prompt_tokens.push_back(static_cast<int>(prompts.back().size()));
        if (rank == 0 && result.prompt_tokens.back() > architecture.context) {
            fmt::print(stderr,
                       "axonn: warning: prompt {} has {} tokens, more than the model's context of {}: generation "
                       "reads only its last {}\n",
                       prompts.size(), result.prompt_tokens.back(), architecture.context, architecture.context);
        }
    }
    TokenListener const stream = [&](int prompt, std::int32_t token) {
        if (on_text && rank == 0 && prompt == 0) on_text(tokenizer->decode(std::span(&token, 1)));
    };
    Stopwatch const timer;
    result.tokens = generate(model, prompts, sample, architecture.context, stream);
    result.seconds = timer.seconds();
    for (auto const& tokens : result.tokens) result.completions.push_back(tokenizer->decode(tokens));
    return result;
}

}  // namespace axonn
