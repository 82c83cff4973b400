#include "axonn/train/parity.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"
#include "axonn/model/decoder.h"
#include "axonn/train/job.h"
#include "axonn/train/train_step.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <type_traits>

namespace axonn {
namespace {

double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-30); }

double relative(float const* a, float const* b, std::int64_t n) {
    double difference = 0, reference = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        difference += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        reference += static_cast<double>(b[i]) * b[i];
    }
    return std::sqrt(difference / std::max(reference, 1e-300));
}

// The global batch of one step: random tokens and targets, a few ignored targets, the same on every rank.
void make_batch(int step, int vocab, std::vector<std::int32_t>& tokens, std::vector<std::int32_t>& targets) {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<std::int32_t>(philox4x32({77, static_cast<std::uint64_t>(2 * step)}, i)[0] % vocab);
        targets[i] = static_cast<std::int32_t>(philox4x32({77, static_cast<std::uint64_t>(2 * step + 1)}, i)[0] % vocab);
        if (i % 13 == 5) targets[i] = -1;
    }
}

// The serial reference runs on world rank 0 alone: on every rank it would cost the world size times its work, on
// cores that ranks often share. What it computed reaches the other ranks through this broadcast, which they wait in
// while rank 0 computes. (Oversubscribed, Open MPI's waiting ranks yield their cores: the mpi suite's parity tests at
// 8 ranks on 2 cores took 17 s so, and 27 s waiting asleep in barrier_quietly's 1-ms polls.)
template <typename T>
void share_from_rank_zero(T* data, std::size_t count) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
    MPI_Datatype const type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
    constexpr std::size_t most = std::size_t{1} << 30;  // MPI counts are ints
    for (std::size_t begin = 0; begin < count; begin += most) {
        MPI_Bcast(data + begin, static_cast<int>(std::min(most, count - begin)), type, 0, MPI_COMM_WORLD);
    }
}

// Rank 0's serial first pass, on every rank: its logits [B·T, Vp], or where the grid's LM head ran in chunks and
// kept no logits, each token's loss [B·T] (`values` numbers either way).
std::vector<float> serial_first_pass(Decoder const* serial, bool token_losses, std::size_t values) {
    std::vector<float> shared(values);
    if (serial != nullptr) {
        float const* source = token_losses ? serial->token_losses() : serial->logits();
        std::copy(source, source + values, shared.begin());
    }
    share_from_rank_zero(shared.data(), shared.size());
    return shared;
}

// This rank's logits slice of its first pass, whose token rows start at `first_row` of the serial batch, against the
// same rows and vocabulary columns of the serial logits (serial_logits [B·T, Vp]).
double logits_difference(Decoder& parallel, std::vector<float> const& serial_logits, int Vp, int T,
                         std::int64_t first_row) {
    ProcessGrid& grid = parallel.grid();
    VocabSlice const slice = parallel.vocab_slice();
    std::int64_t const rows = static_cast<std::int64_t>(parallel.max_batch()) * T;
    std::vector<float> mine, expected;
    for (std::int64_t r = 0; r < rows; ++r) {
        float const* here = parallel.logits() + r * slice.rows;
        float const* there = serial_logits.data() + (first_row + r) * Vp + slice.begin;
        mine.insert(mine.end(), here, here + slice.valid);
        expected.insert(expected.end(), there, there + slice.valid);
    }
    auto difference = static_cast<float>(relative(mine.data(), expected.data(), static_cast<std::int64_t>(mine.size())));
    grid.comm(Group::world).all_reduce_max(&difference, 1);
    return difference;
}

// Where the grid's LM head ran in chunks and kept no logits: this rank's tokens' losses against the same rows of
// the serial losses (serial_losses [B·T]).
double token_loss_difference(Decoder& parallel, std::vector<float> const& serial_losses, int T,
                             std::int64_t first_row) {
    std::int64_t const rows = static_cast<std::int64_t>(parallel.max_batch()) * T;
    auto difference = static_cast<float>(relative(parallel.token_losses(), serial_losses.data() + first_row, rows));
    parallel.grid().comm(Group::world).all_reduce_max(&difference, 1);
    return difference;
}

