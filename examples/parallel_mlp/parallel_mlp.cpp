// A residual MLP regressor written only from axonn's public layers (docs/LIBRARY.md): one program that trains on
// one rank and, unchanged, on any grid data × z × y × x that divides it, with the same losses.
//
//   a_0 = x                                   [B, D]  the residual stream, its features split over X
//   a_{l+1} = a_l + fc2_l(gelu(fc1_l(a_l)))   fc1: a normal Linear [H, D]; fc2: a transposed one [D, H]
//   loss = mean over the batch of (a_L − y)²
//
// A normal Linear takes its input split over X and leaves its output split over Y; a transposed one goes back.
// Alternating them, as GPT-2's blocks do, keeps the residual stream split over X with nothing redistributed. The
// rows of the batch split over data × z; the weights over z × y × x, gathered over Z before each use.
//
//   mpirun -np 4 parallel_mlp y=2,x=2 30     one JSON line per step on rank 0: {"step": 1, "loss": ...}
//   parallel_mlp data=1 30                   the serial run: the same losses (tests/library/parallel_mlp.sh)
#include <axonn/comm/grid.h>
#include <axonn/core/error.h>
#include <axonn/core/rng.h>
#include <axonn/kernels/backend.h>
#include <axonn/parallel/linear.h>
#include <axonn/parallel/parameter_init.h>
#include <axonn/parallel/shard_layout.h>
#include <axonn/parallel/step_collectives.h>
#include <axonn/train/optimizer.h>

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

using namespace axonn;

// D features in and out, H hidden, L residual blocks, B rows per step.
constexpr std::int64_t D = 16, H = 64, L = 2, B = 32;
constexpr std::uint64_t weight_seed = 1234, data_seed = 5678;
constexpr float learning_rate = 3e-3f;
constexpr bool overlap = true;  // collectives under computation; off gives bitwise the same results
constexpr int scatter_ring = 2;  // a block's weight-gradient reduce-scatter runs under the next Linear's backward

// The parameters in declaration order: the layout takes this enum as an index.
enum class MlpParam { fc1w, fc1b, fc2w, fc2b };

// Each tensor once, by its role in the parallel layers; shards, initialisation, the gradient sync and AdamW's
// segments all follow from these.
std::vector<ParamDecl> mlp_parameters() {
    using enum ShardRole;
    using enum ParamInit;
    float const fc1_std = 1.0f / std::sqrt(static_cast<float>(D)), fc2_std = 0.5f / std::sqrt(static_cast<float>(H));
    // name, serial shape, layers, one layer's rows and cols, role, row parts, init, init std, weight decay
    return {
        {"fc1w", {L, H, D}, L, H, D, normal_linear, {}, normal, fc1_std, true},
        {"fc1b", {L, H}, L, H, 1, vector_over_y, {}, zeros},
        {"fc2w", {L, D, H}, L, D, H, transposed_linear, {}, normal, fc2_std, true},
        {"fc2b", {L, D}, L, 1, D, vector_over_x, {}, zeros},
    };
}

// Feature c of row r in step s's batch, x ~ N(0, 1), and its target y = sin(2·x_c)·cos(x_{c+1}), which the
// model can only fit by mixing features. Counter-based: each rank draws exactly its rows and columns.
float input(int step, std::int64_t r, std::int64_t c) {
    return static_cast<float>(standard_normal({data_seed, static_cast<std::uint64_t>(step)}, r * D + c));
}
float target(int step, std::int64_t r, std::int64_t c) {
    return std::sin(2.0f * input(step, r, c)) * std::cos(input(step, r, (c + 1) % D));
}

class ParallelMlp {
public:
    ParallelMlp(ProcessGrid& grid, Backend& backend)
        : grid_(grid), backend_(backend), layout_(mlp_parameters(), GridPosition::of(grid)),
          M_(B / (grid.size(Axis::data) * grid.size(Axis::z))), Dx_(D / grid.size(Axis::x)),
          Hy_(H / grid.size(Axis::y)), params_(layout_.total()), grads_(layout_.total()),
          step_(grid, backend, layout_,
                StepCollectivesOptions{.max_block_numel = Hy_ * Dx_, .scatter_ring = scatter_ring, .overlap = overlap}),
          optimizer_(param_segments(layout_), layout_.total(), backend, AdamWConfig{}), residual_((L + 1) * M_ * Dx_),
          hidden_(L * M_ * Hy_), activated_(L * M_ * Hy_), branch_(M_ * Dx_), targets_(M_ * Dx_), d_residual_(M_ * Dx_),
          d_branch_(M_ * Dx_), d_hidden_(M_ * Hy_), d_activated_(M_ * Hy_) {
        init_parameters(layout_, params_, weight_seed);
    }

