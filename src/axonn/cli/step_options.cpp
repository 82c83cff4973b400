#include "axonn/cli/step_options.h"

#include <map>
#include <string>

namespace axonn {
namespace {

// An option's named values, turned into the value they name (as its integer, which CLI11 then reads), with a
// message naming the choices when the name is not one (CLI11's CheckedTransformer prints its map's internals:
// "Check full value in {layer->1,none->0} OR {1,0} FAILED").
template <typename Value>
CLI::Option* with_choices(CLI::Option* option, std::map<std::string, Value> const& choices) {
    std::string names;
    for (auto const& [name, value] : choices) names += (names.empty() ? "" : " or ") + name;
    return option->transform(CLI::Validator(
        [choices, names](std::string& given) {
            auto const found = choices.find(given);
            if (found == choices.end()) return "'" + given + "' is not a choice: use " + names;
            given = std::to_string(static_cast<long long>(found->second));
            return std::string();
        },
        names));
}

std::map<std::string, bool> const on_off = {{"on", true}, {"off", false}};

}  // namespace

void add_step_options(CLI::App& command, StepOptions& options) {
    with_choices(command.add_option("--overlap", options.model.overlap,
                                    "on: hide collectives behind computation (weights gathered a layer ahead, dX "
                                    "all-reduces under the dW GEMMs, dW reduce-scatters and the gradient sync under "
                                    "the rest of the backward); off: wait for each at once (the same results, bitwise)"),
                 on_off)
        ->default_str("on");
    with_choices(command.add_option("--recompute", options.model.recompute,
                                    "none: keep every layer's activations; layer: keep each layer's input and "
                                    "recompute the layer in the backward (less memory, one more forward; the same "
                                    "results, bitwise)"),
                 std::map<std::string, Recompute>{{"none", Recompute::none}, {"layer", Recompute::layer}})
        ->default_str("none");
    command.add_flag("--cache-weights", options.model.cache_weights,
                     "keep the weights gathered over Z for the whole step: one all-gather per weight and step "
                     "instead of one per use, for the memory of every gathered block");
    command
        .add_option_function<std::string>(
            "--precision",
            [&options](std::string const& name) {
                options.model.precision = name == "bf16" ? DType::bf16 : DType::f32;
            },
            "fp32: every GEMM in fp32; bf16: mixed precision, GEMMs on bf16 inputs with fp32 accumulation, fp32 "
            "master weights, gradients and AdamW, weights gathered and the Linears' all-reduces in bf16 (a CPU "
            "without a native bf16 GEMM emulates it: bf16 operands, fp32 products and sums, with a note)")
        ->check(CLI::IsMember({"fp32", "bf16"}))
        ->default_str("fp32");
    command
        .add_option_function<std::string>(
            "--grad-comm",
            [&options](std::string const& name) {
                options.model.grad_scatter_comm = name == "fp32" ? DType::f32 : DType::bf16;
                options.model.grad_sum_comm = name == "bf16" ? DType::bf16 : DType::f32;
            },
            "the gradients' reduce-scatters over Z and all-reduces over data: fp32; bf16 (half the bytes; the "
            "sums are rounded to bf16 before they reach the fp32 gradients); or bf16-scatter (the reduce-scatters "
            "in bf16, the all-reduces in fp32: Megatron-LM's rule for bf16 training, which AxoNN's runs on it "
            "follow). Either --precision")
        ->check(CLI::IsMember({"fp32", "bf16", "bf16-scatter"}))
        ->default_str("fp32");
    command.add_option("--logit-rows", options.model.logit_rows,
                       "the LM head and its loss in chunks of at most this many token rows per rank: only a chunk's "
                       "logits are held, and each chunk's backward runs at once (less memory; the same losses and "
                       "gradients, summed in another order); 0: all rows at once")
        ->check(
            [](std::string const& value) -> std::string {
                return value.starts_with('-') ? "must be 0 (all rows at once) or a number of token rows, got " + value
                                              : "";
            },
            "ROWS")
        ->capture_default_str();
    with_choices(command.add_option("--vocab-split", options.model.vocab_split,
                                    "how the embedding and the LM head split the vocabulary: xy: rows over the "
                                    "X x Y plane, every column, so X moves each token's hidden state (4 x C fp32 "
                                    "numbers a step) instead of its logits; y: AxoNN's, rows over Y and columns over "
                                    "X, whose LM head all-reduces its logits (Vp/y numbers a token) over X; auto: "
                                    "the one that moves fewer bytes over X on the grid, or the other where only "
                                    "it fits the grid. Checkpoints load either "
                                    "way; the two are one when x = 1"),
                 std::map<std::string, VocabSplit>{
                     {"auto", VocabSplit::automatic}, {"xy", VocabSplit::xy}, {"y", VocabSplit::y}})
        ->default_str("auto");
    with_choices(command.add_option("--gemm-tuning", options.gemm_tuning,
                                    "on: time the ways of computing each large GEMM shape once (whole, its inner "
                                    "dimension in chunks, its B operand copied with padded rows, or in bf16 its "
                                    "output's columns in two halves) and use the fastest; off: always whole, so "
                                    "that two runs are bitwise equal whatever the timings"),
                 on_off)
        ->default_str("on");
    command.add_option("--micro-batch", options.micro_batch,
                       "sequences per pass on each data x z replica; the passes' gradients accumulate into the "
                       "global batch's (0: one pass)")
        ->capture_default_str();
}

void add_backend_option(CLI::App& command, StepOptions& options) {
    command.add_option("--backend", options.backend,
                       "cpu: every kernel on this machine's cores (oneDNN); cuda: on the GPU (a build with "
                       "-DAXONN_CUDA=ON; one GPU per rank, collectives over NCCL; no closing sample yet: docs/GPU.md)")
        ->check(CLI::IsMember({"cpu", "cuda"}))
        ->capture_default_str();
}

}  // namespace axonn