// The grid's initial weights gathered whole (collective) against rank 0's serial ones: the largest absolute
// difference, on every rank.
double initial_weight_difference(Decoder& parallel, Decoder const* serial) {
    std::vector<Tensor> const weights = parallel.gather_serial(false);
    double worst = 0;
    for (int id = 0; serial != nullptr && id < serial->layout().count(); ++id) {
        Tensor const& gathered = weights[static_cast<std::size_t>(id)];
        float const* reference = serial->param_values(id);
        for (std::int64_t i = 0; i < gathered.numel(); ++i) {
            worst = std::max(worst, static_cast<double>(std::abs(gathered.data<float>()[i] - reference[i])));
        }
    }
    share_from_rank_zero(&worst, 1);
    return worst;
}

// The last step's gradients gathered whole (collective) against rank 0's serial ones: each tensor's relative
// difference by name, on every rank.
std::map<std::string, double> gradient_differences(Decoder& parallel, Decoder* serial) {
    std::vector<Tensor> const gradients = parallel.gather_serial(true);
    std::vector<double> differences(gradients.size());
    for (std::size_t id = 0; serial != nullptr && id < gradients.size(); ++id) {
        differences[id] =
            relative(gradients[id].data<float>(), serial->grad(static_cast<int>(id)), gradients[id].numel());
    }
    share_from_rank_zero(differences.data(), differences.size());
    std::map<std::string, double> named;
    for (std::size_t id = 0; id < gradients.size(); ++id) {
        named[parallel.layout().param(static_cast<int>(id)).name] = differences[id];
    }
    return named;
}

// Rank 0's serial step, on every rank: its loss, gradient norm and, with a loss mask, the all-, kept- and
// dropped-target losses.
std::array<double, 5> serial_step(Decoder* serial, AdamW* optimizer, Batch const& whole, float lr) {
    std::array<double, 5> values{};
    if (serial != nullptr) {
        StepResult const expected = train_step(*serial, *optimizer, whole, lr);
        values = {expected.loss, expected.grad_norm, 0, 0, 0};
        if (expected.masked) {
            values[2] = expected.masked->all_targets;
            values[3] = expected.masked->kept_targets;
            values[4] = expected.masked->dropped_targets;
        }
    }
    share_from_rank_zero(values.data(), values.size());
    return values;
}

// Whether the mask a rank computes from its own rows' targets alone equals its rows of the serial mask, agreed
// over the world. The hash and static masks depend only on a row's targets, so this must hold; the random one is
// drawn per position of the global batch, which every rank holds (the trainer computes every mask from it).
bool rows_mask_matches(ProcessGrid& grid, GoldfishOptions const& goldfish, std::vector<std::int32_t> const& targets,
                       std::vector<float> const& serial_mask, int T, int step) {
    if (goldfish.strategy == GoldfishStrategy::random) return true;
    int const B = static_cast<int>(targets.size()) / T;
    int const rows = B / grid.shape().batch_replicas();
    std::size_t const first = static_cast<std::size_t>(grid.batch_replica()) * rows * T;
    std::size_t const count = static_cast<std::size_t>(rows) * T;
    std::vector<float> mine(count);
    goldfish_mask(goldfish, std::span(targets).subspan(first, count), T, step, mine);
    double mismatch = std::equal(mine.begin(), mine.end(), serial_mask.begin() + static_cast<std::ptrdiff_t>(first))
                          ? 0.0 : 1.0;
    grid.comm(Group::world).all_reduce(&mismatch, 1);
    return mismatch == 0.0;
}

}  // namespace

double ParityReport::max_rel_diff() const {
    double worst = logits_rel_diff;
    for (double d : loss_rel_diff) worst = std::max(worst, d);
    for (double d : grad_norm_rel_diff) worst = std::max(worst, d);
    for (double d : masked_loss_rel_diff) worst = std::max(worst, d);
    for (auto const& [name, d] : grad_rel_diff) worst = std::max(worst, d);
    return worst;
}

