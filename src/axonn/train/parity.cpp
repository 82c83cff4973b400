#include "axonn/train/parity.h"

#include "axonn/core/error.h"
#include "axonn/core/rng.h"
#include "axonn/model/decoder.h"
#include "axonn/train/job.h"
#include "axonn/train/train_step.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>

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

// This rank's logits slice of its first pass, whose token rows start at `first_row` of the serial batch, against the
// same rows and vocabulary columns of the serial logits.
double logits_difference(Decoder& parallel, Decoder& serial, int T, std::int64_t first_row) {
    ProcessGrid& grid = parallel.grid();
    int const Vp = serial.architecture().padded_vocab;
    VocabSlice const slice = parallel.vocab_slice();
    std::int64_t const rows = static_cast<std::int64_t>(parallel.max_batch()) * T;
    std::vector<float> mine, expected;
    for (std::int64_t r = 0; r < rows; ++r) {
        float const* here = parallel.logits() + r * slice.rows;
        float const* there = serial.logits() + (first_row + r) * Vp + slice.begin;
        mine.insert(mine.end(), here, here + slice.valid);
        expected.insert(expected.end(), there, there + slice.valid);
    }
    auto difference = static_cast<float>(relative(mine.data(), expected.data(), static_cast<std::int64_t>(mine.size())));
    grid.comm(Group::world).all_reduce_max(&difference, 1);
    return difference;
}

// Where the grid's LM head ran in chunks and kept no logits: this rank's tokens' losses against the same rows of
// the serial losses.
double token_loss_difference(Decoder& parallel, Decoder& serial, int T, std::int64_t first_row) {
    std::int64_t const rows = static_cast<std::int64_t>(parallel.max_batch()) * T;
    auto difference = static_cast<float>(relative(parallel.token_losses(), serial.token_losses() + first_row, rows));
    parallel.grid().comm(Group::world).all_reduce_max(&difference, 1);
    return difference;
}

double initial_weight_difference(Decoder& parallel, Decoder& serial) {
    double worst = 0;
    std::vector<Tensor> const weights = parallel.gather_serial(false);
    for (int id = 0; id < serial.layout().count(); ++id) {
        Tensor const& gathered = weights[static_cast<std::size_t>(id)];
        float const* reference = serial.param_values(id);
        for (std::int64_t i = 0; i < gathered.numel(); ++i) {
            worst = std::max(worst, static_cast<double>(std::abs(gathered.data<float>()[i] - reference[i])));
        }
    }
    return worst;
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
    DecoderOptions serial_options;  // one pass, in the parallel model's precision
    serial_options.precision = options.run.model.precision;
    Decoder serial(architecture, backend, self, B, T, serial_options);
    Decoder parallel(architecture, backend, grid, job.pass_batch(B), T, options.run.model);
    serial.init_weights(options.seed);
    parallel.init_weights(options.seed);
    AdamW serial_optimizer(serial.segments(), serial.layout().total(), backend, options.optimizer);
    AdamW parallel_optimizer(parallel.segments(), parallel.layout().total(), backend, options.optimizer);

    ParityReport report;
    report.init_max_abs_diff = initial_weight_difference(parallel, serial);
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
            serial.forward(whole);
            parallel.forward(mine.front());
            std::int64_t const first_row = rows.tokens - tokens.data();
            report.logits_in_chunks = !parallel.holds_logits();
            report.logits_rel_diff = report.logits_in_chunks ? token_loss_difference(parallel, serial, T, first_row)
                                                             : logits_difference(parallel, serial, T, first_row);
        }
        StepResult const expected = train_step(serial, serial_optimizer, whole, lr);
        StepResult const actual = train_step(parallel, parallel_optimizer, mine, lr);
        report.loss_rel_diff.push_back(relative(actual.loss, expected.loss));
        report.grad_norm_rel_diff.push_back(relative(actual.grad_norm, expected.grad_norm));
        if (goldfish) {
            MaskedLosses const& a = actual.masked.value();
            MaskedLosses const& e = expected.masked.value();
            report.masked_loss_rel_diff.push_back(std::max({relative(a.all_targets, e.all_targets),
                                                            relative(a.kept_targets, e.kept_targets),
                                                            relative(a.dropped_targets, e.dropped_targets)}));
        }
    }
    // The last step's gradients (train_step leaves them in place after the update).
    std::vector<Tensor> const gradients = parallel.gather_serial(true);
    for (int id = 0; id < serial.layout().count(); ++id) {
        Tensor const& gathered = gradients[static_cast<std::size_t>(id)];
        report.grad_rel_diff[serial.layout().param(id).name] =
            relative(gathered.data<float>(), serial.grad(id), gathered.numel());
    }
    return report;
}

}  // namespace axonn
