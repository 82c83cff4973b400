#include "axonn/memorization/extreme_report.h"

#include "axonn/core/file_io.h"
#include "axonn/io/line_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace axonn {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The measured epochs of one run (a model under one loss and k), in order.
struct RunCurve {
    std::string model;
    std::int64_t parameters;
    std::string tokenizer;
    std::string loss;
    int k;  // 0: the standard loss
    std::vector<json> records;

    std::string label() const { return k == 0 ? loss : fmt::format("goldfish k={}", k); }
    json const& last() const { return records.back(); }
    std::vector<double> values(char const* field) const {
        std::vector<double> out;
        for (json const& r : records) out.push_back(r[field].is_number() ? r[field].get<double>() : std::nan(""));
        return out;
    }
    // The first measured epoch at which half the documents or more are reproduced (infinity: never).
    double epochs_to_half() const {
        for (json const& r : records) {
            if (r["epoch"].get<int>() > 0 && r["exact_match"].get<double>() >= 0.5) return r["epoch"].get<double>();
        }
        return std::numeric_limits<double>::infinity();
    }
};

std::vector<RunCurve> curves_of(json const& results) {
    std::vector<RunCurve> curves;
    for (json const& r : results) {
        int const k = r["k"].is_number() ? r["k"].get<int>() : 0;
        // get<std::string>(): GCC 13 in C++20 mode finds no operator== for std::string against nlohmann::json.
        auto found = std::find_if(curves.begin(), curves.end(), [&](RunCurve const& c) {
            return c.model == r["model"].get<std::string>() && c.loss == r["loss"].get<std::string>() && c.k == k;
        });
        if (found == curves.end()) {
            curves.push_back({r["model"], r["parameters"], r["tokenizer"], r["loss"], k, {}});
            found = std::prev(curves.end());
        }
        found->records.push_back(r);
    }
    return curves;
}

RunCurve const* find_curve(std::vector<RunCurve> const& curves, std::string const& model, int k) {
    for (RunCurve const& c : curves) {
        if (c.model == model && c.k == k) return &c;
    }
    return nullptr;
}

// The standard runs of the size sweep: the models that share the first model's tokenizer, in the order run.
std::vector<RunCurve const*> standard_runs(std::vector<RunCurve> const& curves) {
    std::vector<RunCurve const*> runs;
    for (RunCurve const& c : curves) {
        if (c.k == 0 && c.tokenizer == curves.front().tokenizer) runs.push_back(&c);
    }
    return runs;
}

RunCurve const& largest_of(std::vector<RunCurve const*> const& runs) {
    return **std::max_element(runs.begin(), runs.end(), [](auto a, auto b) { return a->parameters < b->parameters; });
}

// The standard run's validation loss at `supervised` targets, interpolated linearly between its measurements.
double val_loss_at(RunCurve const& standard, double supervised) {
    std::vector<double> const x = standard.values("supervised_targets"), y = standard.values("val_loss");
    for (std::size_t i = 1; i < x.size(); ++i) {
        if (supervised <= x[i]) return y[i - 1] + (y[i] - y[i - 1]) * (supervised - x[i - 1]) / (x[i] - x[i - 1]);
    }
    return y.back();
}

std::string epochs_text(double epochs) { return std::isinf(epochs) ? "never" : fmt::format("{:.0f}", epochs); }

std::string final_table(std::vector<RunCurve> const& curves) {
    std::string table = "| model | params | tokenizer | loss | epochs | exact match | ROUGE-L | token acc. | kept acc. | "
                        "dropped acc. | AUC | unseen exact | val loss | epochs to half |\n"
                        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    auto const cell = [](json const& v, char const* format) {
        return v.is_number() ? fmt::format(fmt::runtime(format), v.get<double>()) : std::string("–");
    };
    for (RunCurve const& c : curves) {
        json const& r = c.last();
        table += fmt::format("| {} | {} | {} | {} | {} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} |\n", c.model,
                             c.parameters, c.tokenizer, c.label(), r["epoch"].get<int>(), r["exact_matches"].get<int>(),
                             r["documents"].get<int>(), cell(r["rouge_l"], "{:.2f}"), cell(r["token_accuracy"], "{:.2f}"),
                             cell(r["kept_accuracy"], "{:.2f}"), cell(r["dropped_accuracy"], "{:.2f}"),
                             cell(r["auc"], "{:.2f}"), cell(r["unseen_exact_match"], "{:.2f}"),
                             cell(r["val_loss"], "{:.3f}"), epochs_text(c.epochs_to_half()));
    }
    return table;
}

