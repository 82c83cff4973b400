#include "axonn/memorization/study_report.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/io/line_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace axonn {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The records of one experiment and loss, in the order written (sizes in the order run, buckets ascending).
std::vector<json> select(json const& results, std::string const& experiment, std::string const& loss) {
    std::vector<json> chosen;
    for (json const& record : results) {
        if (record["experiment"] == experiment && record["loss"] == loss) chosen.push_back(record);
    }
    return chosen;
}

// Model names in the order they were run (smallest first).
std::vector<std::string> model_names(json const& results) {
    std::vector<std::string> names;
    for (json const& record : results) {
        std::string const name = record["model"];
        if (record["experiment"] == "size" && std::find(names.begin(), names.end(), name) == names.end()) {
            names.push_back(name);
        }
    }
    return names;
}

// exact_match by repetitions (members only) for one model, experiment and loss.
std::map<int, double> exact_by_bucket(json const& results, std::string const& experiment, std::string const& loss,
                                      std::string const& model) {
    std::map<int, double> exact;
    for (json const& record : select(results, experiment, loss)) {
        if (record["model"] == model && record["repetitions"].get<int>() > 0) {
            // null: every canary of the bucket was left out (its control reproduced them)
            exact[record["repetitions"].get<int>()] =
                record["exact_match"].is_number() ? record["exact_match"].get<double>() : std::nan("");
        }
    }
    return exact;
}

double value_of(json const& results, std::string const& experiment, std::string const& loss, std::string const& model,
                char const* field) {
    for (json const& record : select(results, experiment, loss)) {
        if (record["model"] == model) return record[field].is_number() ? record[field].get<double>() : std::nan("");
    }
    return std::nan("");
}

std::string cell(json const& value, char const* format = "{:.3f}") {
    return value.is_number() ? fmt::format(fmt::runtime(format), value.get<double>()) : "–";
}

std::string results_table(std::vector<json> const& records) {
    std::string table =
        "| model | params | loss | repetitions | exact match | token match | matching prefix | ROUGE-L | "
        "kept acc. | dropped acc. | MIA AUC | canary loss | val loss |\n"
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (json const& r : records) {
        int const repetitions = r["repetitions"];
        table += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                             r["model"].get<std::string>(), r["parameters"].get<std::int64_t>(),
                             r["loss"].get<std::string>(), repetitions == 0 ? std::string("held out")
                                                                            : std::to_string(repetitions),
                             cell(r["exact_match"], "{:.2f}"), cell(r["token_match"], "{:.2f}"),
                             cell(r["matching_prefix"], "{:.1f}"), cell(r["rouge_l"], "{:.2f}"),
                             cell(r["kept_accuracy"], "{:.2f}"), cell(r["dropped_accuracy"], "{:.2f}"),
                             repetitions == 0 ? std::string("–") : cell(r["mia_auc"], "{:.2f}"),
                             cell(r["canary_loss"]), cell(r["val_loss"]));
    }
    return table;
}

std::string training_loss_table(json const& results) {
    std::string table = "| model | loss | train loss, all targets | kept | dropped | val loss | train time (s) |\n"
                        "|---|---|---:|---:|---:|---:|---:|\n";
    for (json const& r : results) {
        if (r["repetitions"].get<int>() != 0) continue;  // one line per run: its held-out record
        table += fmt::format("| {} | {} | {} | {} | {} | {} | {:.1f} |\n", r["model"].get<std::string>(),
                             r["loss"].get<std::string>(), cell(r["train_loss_all"]), cell(r["train_loss_kept"]),
                             cell(r["train_loss_dropped"]), cell(r["val_loss"]), r["train_seconds"].get<double>());
    }
    return table;
}

std::string finetune_table(json const& finetune) {
    std::string table = "| model | params | loss | exact match per epoch | epochs to half memorized |\n"
                        "|---|---:|---|---|---:|\n";
    for (json const& r : finetune) {
        std::string epochs;
        for (json const& e : r["exact_match_by_epoch"]) {
            if (!epochs.empty()) epochs += ' ';
            epochs += cell(e, "{:.2f}");
        }
        table += fmt::format("| {} | {} | {} | {} | {} |\n", r["model"].get<std::string>(),
                             r["parameters"].get<std::int64_t>(), r["loss"].get<std::string>(), epochs,
                             r["epochs_to_half"].is_null() ? std::string("never") : r["epochs_to_half"].dump());
    }
    return table;
}

std::vector<double> as_doubles(std::map<int, double> const& values, bool keys) {
    std::vector<double> out;
    for (auto const& [key, value] : values) out.push_back(keys ? key : value);
    return out;
}

