// The performance model against a real training step, under mpirun at np 1, 2, 4 and 8, for every grid of the
// `mpi` test matrix (gpt2-micro, vocabulary 300, B = 8, T = 16), run as the trainer runs it by default, with
// micro-batches of one sequence, with recomputation, with cached weights, with T = 64 (row chunks), and in bf16
// (weights gathered and activations all-reduced in half the bytes; a bf16 weight copy and staging buffers), and
// with the gradients reduce-scattered in bf16 (--grad-comm bf16-scatter, in fp32) and reduce-scattered and summed
// in bf16 (--grad-comm bf16, in bf16); and a micro Llama (RMSNorm's one statistic per token, a second vocabulary
// block, key/value heads replicated over y = 4 and 8 with their gradients summed over Y), in fp32, in bf16 with
// recomputation and micro-batches, and with either --grad-comm; and with the LM head in
// chunks of rows (--logit-rows), single pass and micro-batches; all with the vocabulary over the X·Y plane (the
// default: the layout that moves fewer bytes over X, which is AxoNN's split over Y on some of the grids and in bf16),
// and on the grids that split X some with each layout named (--vocab-split y, xy):
//   - traffic: the predicted calls and bytes of every (operation, group) equal, exactly, what the communication
//     layer recorded during one train_step;
//   - memory: the predicted bytes of the model, its gradients, AdamW and all buffers are within 10% of the peak
//     that axonn's tensors really held (the allocator's high-water mark).
#include "axonn/families/llama/llama_parameters.h"
#include "axonn/kernels/backend.h"
#include "axonn/model/decoder.h"
#include "axonn/perf/memory_model.h"
#include "axonn/perf/traffic_model.h"
#include "axonn/train/optimizer.h"
#include "axonn/train/train_step.h"
#include "support/micro_model.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace axonn {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_perf_model {

using testing::micro_model;
using testing::world_size;

constexpr int batch = 8;

struct RunCase {
    std::string name;
    StepOptions run;
    int seq = 16;
    bool llama = false;  // the micro Llama instead of gpt2-micro (its 2 key/value heads replicated where y > 2)
};

std::vector<RunCase> run_cases() {
    std::vector<RunCase> cases(20);
    cases[0].name = "default";
    cases[1].name = "micro_batches";
    cases[1].run.micro_batch = 1;
    cases[2].name = "recompute";
    cases[2].run.model.recompute = Recompute::layer;
    cases[3].name = "cached_weights";
    cases[3].run.model.cache_weights = true;
    cases[3].run.micro_batch = 1;
    cases[4].name = "rows_in_chunks";  // 8 × 64 rows: the Linears' all-reduces go in chunks where data × z < 2
    cases[4].seq = 64;
    cases[5].name = "bf16";
    cases[5].run.model.precision = DType::bf16;
    cases[6].name = "bf16_cached_chunks_recompute";
    cases[6].run.model.precision = DType::bf16;
    cases[6].run.model.cache_weights = true;
    cases[6].run.model.recompute = Recompute::layer;
    cases[6].run.micro_batch = 1;
    cases[6].seq = 64;
    cases[7].name = "grad_comm_bf16_scatter";  // gradients reduce-scattered in bf16 and summed in fp32, two passes
    cases[7].run.model.grad_scatter_comm = DType::bf16;
    cases[7].run.micro_batch = 1;
    cases[8].name = "bf16_grad_comm_bf16";
    cases[8].run.model.precision = DType::bf16;
    cases[8].run.model.grad_scatter_comm = cases[8].run.model.grad_sum_comm = DType::bf16;
    cases[9].name = "llama";  // RMSNorm's one statistic per token, an untied head's second vocabulary block
    cases[9].llama = true;
    cases[10].name = "llama_bf16_recompute_micro_batches";
    cases[10].llama = true;
    cases[10].run.model.precision = DType::bf16;
    cases[10].run.model.recompute = Recompute::layer;
    cases[10].run.micro_batch = 1;
    cases[11].name = "llama_grad_comm_bf16";  // the key/value replicas' Y sum in bf16 too
    cases[11].llama = true;
    cases[11].run.model.grad_scatter_comm = cases[11].run.model.grad_sum_comm = DType::bf16;
    cases[12].name = "logits_in_chunks";  // the LM head in chunks of 24 rows, a single pass: the loss weight first
    cases[12].run.model.logit_rows = 24;
    cases[13].name = "logits_in_chunks_of_64_tokens";  // 8 × 64 rows in 3 chunks of at most 200: 3 all-reduces each way
    cases[13].seq = 64;
    cases[13].run.model.logit_rows = 200;
    cases[14].name = "llama_bf16_logits_in_chunks_micro_batches";  // an untied head, chunks of 5 rows, two+ passes
    cases[14].llama = true;
    cases[14].run.model.precision = DType::bf16;
    cases[14].run.model.logit_rows = 5;
    cases[14].run.micro_batch = 1;
    cases[15].name = "llama_grad_comm_bf16_scatter";  // the key/value replicas' Y sum stays fp32
    cases[15].llama = true;
    cases[15].run.model.grad_scatter_comm = DType::bf16;
    cases[16].name = "vocab_split_y";  // the logits all-reduced over X
    cases[16].run.model.vocab_split = VocabSplit::y;
    cases[17].name = "vocab_split_y_bf16_logits_in_chunks";
    cases[17].run.model.vocab_split = VocabSplit::y;
    cases[17].run.model.precision = DType::bf16;
    cases[17].run.model.logit_rows = 24;
    cases[18].name = "llama_vocab_split_y_micro_batches";  // two vocabulary blocks
    cases[18].llama = true;
    cases[18].run.model.vocab_split = VocabSplit::y;
    cases[18].run.micro_batch = 1;
    cases[19].name = "vocab_split_xy_bf16";  // where the automatic split would take y's layout too
    cases[19].run.model.vocab_split = VocabSplit::xy;
    cases[19].run.model.precision = DType::bf16;
    return cases;
}

