#include "axonn/cli/commands.h"
#include "axonn/io/prepare.h"
#include "axonn/io/tokenizer.h"
#include "axonn/train/progress.h"

#include <fmt/format.h>

#include <memory>

namespace axonn {

void add_prepare_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("prepare", "Tokenize text files into train.bin and val.bin shards");
    command->footer("Each input file is one document; the last --val-fraction of every document goes to val.bin.\n"
                    "train.bin and val.bin are both written and flushed to disk before either replaces an older one,\n"
                    "and share a dataset id that training checks. Inputs that are token shards (as `--input dir/*`\n"
                    "may name the output folder's own files) are skipped.\n"
                    "Example: axonn prepare --input data/austen/*.txt --out data/austen --tokenizer gpt2");
    auto options = std::make_shared<PrepareOptions>();
    command->add_option("--input", options->inputs, "text files to tokenize")->required()->expected(1, -1);
    command->add_option("--out", options->out_dir, "output folder (created if missing)")->required();
    command->add_option("--tokenizer", options->tokenizer,
                        "gpt2, llama3 (byte-level BPE), byte, or a folder holding a tokenizer.json")
        ->capture_default_str();
    command->add_option("--tokenizer-dir", options->gpt2_dir, "folder with GPT-2's encoder.json and vocab.bpe");
    command->add_option("--val-fraction", options->val_fraction, "share of each document kept for validation")
        ->capture_default_str();
    command->add_flag("--allow-binary", options->allow_binary,
                      "tokenize inputs that are not UTF-8 text (NUL bytes, invalid UTF-8) instead of refusing them");

    command->callback([options] {
        require_one_process("prepare");
        if (options->gpt2_dir.empty()) options->gpt2_dir = default_gpt2_dir();
        Progress progress("prepare", 100);
        PrepareReport const report = prepare_shards(*options, [&progress](double fraction) {
            progress.update(static_cast<long>(fraction * 100), "");
        });
        progress.finish();
        for (auto const& skipped : report.skipped) {
            fmt::print("skipped {}: a token shard or an output of `axonn prepare`, not text\n", skipped.string());
        }
        fmt::print("wrote {} ({} tokens) and {} ({} tokens)\n", report.train_path.string(), report.train_tokens,
                   report.val_path.string(), report.val_tokens);
    });
}

}  // namespace axonn