ParityReport run_parity(ParityOptions options) {
    options.schedule.total_steps = options.steps;
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    Architecture const architecture = as_usage_errors([&] {
        return options.model.validated_architecture().with_vocab_split(options.run.model.vocab_split, options.grid,
                                                                        options.run.model.precision);
    });
    as_usage_errors([&] {
        AXONN_REQUIRE(options.steps > 0, "--steps must be at least 1, got {}", options.steps);
        AXONN_REQUIRE(options.batch > 0 && options.seq > 0 && options.seq <= architecture.context,
                      "--batch {} and --seq {} must be at least 1, and --seq at most the model's context {}",
                      options.batch, options.seq, architecture.context);
        parse_axis_order(options.grid_order);
        require_grid_fits(options.model.validated_architecture(), options.run.model, options.grid, world,
                          options.batch);
        options.run.pass_batch(options.batch / options.grid.batch_replicas());
    });
    Job job(options.run, {options.grid, options.grid_order, options.debug_collectives});
    Backend& backend = job.backend();
    ProcessGrid& grid = job.grid();
    ProcessGrid self(MPI_COMM_SELF, GridShape{});
    int const B = options.batch, T = options.seq;
    // The serial model on world rank 0 only (share_from_rank_zero): one pass, in the parallel model's precision.
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    std::unique_ptr<Decoder> serial;
    std::unique_ptr<AdamW> serial_optimizer;
    if (world_rank == 0) {
        DecoderOptions serial_options;
        serial_options.precision = options.run.model.precision;
        serial = std::make_unique<Decoder>(architecture, backend, self, B, T, serial_options);
        serial->init_weights(options.seed);
        serial_optimizer =
            std::make_unique<AdamW>(serial->segments(), serial->layout().total(), backend, options.optimizer);
    }
    Decoder parallel(architecture, backend, grid, job.pass_batch(B), T, options.run.model);
    parallel.init_weights(options.seed);
    AdamW parallel_optimizer(parallel.segments(), parallel.layout().total(), backend, options.optimizer);

    ParityReport report;
    report.init_max_abs_diff = initial_weight_difference(parallel, serial.get());
    report.precision = options.run.model.precision;
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(B) * T), targets(tokens.size());
    bool const goldfish = options.goldfish.enabled();
    std::vector<float> keep(goldfish ? tokens.size() : 0);
    for (int step = 0; step < options.steps; ++step) {
        make_batch(step, architecture.vocab_size, tokens, targets);
        if (goldfish) {
            goldfish_mask(options.goldfish, targets, T, step, keep);
            report.masks_equal = report.masks_equal && rows_mask_matches(grid, options.goldfish, targets, keep, T, step);
        }
        float const* mask = goldfish ? keep.data() : nullptr;
        Batch const whole{B, T, tokens.data(), targets.data(), mask};
        Batch const rows = replica_rows(grid, B, T, tokens.data(), targets.data(), mask);
        std::vector<Batch> const mine = micro_batches(rows, options.run.micro_batch);
        float const lr = options.schedule.at(step);
        if (step == 0) {  // the logits before any update
            if (serial) serial->forward(whole);
            parallel.forward(mine.front());
            std::int64_t const first_row = rows.tokens - tokens.data();
            report.logits_in_chunks = !parallel.holds_logits();
            int const Vp = architecture.padded_vocab;
            std::size_t const values = static_cast<std::size_t>(B) * T * (report.logits_in_chunks ? 1 : Vp);
            std::vector<float> const expected = serial_first_pass(serial.get(), report.logits_in_chunks, values);
            report.logits_rel_diff = report.logits_in_chunks
                                         ? token_loss_difference(parallel, expected, T, first_row)
                                         : logits_difference(parallel, expected, Vp, T, first_row);
        }
        StepResult const actual = train_step(parallel, parallel_optimizer, mine, lr);
        std::array<double, 5> const expected = serial_step(serial.get(), serial_optimizer.get(), whole, lr);
        report.loss_rel_diff.push_back(relative(actual.loss, expected[0]));
        report.grad_norm_rel_diff.push_back(relative(actual.grad_norm, expected[1]));
        if (goldfish) {
            MaskedLosses const& a = actual.masked.value();
            report.masked_loss_rel_diff.push_back(std::max({relative(a.all_targets, expected[2]),
                                                            relative(a.kept_targets, expected[3]),
                                                            relative(a.dropped_targets, expected[4])}));
        }
    }
    // The last step's gradients (train_step leaves them in place after the update).
    report.grad_rel_diff = gradient_differences(parallel, serial.get());
    return report;
}

}  // namespace axonn