    // One step on step s's batch: forward, backward, gradient sync, AdamW. Returns the batch's loss.
    float train_step(int step) {
        load_batch(step);
        step_.weights.begin_pass(weight_schedule());
        forward();
        float const loss = loss_and_gradient();
        backward();
        double const norm = gradient_norm(layout_, backend_, grads_.data(), grid_);
        optimizer_.step(params_, grads_, norm, learning_rate);
        return loss;
    }

private:
    // Layer l's shard of a parameter, and of its gradient.
    float* param(MlpParam id, std::int64_t l) { return params_.data() + layer_offset(id, l); }
    float* grad(MlpParam id, std::int64_t l) { return grads_.data() + layer_offset(id, l); }
    std::int64_t layer_offset(MlpParam id, std::int64_t l) const {
        return layout_.offset(id) + l * (layout_.local_numel(id) / L);
    }
    float* residual(std::int64_t l) { return residual_.data() + l * M_ * Dx_; }   // a_l [M, D/G_x]
    float* hidden(std::int64_t l) { return hidden_.data() + l * M_ * Hy_; }       // fc1's output [M, H/G_y]
    float* activated(std::int64_t l) { return activated_.data() + l * M_ * Hy_; }  // its gelu

    // This rank's rows (its data × z share) and residual features (its X share) of the input and target.
    void load_batch(int step) {
        std::int64_t const row0 = grid_.batch_replica() * M_, col0 = grid_.coord(Axis::x) * Dx_;
        for (std::int64_t r = 0; r < M_; ++r) {
            for (std::int64_t c = 0; c < Dx_; ++c) {
                residual(0)[r * Dx_ + c] = input(step, row0 + r, col0 + c);
                targets_[r * Dx_ + c] = target(step, row0 + r, col0 + c);
            }
        }
    }

    // The weights' uses in the order the step makes them: the forward's, then the backward's in reverse. The
    // gather of each next block is issued while the current one's GEMM runs.
    std::vector<WeightUse> weight_schedule() {
        std::vector<WeightUse> forward_uses;
        for (std::int64_t l = 0; l < L; ++l) {
            for (MlpParam id : {MlpParam::fc1w, MlpParam::fc2w}) forward_uses.push_back({param(id, l), Hy_ * Dx_});
        }
        std::vector<WeightUse> schedule = forward_uses;
        schedule.insert(schedule.end(), forward_uses.rbegin(), forward_uses.rend());
        return schedule;
    }

    void forward() {
        for (std::int64_t l = 0; l < L; ++l) {
            // fc1's bias joins GELU's pass, after the Linear's all-reduce.
            parallel_linear_forward(backend_, linear_groups(grid_, false), overlap, hidden(l), residual(l),
                                    step_.weights.next(), nullptr, M_, Dx_, Hy_);
            backend_.bias_gelu_forward(activated(l), hidden(l), param(MlpParam::fc1b, l), M_, Hy_, nullptr);
            parallel_linear_forward(backend_, linear_groups(grid_, true), overlap, branch_.data(), activated(l),
                                    step_.weights.next(), param(MlpParam::fc2b, l), M_, Hy_, Dx_);
            backend_.residual_forward(residual(l + 1), residual(l), branch_.data(), M_ * Dx_);
        }
    }

    // The mean squared error over the whole batch, and its gradient into d_residual_. Every Y rank holds the same
    // output columns, so the sum runs over X and the rows' groups, Z and data.
    float loss_and_gradient() {
        float const* out = residual(L);
        double squares = 0.0;
        for (std::int64_t i = 0; i < M_ * Dx_; ++i) {
            float const error = out[i] - targets_[i];
            squares += static_cast<double>(error) * error;
            d_residual_[i] = 2.0f * error / static_cast<float>(B * D);
        }
        for (Group group : {Group::x, Group::z, Group::data}) grid_.comm(group).all_reduce(&squares, 1);
        return static_cast<float>(squares / static_cast<double>(B * D));
    }

