#include "axonn/cli/commands.h"
#include "axonn/cli/config_file.h"
#include "axonn/cli/tokenizer_dir_option.h"
#include "axonn/io/prepare.h"
#include "axonn/io/tokenizer.h"
#include "axonn/train/progress.h"
#include "axonn/train/output_kinds.h"

#include <fmt/format.h>

#include <memory>

namespace axonn {

void add_prepare_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand(
        "prepare", "Tokenize text files, or prompt and response records, into train.bin and val.bin shards");
    command->footer("Each input file is one document (less a byte-order mark that starts it); the last\n"
                    "--val-fraction of every document goes to val.bin.\n"
                    "With --format jsonl, each input line is a record {\"prompt\": ..., \"response\": ...}; a seeded\n"
                    "--val-fraction of the records goes to val.bin, and only the responses' tokens (and the end-of-\n"
                    "text after each) count in the loss when training on them (docs/FINETUNING.md).\n"
                    "An earlier run's train.bin and val.bin in --out are replaced only with --overwrite, and then both\n"
                    "new ones are written and flushed to disk before either replaces its older one; the two share a\n"
                    "dataset id that training checks. Inputs that are token shards (as `--input dir/*`\n"
                    "may name the output folder's own files) are skipped.\n"
                    "Example: axonn prepare --input data/austen/*.txt --out data/austen --tokenizer gpt2\n"
                    "Example: axonn prepare --format jsonl --template alpaca --input qa.jsonl --out data/qa");
    auto options = std::make_shared<PrepareOptions>();
    command->add_option("--input", options->inputs, "text files (or JSON-lines files of records) to tokenize")
        ->required()
        ->expected(1, -1);
    command->add_option("--out", options->out_dir, "output folder (created if missing)")->required();
    command->add_flag("--overwrite", options->overwrite, "replace the train.bin and val.bin of an earlier run in --out");
    command->add_option("--tokenizer", options->tokenizer,
                        "gpt2, llama3 (byte-level BPE), byte, or a folder holding a tokenizer.json")
        ->capture_default_str();
    add_tokenizer_dir_option(*command, options->gpt2_dir, options->tokenizer);
    command->add_option("--val-fraction", options->val_fraction, "share of each document kept for validation")
        ->capture_default_str();
    command->add_option("--format", options->format,
                        "text (each file a document) or jsonl (a prompt and response record per line)")
        ->capture_default_str();
    command->add_option("--prompt-field", options->fields.prompt, "jsonl: the field that holds a record's prompt")
        ->capture_default_str();
    command->add_option("--response-field", options->fields.response,
                        "jsonl: the field that holds a record's response")
        ->capture_default_str();
    command->add_option("--template", options->prompt_template,
                        "jsonl: plain (prompt then response), alpaca (Alpaca's instruction format) or llama3 "
                        "(Llama 3's chat format, for the llama3 tokenizer)")
        ->capture_default_str();
    command->add_flag("--allow-binary", options->allow_binary,
                      "tokenize inputs that are not UTF-8 text (NUL bytes, invalid UTF-8) instead of refusing them");

    command->callback([command, options] {
        require_one_process("prepare");
        require_apart_from_config_files(options->out_dir, "--out", *command);
        require_folder_for(options->out_dir, "--out", OutputKind::token_shards);
        if (options->gpt2_dir.empty()) options->gpt2_dir = default_gpt2_dir();
        Progress progress("prepare", 100);
        PrepareReport const report = prepare_shards(*options, [&progress](double fraction) {
            progress.update(static_cast<long>(fraction * 100), "");
        });
        progress.finish();
        for (auto const& skipped : report.skipped) {
            fmt::print("skipped {}: a token shard or an output of `axonn prepare`, not text\n", skipped.string());
        }
        if (options->format == "jsonl") {
            fmt::print("wrote {} ({} records, {} tokens, {} in the loss) and {} ({} records, {} tokens, {} in the "
                       "loss)\n", report.train_path.string(), report.train_records, report.train_tokens,
                       report.train_loss_tokens, report.val_path.string(), report.val_records, report.val_tokens,
                       report.val_loss_tokens);
        } else {
            fmt::print("wrote {} ({} tokens) and {} ({} tokens)\n", report.train_path.string(), report.train_tokens,
                       report.val_path.string(), report.val_tokens);
        }
    });
}

}  // namespace axonn