class PerfModelOnGrid : public ::testing::TestWithParam<std::tuple<GridShape, RunCase>> {};

TEST_P(PerfModelOnGrid, PredictedTrafficEqualsMeasuredAndMemoryWithinTenPercent) {
    auto const& [shape, run_case] = GetParam();
    StepOptions const& run = run_case.run;
    int const seq = run_case.seq;
    std::unique_ptr<Backend> const backend_owner = make_backend("cpu", run.model.precision);
    Backend& backend = *backend_owner;
    std::optional<Architecture> const llama =
        run_case.llama ? std::optional(decoder_architecture(testing::micro_llama())) : std::nullopt;
    if (llama) {
        std::vector<ParamDecl> const declarations =
            llama->with_vocab_split(run.model.vocab_split, shape, run.model.precision).declarations;
        if (auto const problem = grid_problem(declarations, shape, batch)) GTEST_SKIP() << *problem;
    }
    ProcessGrid grid(MPI_COMM_WORLD, shape);
    int const local_batch = batch / shape.batch_replicas();
    std::int64_t const before = tensor_bytes_in_use();
    reset_tensor_bytes_peak();
    Decoder model = llama ? Decoder(*llama, backend, grid, run.pass_batch(local_batch), seq, run.model)
                          : Decoder(micro_model(), backend, grid, run.pass_batch(local_batch), seq, run.model);
    model.init_weights(3);
    AdamW optimizer(model.segments(), model.layout().total(), backend, AdamWConfig{});
    std::vector<std::int32_t> tokens(local_batch * seq), targets(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int>(i * 7 % 300), targets[i] = static_cast<int>(i * 5 % 300);

    grid.traffic().clear();
    train_step(model, optimizer, micro_batches({local_batch, seq, tokens.data(), targets.data(), nullptr}, run.micro_batch),
               1e-3f);
    std::map<std::pair<std::string, Group>, std::pair<std::uint64_t, std::uint64_t>> measured, predicted;
    for (auto const& entry : grid.traffic().entries()) measured[{entry.op, entry.group}] = {entry.calls, entry.bytes};
    ModelConfig const model_config = run_case.llama ? ModelConfig(testing::micro_llama()) : ModelConfig(micro_model());
    StepShape const step{.model = model_config, .grid = shape, .batch = batch, .seq = seq,
                         .micro_batch = run.micro_batch, .run = run.model};
    for (auto const& entry : predict_step_traffic(step)) {
        auto& [calls, bytes] = predicted[{entry.op, entry.group}];
        calls += entry.calls;
        bytes += entry.bytes;
    }
    for (auto const& [key, value] : measured) {
        EXPECT_EQ(predicted[key], value) << key.first << " on " << group_name(key.second) << ": predicted (calls, bytes) "
                                         << predicted[key].first << ", " << predicted[key].second << " vs measured "
                                         << value.first << ", " << value.second;
    }
    for (auto const& [key, value] : predicted) {
        EXPECT_TRUE(measured.count(key)) << "predicted " << key.first << " on " << group_name(key.second)
                                         << " never happened";
    }

    double const measured_peak = static_cast<double>(tensor_bytes_peak() - before);
    double const predicted_peak = static_cast<double>(predict_memory(step).total());
    EXPECT_NEAR(predicted_peak, measured_peak, 0.1 * measured_peak);
}

// Every case on every grid of the world, but those naming a vocabulary layout only where X is split: elsewhere the
// two layouts are one.
std::vector<std::tuple<GridShape, RunCase>> grid_cases() {
    std::vector<std::tuple<GridShape, RunCase>> cases;
    for (GridShape const& grid : grid_factorisations(world_size())) {
        for (RunCase const& run : run_cases()) {
            if (run.run.model.vocab_split != VocabSplit::automatic && grid.x == 1) continue;
            cases.emplace_back(grid, run);
        }
    }
    return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryGrid, PerfModelOnGrid, ::testing::ValuesIn(grid_cases()),
                         [](auto const& info) {
                             return testing::grid_test_name(std::get<0>(info.param)) + "_" +
                                    std::get<1>(info.param).name;
                         });

}  // namespace test_perf_model
}  // namespace axonn