std::string epoch_table(std::vector<RunCurve> const& curves) {
    std::string header = "| model | loss |", rule = "|---|---|";
    for (json const& r : curves.front().records) {
        header += fmt::format(" {} |", r["epoch"].get<int>());
        rule += "---:|";
    }
    std::string table = header + "\n" + rule + "\n";
    for (RunCurve const& c : curves) {
        table += fmt::format("| {} | {} |", c.model, c.label());
        for (json const& r : c.records) table += fmt::format(" {} |", r["exact_matches"].get<int>());
        table += "\n";
    }
    return table;
}

PlotSeries series(RunCurve const& c, std::string label, char const* x_field, char const* y_field, double x_scale = 1) {
    PlotSeries s{std::move(label), c.values(x_field), c.values(y_field)};
    for (double& x : s.x) x *= x_scale;
    return s;
}

void plot_exact_match(fs::path const& png, std::vector<RunCurve> const& curves, int goldfish_k) {
    PlotPanel standard{"standard loss", "epoch", "exact match (documents)", {}, false, 0.0, 1.0};
    PlotPanel goldfish{fmt::format("Goldfish k={}", goldfish_k), "epoch", "exact match (documents)", {}, false, 0.0, 1.0};
    for (RunCurve const& c : curves) {
        if (c.k == 0) standard.series.push_back(series(c, c.model, "epoch", "exact_match"));
        if (c.k == goldfish_k) goldfish.series.push_back(series(c, c.model, "epoch", "exact_match"));
    }
    write_line_plots(png, "Fine-tuning on 100 real documents: verbatim reproduction of 32-token continuations",
                     {standard, goldfish});
}

void plot_ablations(fs::path const& png, std::vector<RunCurve> const& curves, std::string const& model) {
    PlotPanel exact{"exact match", "epoch", "exact match (documents)", {}, false, 0.0, 1.0};
    PlotPanel val{"validation loss on Austen", "supervised targets (millions)", "loss (nats)", {}, false, std::nullopt,
                  std::nullopt};
    for (RunCurve const& c : curves) {
        if (c.model != model) continue;
        exact.series.push_back(series(c, c.label(), "epoch", "exact_match"));
        val.series.push_back(series(c, c.label(), "supervised_targets", "val_loss", 1e-6));
    }
    write_line_plots(png, fmt::format("{}: the standard loss against Goldfish at each k", model), {exact, val});
}

}  // namespace

ExtremeThresholds extreme_thresholds(bool quick) {
    return quick ? ExtremeThresholds{0.5, 0.05, 0.05} : ExtremeThresholds{0.8, 0.02, 0.03};
}

std::vector<StudyCriterion> extreme_criteria(json const& results, ExtremeThresholds const& thresholds, int goldfish_k) {
    std::vector<RunCurve> const curves = curves_of(results);
    std::vector<RunCurve const*> const standards = standard_runs(curves);
    std::vector<StudyCriterion> criteria;
    if (standards.empty()) return criteria;
    RunCurve const& largest = largest_of(standards);

    json const& top = largest.last();
    criteria.push_back({fmt::format("1. standard: at least {:.0f}% of the documents reproduced exactly at the final "
                                    "epoch by the largest model of the size sweep ({})", 100 * thresholds.min_standard_exact, largest.model),
                        fmt::format("{}/{} after {} epochs", top["exact_matches"].get<int>(), top["documents"].get<int>(),
                                    top["epoch"].get<int>()),
                        top["exact_match"].get<double>() >= thresholds.min_standard_exact});

    double worst = 0;
    std::string worst_text = "none measured";
    std::string gaps;
    double worst_gap = 0;
    bool every_model = true;
    for (RunCurve const& c : curves) {
        if (c.k != 0) continue;
        RunCurve const* standard = &c;
        RunCurve const* goldfish = find_curve(curves, standard->model, goldfish_k);
        if (goldfish == nullptr) {
            every_model = false;
            continue;
        }
        for (json const& r : goldfish->records) {
            if (r["epoch"].get<int>() > 0 && r["exact_match"].get<double>() >= worst) {
                worst = r["exact_match"].get<double>();
                worst_text = fmt::format("at most {}/{} ({}, epoch {})", r["exact_matches"].get<int>(),
                                         r["documents"].get<int>(), standard->model, r["epoch"].get<int>());
            }
        }
        double const goldfish_val = goldfish->last()["val_loss"];
        double const standard_val = val_loss_at(*standard, goldfish->last()["supervised_targets"].get<double>());
        double const gap = goldfish_val / standard_val - 1;
        worst_gap = std::max(worst_gap, std::abs(gap));
        gaps += fmt::format("{}{} {:+.1f}%", gaps.empty() ? "" : ", ", standard->model, 100 * gap);
    }
    criteria.push_back({fmt::format("2. Goldfish k={}: at most {:.0f}% of the documents reproduced exactly, for every "
                                    "model at every measured epoch", goldfish_k, 100 * thresholds.max_goldfish_exact),
                        worst_text, every_model && worst <= thresholds.max_goldfish_exact});
    criteria.push_back({fmt::format("3. Goldfish k={}: validation loss within {:.0f}% of the standard loss's at an equal "
                                    "number of supervised targets, for every model", goldfish_k,
                                    100 * thresholds.max_val_loss_ratio),
                        gaps.empty() ? "no Goldfish run" : gaps,
                        every_model && worst_gap <= thresholds.max_val_loss_ratio});

    std::vector<RunCurve const*> sized = standards;
    std::sort(sized.begin(), sized.end(), [](auto a, auto b) { return a->parameters < b->parameters; });
    std::string epochs;
    bool falls = sized.size() >= 2;
    for (std::size_t i = 0; i < sized.size(); ++i) {
        epochs += fmt::format("{}{} {}", i ? ", " : "", sized[i]->model, epochs_text(sized[i]->epochs_to_half()));
        if (i > 0 && sized[i]->epochs_to_half() > sized[i - 1]->epochs_to_half()) falls = false;
    }
    if (sized.size() >= 2 && !(sized.back()->epochs_to_half() < sized.front()->epochs_to_half())) falls = false;
    criteria.push_back({fmt::format("4. standard: epochs until half the documents are reproduced do not rise with "
                                    "size, and the largest needs fewer than the smallest ({} tokenizer; two sizes or "
                                    "more)", largest.tokenizer),
                        epochs, falls});
    return criteria;
}