    // From d_residual_ = dloss/da_L back through the blocks. The GEMMs write the weights' gradients; the biases'
    // are accumulated, so they start from zero. Each block's gradients go to the sync as soon as they are final.
    void backward() {
        for (MlpParam id : {MlpParam::fc1b, MlpParam::fc2b}) {
            std::fill_n(grads_.begin() + layout_.offset(id), layout_.local_numel(id), 0.0f);
        }
        step_.sync.begin(grads_.data());
        for (std::int64_t l = L - 1; l >= 0; --l) {
            // A Linear's backward takes its output's gradient as its GEMMs read it (gemm_input: the values, and
            // with bf16 GEMMs their rounding once for both GEMMs).
            parallel_linear_backward(backend_, linear_groups(grid_, true), step_.weight_grads, overlap,
                                     d_activated_.data(), grad(MlpParam::fc2w, l), grad(MlpParam::fc2b, l),
                                     backend_.gemm_input(d_residual_.data(), M_ * Dx_), activated(l),
                                     step_.weights.next(), M_, Hy_, Dx_, GradWrite::overwrite);
            // GELU's pass writes its input gradient, returned as fc1's GEMMs read it, and sums fc1's bias gradient.
            GemmInput const d_hidden = backend_.gelu_bias_backward(d_hidden_.data(), grad(MlpParam::fc1b, l),
                                                                   hidden(l), d_activated_.data(), M_, Hy_);
            parallel_linear_backward(backend_, linear_groups(grid_, false), step_.weight_grads, overlap,
                                     d_branch_.data(), grad(MlpParam::fc1w, l), nullptr, d_hidden, residual(l),
                                     step_.weights.next(), M_, Dx_, Hy_, GradWrite::overwrite);
            // The skip connection: a_l's gradient is a_{l+1}'s plus the branch's.
            backend_.residual_forward(d_residual_.data(), d_residual_.data(), d_branch_.data(), M_ * Dx_);
            int const layer = static_cast<int>(l);
            step_.sync.final(
                {{MlpParam::fc2w, layer}, {MlpParam::fc2b, layer}, {MlpParam::fc1w, layer}, {MlpParam::fc1b, layer}});
        }
        step_.sync.finish();
    }

    ProcessGrid& grid_;
    Backend& backend_;
    ShardLayout layout_;
    std::int64_t M_, Dx_, Hy_;  // this rank's rows, residual features (over X) and hidden features (over Y)
    std::vector<float> params_;
    std::vector<float> grads_;
    StepCollectives step_;  // the weights' Z gathers, the weight gradients' Z scatters, the gradient sync
    AdamW optimizer_;
    std::vector<float> residual_, hidden_, activated_, branch_, targets_;  // branch_: fc2's output
    std::vector<float> d_residual_, d_branch_, d_hidden_, d_activated_;
};

void run(int argc, char** argv) {
    AXONN_REQUIRE(argc == 2 || argc == 3,
                  "usage: parallel_mlp GRID [STEPS], e.g. mpirun -np 4 parallel_mlp y=2,x=2 30");
    GridShape const shape = GridShape::parse(argv[1]);
    int const steps = argc == 3 ? std::stoi(argv[2]) : 30;
    AXONN_REQUIRE(steps > 0, "STEPS must be positive, got {}", steps);
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    require_valid_grid(mlp_parameters(), shape, world, B);
    ProcessGrid grid(MPI_COMM_WORLD, shape);
    auto const backend = make_backend("cpu", DType::f32);
    ParallelMlp mlp(grid, *backend);
    for (int step = 1; step <= steps; ++step) {
        float const loss = mlp.train_step(step);
        if (grid.rank() == 0) fmt::print("{{\"step\": {}, \"loss\": {:.9g}}}\n", step, loss);
    }
}

}  // namespace

int main(int argc, char** argv) {
    // The layers' non-blocking collectives progress on a helper thread of the grid.
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    try {
        AXONN_REQUIRE(provided == MPI_THREAD_MULTIPLE, "this MPI does not support MPI_THREAD_MULTIPLE");
        run(argc, argv);
    } catch (std::exception const& error) {
        fmt::print(stderr, "parallel_mlp: error: {}\n", error.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return 0;
}