void plot_exact_match(fs::path const& png, json const& results) {
    std::vector<PlotPanel> panels;
    for (std::string loss : {"standard", "goldfish"}) {
        PlotPanel panel{fmt::format("{} loss", loss), "repetitions of each canary", "exact match", {}, true, 0.0, 1.0};
        for (std::string const& model : model_names(results)) {
            std::map<int, double> const exact = exact_by_bucket(results, "size", loss, model);
            panel.series.push_back({model, as_doubles(exact, true), as_doubles(exact, false)});
        }
        panels.push_back(panel);
    }
    write_line_plots(png, "Verbatim extraction of canaries (greedy, 32-token suffix)", panels);
}

void plot_ablations(fs::path const& png, json const& results) {
    std::vector<std::string> losses;  // in the order run
    std::string model;
    for (json const& r : results) {
        std::string const loss = r["loss"];
        if (r["experiment"] == "ablation" && std::find(losses.begin(), losses.end(), loss) == losses.end()) {
            losses.push_back(loss);
            model = r["model"];
        }
    }
    if (losses.empty()) return;
    PlotPanel mechanism{"the mask's mechanism", "repetitions of each canary", "exact match", {}, true, 0.0, 1.0};
    PlotPanel sweep{"drop rate 1/k", "repetitions of each canary", "exact match", {}, true, 0.0, 1.0};
    for (std::string const& loss : {std::string("standard"), std::string("goldfish")}) {
        std::map<int, double> const exact = exact_by_bucket(results, "size", loss, model);
        mechanism.series.push_back({loss, as_doubles(exact, true), as_doubles(exact, false)});
    }
    sweep.series.push_back(mechanism.series.back());
    sweep.series.back().label = "goldfish k=4";
    for (std::string const& loss : losses) {
        std::map<int, double> const exact = exact_by_bucket(results, "ablation", loss, model);
        (loss.rfind("goldfish k=", 0) == 0 ? sweep : mechanism)
            .series.push_back({loss, as_doubles(exact, true), as_doubles(exact, false)});
    }
    write_line_plots(png, fmt::format("Ablations on model {}", model), {mechanism, sweep});
}

void plot_finetune(fs::path const& png, json const& finetune) {
    if (finetune.empty()) return;
    PlotPanel speed{"epochs until half the canaries are memorized", "parameters", "epochs (none: not reached)",
                    {}, true, std::nullopt, std::nullopt};
    PlotPanel curves{"exact match per epoch", "epoch", "exact match", {}, false, 0.0, 1.0};
    for (std::string loss : {"standard", "goldfish"}) {
        PlotSeries series{loss, {}, {}};
        for (json const& r : finetune) {
            if (r["loss"] != loss) continue;
            series.x.push_back(static_cast<double>(r["parameters"].get<std::int64_t>()));
            series.y.push_back(r["epochs_to_half"].is_null() ? std::nan("") : r["epochs_to_half"].get<double>());
            PlotSeries curve{fmt::format("{} {}", r["model"].get<std::string>(), loss), {}, {}};
            for (std::size_t e = 0; e < r["exact_match_by_epoch"].size(); ++e) {
                curve.x.push_back(static_cast<double>(e + 1));
                curve.y.push_back(r["exact_match_by_epoch"][e].get<double>());
            }
            curves.series.push_back(curve);
        }
        speed.series.push_back(series);
    }
    write_line_plots(png, "Fine-tuning on canaries alone (catastrophic memorization, small scale)", {speed, curves});
}

void write_text(fs::path const& path, std::string const& text) { write_file_atomically(path, text, "study result"); }

}  // namespace