void write_extreme_report(fs::path const& out, ExtremeSummary const& summary, json const& results) {
    ExtremeOptions const& o = summary.options;
    std::vector<RunCurve> const curves = curves_of(results);
    create_folder(out, "output folder (--out)");
    write_file_atomically(out / "results.json", results.dump(1) + "\n", "experiment result");
    plot_exact_match(out / "exact_match.png", curves, o.goldfish.k);
    std::vector<RunCurve const*> const standards = standard_runs(curves);
    plot_ablations(out / "ablations.png", curves, o.ablation_model.empty() ? largest_of(standards).model
                                                                           : o.ablation_model);

    std::string md = fmt::format("# Memorization on real text: the extreme-repetition experiment{}\n\n",
                                 o.quick ? " (quick)" : "");
    md += fmt::format(
        "Grid {}; {:.0f} s in all. Each model trained {} steps on Jane Austen's novels (batches of {} x {} tokens, "
        "AdamW, peak learning rate {} with cosine decay), then, from those weights, was fine-tuned for {} epochs on "
        "{} Devil's Dictionary entries (each a sequence of its first {} tokens; every epoch visits each once) at a "
        "learning rate of {} decaying to a tenth (cosine), and {} new Austen window(s) beside every {} documents, with the standard loss and with Goldfish ({}){}. Measured after epoch 1 and "
        "every {} epochs: exact match (the greedy {}-token continuation of the first {} tokens equals the text), "
        "ROUGE-L, token accuracy (teacher-forced, over the continuation), the membership AUC against {} unseen "
        "entries, and the validation loss on the novels' last 5%.\n\n",
        summary.grid, summary.seconds, o.pretrain_steps, o.batch, o.seq, o.pretrain_lr, o.epochs, o.documents, o.seq + 1,
        o.lr, o.replay, o.batch, o.goldfish.describe(),
        o.k_ablations.empty() || o.ablation_model.empty() ? std::string() : fmt::format("; on {} also k = {}", o.ablation_model,
                                                            json(o.k_ablations).dump()),
        o.eval_every, o.suffix, o.prefix, o.unseen);
    if (!summary.words.empty()) md += "GPT-2 models read the text with " + summary.words + ". ";
    if (!summary.llama3.empty()) md += "Llama models read it with " + summary.llama3 + ".";
    md += "\n\n## Criteria\n\n| criterion | measured | |\n|---|---|---|\n";
    for (StudyCriterion const& c : extreme_criteria(results, extreme_thresholds(o.quick), o.goldfish.k)) {
        md += fmt::format("| {} | {} | {} |\n", c.name, c.measured, c.passed ? "pass" : "FAIL");
    }
    md += "\n## At the final epoch\n\n![exact match against epochs](exact_match.png)\n\n" + final_table(curves);
    md += "\n## Documents reproduced exactly, by epoch (epoch 0: the pretrained model)\n\n" + epoch_table(curves);
    md += "\n## The largest model under each loss\n\n![ablations](ablations.png)\n";
    write_file_atomically(out / "results.md", md, "experiment result");
}

}  // namespace axonn