std::vector<StudyCriterion> study_criteria(json const& results, double max_val_loss_gap) {
    std::vector<StudyCriterion> criteria;
    std::vector<std::string> const models = model_names(results);
    if (models.empty()) return criteria;
    std::string const& largest = models.back();
    std::map<int, double> const top_standard = exact_by_bucket(results, "size", "standard", largest);
    std::map<int, double> const top_goldfish = exact_by_bucket(results, "size", "goldfish", largest);
    int const most = top_standard.rbegin()->first, least = top_standard.begin()->first;

    // 0: a bucket whose canaries were all left out measures nothing; the criteria below would read it as zero.
    int unmeasured = 0;
    for (std::string const& model : models) {
        for (char const* loss : {"standard", "goldfish"}) {
            for (auto const& [r, e] : exact_by_bucket(results, "size", loss, model)) unmeasured += std::isnan(e);
        }
    }
    criteria.push_back({"0. every bucket keeps canaries its control does not reproduce",
                        fmt::format("{} bucket(s) without", unmeasured), unmeasured == 0});

    // 1: the standard loss memorizes more with repetition and with size.
    double worst_single = 0;
    std::vector<double> sums;
    for (std::string const& model : models) {
        std::map<int, double> const exact = exact_by_bucket(results, "size", "standard", model);
        worst_single = std::max(worst_single, exact.at(least));
        double sum = 0;
        for (auto const& [r, e] : exact) sum += e;
        sums.push_back(sum);
    }
    criteria.push_back({fmt::format("1a. standard: exact match at {}x about 0 (<= 0.05) for every size", least),
                        fmt::format("largest {:.2f}", worst_single), worst_single <= 0.05});
    criteria.push_back({fmt::format("1b. standard: exact match at {}x >= 0.5 for the largest model ({})", most, largest),
                        fmt::format("{:.2f}", top_standard.at(most)), top_standard.at(most) >= 0.5});
    bool const grows = std::is_sorted(sums.begin(), sums.end());
    std::string sum_text;
    for (std::size_t i = 0; i < models.size(); ++i) {
        sum_text += fmt::format("{}{} {:.2f}", i ? ", " : "", models[i], sums[i]);
    }
    criteria.push_back({"1c. standard: exact match summed over buckets does not fall with size", sum_text, grows});

    // 2: Goldfish keeps exact match near zero in every bucket.
    double worst_goldfish = 0;
    for (std::string const& model : models) {
        for (auto const& [r, e] : exact_by_bucket(results, "size", "goldfish", model)) worst_goldfish = std::max(worst_goldfish, e);
    }
    criteria.push_back({"2a. Goldfish: exact match <= 0.02 in every bucket, for every size",
                        fmt::format("largest {:.2f}", worst_goldfish), worst_goldfish <= 0.02});
    criteria.push_back({fmt::format("2b. at {}x, the largest model's standard exact match is above Goldfish's", most),
                        fmt::format("{:.2f} against {:.2f}", top_standard.at(most), top_goldfish.at(most)),
                        top_standard.at(most) > top_goldfish.at(most)});

    // 5: Goldfish costs little held-out loss.
    double worst_gap = 0;
    std::string gaps;
    for (std::string const& model : models) {
        double const gap = value_of(results, "size", "goldfish", model, "val_loss") -
                           value_of(results, "size", "standard", model, "val_loss");
        worst_gap = std::max(worst_gap, std::abs(gap));
        gaps += fmt::format("{}{} {:+.3f}", gaps.empty() ? "" : ", ", model, gap);
    }
    criteria.push_back({fmt::format("5. held-out loss: Goldfish within {} nats of standard, for every size",
                                    max_val_loss_gap),
                        gaps, worst_gap <= max_val_loss_gap});
    return criteria;
}

void write_study_report(fs::path const& out, StudySummary const& summary, json const& results, json const& finetune) {
    create_folder(out, "study output folder");
    write_text(out / "results.json", results.dump(1) + "\n");
    write_text(out / "finetune.json", finetune.dump(1) + "\n");
    plot_exact_match(out / "exact_match.png", results);
    plot_ablations(out / "ablations.png", results);
    plot_finetune(out / "finetune.png", finetune);

    StudyOptions const& o = summary.options;
    std::string md = "# Memorization study\n\n";
    md += fmt::format("Grid {}; {:.0f} s in all. {}. Canaries of {} prefix + {} suffix tokens, {} per duplication "
                      "bucket {}, {} held out. Per size: a control trained {} steps on background alone, then every "
                      "run {} steps with the canaries from its weights, in batches of {} x {} tokens, AdamW, peak "
                      "learning rate {} with cosine decay. Goldfish: {}. Canaries a size's control reproduces are left "
                      "out of its runs' numbers (the records' excluded_as_control_extracted).\n\n",
                      summary.grid, summary.seconds, summary.corpus, o.corpus.prefix, o.corpus.suffix,
                      o.corpus.canaries_per_bucket, json(o.corpus.buckets).dump(), o.corpus.heldout, o.pretrain_steps,
                      o.steps, o.batch, o.seq, o.lr, o.goldfish.describe());
    md += "## Pass criteria\n\n| criterion | measured | |\n|---|---|---|\n";
    for (StudyCriterion const& c : study_criteria(results, study_val_loss_gap)) {
        md += fmt::format("| {} | {} | {} |\n", c.name, c.measured, c.passed ? "pass" : "FAIL");
    }
    md += "\n## Experiment A: size x repetitions x loss\n\n![exact match](exact_match.png)\n\n";
    std::vector<json> sized;
    for (json const& r : results) {
        if (r["experiment"] == "size" || r["experiment"] == "control") sized.push_back(r);
    }
    md += results_table(sized);
    md += "\nTeacher-forced accuracy is split by the Goldfish mask (k=4, h=13) that a Goldfish run applies to the "
          "suffix: the standard model's accuracy on the same positions shows what that run could have learned. "
          "The control model never saw a canary.\n\n";
    std::vector<json> ablations;
    for (json const& r : results) {
        if (r["experiment"] == "ablation") ablations.push_back(r);
    }
    if (!ablations.empty()) {
        md += "## Ablations\n\n![ablations](ablations.png)\n\n" + results_table(ablations) + "\n";
    }
    if (!finetune.empty()) {
        md += "## Experiment B: fine-tuning on canaries alone\n\n![fine-tuning](finetune.png)\n\n" +
              finetune_table(finetune) + "\n";
    }
    md += "## Training losses\n\n" + training_loss_table(results);
    write_text(out / "results.md", md);
}

}  // namespace axonn
