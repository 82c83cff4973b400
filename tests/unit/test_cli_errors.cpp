// Bad input to the `axonn` command: each case must end with exactly one line on stderr that names the problem,
// a non-zero exit status (2 for the command line, 1 for bad data or values), and no crash or hang.
#include "axonn/checkpoint/checkpoint_dir.h"
#include "axonn/core/file_io.h"
#include "axonn/io/tensor_file.h"
#include "axonn/io/token_shard.h"
#include "axonn/perf/machine_profile.h"
#include "support/temp_dir.h"
#include "support/files.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <filesystem>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace axonn {
namespace {

using testing::file_bytes;
using testing::write_file;

namespace fs = std::filesystem;

struct CommandResult {
    int exit_status;
    std::string stderr_text;
};

fs::path binary() { return fs::path(AXONN_BUILD_DIR) / "axonn"; }

// `launcher` runs before the command in the same shell: a limit (`ulimit -f 8;`) or a wrapper (`flock -o F`).
// Under a file-size limit MPI's start-up needs PMIX_MCA_gds=hash: its default keeps job data in a growing
// shared-memory file, which the limit would stop.
CommandResult run_axonn(std::string const& arguments, fs::path const& dir, std::string const& launcher = "") {
    fs::path const err = dir / "stderr.txt";
    // `timeout` turns a hang into a failure instead of a stuck test suite.
    std::string const command = launcher + " timeout 60 " + binary().string() + " " + arguments + " > " +
                                (dir / "stdout.txt").string() + " 2> " + err.string();
    int const status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), file_bytes(err)};
}

// Whether the last command run in `dir` printed `text` on its standard output (run_axonn keeps it there).
::testing::AssertionResult printed(fs::path const& dir, std::string const& text) {
    std::string const output = file_bytes(dir / "stdout.txt");
    if (output.find(text) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "not printed: " << text << "\nstandard output:\n" << output;
}

// The steps of the complete checkpoints in `dir`, oldest first.
std::vector<std::int64_t> checkpoint_steps(fs::path const& dir) {
    std::vector<std::int64_t> steps;
    for (CheckpointEntry const& entry : complete_checkpoints(dir)) steps.push_back(entry.step);
    return steps;
}

void replace_in_file(fs::path const& path, std::string const& from, std::string const& to) {
    std::string text = file_bytes(path);
    std::size_t const at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from << " not in " << path;
    text.replace(at, from.size(), to);
    write_file(path, text);
}

struct BadInput {
    std::string name;
    std::string arguments;   // {dir} is replaced with the test's scratch folder
    std::string expected;    // a piece of the one-line message
    int exit_status;
    std::string launcher = "";    // see run_axonn; {dir} is replaced too
    bool after_progress = false;  // the run fails mid-way: progress lines come first, the error is the last line

    friend void PrintTo(BadInput const& input, std::ostream* out) { *out << input.name; }
};

std::vector<BadInput> const bad_inputs = {
    {"unknown_flag", "train --data {dir}/good --bogus-flag 3", "bogus-flag", 2},
    // Named in the order given (CLI11 listed the words it did not expect last first: "0 --sample-tokens 1 --steps").
    {"train_options_given_to_bench", "bench --model gpt2-micro --steps 1 --sample-tokens=0",
     "`axonn bench` does not take --steps, --sample-tokens: see `axonn bench --help`", 2},
    {"unknown_subcommand", "trian", "trian", 2},
    {"no_subcommand", "", "a subcommand is required", 2},
    {"unknown_config_key", "train --config {dir}/extra_key.toml", "bogus_key", 2},
    {"missing_config_file", "train --config {dir}/nowhere.toml --data {dir}/good", "nowhere.toml", 2},
    {"heads_do_not_divide_width", "train --data {dir}/good --tokenizer byte --n-head 5", "5 heads do not divide", 2},
    {"zero_steps", "train --data {dir}/good --tokenizer byte --steps 0", "--steps must be at least 1", 2},
    {"seq_longer_than_context", "train --data {dir}/good --tokenizer byte --seq 300", "longer than the model's context",
     2},
    {"unknown_preset", "train --data {dir}/good --model gpt7", "unknown model preset 'gpt7'", 2},
    {"negative_learning_rate", "train --data {dir}/good --tokenizer byte --lr -1", "--lr must be positive", 2},
    {"missing_data", "train --data {dir}/nowhere --tokenizer byte", "does not exist", 1},
    {"empty_data_folder", "train --data {dir}/empty --tokenizer byte", "no .bin token shards: run `axonn prepare "
     "--input FILES --out {dir}/empty`", 1},
    // It was told to prepare into that folder, which prepare then refused (val.bin was there).
    {"data_folder_of_validation_only", "train --data {dir}/only_val --tokenizer byte", "folder {dir}/only_val holds "
     "no training shard, only the validation shard val.bin: give the training data's folder, or prepare both into a "
     "new one", 1, "mkdir -p {dir}/only_val && cp {dir}/good/val.bin {dir}/only_val/ &&"},
    {"truncated_shard", "train --data {dir}/truncated.bin --tokenizer byte", "truncated", 1},
    {"corrupt_shard", "train --data {dir}/corrupt.bin --tokenizer byte", "not an axonn token shard", 1},
    {"token_id_beyond_vocabulary", "train --data {dir}/wide.bin --tokenizer byte", "token id 300", 1},
    {"too_little_data", "train --data {dir}/good --tokenizer byte --batch 64 --seq 64", "fewer than one batch", 1},
    {"unreadable_tokenizer", "train --data {dir}/good --tokenizer gpt2 --tokenizer-dir {dir}/nowhere",
     "fetch-tokenizer", 1},
    {"unknown_tokenizer", "prepare --input {dir}/text.txt --out {dir}/out --tokenizer klingon", "klingon", 2},
    {"missing_prepare_input", "prepare --input {dir}/nowhere.txt --out {dir}/out --tokenizer byte", "nowhere.txt", 1},
    {"bench_too_few_iterations", "bench --model gpt2-tiny --iters 2", "--iters 2", 2},
    {"grid_larger_than_job", "train --data {dir}/good --tokenizer byte --grid data=2,x=2",
     "has 4 ranks but the job has 1; valid grids for 1 ranks, this model and batch 4: data=1,z=1,y=1,x=1", 2},
    {"grid_order_missing_an_axis", "train --data {dir}/good --tokenizer byte --grid-order x,y,z",
     "grid order 'x,y,z' must name each of x, y, z and data exactly once", 2},
    // A bad grid order is a bad command line in every command (generate and memorization eval said 1).
    {"generate_grid_order", "generate --model-dir {dir}/model --tokenizer byte --prompt hi --grid-order x,y,z",
     "--grid-order: grid order 'x,y,z' must name each of x, y, z and data exactly once", 2},
    {"eval_grid_order", "memorization eval --model-dir {dir}/model --documents {dir}/docs.jsonl --grid-order x,x,y,z",
     "--grid-order: grid order 'x,x,y,z' must name each of x, y, z and data exactly once", 2},
    {"grid_unknown_axis", "train --data {dir}/good --tokenizer byte --grid w=2", "w=2", 2},
    {"grid_size_too_large", "train --data {dir}/good --tokenizer byte --grid data=4294967297",
     "grid size 4294967297 of axis data in 'data=4294967297' is too large (at most 2147483647 ranks)", 2},
    {"negative_seed", "train --data {dir}/good --tokenizer byte --seed -1",
     "--seed: a seed is a non-negative integer, not -1", 2},
    {"steps_past_an_int", "train --data {dir}/good --tokenizer byte --steps 2147483648",
     "--steps 2147483648 is too large a number for it: give a smaller one (see `axonn train --help`)", 2},
    {"gpus_in_floating_point", "plan --model gpt-5b --gpus 1e3 --batch 8",
     "--gpus 1e3: write a whole number in decimal digits, without a leading zero, such as 8 (see `axonn plan "
     "--help`)", 2},
    // C's base 0: 010 was 8 steps, 0x10 16.
    {"steps_in_octal", "train --data {dir}/good --tokenizer byte --steps 010",
     "--steps 010: write a whole number in decimal digits, without a leading zero", 2},
    {"buckets_in_hex", "memorization study --out {dir}/hex --buckets 1,0x10",
     "--buckets 1,0x10: write a whole number in decimal digits", 2},
    {"models_with_an_empty_item",
     "memorization study --experiment extreme --out {dir}/x --models gpt2-micro,,gpt2-tiny",
     "--models gpt2-micro,,gpt2-tiny: an item of the list is empty: separate the items with one ',' each", 2},
    {"steps_in_words", "train --data {dir}/good --tokenizer byte --steps=abc",
     "--steps abc: write a whole number in decimal digits", 2},
    {"empty_after_a_switch", "train --data {dir}/good --tokenizer byte --overwrite ''",
     "an empty argument follows --overwrite, which takes no value: drop it", 2},
    {"empty_subcommand", "memorization ''", "an argument is empty: `axonn memorization` takes a subcommand there", 2},
    {"config_empty", "train --data {dir}/good --tokenizer byte --config ''",
     "--config is empty: name a TOML file, or leave the option out", 2},
    {"seed_past_64_bits", "train --data {dir}/good --tokenizer byte --seed 18446744073709551616",
     "--seed: a seed is at most 18446744073709551615, not 18446744073709551616", 2},
    {"trace_naming_the_checkpoint_folder", "train --data {dir}/good --tokenizer byte --ckpt-dir {dir}/ckpt_t "
     "--trace {dir}/ckpt_t", "--trace and --ckpt-dir both name {dir}/ckpt_t: give each output its own path", 1},
    {"negative_generate_seed", "generate --model-dir {dir}/model --tokenizer byte --prompt hi --seed -3",
     "--seed: a seed is a non-negative integer, not -3", 2},
    {"goldfish_key_twice", "train --data {dir}/good --tokenizer byte --goldfish k=4,k=5",
     "--goldfish: k is given twice: give each key once", 2},
    {"goldfish_k_below_two", "train --data {dir}/good --tokenizer byte --goldfish k=1", "k=1 must be at least 2", 2},
    {"goldfish_h_below_one", "train --data {dir}/good --tokenizer byte --goldfish k=4,h=0", "h=0 must be at least 1",
     2},
    {"goldfish_unknown_strategy", "train --data {dir}/good --tokenizer byte --goldfish k=4,strategy=fancy",
     "unknown strategy 'fancy'", 2},
    {"goldfish_window_too_large", "train --data {dir}/good --tokenizer byte --goldfish k=4,h=1000000000000",
     "--goldfish: h=1000000000000 is too large: at most 2147483647", 2},
    {"goldfish_window_past_the_sequence", "train --data {dir}/good --tokenizer byte --seq 16 --goldfish k=4,h=20",
     "--goldfish h=20 is longer than --seq 16", 2},
    {"memorization_eval_missing_model", "memorization eval --model-dir {dir}/nowhere --documents {dir}/docs.jsonl",
     "nowhere", 1},
    {"memorization_eval_heldout_is_the_documents",
     "memorization eval --model-dir {dir}/model --documents {dir}/docs.jsonl --heldout {dir}/./docs.jsonl",
     "--heldout {dir}/./docs.jsonl is the --documents file itself: held-out documents are ones the model never "
     "trained on", 2},
    {"memorization_eval_no_documents", "memorization eval --model-dir {dir}/model --documents {dir}/no_docs.jsonl",
     "holds no document", 1},
    {"memorization_eval_bad_document", "memorization eval --model-dir {dir}/model --documents {dir}/bad_docs.jsonl",
     "bad_docs.jsonl line 2: not valid JSON", 1},
    {"memorization_eval_canaries_beyond_context",
     "memorization eval --model-dir {dir}/model --documents {dir}/docs.jsonl --prefix 200 --suffix 100",
     "longer than the model's context", 2},
    {"memorization_eval_goldfish_k_below_two",
     "memorization eval --model-dir {dir}/model --documents {dir}/docs.jsonl --goldfish k=1", "k=1 must be at least 2",
     2},
    {"memorization_eval_zero_batch", "memorization eval --model-dir {dir}/model --documents {dir}/docs.jsonl --batch 0",
     "--batch must be at least 1", 2},
    {"memorization_eval_random_mask",
     "memorization eval --model-dir {dir}/model --documents {dir}/docs.jsonl --goldfish k=4,strategy=random",
     "strategy=random draws a new mask every step", 2},
    // Another tokenizer's ids that fit the vocabulary were evaluated as if they were the model's.
    {"memorization_eval_text_beyond_vocabulary",
     "memorization eval --model-dir {dir}/model --documents {dir}/text_docs.jsonl --tokenizer gpt2",
     "has \"text\" but the tokenizer gpt2 is not the model's (a vocabulary of 50257 tokens; the model in {dir}/model "
     "has 257): pass the --tokenizer it was trained with", 1},
    {"bench_seq_past_a_llama_context", "bench --model llama-tiny --seq 200", "--seq at most the model's context 128",
     2},
    {"train_llama_past_its_context", "train --data {dir}/good --tokenizer byte --model llama-tiny --seq 200",
     "--seq 200 is longer than the model's context of 128 tokens", 2},
    {"generate_unknown_template", "generate --model-dir {dir}/model --tokenizer byte --prompt hi --template chatml",
     "unknown --template 'chatml': use plain, alpaca or llama3", 2},
    {"generate_missing_model", "generate --model-dir {dir}/nowhere --tokenizer byte --prompt hi", "nowhere", 1},
    {"generate_without_a_prompt", "generate --model-dir {dir}/model --tokenizer byte",
     "no prompt: pass --prompt TEXT or --prompt-file FILE", 2},
    {"generate_two_kinds_of_prompt",
     "generate --model-dir {dir}/model --tokenizer byte --prompt hi --prompt-file "
     "{dir}/text.txt",
     "excludes", 2},
    {"generate_missing_prompt_file", "generate --model-dir {dir}/model --tokenizer byte --prompt-file {dir}/none.txt",
     "none.txt", 1},
    {"generate_blank_prompt_file",
     "generate --model-dir {dir}/model --tokenizer byte --prompt-file "
     "{dir}/no_docs.jsonl",
     "holds no prompt: write one prompt per line", 1},
    {"gemm_rate_from_a_bad_environment", "train --data {dir}/good --tokenizer byte --steps 1",
     "AXONN_GEMM_RATE is 'abc', not a GEMM rate in GFLOP/s: set it to one (0: measure), or unset it", 2,
     "AXONN_GEMM_RATE=abc"},
    {"checkpoint_file_size_negative", "train --data {dir}/good --tokenizer byte --ckpt-dir {dir}/c --ckpt-file-size -1",
     "--ckpt-file-size must lie in [1, 1048576] MiB, got -1", 2},
    {"calibrate_without_a_name", "calibrate --out {dir}/unnamed.toml --name ''",
     "--name is empty: give it a value", 2},
    {"prepare_text_with_a_template", "prepare --input {dir}/text.txt --out {dir}/templated --template alpaca",
     "--template alpaca writes prompt and response records (--format jsonl); text files are tokenized as they are",
     2},
    {"generate_from_a_folder_of_incomplete_checkpoints",
     "generate --model-dir {dir}/incomplete_only --tokenizer byte --prompt hi",
     "{dir}/incomplete_only holds no complete checkpoint (the checkpoint step_00000001 is incomplete: its save was "
     "interrupted)",
     1},
    {"generate_whitespace_prompt_file",
     "generate --model-dir {dir}/model --tokenizer byte --prompt-file {dir}/whitespace_prompts.txt",
     "holds no prompt: write one prompt per line", 1},
    {"generate_binary_prompt_file",
     "generate --model-dir {dir}/model --tokenizer byte --prompt-file {dir}/good/train.bin",
     "prompt file {dir}/good/train.bin is not UTF-8 text (byte 0x", 1},
    {"generate_prompt_not_utf8", "generate --model-dir {dir}/model --tokenizer byte --prompt \"$(printf 'a\\377b')\"",
     "--prompt is not UTF-8 text (byte 0xFF at offset 1): write the prompt in UTF-8", 2},
    {"generate_endless", "generate --model-dir {dir}/model --tokenizer byte --prompt hi --max-new-tokens 1000000",
     "--max-new-tokens must lie in 0..100000", 2},
    {"generate_negative_temperature", "generate --model-dir {dir}/model --tokenizer byte --prompt hi --temperature -1",
     "--temperature must be finite and not negative", 2},
    {"generate_top_p_zero", "generate --model-dir {dir}/model --tokenizer byte --prompt hi --top-p 0",
     "--top-p must lie in (0, 1]", 2},
    {"generate_stop_token_beyond_vocabulary",
     "generate --model-dir {dir}/model --tokenizer byte --prompt hi "
     "--stop-token 999",
     "--stop-token '999' is neither \"eot\" nor a token id of the byte tokenizer (0..256)", 2},
    {"generate_with_another_tokenizer", "generate --model-dir {dir}/model --tokenizer gpt2 --prompt hi",
     "has a vocabulary of 257 tokens, but the tokenizer gpt2 has 50257", 1},
    {"generate_on_a_grid_of_other_ranks",
     "generate --model-dir {dir}/model --tokenizer byte --prompt hi --grid "
     "data=1,z=1,y=2,x=1",
     "grid data=1,z=1,y=2,x=1 has 2 ranks but the job has 1; valid grids for 1 ranks, this model: "
     "data=1,z=1,y=1,x=1", 2},
    {"memorization_study_batch_not_dividing_the_canaries", "memorization study --out {dir}/study --batch 3",
     "--batch 3 does not divide the 64 fine-tuning canaries", 2},
    {"memorization_study_unknown_size", "memorization study --out {dir}/study --sizes XXL",
     "unknown study model size 'XXL'", 2},
    {"memorization_extreme_models_largest_first",
     "memorization study --experiment extreme --out {dir}/study --models gpt2-tiny,gpt2-micro",
     "--models gpt2-tiny,gpt2-micro: list each family's models smallest first, each once", 2},
    {"memorization_extreme_model_twice",
     "memorization study --experiment extreme --out {dir}/study --models gpt2-micro,gpt2-micro",
     "--models gpt2-micro,gpt2-micro: list each family's models smallest first, each once", 2},
    {"memorization_study_sizes_largest_first", "memorization study --out {dir}/study --sizes L,XS",
     "--sizes L,XS: list the sizes smallest first, each once (XS, S, M, L)", 2},
    {"memorization_study_size_twice", "memorization study --out {dir}/study --sizes S,S",
     "--sizes S,S: list the sizes smallest first, each once", 2},
    {"memorization_study_buckets_decreasing", "memorization study --out {dir}/study --buckets 32,1",
     "--buckets 32,1: list the repetitions in increasing order, each once", 2},
    {"memorization_study_bucket_twice", "memorization study --out {dir}/study --buckets 1,1",
     "--buckets 1,1: list the repetitions in increasing order, each once", 2},
    {"memorization_study_zero_repetitions", "memorization study --out {dir}/study --buckets 0,32",
     "a canary group is trained on 1 to 1000000 times, got 0", 2},
    {"memorization_study_canaries_do_not_fit", "memorization study --out {dir}/study --canaries 100 --steps 10",
     "do not fit in 10 steps", 2},
    {"memorization_study_without_out", "memorization study --quick", "--out is required", 2},
    // The study's --out is checked before any work (it refused a file in its path only after training, and
    // replaced an earlier study's results without a word).
    {"memorization_study_out_under_a_file", "memorization study --quick --out {dir}/text.txt/study",
     "cannot create the folder {dir}/text.txt/study for the results (--out): a part of that path is a file", 1},
    {"memorization_study_over_an_earlier_study", "memorization study --quick --out {dir}/old_study",
     "the folder {dir}/old_study for the results (--out) already holds results.md (from an earlier run?): choose a "
     "new or empty folder, or pass --overwrite", 1},
    {"memorization_extreme_over_an_earlier_study",
     "memorization study --experiment extreme --quick --out {dir}/old_study", "already holds results.md", 1},
    {"memorization_extreme_with_a_buckets_option", "memorization study --experiment extreme --out {dir}/x --buckets 1,2",
     "--buckets belongs to --experiment buckets, not to --experiment extreme", 2},
    {"memorization_buckets_with_an_extreme_option", "memorization study --out {dir}/x --epochs 3",
     "--epochs belongs to --experiment extreme", 2},
    {"memorization_extreme_batch_not_dividing_the_documents",
     "memorization study --experiment extreme --out {dir}/x --batch 3", "--batch 3 does not divide the 100 documents",
     2},
    {"memorization_extreme_unknown_model", "memorization study --experiment extreme --out {dir}/x --models gpt2-nano",
     "unknown model preset 'gpt2-nano'", 2},
    // An empty --ablation-model is a value (no ablations): the study goes on to the next check.
    {"memorization_extreme_no_ablation_model",
     "memorization study --experiment extreme --out {dir}/x --ablation-model '' --models gpt2-nano",
     "unknown model preset 'gpt2-nano'", 2},
    {"memorization_extreme_ablation_model_not_run",
     "memorization study --experiment extreme --out {dir}/x --models gpt2-micro --ablation-model gpt2-mini",
     "--ablation-model gpt2-mini is not among --models", 2},
    {"memorization_extreme_negative_replay", "memorization study --experiment extreme --out {dir}/x --replay -1",
     "--replay must not be negative", 2},
    {"memorization_extreme_more_documents_than_the_dictionary",
     "memorization study --experiment extreme --out {dir}/x --documents 300", "lower --documents", 1},
    {"memorization_extreme_out_under_a_file", "memorization study --experiment extreme --quick --out /dev/full/x",
     "cannot create the folder /dev/full/x", 1},
    {"parity_grid_larger_than_job", "parity --grid z=8", "has 8 ranks but the job has 1", 2},
    // A Goldfish hash wider than what is masked drops nothing: refused by parity and memorization eval as by train.
    {"parity_goldfish_wider_than_seq", "parity --model gpt2-micro --seq 16 --goldfish k=4,h=100",
     "--goldfish h=100 is longer than --seq 16", 2},
    {"memorization_eval_goldfish_wider_than_documents",
     "memorization eval --model-dir {dir}/model --documents {dir}/docs.jsonl --prefix 16 --suffix 16 "
     "--goldfish k=4,h=32",
     "--goldfish h=32 is longer than the 31 targets of --prefix + --suffix", 2},
    {"plan_unknown_machine", "plan --model gpt-5b --gpus 8 --batch 8 --machine mars", "mars", 2},
    {"weak_scaling_trailing_comma", "plan --weak-scaling gpt-5b:8,gpt-10b:16, --batch 8",
     "--weak-scaling gpt-5b:8,gpt-10b:16, ends with ','", 2},
    {"goldfish_trailing_comma", "train --data {dir}/good --tokenizer byte --goldfish k=4,",
     "--goldfish k=4,: an item is empty", 2},
    // h is the hash's window: with another strategy it changed nothing, and the banner dropped it without a word.
    {"goldfish_window_of_static_masks", "train --data {dir}/good --tokenizer byte --goldfish k=4,h=13,strategy=static",
     "--goldfish k=4,h=13,strategy=static: h is the hash strategy's window and changes nothing with strategy=static: "
     "leave h out", 2},
    {"goldfish_window_of_random_masks",
     "memorization eval --model-dir {dir}/model --documents {dir}/docs.jsonl --goldfish strategy=random,h=5,k=4",
     "--goldfish strategy=random,h=5,k=4: h is the hash strategy's window and changes nothing with strategy=random: "
     "leave h out", 2},
    {"weak_scaling_unknown_machine", "plan --weak-scaling gpt-5b:8,gpt-10b:16 --batch 8 --machine mars "
     "--plot {dir}/mars.png", "unknown machine profile 'mars'", 2},
    {"plan_local_not_calibrated", "plan --model gpt-5b --gpus 8 --batch 8 --machine local",
     "machine profile 'local' is not written yet: measure this machine with `axonn calibrate --out "
     "{dir}/no_machines/local.toml`", 2, "AXONN_MACHINES_DIR={dir}/no_machines"},
    {"plan_zero_devices", "plan --model gpt-5b --gpus 0 --batch 8", "--gpus must be at least 1", 2},
    {"plan_where_no_grid_fits", "plan --model gpt-640b --gpus 2 --batch 8 --machine perlmutter",
     "no grid of 2 devices fits gpt-640b at batch 8 x 2048 tokens: run with --explain to see why each was excluded",
     1},
    // Its empty list exited 0, where the plan without --json exits 1.
    {"plan_json_where_no_grid_fits", "plan --model gpt-640b --gpus 2 --batch 8 --machine perlmutter --json",
     "no grid of 2 devices fits gpt-640b at batch 8 x 2048 tokens", 1},
    // --explain printed every grid's exclusion and exited 0, as if it had planned.
    {"plan_explained_where_no_grid_fits", "plan --model gpt-640b --gpus 2 --batch 8 --machine perlmutter --explain",
     "no grid of 2 devices fits gpt-640b at batch 8 x 2048 tokens: each grid's exclusion is listed above", 1},
    {"plan_explained_json_where_no_grid_fits",
     "plan --model gpt-640b --gpus 2 --batch 8 --machine perlmutter --explain --json",
     "no grid of 2 devices fits gpt-640b at batch 8 x 2048 tokens: each grid's exclusion is listed above", 1},
    {"plan_sequence_beyond_context", "plan --model gpt-5b --gpus 8 --batch 8 --seq 9999", "--seq 9999", 2},
    // A failure on any path must not be an "internal error", a signal or a hang.
    {"metrics_on_a_full_disk", "train --data {dir}/good --tokenizer byte --steps 2 --metrics /dev/full",
     "cannot write metrics file /dev/full: the disk is full", 1},
    {"metrics_filling_the_disk_mid_run",
     "train --data {dir}/good --tokenizer byte --steps 40 --metrics {dir}/growing.jsonl --overwrite --eval-every 1000",
     "cannot write metrics file {dir}/growing.jsonl: the file has reached the size limit", 1,
     "ulimit -f 8; PMIX_MCA_gds=hash", true},
    {"metrics_of_an_earlier_run", "train --data {dir}/good --tokenizer byte --metrics {dir}/old_metrics.jsonl",
     "already exists (9 bytes; an earlier run's?): choose another path, or pass --overwrite", 1},
    {"metrics_written_by_another_run",
     "train --data {dir}/good --tokenizer byte --metrics {dir}/locked.jsonl --overwrite",
     "is being written by another run (it is locked)", 1, "flock -o {dir}/locked.jsonl"},
    {"calibrate_over_metrics_being_written", "calibrate --quick --out {dir}/locked.jsonl --overwrite",
     "machine profile {dir}/locked.jsonl is being written by another run (it is locked)", 1,
     "flock -o {dir}/locked.jsonl"},
    // A file of a checkpoint, a model or token shards is no other output's to replace, --overwrite or not, and
    // nothing lands inside a checkpoint (a pruning would delete it).
    {"bench_trace_over_a_token_shard",
     "bench --model gpt2-micro --batch 2 --seq 16 --iters 3 --trace {dir}/good/train.bin --overwrite",
     "--trace {dir}/good/train.bin is a token shard: writing it would destroy it, --overwrite or not", 1},
    {"calibrate_into_a_checkpoint", "calibrate --quick --out {dir}/model/step_00000001/index.json --overwrite",
     "--out {dir}/model/step_00000001/index.json lies inside the checkpoint {dir}/model/step_00000001", 1},
    {"metrics_inside_a_checkpoint",
     "train --data {dir}/good --tokenizer byte --metrics {dir}/model/step_00000001/new.jsonl",
     "--metrics {dir}/model/step_00000001/new.jsonl lies inside the checkpoint", 1},
    // Known by their contents, through any name: a hard link to a checkpoint's weights or index.
    {"trace_over_linked_weights",
     "train --data {dir}/good --tokenizer byte --trace {dir}/linked_weights.bin --overwrite",
     "--trace {dir}/linked_weights.bin is model weights (safetensors): writing it would destroy it", 1},
    {"metrics_over_a_linked_checkpoint_index",
     "train --data {dir}/good --tokenizer byte --metrics {dir}/linked_index.json --overwrite",
     "--metrics {dir}/linked_index.json is a checkpoint's index", 1},
    {"metrics_through_a_link_into_a_checkpoint",
     "train --data {dir}/good --tokenizer byte --metrics {dir}/link_into_checkpoint.jsonl --overwrite",
     "lies inside the checkpoint {dir}/model/step_00000001", 1},
    {"prepare_inside_a_checkpoint", "prepare --input {dir}/text.txt --out {dir}/model/step_00000001/shards "
     "--tokenizer byte",
     "--out {dir}/model/step_00000001/shards lies inside the checkpoint {dir}/model/step_00000001", 1},
    {"ckpt_dir_inside_a_checkpoint",
     "train --data {dir}/good --tokenizer byte --ckpt-dir {dir}/model/step_00000001/more",
     "lies inside the checkpoint {dir}/model/step_00000001", 1},
    {"plot_over_a_model_config",
     "plan --weak-scaling gpt-5b:8,gpt-10b:16 --batch 8 --plot {dir}/hf_and_checkpoints/hf_only/config.json "
     "--overwrite",
     "hf_only/config.json is a Hugging Face model's config", 1},
    // Checkpoints, a Hugging Face model and token shards never share a folder, and no output folder is, or lies
    // inside, a folder the command reads.
    {"prepare_into_a_checkpoint", "prepare --input {dir}/text.txt --out {dir}/model/step_00000001 --tokenizer byte",
     "--out {dir}/model/step_00000001 is the checkpoint {dir}/model/step_00000001: a --keep pruning would delete "
     "it", 1},
    {"prepare_into_a_checkpoint_folder", "prepare --input {dir}/text.txt --out {dir}/model --tokenizer byte",
     "--out {dir}/model holds axonn checkpoints (the checkpoint step_00000001)", 1},
    {"ckpt_dir_among_token_shards", "train --data {dir}/good --tokenizer byte --ckpt-dir {dir}/other_data",
     "--ckpt-dir {dir}/other_data holds token shards (train.bin): checkpoints written there would be mixed", 1},
    {"data_inside_the_ckpt_dir",
     "train --data {dir}/data_in_ckpt/shards --tokenizer byte --ckpt-dir {dir}/data_in_ckpt",
     "lies inside --ckpt-dir {dir}/data_in_ckpt, which this run's saves and prunings change: move the data out", 1},
    // An output named as a checkpoint among checkpoints blocked every later save and resume of that --ckpt-dir.
    {"export_named_as_a_checkpoint", "export {dir}/model/step_00000001 {dir}/model/step_00000009",
     "OUT {dir}/model/step_00000009 is named as a checkpoint folder, beside the checkpoint step_00000001 in "
     "{dir}/model: a training run on that --ckpt-dir would take it for one of its own; choose another name or "
     "folder", 1},
    {"prepare_named_as_a_checkpoint",
     "prepare --input {dir}/text.txt --out {dir}/model/step_00000007/ --tokenizer byte",
     "--out {dir}/model/step_00000007/ is named as a checkpoint folder, beside the checkpoint step_00000001", 1},
    // A save's leftover's name: the next save removed the folder, and the export in it.
    {"export_named_as_a_leftover", "export {dir}/model/step_00000001 {dir}/model/step_00000012.partial",
     "OUT {dir}/model/step_00000012.partial is named as a checkpoint folder", 1},
    {"ckpt_dir_named_as_a_rolled_back_checkpoint",
     "train --data {dir}/good --tokenizer byte --ckpt-dir {dir}/model/step_00000003.rolled-back-1700000000",
     "--ckpt-dir {dir}/model/step_00000003.rolled-back-1700000000 is named as a checkpoint folder", 1},
    {"export_among_token_shards", "export {dir}/model {dir}/good",
     "OUT {dir}/good holds token shards (train.bin): a Hugging Face model written there would be mixed", 1},
    {"export_inside_its_checkpoint", "export {dir}/model {dir}/model/hf",
     "OUT {dir}/model/hf lies inside {dir}/model, which this run reads", 1},
    // An export over a model in shards made a folder of two models, which every reader refused.
    {"export_over_a_sharded_model", "export {dir}/model {dir}/sharded_hf --overwrite",
     "OUT {dir}/sharded_hf holds a model in shards (model.safetensors.index.json), which the export's "
     "model.safetensors would not replace but stand beside", 1},
    {"export_over_a_blocked_config", "export {dir}/model {dir}/hf_blocked --overwrite",
     "config.json.partial, where it is written first, is a folder: remove it", 1},
    {"import_among_token_shards", "import {dir}/hf_and_checkpoints/hf_only --out {dir}/other_data",
     "--out {dir}/other_data holds token shards (train.bin)", 1},
    {"import_inside_its_source",
     "import {dir}/hf_and_checkpoints/hf_only --out {dir}/hf_and_checkpoints/hf_only/ckpt",
     "--out {dir}/hf_and_checkpoints/hf_only/ckpt lies inside {dir}/hf_and_checkpoints/hf_only, which this run "
     "reads", 1},
    {"corpus_among_token_shards", "corpus janeausten --package {dir}/empty --out {dir}/good",
     "--out {dir}/good holds token shards (train.bin): this command's files written there would be mixed", 1},
    {"corpus_into_its_package", "corpus janeausten --package {dir}/empty --out {dir}/empty",
     "--out {dir}/empty is {dir}/empty, a folder this run reads", 1},
    {"study_into_its_text", "memorization study --sizes XS --buckets 1 --devil-dir {dir}/empty --out {dir}/empty",
     "--out {dir}/empty is {dir}/empty, a folder this run reads", 1},
    // An empty path is no default and no "not given": refused before anything reads it.
    {"tune_out_empty", "tune --model gpt2-micro --tokenizer byte --batch 8 --seq 16 --out ''",
     "--out is empty: name a file or folder, or leave the option out", 2},
    {"ckpt_dir_empty", "train --data {dir}/good --tokenizer byte --ckpt-dir=", "--ckpt-dir is empty", 2},
    {"required_data_empty", "train --data '' --tokenizer byte",
     "--data is empty: name a file or folder (see `axonn train --help`)", 2},
    {"subcommand_help_named", "memorization study --out {dir}/sx --skip nothing",
     "(see `axonn memorization study --help`)", 2},
    {"subcommand_path_empty", "memorization eval --model-dir {dir}/model --documents ''",
     "--documents is empty: name a file or folder (see `axonn memorization eval --help`)", 2},
    {"metrics_empty_in_a_config", "train --data {dir}/good --tokenizer byte --config {dir}/empty_metrics.toml",
     "empty_metrics.toml:1:11: 'metrics' is empty: give it a value, or remove the line", 2},
    {"export_to_an_empty_path", "export {dir}/model ''",
     "an argument is empty: `axonn export` takes a file or folder there", 2},
    // Nor is an empty number 0 (an unset shell variable generated nothing, exit 0), nor an empty --resume either
    // no resume or the latest checkpoint.
    {"max_new_tokens_empty", "generate --model-dir {dir}/model --tokenizer byte --prompt hi --max-new-tokens ''",
     "--max-new-tokens is empty: give a number, or leave the option out (see `axonn generate --help`)", 2},
    {"temperature_empty", "generate --model-dir {dir}/model --tokenizer byte --prompt hi --temperature=",
     "--temperature is empty: give a number, or leave the option out", 2},
    {"stop_token_empty", "generate --model-dir {dir}/model --tokenizer byte --prompt hi --stop-token ''",
     "--stop-token is empty: give it a value, or leave the option out", 2},
    {"heldout_empty", "memorization eval --model-dir {dir}/model --documents {dir}/docs.jsonl --heldout ''",
     "--heldout is empty: name a file or folder, or leave the option out", 2},
    {"resume_empty", "train --data {dir}/good --tokenizer byte --resume ''",
     "--resume is empty: name latest or a checkpoint folder, or leave the option out", 2},
    {"resume_equals_nothing", "train --data {dir}/good --tokenizer byte --resume=",
     "--resume is empty: name latest or a checkpoint folder, or leave the option out", 2},
    // What would fail only when the output is written, after the work, fails before it.
    {"plot_in_a_missing_folder", "plan --weak-scaling gpt-5b:8,gpt-10b:16 --batch 8 --plot {dir}/nowhere/p.png",
     "--plot {dir}/nowhere/p.png: the folder {dir}/nowhere does not exist: create it or choose another path", 1},
    {"tune_out_ends_with_a_slash", "tune --model gpt2-micro --tokenizer byte --batch 8 --seq 16 --out {dir}/g.json/",
     "grid file {dir}/g.json/ ends with '/', so it names a folder: name a file (drop the slash)", 1},
    {"metrics_end_with_a_slash", "train --data {dir}/good --tokenizer byte --metrics {dir}/m.jsonl/",
     "metrics file {dir}/m.jsonl/ ends with '/'", 1},
    {"plot_name_too_long",
     "plan --weak-scaling gpt-5b:8,gpt-10b:16 --batch 8 --plot {dir}/" + std::string(250, 'p'),
     "its name has 250 characters, more than the 247 this file system takes", 1},
    {"tune_over_a_link_at_its_partial_file",
     "tune --model gpt2-micro --tokenizer byte --batch 8 --seq 16 --out {dir}/linked_partial.json",
     "linked_partial.json.partial, where it is written first, is a symbolic link", 1},
    // No output replaces a file this run did not make, and no two outputs are one file (checked before any work).
    {"trace_and_metrics_in_one_file",
     "train --data {dir}/good --tokenizer byte --steps 1 --metrics {dir}/one.json --trace {dir}/one.json",
     "--metrics and --trace both name {dir}/one.json: give each output its own path", 1},
    // A link to nothing yet, named by one output, whose target another output names: found after the run, the
    // metrics written where the trace goes.
    {"metrics_through_a_link_to_the_trace",
     "train --data {dir}/good --tokenizer byte --steps 1 --metrics {dir}/link_to_the_trace --trace "
     "{dir}/trace_to_be.json", "--metrics and --trace both name {dir}/link_to_the_trace", 1},
    // ... or whose target lies inside a checkpoint: the metrics were written into it.
    {"metrics_through_a_link_to_nothing_in_a_checkpoint",
     "train --data {dir}/good --tokenizer byte --steps 1 --metrics {dir}/link_to_nothing_in_checkpoint",
     "--metrics {dir}/link_to_nothing_in_checkpoint lies inside the checkpoint {dir}/model/step_00000001", 1},
    // Two hard links to one file: the run trained, wrote its metrics over the file, then failed on the trace.
    {"trace_and_metrics_in_one_file_of_two_names",
     "train --data {dir}/good --tokenizer byte --steps 1 --metrics {dir}/text_again.txt --trace {dir}/text.txt "
     "--overwrite", "--metrics and --trace both name {dir}/text_again.txt: give each output its own path", 1},
    {"trace_into_the_checkpoint_folder",
     "train --data {dir}/good --tokenizer byte --steps 1 --ckpt-dir {dir}/ckpt_out --trace {dir}/ckpt_out/index.json",
     "--trace {dir}/ckpt_out/index.json lies inside --ckpt-dir {dir}/ckpt_out, which this run writes", 1},
    {"trace_of_an_earlier_run", "train --data {dir}/good --tokenizer byte --steps 1 --trace {dir}/old_metrics.jsonl",
     "trace file {dir}/old_metrics.jsonl already exists (9 bytes; an earlier run's?)", 1},
    {"bench_trace_of_an_earlier_run",
     "bench --model gpt2-micro --batch 2 --seq 16 --iters 3 --trace {dir}/old_metrics.jsonl",
     "trace file {dir}/old_metrics.jsonl already exists (9 bytes; an earlier run's?)", 1},
    {"bench_overwrite_without_a_trace", "bench --model gpt2-micro --batch 2 --seq 16 --iters 3 --overwrite",
     "--overwrite requires --trace", 2},
    {"tune_over_a_token_shard",
     "tune --model gpt2-micro --tokenizer byte --batch 8 --seq 16 --out {dir}/good/train.bin --overwrite",
     "--out {dir}/good/train.bin is a token shard: writing it would destroy it, --overwrite or not", 1},
    {"tune_over_its_machine_profile",
     "tune --model gpt2-micro --tokenizer byte --batch 8 --seq 16 --out {dir}/machines/local.toml --overwrite",
     "--out {dir}/machines/local.toml is a machine profile: writing it would destroy it, --overwrite or not", 1,
     "AXONN_MACHINES_DIR={dir}/machines"},
    // The default file holding another job's tuned grid: the message named only --overwrite, which would lose it.
    {"tune_over_another_jobs_tuned_grid", "tune --model gpt2-micro --tokenizer byte --batch 8 --seq 16",
     "{dir}/machines_tuned/tuned-grid.json holds the grid `axonn tune` measured for another job (batch 8, sequence "
     "64, 1 rank of gpt2-tiny), which `--grid auto` takes for that job: tune this one into a file of its own with "
     "--out FILE", 1, "AXONN_MACHINES_DIR={dir}/machines_tuned"},
    {"tune_into_a_folder", "tune --model gpt2-micro --tokenizer byte --batch 8 --seq 16 --out {dir}/empty",
     "--out {dir}/empty is a folder: name a file such as {dir}/empty/tuned-grid.json",1},
    {"plan_plot_over_a_file", "plan --weak-scaling gpt-5b:8,gpt-10b:16 --batch 8 --plot {dir}/text.txt",
     "plot {dir}/text.txt already exists", 1},
    // Written whole and renamed into place, these outputs would replace a device or a FIFO: refused even with
    // --overwrite (a link to /dev/null stands for the device: were it not refused, only the link would go).
    {"plan_plot_over_a_fifo", "plan --weak-scaling gpt-5b:8,gpt-10b:16 --batch 8 --plot {dir}/fifo",
     "plot {dir}/fifo is a FIFO (named pipe), not a regular file: writing it would replace it", 1},
    {"plan_plot_over_a_device",
     "plan --weak-scaling gpt-5b:8,gpt-10b:16 --batch 8 --plot {dir}/null_link --overwrite",
     "plot {dir}/null_link is a character device, not a regular file", 1},
    {"tune_over_a_device",
     "tune --model gpt2-micro --tokenizer byte --batch 8 --seq 16 --out {dir}/null_link --overwrite",
     "grid file {dir}/null_link is a character device", 1},
    {"prepare_over_a_fifo", "prepare --input {dir}/text.txt --out {dir}/fifo_data --tokenizer byte --overwrite",
     "token shard {dir}/fifo_data/train.bin is a FIFO (named pipe), not a regular file", 1},
    {"bench_trace_over_a_device",
     "bench --model gpt2-micro --batch 2 --seq 16 --iters 3 --trace {dir}/null_link --overwrite",
     "trace file {dir}/null_link is a character device, not a regular file", 1},
    {"calibrate_over_a_fifo", "calibrate --quick --out {dir}/fifo --overwrite",
     "machine profile {dir}/fifo is a FIFO (named pipe), not a regular file", 1},
    {"plan_overwrite_without_a_plot", "plan --model gpt-5b --gpus 8 --batch 8 --overwrite",
     "--overwrite requires --weak-scaling", 2},
    {"calibrate_over_a_file", "calibrate --quick --out {dir}/text.txt",
     "machine profile {dir}/text.txt already exists", 1},
    {"calibrate_into_a_folder", "calibrate --quick --out {dir}/empty",
     "--out {dir}/empty is a folder: name a file such as {dir}/empty/local.toml",1},
    {"plan_plot_without_weak_scaling", "plan --model gpt-5b --gpus 8 --batch 8 --plot {dir}/plan.png",
     "--plot requires --weak-scaling", 2},
    // A folder holding both a Hugging Face model and checkpoints is ambiguous: import refuses to read one, and
    // neither import nor train writes checkpoints into a model's folder, or (import) beside another run's.
    {"import_from_a_folder_with_checkpoints", "import {dir}/hf_and_checkpoints --out {dir}/imported_new",
     "DIR {dir}/hf_and_checkpoints holds both a Hugging Face model and axonn checkpoints", 1},
    {"import_into_a_hugging_face_folder",
     "import {dir}/hf_and_checkpoints/hf_only --out {dir}/hf_and_checkpoints/hf_only",
     "--out {dir}/hf_and_checkpoints/hf_only holds a Hugging Face model", 1},
    {"import_beside_another_runs_checkpoints", "import {dir}/hf_and_checkpoints/hf_only --out {dir}/model --overwrite",
     "--out {dir}/model holds checkpoints of another run (step_00000001)", 1},
    {"import_into_a_checkpoint",
     "import {dir}/hf_and_checkpoints/hf_only --out {dir}/model/step_00000001",
     "--out {dir}/model/step_00000001 is the checkpoint {dir}/model/step_00000001: a --keep pruning would delete it",
     1},
    {"checkpoints_into_a_hugging_face_folder",
     "train --data {dir}/good --tokenizer byte --ckpt-dir {dir}/hf_and_checkpoints/hf_only",
     "--ckpt-dir {dir}/hf_and_checkpoints/hf_only holds a Hugging Face model", 1},
    // A folder named as a checkpoint that is not one would be deleted by a save of its step or a pruning.
    {"checkpoints_beside_a_foreign_step_folder",
     "train --data {dir}/good --tokenizer byte --steps 3 --ckpt-dir {dir}/foreign_steps",
     "--ckpt-dir {dir}/foreign_steps holds step_00000003, which is named as a checkpoint but is not one", 1},
    {"import_over_a_foreign_step_folder", "import {dir}/hf_and_checkpoints/hf_only --out {dir}/foreign_step_zero "
                                          "--overwrite",
     "--out {dir}/foreign_step_zero holds step_00000000, which is named as a checkpoint but is not one", 1},
    {"study_over_a_fifo", "memorization study --sizes XS --buckets 1 --out {dir}/fifo_data --overwrite",
     "the folder {dir}/fifo_data for the results (--out) holds train.bin, which is a FIFO (named pipe)", 1},
    // Whose step 0 it is cannot be told (its index is no checkpoint's): never replaced, --overwrite or not.
    {"import_over_an_unreadable_step_zero", "import --format hf {dir}/empty --out {dir}/imported_before --overwrite",
     "--out {dir}/imported_before holds a checkpoint of step 0 ({dir}/imported_before/step_00000000) whose index "
     "cannot be read, so whose it is is unknown and an import never replaces it", 1},
    // A config.json without its weights: named as an incomplete model folder, not as a Llama axonn does not read
    // (import) or no checkpoint (generate, --init-from).
    {"import_a_config_without_weights", "import --format hf {dir}/config_only --out {dir}/config_only_imported",
     "{dir}/config_only holds a Hugging Face config.json but no weights (model.safetensors or "
     "model.safetensors.index.json): the model folder is incomplete", 1},
    {"generate_from_a_config_without_weights", "generate --model-dir {dir}/config_only --prompt hi --tokenizer byte",
     "{dir}/config_only holds a Hugging Face config.json but no weights", 1},
    {"init_from_a_config_without_weights", "train --data {dir}/good --tokenizer byte --init-from {dir}/config_only",
     "{dir}/config_only holds a Hugging Face config.json but no weights", 1},
    {"export_into_the_checkpoint_folder", "export {dir}/model {dir}/model",
     "OUT {dir}/model holds axonn checkpoints (the checkpoint step_00000001)", 1},
    {"export_into_a_checkpoint", "export {dir}/model {dir}/model/step_00000001",
     "OUT {dir}/model/step_00000001 is the checkpoint {dir}/model/step_00000001", 1},
    {"export_over_an_earlier_export", "export {dir}/model {dir}/hf_and_checkpoints/hf_only",
     "already holds a Hugging Face model (an earlier export?)", 1},
    {"init_from_a_folder_of_both", "train --data {dir}/good --tokenizer byte --init-from {dir}/hf_and_checkpoints",
     "--init-from {dir}/hf_and_checkpoints holds both a Hugging Face model and axonn checkpoints (the checkpoint "
     "step_00000002)", 1},
    {"generate_from_a_folder_of_both", "generate --model-dir {dir}/hf_and_checkpoints --prompt hi --tokenizer byte",
     "--model-dir {dir}/hf_and_checkpoints holds both a Hugging Face model", 1},
    {"init_from_another_model", "train --data {dir}/good --tokenizer byte --init-from {dir}/model --model gpt2-tiny",
     "--init-from {dir}/model/step_00000001 is not the model that --model and the shape options ask for: heads 8 "
     "(here 4)",
     2},
    {"init_from_with_other_layers",
     "train --data {dir}/good --tokenizer byte --init-from {dir}/model --model gpt2-micro --n-layer 7",
     "layers 2 (here 7)", 2},
    {"init_from_with_a_shape_option_alone",
     "train --data {dir}/good --tokenizer byte --init-from {dir}/model --n-layer 3",
     "--init-from {dir}/model/step_00000001 is not the model that the shape options ask for: layers 2 (here 3); "
     "drop them",
     2},
    {"new_data_without_resume", "train --data {dir}/good --tokenizer byte --new-data",
     "--new-data goes with --resume", 2},
    {"metrics_is_the_validation_data",
     "train --data {dir}/good --tokenizer byte --metrics {dir}/good/val.bin --overwrite",
     "--metrics {dir}/good/val.bin is also an input of this run", 1},
    {"metrics_under_a_file", "train --data {dir}/good --tokenizer byte --metrics {dir}/text.txt/m.jsonl",
     "cannot create the folder {dir}/text.txt for the metrics file: a part of that path is a file", 1},
    {"metrics_is_a_link_loop", "train --data {dir}/good --tokenizer byte --metrics {dir}/loop",
     "is a loop of symbolic links", 1},
    {"data_is_a_link_loop", "train --data {dir}/loop --tokenizer byte",
     "token shard {dir}/loop is a loop of symbolic "
     "links",
     1},
    {"data_is_a_fifo", "train --data {dir}/fifo_data --tokenizer byte", "is a FIFO (named pipe), not a regular file",
     1},
    {"config_is_a_fifo", "train --data {dir}/good --config {dir}/fifo", "config file {dir}/fifo is a FIFO", 2},
    {"config_is_a_folder", "train --data {dir}/good --config {dir}/empty", "config file {dir}/empty is a folder", 2},
    {"config_syntax_error", "train --data {dir}/good --config {dir}/syntax.toml",
     "syntax.toml:2:6: config file is "
     "not valid TOML",
     2},
    {"config_duplicate_key", "train --data {dir}/good --config {dir}/duplicate.toml", "duplicate.toml:2:", 2},
    {"config_string_for_a_switch", "train --data {dir}/good --config {dir}/yes_flag.toml",
     "yes_flag.toml:1:21: 'debug-collectives' is a switch and must be true or false, not a string", 2},
    // TOML's inf and nan, which the command line refuses as no number, were passed on as "--lr inf" without the
    // file's name and line.
    {"config_infinite_number", "train --data {dir}/good --config {dir}/infinite.toml",
     "infinite.toml:1:6: 'lr' is inf: give a finite decimal number", 2},
    // toml++ read both as 0 without a word; the second, after a key of two-byte characters, is found by its column.
    {"config_number_below_doubles", "train --data {dir}/good --config {dir}/underflow.toml",
     "underflow.toml:1:6: 1e-999 is too small for a double (it would read as 0): write 0 if 0 is meant", 2},
    {"config_number_below_doubles_in_array", "train --data {dir}/good --config {dir}/underflow_in_array.toml",
     "underflow_in_array.toml:2:19: 2.5E-400 is too small for a double", 2},
    {"config_not_a_number", "train --data {dir}/good --config {dir}/not_a_number.toml",
     "not_a_number.toml:1:16: 'weight-decay' is nan: give a finite decimal number", 2},
    {"config_string_for_a_number", "train --data {dir}/good --config {dir}/typed.toml",
     "typed.toml:1:9: 'steps' must be an integer, not a string", 2},
    {"config_section", "train --data {dir}/good --config {dir}/section.toml", "'train' is a section", 2},
    {"too_many_threads", "train --data {dir}/good --tokenizer byte --threads 20000", "--threads 20000 is outside", 2},
    {"bench_too_many_threads", "bench --model gpt2-micro --threads 100000", "--threads 100000 is outside", 2},
    {"plan_int_max_devices", "plan --model gpt-5b --gpus 2147483647 --batch 8", "more than the 1048576 devices", 2},
    {"plan_highly_composite_devices", "plan --model gpt-5b --gpus 735134400 --batch 8 --explain --json",
     "--gpus 735134400 is more than", 2},
    {"plan_zero_rows", "plan --model gpt-5b --gpus 8 --batch 8 --top 0", "--top must be at least 1", 2},
    {"plan_without_devices", "plan --model gpt-5b --batch 8", "--gpus is required (or --weak-scaling", 2},
    {"weak_scaling_of_one_point", "plan --weak-scaling gpt-5b:8 --batch 8", "needs two points at least", 2},
    {"weak_scaling_without_devices", "plan --weak-scaling gpt-5b,gpt-10b:16 --batch 8",
     "--weak-scaling entry 'gpt-5b' is not MODEL:DEVICES", 2},
    {"weak_scaling_of_an_unknown_model", "plan --weak-scaling gpt-5b:8,gpt-7b:16 --batch 8", "gpt-7b", 2},
    {"weak_scaling_to_a_fractional_batch", "plan --weak-scaling gpt-5b:8,gpt-10b:12 --batch 3",
     "does not scale to a whole batch on 12", 2},
    {"weak_scaling_and_devices", "plan --gpus 8 --weak-scaling gpt-5b:8,gpt-10b:16 --batch 8", "excludes", 2},
    {"weak_scaling_batch_of_an_unknown_kind",
     "plan --weak-scaling gpt-5b:8,gpt-10b:16 --batch 8 --weak-scaling-batch growing", "--weak-scaling-batch", 2},
    {"weak_scaling_batch_without_a_series", "plan --gpus 8 --model gpt-5b --batch 8 --weak-scaling-batch fixed",
     "--weak-scaling-batch requires --weak-scaling", 2},
    {"plan_vanishing_bandwidth", "plan --model gpt-5b --gpus 8 --batch 8 --machine {dir}/slow.toml",
     "key 'nic_bandwidth' = 1e-300 is outside the range a machine can have", 1},
    {"model_wider_than_any", "train --data {dir}/good --tokenizer byte --n-embd 2000000000",
     "--n-embd (n_embd, the model's width) must lie in 1..131072", 2},
    {"model_deeper_than_any", "train --data {dir}/good --tokenizer byte --n-layer 100000000",
     "--n-layer (n_layer) must lie in 1..4096", 2},
    {"shard_replaced_during_the_run",
     "train --data {dir}/replaced --tokenizer byte --steps 100000 --seq 8 --metrics {dir}/replaced.jsonl",
     "token shard {dir}/replaced/train.bin changed while this run was reading it", 1,
     "(for i in $(seq 600); do [ -s {dir}/replaced.jsonl ] && break; sleep 0.1; done; "
     "cp {dir}/wide.bin {dir}/replaced/train.bin) &",
     true},
    {"micro_batch_not_dividing", "train --data {dir}/good --tokenizer byte --micro-batch 3",
     "--micro-batch 3 does not divide the 4 sequences of each data x z replica", 2},
    {"bench_micro_batch_not_dividing", "bench --model gpt2-micro --batch 4 --micro-batch 3",
     "--micro-batch 3 does not divide", 2},
    {"negative_logit_rows", "bench --model gpt2-micro --logit-rows -3",
     "--logit-rows: must be 0 (all rows at once) or a number of token rows, got -3", 2},
    {"logit_rows_not_a_number", "train --data {dir}/good --tokenizer byte --logit-rows many",
     "--logit-rows many: write a whole number in decimal digits", 2},
    {"unknown_recompute", "train --data {dir}/good --tokenizer byte --recompute sometimes",
     "--recompute: 'sometimes' is not a choice: use layer or none", 2},
    {"unknown_vocab_split", "plan --model gpt2-small --gpus 8 --batch 8 --vocab-split x",
     "--vocab-split: 'x' is not a choice: use auto or xy or y", 2},
    {"unknown_overlap", "train --data {dir}/good --tokenizer byte --overlap maybe",
     "--overlap: 'maybe' is not a choice: use off or on", 2},
    {"unknown_precision", "train --data {dir}/good --tokenizer byte --precision bf17",
     "--precision: bf17 not in {fp32,bf16}", 2},
    {"bench_unknown_precision", "bench --model gpt2-micro --precision fp16", "--precision: fp16 not in {fp32,bf16}", 2},
    {"unknown_grad_comm", "train --data {dir}/good --tokenizer byte --grad-comm fp16",
     "--grad-comm: fp16 not in {fp32,bf16,bf16-scatter}", 2},
    {"unknown_backend", "train --data {dir}/good --tokenizer byte --backend gpu", "--backend: gpu not in {cpu,cuda}",
     2},
#ifndef AXONN_CUDA_BUILD  // a CUDA build has the backend
    {"cuda_backend_not_built", "bench --model gpt2-micro --batch 2 --backend cuda",
     "unknown backend 'cuda': this build has 'cpu' (build with -DAXONN_CUDA=ON for 'cuda')", 2},
#endif
    {"plan_plot_into_a_folder", "plan --weak-scaling gpt-5b:8,gpt-10b:16 --batch 8 --plot {dir}/empty",
     "--plot {dir}/empty is a folder: name a file such as {dir}/empty/weak-scaling.png",1},
    {"trace_under_a_file", "train --data {dir}/good --tokenizer byte --trace {dir}/text.txt/trace.json",
     "--trace {dir}/text.txt/trace.json: {dir}/text.txt is not a folder", 1},
    {"trace_in_a_missing_folder", "train --data {dir}/good --tokenizer byte --trace {dir}/nowhere/trace.json",
     "the folder {dir}/nowhere does not exist", 1},
    {"trace_is_a_folder", "train --data {dir}/good --tokenizer byte --trace {dir}/empty",
     "--trace {dir}/empty is a folder: name a file such as {dir}/empty/trace.json", 1},
    // Everything a run reads is an input that no output may be, even with --overwrite: the config file, the grid
    // file, and the folder of the checkpoint it starts from.
    {"metrics_is_the_config_file", "train --config {dir}/run.toml --metrics {dir}/run.toml --overwrite",
     "--metrics {dir}/run.toml is also an input of this run", 1},
    // Every command's outputs, not train's alone: the config file was replaced by the profile, the plot, the grid
    // file, the trace, or (inside the folder written) the Hugging Face config or the study's results.
    // An output folder that cannot be made (/proc takes no new folder, whoever asks) was found only when the
    // results were written, after the training and the timing: refused now before any work, which a second of CPU
    // time would not finish (`ulimit -t 1`: the study trains for seconds, tune measured 2.6 s of CPU).
    // Too few file descriptors to start: a segmentation fault inside MPI_Init (ulimit -n 10) or Open MPI's abort
    // (12), for any command, even one that needs no MPI; at 16 a run's checkpoint lock failed with a bare "Too many
    // open files". Refused before MPI starts, naming the limit. (prlimit, not the shell's ulimit: dash keeps the
    // descriptors its redirections save at 10 and above, and failed before axonn ran.)
    {"open_file_limit_that_crashed_mpi", "tokenize --tokenizer byte {dir}/text.txt", "this process may have at most 10 "
     "files open (ulimit -n 10), fewer than the 64 a command needs (MPI's start-up alone takes about a dozen): raise "
     "the limit (ulimit -n 1024)", 1, "prlimit --nofile=10"},
    {"open_file_limit_below_what_a_run_needs",
     "train --data {dir}/good --tokenizer byte --model gpt2-micro --steps 1 --ckpt-dir {dir}/few_files",
     "(ulimit -n 16), fewer than the 64 a command needs", 1, "prlimit --nofile=16"},
    {"study_out_that_cannot_be_made", "memorization study --quick --out /proc/axonn_nowhere/results",
     "/proc/axonn_nowhere/results", 1, "ulimit -t 1;"},
    // The plan command suggested had no --model: plan explained its own default model, not the job's; then it
    // explained the preset's vocabulary (GPT-2's), not the job's tokenizer's.
    {"tune_with_no_grid_that_fits", "tune --model gpt-640b --tokenizer byte --batch 1 --seq 8 --top 1 --out "
     "{dir}/tg.json", "no grid of 1 ranks fits this model and batch: run `axonn plan --model gpt-640b --vocab 257 "
     "--machine local --gpus 1 --batch 1 --seq 8 --explain` to see why", 2, "AXONN_MACHINES_DIR={dir}/machines"},
    // And it named a machine profile that the job had measured without writing it: plan refused it.
    {"tune_with_no_grid_that_fits_and_no_profile", "tune --model gpt-640b --tokenizer byte --n-layer 2 --batch 1 "
     "--seq 8 --top 1 --out {dir}/tg.json", "no grid of 1 ranks fits this model and batch: write this machine's "
     "profile, which this command measured without writing, with `mpirun -np 1 axonn calibrate --out "
     "{dir}/no_machines/local.toml`, then run `axonn plan --model gpt-640b --n-layer 2 --vocab 257 --machine local "
     "--gpus 1 --batch 1 --seq 8 --explain` to see why", 2, "AXONN_MACHINES_DIR={dir}/no_machines"},
    // ... and left out the job's step options, which decide which grids fit: a micro-batch of 3 that divides no
    // replica's batch of 4 excluded every grid, which plan without it then found to fit.
    {"tune_with_a_micro_batch_no_grid_fits", "tune --model gpt2-micro --tokenizer byte --batch 4 --seq 8 "
     "--micro-batch 3 --recompute layer --precision bf16 --grid-order data,z,y,x --top 1 --out {dir}/tg.json",
     "run `axonn plan --model gpt2-micro --vocab 257 --machine local --gpus 1 --batch 4 --seq 8 --recompute layer "
     "--precision bf16 --micro-batch 3 --grid-order data,z,y,x --explain` to see why", 2,
     "AXONN_MACHINES_DIR={dir}/machines"},
    {"plan_negative_vocabulary", "plan --model gpt-5b --gpus 8 --batch 8 --vocab -1",
     "--vocab must not be negative, got -1", 2},
    {"tune_out_in_a_folder_that_cannot_be_made",
     "tune --model gpt2-micro --tokenizer byte --batch 8 --seq 16 --top 1 --out /proc/axonn_nowhere/grid.json",
     "/proc/axonn_nowhere", 1, "ulimit -t 1; AXONN_MACHINES_DIR={dir}/machines"},
    {"calibrate_out_is_the_config_file", "calibrate --config {dir}/quick.toml --out {dir}/quick.toml --overwrite",
     "--out {dir}/quick.toml is also an input of this run", 1},
    {"plot_is_the_config_file",
     "plan --config {dir}/plan_batch.toml --weak-scaling gpt2-micro:1,gpt2-micro:2 --machine perlmutter "
     "--plot {dir}/plan_batch.toml --overwrite",
     "--plot {dir}/plan_batch.toml is also an input of this run", 1},
    {"tune_out_is_the_config_file",
     "tune --config {dir}/tune.toml --model gpt2-micro --tokenizer byte --batch 8 --seq 16 --out {dir}/tune.toml "
     "--overwrite",
     "--out {dir}/tune.toml is also an input of this run", 1},
    {"bench_trace_is_the_config_file", "bench --config {dir}/bench.toml --model gpt2-micro --trace {dir}/bench.toml "
     "--overwrite", "--trace {dir}/bench.toml is also an input of this run", 1},
    {"export_into_the_config_files_folder",
     "export --config {dir}/export_config/config.json {dir}/model {dir}/export_config --overwrite",
     "--config {dir}/export_config/config.json lies inside OUT {dir}/export_config, which this command writes into",
     1},
    {"study_into_the_config_files_folder",
     "memorization study --config {dir}/study_config/results.json --out {dir}/study_config --overwrite",
     "--config {dir}/study_config/results.json lies inside --out {dir}/study_config, which this command writes "
     "into", 1},
    // A checkpoint renamed by hand, named through its folder (as --ckpt-dir it was refused, as --resume taken).
    {"resume_from_a_folder_whose_checkpoint_was_renamed",
     "train --data {dir}/good --tokenizer byte --model gpt2-micro --steps 20 --resume {dir}/renamed",
     "checkpoint {dir}/renamed/step_00000009 is named for step 9 but holds step 1 (renamed by hand?): give it its "
     "step's name, step_00000001", 1},
    {"export_a_renamed_checkpoint", "export {dir}/renamed/step_00000009 {dir}/renamed_export",
     "checkpoint {dir}/renamed/step_00000009 is named for step 9 but holds step 1", 1},
    {"resume_a_renamed_rolled_back_checkpoint",
     "train --data {dir}/good --tokenizer byte --model gpt2-micro --steps 20 "
     "--resume {dir}/renamed/step_00000007.rolled-back-1700000000",
     "checkpoint {dir}/renamed/step_00000007.rolled-back-1700000000 is named for step 7 but holds step 1", 1},
    // A checkpoint whose COMPLETE is no marker is damaged (not "renamed by hand"), and said so with the size of
    // one too long to read.
    {"train_into_a_folder_whose_checkpoints_marker_is_no_marker",
     "train --data {dir}/good --tokenizer byte --model gpt2-micro --steps 20 --ckpt-dir {dir}/unmarked",
     "--ckpt-dir {dir}/unmarked holds step_00000001, a checkpoint whose COMPLETE is not the marker a save writes (it "
     "begins \"{\"step\": 1}\"): the checkpoint is damaged; move it out of the folder", 1},
    {"resume_a_checkpoint_whose_marker_is_no_marker",
     "train --data {dir}/good --tokenizer byte --model gpt2-micro --steps 20 --resume {dir}/unmarked/step_00000001",
     "checkpoint {dir}/unmarked/step_00000001 is damaged: its COMPLETE marker reads \"{\"step\": 1}\", but its "
     "index is of step 1", 1},
    {"resume_a_checkpoint_whose_marker_is_too_long",
     "train --data {dir}/good --tokenizer byte --model gpt2-micro --steps 20 --resume {dir}/overlong/step_00000001",
     "checkpoint {dir}/overlong/step_00000001 is damaged: its COMPLETE holds 3000 bytes, not the marker a save "
     "writes", 1},
    // The lock of a checkpoint folder, which a running training holds, is no output's, --overwrite or not.
    // A checkpoint folder named as the file: named as the checkpoint, not told to name a file inside it.
    {"trace_naming_a_checkpoint", "train --data {dir}/good --tokenizer byte --steps 1 --trace {dir}/model/step_00000001",
     "--trace {dir}/model/step_00000001 is the checkpoint {dir}/model/step_00000001", 1},
    {"plot_naming_a_checkpoint",
     "plan --weak-scaling gpt2-micro:1,gpt2-micro:2 --batch 8 --machine perlmutter --plot {dir}/model/step_00000001",
     "--plot {dir}/model/step_00000001 is the checkpoint {dir}/model/step_00000001", 1},
    {"trace_onto_a_checkpoint_folders_lock",
     "train --data {dir}/good --tokenizer byte --steps 1 --trace {dir}/model/.lock --overwrite",
     "--trace {dir}/model/.lock is the lock of the checkpoint folder {dir}/model: choose another path", 1},
    {"metrics_through_a_link_to_a_checkpoint_folders_lock",
     "train --data {dir}/good --tokenizer byte --steps 1 --metrics {dir}/link_to_lock --overwrite",
     "--metrics {dir}/link_to_lock is the lock of the checkpoint folder {dir}/model", 1},
    // A config file inside --ckpt-dir, which a --keep pruning deletes with the checkpoint holding it.
    {"config_inside_the_checkpoint_folder",
     "train --data {dir}/good --tokenizer byte --ckpt-dir {dir}/config_in_ckpt --config {dir}/config_in_ckpt/run.toml",
     "the input {dir}/config_in_ckpt/run.toml lies inside --ckpt-dir {dir}/config_in_ckpt, which this run's saves "
     "and prunings change", 1},
    {"calibrate_onto_a_checkpoint_folders_lock", "calibrate --quick --out {dir}/model/.lock --overwrite",
     "--out {dir}/model/.lock is the lock of the checkpoint folder {dir}/model", 1},
    // The files --grid auto reads, replaced with --overwrite: the next --grid auto found no grid file.
    {"metrics_is_the_tuned_grid_that_grid_auto_reads",
     "train --data {dir}/good --tokenizer byte --model gpt2-micro --grid auto "
     "--metrics {dir}/machines_tuned/tuned-grid.json --overwrite",
     "--metrics {dir}/machines_tuned/tuned-grid.json is also an input of this run", 1,
     "AXONN_MACHINES_DIR={dir}/machines_tuned"},
    {"trace_is_the_profile_that_grid_auto_reads",
     "train --data {dir}/good --tokenizer byte --model gpt2-micro --grid auto --trace {dir}/machines/local.toml "
     "--overwrite",
     "--trace {dir}/machines/local.toml is also an input of this run", 1, "AXONN_MACHINES_DIR={dir}/machines"},
    {"trace_is_the_grid_file",
     "train --data {dir}/good --tokenizer byte --grid {dir}/grid.json --trace {dir}/grid.json --overwrite",
     "--trace {dir}/grid.json is also an input of this run", 1},
    // The same files when this run does not read them: only tune --out and calibrate --out replace them (a run with
    // a fixed grid replaced the profile, or a tuned grid, with its metrics, and a plot replaced a profile).
    {"metrics_onto_a_grid_file_this_run_does_not_read",
     "train --data {dir}/good --tokenizer byte --model gpt2-micro --metrics {dir}/machines_tuned/tuned-grid.json "
     "--overwrite",
     "--metrics {dir}/machines_tuned/tuned-grid.json is a grid file from `axonn tune`: writing it would destroy it, "
     "--overwrite or not; choose another path", 1},
    {"trace_onto_a_profile_this_run_does_not_read",
     "train --data {dir}/good --tokenizer byte --model gpt2-micro --trace {dir}/machines_tuned/local.toml --overwrite",
     "--trace {dir}/machines_tuned/local.toml is a machine profile: writing it would destroy it, --overwrite or not",
     1},
    {"plot_onto_a_profile",
     "plan --weak-scaling gpt-5b:8,gpt-10b:16 --batch 8 --plot {dir}/machines_tuned/local.toml --overwrite",
     "--plot {dir}/machines_tuned/local.toml is a machine profile: writing it would destroy it, --overwrite or not",
     1},
    {"metrics_linked_to_the_initial_checkpoint",
     "train --data {dir}/good --tokenizer byte --model gpt2-micro --init-from {dir}/model/step_00000001 "
     "--metrics {dir}/linked_index.json --overwrite",
     "--metrics {dir}/linked_index.json is also {dir}/model/step_00000001/index.json", 1},
    {"plot_over_its_machine_profile",
     "plan --weak-scaling gpt-5b:8,gpt-10b:16 --batch 8 --machine {dir}/slow.toml --plot {dir}/slow.toml --overwrite",
     "--plot {dir}/slow.toml is also an input of this run", 1},
    {"export_over_a_lone_config", "export {dir}/model {dir}/lone_config",
     "Hugging Face config {dir}/lone_config/config.json already exists", 1},
    {"metrics_inside_the_initial_checkpoint",
     "train --data {dir}/good --tokenizer byte --model gpt2-micro --init-from {dir}/model "
     "--metrics {dir}/model/step_00000001/metrics.jsonl",
     "--metrics {dir}/model/step_00000001/metrics.jsonl lies inside", 1},
    {"trace_is_the_data", "train --data {dir}/good --tokenizer byte --trace {dir}/good/train.bin",
     "--trace {dir}/good/train.bin is also an input", 1},
    // No silent wrong answer.
    {"diverging_loss", "train --data {dir}/good --tokenizer byte --steps 3 --lr 1e6 --eval-every 1",
     "the model diverged; lower --lr", 1, "", true},
    {"diverging_at_the_second_step", "train --data {dir}/good --tokenizer byte --steps 5 --lr 1e30 --sample-tokens 0",
     "the training loss became NaN at step 1 (the progress bar's 2/5; learning rate", 1, "", true},
    // inf and nan are not written in decimal; strtod read a decimal number too large for a double as infinite.
    {"infinite_weight_decay", "train --data {dir}/good --tokenizer byte --weight-decay 1e999",
     "--weight-decay 1e999 is too large a number (of magnitude at most about 3.4e38): give a smaller one", 2},
    // ... and one too small as 0: "--lr must be positive, got 0"; the options keep floats: 1e39 and 1e-50 too.
    {"lr_below_a_double", "train --data {dir}/good --tokenizer byte --lr 1e-400",
     "--lr 1e-400 is too small a number (of magnitude at least about 1.2e-38, or 0): give a larger one", 2},
    {"lr_beyond_a_float", "train --data {dir}/good --tokenizer byte --lr 1e39",
     "--lr 1e39 is too large a number (of magnitude at most about 3.4e38)", 2},
    {"temperature_below_a_float", "train --data {dir}/good --tokenizer byte --temperature 1e-50",
     "--temperature 1e-50 is too small a number", 2},
    {"nan_temperature", "train --data {dir}/good --tokenizer byte --temperature nan",
     "--temperature nan is not a number in decimal", 2},
    {"negative_temperature", "train --data {dir}/good --tokenizer byte --temperature -1",
     "--temperature must be finite and not negative, got -1", 2},
    {"generate_greedy_with_a_temperature",
     "generate --model-dir {dir}/model --tokenizer byte --prompt hi --greedy --temperature 0.5",
     "--greedy excludes --temperature", 2},
    {"negative_top_k", "train --data {dir}/good --tokenizer byte --top-k -5", "--top-k must not be negative", 2},
    {"endless_sample", "train --data {dir}/good --tokenizer byte --sample-tokens 1000000000",
     "--sample-tokens must lie in 0..100000", 2},
    {"endless_evaluation", "train --data {dir}/good --tokenizer byte --eval-batches 1000000000",
     "--eval-batches 1000000000 is more than the validation data holds", 2},
    {"data_of_another_tokenizer", "train --data {dir}/gpt2_data --tokenizer byte",
     "was prepared with the gpt2 tokenizer (50257 ids) but this run uses byte (257 ids)", 1},
    {"train_and_val_of_different_runs", "train --data {dir}/mixed --tokenizer byte",
     "come from different runs of `axonn prepare`", 1},
    {"validation_data_also_trained_on",
     "train --data {dir}/good/train.bin --val-data {dir}/good/train.bin "
     "--tokenizer byte",
     "is both training and validation data", 1},
    {"binary_input", "prepare --input {dir}/binary.dat --out {dir}/out --tokenizer byte",
     "is not UTF-8 text (byte 0x00 at offset 3)", 1},
    // Messages that point at the real problem.
    {"unknown_top_level_option", "--bogus", "unknown option '--bogus'", 2},
    // An option that the rest of the command line made do nothing was taken without a word.
    {"tokenizer_dir_with_the_byte_tokenizer", "train --data {dir}/good --tokenizer byte --tokenizer-dir {dir}/empty",
     "--tokenizer-dir names a folder of GPT-2's encoder.json and vocab.bpe, which --tokenizer byte does not read", 2},
    {"tokenizer_dir_with_llama3s_tokenizer", "tokenize --tokenizer llama3 --tokenizer-dir {dir}/empty {dir}/text.txt",
     "--tokenizer-dir names a folder of GPT-2's encoder.json and vocab.bpe, which --tokenizer llama3 does not read",
     2},
    // A group's options before its subcommand: a config file's keys were "unknown", an option was passed over and
    // the subcommand's required one reported, each pointing at the group's help, which lists no options.
    {"config_before_the_subcommand", "corpus --config {dir}/empty.toml janeausten --package {dir}/empty --out {dir}/c",
     "`axonn corpus` takes a subcommand before any option, as in `axonn corpus janeausten --config`", 2},
    {"option_before_the_subcommand", "memorization --sizes XS study --out {dir}/study",
     "`axonn memorization` takes a subcommand before any option", 2},
    {"missing_validation_data", "train --data {dir}/good --val-data {dir}/nowhere.bin --tokenizer byte",
     "--val-data {dir}/nowhere.bin does not exist", 1},
    {"prepare_over_an_earlier_pair", "prepare --input {dir}/text.txt --out {dir}/good --tokenizer byte",
     "token shard {dir}/good/train.bin already exists", 1},
    {"prepare_the_same_file_twice", "prepare --input {dir}/text.txt {dir}/./text.txt --out {dir}/out --tokenizer byte",
     "input {dir}/./text.txt is the same file as input {dir}/text.txt", 1},
    {"prepare_the_same_file_through_a_hard_link",
     "prepare --input {dir}/text.txt {dir}/text_again.txt --out {dir}/out --tokenizer byte",
     "input {dir}/text_again.txt is the same file as input {dir}/text.txt", 1},
    {"prepare_over_its_own_input",
     "prepare --input {dir}/text.txt --out {dir}/linked_out --tokenizer byte --overwrite",
     "input {dir}/text.txt is the file {dir}/linked_out/train.bin that this run writes", 1},
    {"prepare_fields_of_text", "prepare --input {dir}/text.txt --out {dir}/fields --tokenizer byte "
     "--prompt-field question", "--prompt-field and --response-field name the fields of prompt and response records "
     "(--format jsonl); text files have none: add --format jsonl, or drop them", 2},
    {"prepare_a_folder", "prepare --input {dir}/empty --out {dir}/out --tokenizer byte", "{dir}/empty is a folder", 1},
    {"prepare_a_fifo", "prepare --input {dir}/fifo --out {dir}/out --tokenizer byte", "{dir}/fifo is a FIFO", 1},
    {"prepare_a_kernel_file", "prepare --input /proc/cpuinfo --out {dir}/out --tokenizer byte",
     "/proc/cpuinfo is a file of the kernel", 1},
    {"ckpt_every_without_a_folder", "train --data {dir}/good --tokenizer byte --ckpt-every 5",
     "--ckpt-every and --keep need --ckpt-dir DIR", 2},
    {"ckpt_async_without_ckpt_every", "train --data {dir}/good --tokenizer byte --ckpt-dir {dir}/async --ckpt-async",
     "--ckpt-async writes the --ckpt-every checkpoints in the background: pass --ckpt-every N", 2},
    {"negative_keep", "train --data {dir}/good --tokenizer byte --ckpt-dir {dir}/ck --keep -1",
     "--keep must not be negative, got -1", 2},
    {"negative_gemm_rate", "train --data {dir}/good --tokenizer byte --gemm-rate -5",
     "--gemm-rate must be a GEMM rate from 0.001 to 1e9 GFLOP/s, got -5", 2},
    // An MFU of 4.8e300 followed.
    {"gemm_rate_of_nothing", "train --data {dir}/good --tokenizer byte --gemm-rate 1e-30",
     "--gemm-rate must be a GEMM rate from 0.001 to 1e9 GFLOP/s, got 1e-30", 2},
    {"gemm_rate_from_an_absurd_environment", "train --data {dir}/good --tokenizer byte --steps 1",
     "--gemm-rate must be a GEMM rate from 0.001 to 1e9 GFLOP/s, got 1e+20", 2, "AXONN_GEMM_RATE=1e20"},
    {"gemm_rate_nan", "train --data {dir}/good --tokenizer byte --gemm-rate nan",
     "--gemm-rate nan is not a number in decimal: write one such as 0.5 or 6e-4", 2},
    {"gemm_rate_not_a_number", "train --data {dir}/good --tokenizer byte --gemm-rate fast",
     "--gemm-rate fast is not a number in decimal: write one such as 0.5 or 6e-4 (see `axonn train --help`)", 2},
    {"gemm_rate_too_large", "train --data {dir}/good --tokenizer byte --gemm-rate 1e999",
     "--gemm-rate 1e999 is too large a number", 2},
    // strtod read hexadecimal (0x1p-4 was 0.0625) and a leading space (" 0.1" from a quoted shell variable).
    {"val_fraction_in_hex", "prepare --input {dir}/text.txt --out {dir}/hexfraction --val-fraction 0x1p-4",
     "--val-fraction 0x1p-4 is not a number in decimal: write one such as 0.5 or 6e-4 (see `axonn prepare "
     "--help`)", 2},
    {"val_fraction_after_a_space", "prepare --input {dir}/text.txt --out {dir}/spacefraction --val-fraction ' 0.1'",
     "--val-fraction  0.1 is not a number in decimal", 2},
    {"lr_with_an_empty_exponent", "train --data {dir}/good --tokenizer byte --lr 6e",
     "--lr 6e is not a number in decimal", 2},
    {"resume_and_init_from", "train --data {dir}/good --tokenizer byte --resume {dir}/a --init-from {dir}/b",
     "pass one of them", 2},
    {"resume_a_missing_checkpoint", "train --data {dir}/good --tokenizer byte --resume {dir}/nowhere",
     "checkpoint {dir}/nowhere does not exist", 1},
    {"resume_with_another_tokenizer",
     "train --data {dir}/good --model gpt2-micro --steps 3 --resume {dir}/model/step_00000001",
     "was trained with --tokenizer byte (a vocabulary of 257 tokens), and this run reads --tokenizer gpt2 (50257 "
     "tokens): pass --tokenizer byte", 1},
    {"resume_latest_without_a_folder", "train --data {dir}/good --tokenizer byte --resume latest",
     "--resume latest looks in --ckpt-dir", 2},
    {"resume_an_empty_folder", "train --data {dir}/good --tokenizer byte --resume {dir}/empty",
     "is neither a checkpoint", 1},
    {"init_from_a_text_file", "train --data {dir}/good --tokenizer byte --init-from {dir}/text.txt",
     "is neither a checkpoint", 1},
    {"checkpoint_folder_under_a_file", "train --data {dir}/good --tokenizer byte --ckpt-dir {dir}/text.txt/ckpt",
     "a part of that path is a file, not a folder", 1},
    {"tune_no_grid", "tune --model gpt2-micro --tokenizer byte --batch 8 --seq 16 --top 0",
     "--top must lie in [1, 64], got 0", 2},
    {"train_from_a_missing_grid_file", "train --data {dir}/good --tokenizer byte --grid {dir}/nowhere.json",
     "--grid {dir}/nowhere.json is neither a grid (data=D,z=Z,y=Y,x=X), auto, nor an existing grid file", 2},
    {"train_on_a_grid_written_as_a_product", "train --data {dir}/good --tokenizer byte --grid 2x2",
     "--grid 2x2 is neither a grid (data=D,z=Z,y=Y,x=X), auto, nor an existing grid file", 2},
    {"train_from_a_grid_file_that_is_not_one", "train --data {dir}/good --tokenizer byte --grid {dir}/text.txt",
     "is not a grid file (written by `axonn tune`)", 1},
    {"export_an_unknown_format", "export --format onnx {dir}/a {dir}/b", "unknown --format onnx", 2},
    {"export_an_unknown_dtype", "export --dtype f16 {dir}/model {dir}/b", "--dtype: f16 not in {f32,bf16}", 2},
    {"export_gpt2_in_bf16", "export --dtype bf16 {dir}/model {dir}/b",
     "--dtype bf16: a GPT-2 checkpoint is exported in f32 only", 2},
    {"import_a_folder_without_a_model", "import --format hf {dir}/empty --out {dir}/imported",
     "config.json does not exist", 1},
    {"tokenize_missing_file", "tokenize --tokenizer byte {dir}/nowhere.txt", "{dir}/nowhere.txt does not exist", 1},
    {"tokenize_ids_beyond_vocabulary", "tokenize --tokenizer byte --decode {dir}/wide_ids.json",
     "token id 300 is outside the byte tokenizer's vocabulary 0..256", 1},
    {"tokenize_decode_of_text", "tokenize --tokenizer byte --decode {dir}/text.txt",
     "{dir}/text.txt is not a JSON list of token ids (not valid JSON", 1},
    {"tokenize_decode_of_an_object", "tokenize --tokenizer byte --decode {dir}/object_ids.json",
     "{dir}/object_ids.json is not a JSON list of token ids (it is a JSON object)", 1},
    // Numbers beyond a double's range: nlohmann's out_of_range, which slipped past the parse_error handlers (found
    // by fuzz_llama3_tokenizer).
    {"tokenize_decode_of_a_huge_number", "tokenize --tokenizer byte --decode {dir}/huge_ids.json",
     "{dir}/huge_ids.json is not a JSON list of token ids (it holds a number too large for a double)", 1},
    {"tokenize_with_a_huge_number_in_tokenizer_json", "tokenize --tokenizer {dir}/huge_number {dir}/text.txt",
     "tokenizer file {dir}/huge_number/tokenizer.json is corrupt (it holds a number too large for a double)", 1},
    {"tokenize_with_a_huge_number_in_encoder_json", "tokenize --tokenizer-dir {dir}/huge_encoder {dir}/text.txt",
     "GPT-2 tokenizer file {dir}/huge_encoder/encoder.json is corrupt (it holds a number too large for a double)", 1},
    // Past int64's range the number is unsigned to nlohmann, and read as int64 it wrapped: "token id -1".
    {"tokenize_decode_of_the_largest_unsigned", "tokenize --tokenizer byte --decode {dir}/wrapping_ids.json",
     "is not a JSON list of token ids (element 0 is 18446744073709551615)", 1},
    {"tokenize_decode_of_a_word", "tokenize --tokenizer byte --decode {dir}/word_ids.json",
     "is not a JSON list of token ids (element 1 is \"two\")", 1},
    {"tokenize_unknown_tokenizer", "tokenize --tokenizer klingon {dir}/text.txt", "unknown tokenizer 'klingon'", 2},
    {"tokenize_folder_without_tokenizer_json", "tokenize --tokenizer {dir}/empty {dir}/text.txt",
     "tokenizer folder {dir}/empty holds no tokenizer.json", 2},
    {"tokenize_unsupported_tokenizer_json", "tokenize --tokenizer {dir}/wordpiece {dir}/text.txt",
     "{dir}/wordpiece/tokenizer.json is not supported (the model is WordPiece, not BPE)", 1},
    {"prepare_bad_fraction", "prepare --input {dir}/text.txt --out {dir}/out --tokenizer byte --val-fraction 1.5",
     "--val-fraction 1.5 is outside (0, 1)", 2},
    {"prepare_bad_record", "prepare --format jsonl --input {dir}/bad_records.jsonl --out {dir}/out --tokenizer byte",
     "{dir}/bad_records.jsonl line 2: not valid JSON", 1},
    {"prepare_record_missing_field",
     "prepare --format jsonl --input {dir}/no_response.jsonl --out {dir}/out --tokenizer byte",
     "{dir}/no_response.jsonl line 1: the record has no \"response\" field: add it, or name the field that holds it "
     "with --response-field",
     1},
    {"prepare_unknown_template",
     "prepare --format jsonl --input {dir}/records.jsonl --out {dir}/out --tokenizer byte --template chatml",
     "unknown --template 'chatml': use plain, alpaca or llama3", 2},
    {"prepare_llama3_template_with_gpt2s_tokenizer",
     "prepare --format jsonl --input {dir}/records.jsonl --out {dir}/out --tokenizer byte --template llama3",
     "--template llama3 writes <|begin_of_text|> as one special token, but the byte tokenizer reads it as plain text",
     2},
    {"generate_llama3_template_with_gpt2s_tokenizer",
     "generate --model-dir {dir}/model --tokenizer gpt2 --template llama3 --prompt hi",
     "--template llama3 is written with Llama 3's special tokens, which the gpt2 tokenizer reads as plain text", 2},
    {"prepare_unknown_format", "prepare --format csv --input {dir}/records.jsonl --out {dir}/out --tokenizer byte",
     "unknown --format csv", 2},
    {"prepare_empty_records", "prepare --format jsonl --input {dir}/empty.jsonl --out {dir}/out --tokenizer byte",
     "{dir}/empty.jsonl is empty", 1},
};

class CommandLineErrors : public ::testing::TestWithParam<BadInput> {
protected:
    static void SetUpTestSuite() {
        temp_dir_ = std::make_unique<testing::TempDir>("cli");
        dir_ = temp_dir_->path();
        fs::create_directories(dir_ / "good");
        fs::create_directories(dir_ / "empty");
        std::vector<std::int32_t> tokens(3000);
        for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(i * 7 % 256);
        write_token_shard(dir_ / "good" / "train.bin", tokens, 16);
        write_token_shard(dir_ / "good" / "val.bin", tokens, 16);
        tokens[10] = 300;  // fits 16 bits, but not the byte tokenizer's 257 ids
        write_token_shard(dir_ / "wide.bin", tokens, 16);
        fs::copy_file(dir_ / "good" / "train.bin", dir_ / "truncated.bin");
        fs::resize_file(dir_ / "truncated.bin", fs::file_size(dir_ / "truncated.bin") - 10);
        fs::copy_file(dir_ / "good" / "train.bin", dir_ / "corrupt.bin");
        std::fstream corrupt(dir_ / "corrupt.bin", std::ios::in | std::ios::out | std::ios::binary);
        corrupt.write("JUNK", 4);
        corrupt.close();
        std::ofstream(dir_ / "extra_key.toml") << "steps = 3\nbogus_key = 1\n";
        std::ofstream(dir_ / "text.txt") << "Some text to tokenize.\n";
        std::ofstream(dir_ / "wide_ids.json") << "[104, 300]";
        std::ofstream(dir_ / "object_ids.json") << "{\"ids\": 3}";
        std::ofstream(dir_ / "word_ids.json") << "[1, \"two\"]";
        std::ofstream(dir_ / "huge_ids.json") << "[1, 2E414]";
        std::ofstream(dir_ / "wrapping_ids.json") << "[18446744073709551615]";
        fs::create_directories(dir_ / "huge_number");
        std::ofstream(dir_ / "huge_number" / "tokenizer.json") << "{\"model\": {\"type\": \"BPE\", \"x\": 2E414}}";
        fs::create_directories(dir_ / "huge_encoder");
        std::ofstream(dir_ / "huge_encoder" / "encoder.json") << "{\"a\": 2E414}";
        std::ofstream(dir_ / "huge_encoder" / "vocab.bpe") << "#version: 0.2\n";
        fs::create_directories(dir_ / "wordpiece");
        std::ofstream(dir_ / "wordpiece" / "tokenizer.json") << "{\"model\": {\"type\": \"WordPiece\"}}";
        std::ofstream(dir_ / "docs.jsonl") << "{\"tokens\": [1, 2, 3, 4, 5, 6, 7, 8]}\n";
        std::ofstream(dir_ / "no_docs.jsonl") << "\n\n";
        std::ofstream(dir_ / "whitespace_prompts.txt") << "\n  \n\t\r\n";
        std::ofstream(dir_ / "text_docs.jsonl") << "{\"text\": \" the Devil's Dictionary\"}\n";
        std::ofstream(dir_ / "bad_docs.jsonl") << "{\"tokens\": [1, 2]}\n{oops\n";
        std::ofstream records(dir_ / "records.jsonl");
        for (int i = 0; i < 60; ++i) {
            records << "{\"prompt\": \"Count on from " << i << ".\", \"response\": \"" << i + 1 << "\"}\n";
        }
        records.close();
        std::ofstream(dir_ / "bad_records.jsonl") << "{\"prompt\": \"a\", \"response\": \"b\"}\n"
                                                  << "{\"prompt\": oops\n";
        std::ofstream(dir_ / "no_response.jsonl") << "{\"prompt\": \"a\", \"answer\": \"b\"}\n";
        std::ofstream(dir_ / "empty.jsonl") << "";
        std::ofstream(dir_ / "old_metrics.jsonl") << "{\"step\"}\n";
        fs::create_directories(dir_ / "old_study");
        std::ofstream(dir_ / "old_study" / "results.md") << "# Memorization study\n";
        std::ofstream(dir_ / "binary.dat", std::ios::binary) << std::string("abc\0def", 7);
        std::ofstream(dir_ / "syntax.toml") << "steps = 3\nlr = = 2\n";
        std::ofstream(dir_ / "duplicate.toml") << "steps = 3\nsteps = 4\n";
        std::ofstream(dir_ / "yes_flag.toml") << "debug-collectives = \"yes\"\n";
        std::ofstream(dir_ / "typed.toml") << "steps = \"ten\"\n";
        std::ofstream(dir_ / "section.toml") << "[train]\nsteps = 3\n";
        std::ofstream(dir_ / "slow.toml") << file_bytes(machine_profile_dir() / "perlmutter.toml") << "";
        replace_in_file(dir_ / "slow.toml", "nic_bandwidth = 2.5e10", "nic_bandwidth = 1e-300");
        fs::create_symlink(dir_ / "loop", dir_ / "loop");
        ::mkfifo((dir_ / "fifo").c_str(), 0600);
        fs::create_symlink("/dev/null", dir_ / "null_link");
        fs::create_hard_link(dir_ / "text.txt", dir_ / "text_again.txt");
        fs::create_symlink("trace_to_be.json", dir_ / "link_to_the_trace");  // a link to nothing yet
        fs::create_directories(dir_ / "linked_out");
        fs::create_symlink(dir_ / "text.txt", dir_ / "linked_out" / "train.bin");
        fs::create_directories(dir_ / "sharded_hf");  // a model in shards, as transformers saves a large one
        std::ofstream(dir_ / "sharded_hf" / "config.json") << R"({"model_type": "gpt2"})";
        std::ofstream(dir_ / "sharded_hf" / "model.safetensors.index.json") << R"({"weight_map": {}})";
        fs::create_directories(dir_ / "lone_config");
        std::ofstream(dir_ / "lone_config" / "config.json") << "mine\n";
        fs::create_directories(dir_ / "machines");
        fs::copy_file(machine_profile_dir() / "perlmutter.toml", dir_ / "machines" / "local.toml");
        std::ofstream(dir_ / "quick.toml") << "quick = true\n";
        fs::create_directories(dir_ / "config_in_ckpt");
        std::ofstream(dir_ / "config_in_ckpt" / "run.toml") << "steps = 1\n";
        std::ofstream(dir_ / "infinite.toml") << "lr = inf\n";
        std::ofstream(dir_ / "not_a_number.toml") << "weight-decay = nan\n";
        std::ofstream(dir_ / "underflow.toml") << "lr = 1e-999\n";
        std::ofstream(dir_ / "underflow_in_array.toml") << "steps = 5\n\"\u00e9\u00e9\" = [0.0e-999, 2.5E-400]\n";
        std::ofstream(dir_ / "plan_batch.toml") << "batch = 8\n";
        std::ofstream(dir_ / "tune.toml") << "top = 1\n";
        std::ofstream(dir_ / "bench.toml") << "iters = 1\n";
        fs::create_directories(dir_ / "export_config");
        std::ofstream(dir_ / "export_config" / "config.json") << "dtype = \"f32\"\n";
        fs::create_directories(dir_ / "study_config");
        std::ofstream(dir_ / "study_config" / "results.json") << "quick = true\n";
        std::ofstream(dir_ / "run.toml") << "data = \"" << (dir_ / "good").string()
                                         << "\"\ntokenizer = \"byte\"\nmodel = \"gpt2-micro\"\nsteps = 1\n";
        std::ofstream(dir_ / "grid.json") << R"({"format": "axonn-grid", "version": 1, "model": "gpt2-tiny", )"
                                          << R"("machine": "local", "ranks": 1, "batch": 8, "seq": 64, )"
                                          << R"("grid": {"data": 1, "z": 1, "y": 1, "x": 1}, )"
                                          << R"("grid_order": "x,y,z,data", "step_s": 0.01, "candidates": []})";
        fs::create_directories(dir_ / "machines_tuned");  // a tuned grid of another job, and a profile
        fs::copy_file(dir_ / "grid.json", dir_ / "machines_tuned" / "tuned-grid.json");
        fs::copy_file(machine_profile_dir() / "perlmutter.toml", dir_ / "machines_tuned" / "local.toml");
        fs::create_directories(dir_ / "fifo_data");
        ::mkfifo((dir_ / "fifo_data" / "train.bin").c_str(), 0600);
        std::vector<std::int32_t> small(3000, 65);
        fs::create_directories(dir_ / "gpt2_data");
        write_token_shard(dir_ / "gpt2_data" / "train.bin", small, 16, ShardOrigin{{"gpt2", 50257}, 5});
        fs::create_directories(dir_ / "replaced");
        fs::copy_file(dir_ / "good" / "train.bin", dir_ / "replaced" / "train.bin");
        fs::create_directories(dir_ / "imported_before" / "step_00000000");
        std::ofstream(dir_ / "imported_before" / "step_00000000" / "index.json") << "{}";
        for (fs::path const& step :
             {dir_ / "foreign_steps" / "step_00000003", dir_ / "foreign_step_zero" / "step_00000000"}) {
            fs::create_directories(step);
            std::ofstream(step / "notes.txt") << "mine\n";  // named as a checkpoint, but a user's folder
        }
        fs::create_directories(dir_ / "hf_and_checkpoints" / "step_00000002");
        fs::create_directories(dir_ / "hf_and_checkpoints" / "hf_only");
        for (fs::path const& folder : {dir_ / "hf_and_checkpoints", dir_ / "hf_and_checkpoints" / "hf_only"}) {
            std::ofstream(folder / "config.json") << "{\"model_type\": \"gpt2\"}";
            std::ofstream(folder / "model.safetensors") << "";
        }
        fs::create_directories(dir_ / "config_only");  // a Hugging Face folder fetched without its weights
        std::ofstream(dir_ / "config_only" / "config.json") << "{\"model_type\": \"llama\"}";
        fs::create_directories(dir_ / "hf_blocked" / "config.json.partial");
        std::ofstream(dir_ / "empty_metrics.toml") << "metrics = \"\"\n";
        fs::create_directories(dir_ / "data_in_ckpt" / "shards");
        for (char const* shard : {"train.bin", "val.bin"}) {
            fs::copy_file(dir_ / "good" / shard, dir_ / "data_in_ckpt" / "shards" / shard);
        }
        fs::create_symlink(dir_ / "text.txt", dir_ / "linked_partial.json.partial");
        fs::create_directories(dir_ / "other_data");
        write_token_shard(dir_ / "other_data" / "train.bin", small, 16, ShardOrigin{{"byte", 257}, 9});
        write_token_shard(dir_ / "other_data" / "val.bin", small, 16, ShardOrigin{{"byte", 257}, 9});
        fs::create_directories(dir_ / "mixed");
        write_token_shard(dir_ / "mixed" / "train.bin", small, 16, ShardOrigin{{"byte", 257}, 6});
        write_token_shard(dir_ / "mixed" / "val.bin", small, 16, ShardOrigin{{"byte", 257}, 7});
    }
    static void TearDownTestSuite() { temp_dir_.reset(); }
    // {dir}/model, a trained model for the cases that read one (`memorization eval`, `generate`, `export`,
    // `--init-from`): one step of gpt2-micro. Trained on first use, not in SetUpTestSuite: ctest runs each case in
    // a process of its own, and the training would cost each of them seconds.
    static void train_model_once() {
        if (fs::exists(dir_ / "model")) return;
        std::string const train = binary().string() + " train --data " + (dir_ / "good").string() +
                                  " --tokenizer byte --model gpt2-micro --steps 1 --sample-tokens 0 --ckpt-dir " +
                                  (dir_ / "model").string() + " > /dev/null 2>&1";
        ASSERT_EQ(std::system(train.c_str()), 0) << train;
        // A name of its own for one of its files, elsewhere.
        fs::create_hard_link(dir_ / "model" / "step_00000001" / "index.json", dir_ / "linked_index.json");
        fs::create_hard_link(dir_ / "model" / "step_00000001" / "rank00000-000.safetensors",
                             dir_ / "linked_weights.bin");
        fs::create_symlink(dir_ / "model" / "step_00000001" / "index.json", dir_ / "link_into_checkpoint.jsonl");
        fs::create_symlink(dir_ / "model" / ".lock", dir_ / "link_to_lock");
        fs::create_symlink(dir_ / "model" / "step_00000001" / "newfile", dir_ / "link_to_nothing_in_checkpoint");
        // A folder whose only checkpoint's save was interrupted (no COMPLETE marker).
        fs::create_directories(dir_ / "incomplete_only");
        fs::copy(dir_ / "model" / "step_00000001", dir_ / "incomplete_only" / "step_00000001",
                 fs::copy_options::recursive);
        fs::remove(dir_ / "incomplete_only" / "step_00000001" / "COMPLETE");
        // A folder whose checkpoint was renamed by hand: step_00000009 holds step 1.
        fs::create_directories(dir_ / "renamed");
        fs::copy(dir_ / "model" / "step_00000001", dir_ / "renamed" / "step_00000009", fs::copy_options::recursive);
        fs::copy(dir_ / "model" / "step_00000001", dir_ / "renamed" / "step_00000007.rolled-back-1700000000",
                 fs::copy_options::recursive);
        // Folders whose checkpoint's COMPLETE holds other bytes than a marker (a log written into it through a hard
        // link, say): a line of text, and more than a marker's 64 bytes.
        for (auto const& [folder, marker] : {std::pair<char const*, std::string>{"unmarked", "{\"step\": 1}\n"},
                                             std::pair<char const*, std::string>{"overlong", std::string(3000, 'x')}}) {
            fs::create_directories(dir_ / folder);
            fs::copy(dir_ / "model" / "step_00000001", dir_ / folder / "step_00000001", fs::copy_options::recursive);
            testing::write_file(dir_ / folder / "step_00000001" / "COMPLETE", marker);
        }
    }
    static std::string with_dir(std::string text) {
        for (std::size_t at; (at = text.find("{dir}")) != std::string::npos;) text.replace(at, 5, dir_.string());
        return text;
    }
    static inline std::unique_ptr<testing::TempDir> temp_dir_;
    static inline fs::path dir_;
};

// Not an error: the extreme study's default ablation model (gpt2-tiny) left out of --models means no ablations,
// said in a note (it was refused, naming an option the user never gave).
TEST_F(CommandLineErrors, TheDefaultAblationModelRunsOnlyWhereItIsAmongTheModels) {
    CommandResult const result =
        run_axonn(with_dir("memorization study --experiment extreme --out {dir}/ablation_default --models gpt2-micro "
                           "--documents 2 --unseen 2 --epochs 1 --pretrain-steps 1 --batch 2"),
                  dir_);
    EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
    EXPECT_NE(result.stderr_text.find("note: no Goldfish ablations: the default --ablation-model gpt2-tiny is not "
                                      "among --models"),
              std::string::npos)
        << result.stderr_text;
    CommandResult const named = run_axonn(with_dir("memorization study --experiment extreme --out {dir}/ablation_named "
                                                   "--models gpt2-micro --ablation-model gpt2-tiny --documents 2"),
                                          dir_);
    EXPECT_EQ(named.exit_status, 2) << named.stderr_text;
    EXPECT_NE(named.stderr_text.find("--ablation-model gpt2-tiny is not among --models"), std::string::npos)
        << named.stderr_text;
}

// The help of --resume shows what it takes and that it is off unless given: `--resume TEXT=latest` read as if
// resuming were the default.
TEST_F(CommandLineErrors, TheHelpOfResumeNamesWhatItTakes) {
    CommandResult const result = run_axonn("train --help", dir_);
    EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
    std::string const help = file_bytes(dir_ / "stdout.txt");
    EXPECT_NE(help.find("--resume [latest|DIR]"), std::string::npos) << help;
    EXPECT_EQ(help.find("=latest"), std::string::npos) << help;
}

// AddressSanitizer reserves terabytes of address space for its shadow memory as the program starts: axonn built with
// it (`scripts/test --sanitize`) cannot start under any `ulimit -v`, which the tests below set.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool starts_under_address_space_limits = false;
#else
constexpr bool starts_under_address_space_limits = true;
#endif

// The help needs no MPI: under a descriptor or address-space limit too low for MPI's start-up, for which a command
// is refused, the help is printed (it was refused with the rest), and an unknown command is still a usage error.
TEST_F(CommandLineErrors, TheHelpIsPrintedUnderLimitsTooLowForMpi) {
    CommandResult const help = run_axonn("train --help", dir_, "prlimit --nofile=10");
    EXPECT_EQ(help.exit_status, 0) << help.stderr_text;
    EXPECT_TRUE(printed(dir_, "--resume [latest|DIR]"));
    CommandResult const all = run_axonn("--help", dir_, "prlimit --nofile=10");
    EXPECT_EQ(all.exit_status, 0) << all.stderr_text;
    EXPECT_TRUE(printed(dir_, "memorization"));
    if (starts_under_address_space_limits) {
        CommandResult const small = run_axonn("plan --help", dir_, "ulimit -v 65536;");
        EXPECT_EQ(small.exit_status, 0) << small.stderr_text;
        EXPECT_TRUE(printed(dir_, "--machine"));
    }
    CommandResult const bad = run_axonn("bogus --help", dir_, "prlimit --nofile=10");
    EXPECT_EQ(bad.exit_status, 2) << bad.stderr_text;
    EXPECT_EQ(bad.stderr_text.rfind("axonn: error: unknown command 'bogus'", 0), 0u) << bad.stderr_text;
}

// Every command takes --config, and its --help says so (train's alone did).
TEST_F(CommandLineErrors, EveryCommandsHelpNamesConfigFiles) {
    for (char const* command : {"train", "prepare", "corpus janeausten", "bench", "parity", "plan", "tune", "calibrate",
                                "export", "memorization eval", "memorization study", "import", "generate",
                                "tokenize"}) {
        CommandResult const result = run_axonn(std::string(command) + " --help", dir_);
        EXPECT_EQ(result.exit_status, 0) << command << ": " << result.stderr_text;
        EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("--config"), std::string::npos) << command;
    }
}

// Not an error: bf16 asked for where oneDNN has no native bf16 GEMM (held to AVX2 here, as on a CPU without
// AVX-512 bf16) notes once that it is emulated and trains in bf16: its first gradient norm differs from fp32's by
// bf16's rounding (more than 1e-5 relative, within 1e-2; the loss, from small initial weights, barely shows it).
// Under any `ulimit -v` a run succeeds or fails with one line naming the limit, never a crash. oneDNN allocates
// buffers inside a GEMM without checking that it got them: a 7.3M-parameter model (115 MiB of tensors) whose
// tensors fit under 292 MiB died of a segmentation fault in dnnl_sgemm (and gpt2-micro under 104 MiB). Below
// about 70 MiB MPI_Init printed its own abort of many lines. The sweeps cross each stage: refused before MPI starts,
// a tensor refused (with the room oneDNN needs now kept), runs that fit.
TEST_F(CommandLineErrors, UnderAnyAddressSpaceLimitARunSucceedsOrSaysWhyInOneLine) {
    if (!starts_under_address_space_limits) GTEST_SKIP() << "built with AddressSanitizer, which cannot start under a ulimit -v";
    int succeeded = 0, refused = 0;
    auto const sweep = [&](std::string const& model, int first, int last, int step) {
        for (int mebibytes = first; mebibytes <= last; mebibytes += step) {
            CommandResult const result = run_axonn(
                with_dir("train --data {dir}/good --tokenizer byte " + model +
                         " --steps 2 --batch 2 --seq 16 --sample-tokens 0 --eval-batches 1"),
                dir_, fmt::format("ulimit -v {};", mebibytes * 1024));
            if (result.exit_status == 0) {
                ++succeeded;
                continue;
            }
            ++refused;
            std::string const context = fmt::format("{} under {} MiB: {}", model, mebibytes, result.stderr_text);
            EXPECT_EQ(result.exit_status, 1) << context;
            EXPECT_TRUE(result.stderr_text.starts_with("axonn: error: ")) << context;
            EXPECT_EQ(std::count(result.stderr_text.begin(), result.stderr_text.end(), '\n'), 1) << context;
            EXPECT_NE(result.stderr_text.find("ulimit -v"), std::string::npos) << context;
        }
    };
    sweep("--model gpt2-micro", 64, 320, 32);
    sweep("--model gpt2-mini --n-layer 4 --n-embd 384 --n-head 6", 260, 372, 8);
    EXPECT_GT(succeeded, 0);
    EXPECT_GT(refused, 0);
}

TEST_F(CommandLineErrors, Bf16WithoutANativeGemmIsEmulatedAndSaysSoOnce) {
    auto const first_grad_norm = [&](std::string const& precision, std::string const& environment) {
        std::string const metrics = "{dir}/precision_" + precision + ".jsonl";
        CommandResult const result =
            run_axonn(with_dir("train --data {dir}/good --tokenizer byte --model gpt2-micro --steps 1 "
                               "--sample-tokens 0 --overwrite --precision " +
                               precision + " --metrics " + metrics),
                      dir_, environment);
        EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
        std::istringstream lines(file_bytes(with_dir(metrics)));
        double grad_norm = std::nan("");
        for (std::string line; std::getline(lines, line);) {
            nlohmann::json const record = nlohmann::json::parse(line);
            if (record.contains("grad_norm")) grad_norm = record["grad_norm"].get<double>();
        }
        return std::pair{grad_norm, result.stderr_text};
    };
    auto const [bf16_norm, bf16_stderr] = first_grad_norm("bf16", "DNNL_MAX_CPU_ISA=AVX2");
    std::string const note = "note: bf16 GEMMs are emulated here";
    std::size_t const first = bf16_stderr.find(note);
    EXPECT_NE(first, std::string::npos) << bf16_stderr;
    EXPECT_EQ(bf16_stderr.find(note, first + 1), std::string::npos) << "noted twice";
    EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("cpu, bf16 GEMMs emulated in fp32"), std::string::npos);
    double const fp32_norm = first_grad_norm("fp32", "DNNL_MAX_CPU_ISA=AVX2").first;
    double const difference = std::abs(bf16_norm - fp32_norm) / fp32_norm;
    EXPECT_GT(difference, 1e-5) << "the emulated run did not round to bf16";
    EXPECT_LT(difference, 1e-2);
}

// A given GEMM rate (here through --gemm-rate's environment variable) replaces the one measured at start: the
// banner names it, and each step's MFU is its model FLOP/s over that rate (one thread, one rank), to 1e-12.
TEST_F(CommandLineErrors, AGivenGemmRateIsTheMfuDenominator) {
    CommandResult const result = run_axonn(with_dir("train --data {dir}/good --tokenizer byte --model gpt2-micro "
                                                    "--steps 2 --sample-tokens 0 --overwrite --metrics {dir}/rate.jsonl"),
                                           dir_, "AXONN_GEMM_RATE=123.4");
    ASSERT_EQ(result.exit_status, 0) << result.stderr_text;
    std::string const banner = file_bytes(dir_ / "stdout.txt");
    EXPECT_NE(banner.find("| --gemm-rate: single-core fp32 GEMM 123.4 GFLOP/s"), std::string::npos) << banner;
    std::istringstream lines(file_bytes(with_dir("{dir}/rate.jsonl")));
    int steps = 0;
    for (std::string line; std::getline(lines, line);) {
        nlohmann::json const record = nlohmann::json::parse(line);
        if (!record.contains("mfu")) continue;
        double const expected = record["model_flops_per_s"].get<double>() / 123.4e9;
        EXPECT_NEAR(record["mfu"].get<double>(), expected, 1e-12 * expected) << line;
        ++steps;
    }
    EXPECT_EQ(steps, 2);
}

// Without a given rate (ctest gives every test one, tests/CMakeLists.txt; unset here), rank 0 measures one core's
// fp32 GEMM rate at start: the banner prints it, and each step's MFU is its model FLOP/s over that rate. The banner
// rounds the rate to 0.1 GFLOP/s, hence the tolerance: half of that over the printed rate.
TEST_F(CommandLineErrors, AStartWithoutAGivenRateMeasuresItForTheMfu) {
    CommandResult const result = run_axonn(with_dir("train --data {dir}/good --tokenizer byte --model gpt2-micro "
                                                    "--steps 2 --sample-tokens 0 --overwrite --metrics "
                                                    "{dir}/measured.jsonl"),
                                           dir_, "env -u AXONN_GEMM_RATE");
    ASSERT_EQ(result.exit_status, 0) << result.stderr_text;
    std::string const banner = file_bytes(dir_ / "stdout.txt");
    std::string const printed = "| measured single-core fp32 GEMM ";
    std::size_t const at = banner.find(printed);
    ASSERT_NE(at, std::string::npos) << banner;
    double const rate = std::stod(banner.substr(at + printed.size()));
    EXPECT_NE(banner.find(" GFLOP/s (MFU denominator", at), std::string::npos) << banner;
    ASSERT_TRUE(std::isfinite(rate) && rate >= 1.0) << "a measured rate of " << rate << " GFLOP/s";
    std::istringstream lines(file_bytes(with_dir("{dir}/measured.jsonl")));
    int steps = 0;
    for (std::string line; std::getline(lines, line);) {
        nlohmann::json const record = nlohmann::json::parse(line);
        if (!record.contains("mfu")) continue;
        double const expected = record["model_flops_per_s"].get<double>() / (rate * 1e9);
        EXPECT_NEAR(record["mfu"].get<double>(), expected, 0.05 / rate * expected) << line;
        ++steps;
    }
    EXPECT_EQ(steps, 2);
}

// `corpus janeausten` into a folder that already holds the novels leaves files of the same text as they are, and
// refuses, before writing any, to replace a file of a novel's name that holds other text unless --overwrite.
TEST_F(CommandLineErrors, CorpusReplacesANovelsFileOfOtherTextOnlyWhenAsked) {
    std::string const corpus = "corpus janeausten --package " + testing::corpus_root().string() + " --out " +
                               (dir_ / "novels").string();
    fs::remove_all(dir_ / "novels");
    ASSERT_EQ(run_axonn(corpus, dir_).exit_status, 0);
    std::string const emma = file_bytes(dir_ / "novels" / "emma.txt");
    CommandResult const again = run_axonn(corpus, dir_);
    EXPECT_EQ(again.exit_status, 0) << again.stderr_text;
    write_file(dir_ / "novels" / "emma.txt", "my own notes\n");
    write_file(dir_ / "novels" / "persuasion.txt", "");  // an empty file holds nothing to lose
    CommandResult const refused = run_axonn(corpus, dir_);
    EXPECT_EQ(refused.exit_status, 1);
    EXPECT_NE(refused.stderr_text.find("novel " + (dir_ / "novels" / "emma.txt").string() + " already exists (13 "
                                       "bytes; an earlier run's?): choose another path, or pass --overwrite"),
              std::string::npos)
        << refused.stderr_text;
    EXPECT_EQ(file_bytes(dir_ / "novels" / "emma.txt"), "my own notes\n");
    EXPECT_EQ(file_bytes(dir_ / "novels" / "persuasion.txt"), "") << "written before the refusal";
    ASSERT_EQ(run_axonn(corpus + " --overwrite", dir_).exit_status, 0);
    EXPECT_EQ(file_bytes(dir_ / "novels" / "emma.txt"), emma);
}

// A checkpoint records its data: resuming it on other data is refused by name, and --new-data goes on from its
// weights at the start of the new data (with a note); resuming on its own data is unchanged.
TEST_F(CommandLineErrors, ResumingOnOtherDataIsRefusedUnlessAskedFor) {
    std::string const run = "train --tokenizer byte --model gpt2-micro --sample-tokens 0 --ckpt-dir {dir}/data_ckpt ";
    fs::remove_all(dir_ / "data_ckpt");
    ASSERT_EQ(run_axonn(with_dir(run + "--data {dir}/good --steps 2"), dir_).exit_status, 0);
    CommandResult const refused = run_axonn(with_dir(run + "--data {dir}/other_data --steps 3 --resume"), dir_);
    EXPECT_EQ(refused.exit_status, 1) << refused.stderr_text;
    EXPECT_NE(refused.stderr_text.find("was trained on other data (dataset 0000000000000000 of 3000 tokens) than "
                                       "--data holds (dataset 0000000000000009 of 3000 tokens)"),
              std::string::npos)
        << refused.stderr_text;
    CommandResult const allowed =
        run_axonn(with_dir(run + "--data {dir}/other_data --steps 3 --resume --new-data"), dir_);
    EXPECT_EQ(allowed.exit_status, 0) << allowed.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("--new-data: the checkpoint was trained on dataset"),
              std::string::npos);
    CommandResult const same = run_axonn(with_dir(run + "--data {dir}/other_data --steps 4 --resume"), dir_);
    EXPECT_EQ(same.exit_status, 0) << "its own data, recorded by the --new-data run: " << same.stderr_text;
    // --new-data on the checkpoint's own data does nothing, and says so.
    CommandResult const again =
        run_axonn(with_dir(run + "--data {dir}/other_data --steps 5 --resume --new-data"), dir_);
    EXPECT_EQ(again.exit_status, 0) << again.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("--new-data changes nothing: --data holds the data the checkpoint "
                                                  "was trained on (dataset 0000000000000009 of 3000 tokens)"),
              std::string::npos)
        << file_bytes(dir_ / "stdout.txt");
}

// The shards' order is the data's: renamed into another order (another token stream), they are other data (the
// checkpoint kept its shards' ids as a sorted set, and the resume went on without a word). A checkpoint from before
// the order was recorded (its ids sorted, each once) still resumes on its own data.
TEST_F(CommandLineErrors, ShardsInAnotherOrderAreOtherData) {
    fs::remove_all(dir_ / "ordered");
    fs::remove_all(dir_ / "ordered_ckpt");
    fs::create_directories(dir_ / "ordered");
    std::vector<std::int32_t> tokens(1000);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(i * 3 % 256);
    write_token_shard(dir_ / "ordered" / "a.bin", tokens, 16, ShardOrigin{{"byte", 257}, 0xb});
    write_token_shard(dir_ / "ordered" / "b.bin", tokens, 16, ShardOrigin{{"byte", 257}, 0xa});
    std::string const run = "train --data {dir}/ordered --val-data {dir}/good/val.bin --tokenizer byte --model "
                            "gpt2-micro --sample-tokens 0 --ckpt-dir {dir}/ordered_ckpt ";
    ASSERT_EQ(run_axonn(with_dir(run + "--steps 2"), dir_).exit_status, 0);
    fs::path const index = dir_ / "ordered_ckpt" / "step_00000002" / "index.json";
    nlohmann::json checkpoint = nlohmann::json::parse(file_bytes(index));
    EXPECT_EQ(checkpoint["run"]["data"]["dataset"]["ids"],
              nlohmann::json({"000000000000000b", "000000000000000a"}));
    // As a checkpoint recorded it before: sorted, without the order.
    checkpoint["run"]["data"]["dataset"] = {{"ids", {"000000000000000a", "000000000000000b"}}, {"tokens", 2000}};
    testing::write_file(index, checkpoint.dump());
    CommandResult const old_record = run_axonn(with_dir(run + "--steps 3 --resume"), dir_);
    EXPECT_EQ(old_record.exit_status, 0) << old_record.stderr_text;
    fs::rename(dir_ / "ordered" / "a.bin", dir_ / "ordered" / "c.bin");
    CommandResult const reordered = run_axonn(with_dir(run + "--steps 4 --resume"), dir_);
    EXPECT_EQ(reordered.exit_status, 1) << reordered.stderr_text;
    EXPECT_NE(reordered.stderr_text.find("was trained on other data (dataset 000000000000000b+000000000000000a of 2000 "
                                         "tokens) than --data holds (dataset 000000000000000a+000000000000000b"),
              std::string::npos)
        << reordered.stderr_text;
}

// Each step's training loss in a metrics file, by step.
std::map<int, double> step_losses(fs::path const& metrics) {
    std::map<int, double> losses;
    std::istringstream lines(file_bytes(metrics));
    for (std::string line; std::getline(lines, line);) {
        nlohmann::json const record = nlohmann::json::parse(line);
        if (record.contains("loss")) losses[record["step"].get<int>()] = record["loss"].get<double>();
    }
    return losses;
}

// A resumed run appends to its own metrics file only: every record carries the run's id (from its checkpoint), and
// a file of another run's records, or a file that is not a metrics file, is refused by line and left as it was. A
// torn last line (a crash mid-write) does not count; a run with a --ckpt-dir relaunched with --resume latest before
// its first checkpoint is the same run (its id comes from its --ckpt-dir and seed).
TEST_F(CommandLineErrors, AResumedRunAppendsToItsOwnMetricsOnly) {
    std::string const run =
        "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 "
        "--eval-every 1000 --eval-batches 1 ";
    for (char const* stale : {"own_ckpt", "own.jsonl", "other.jsonl", "job_ckpt", "job.jsonl"}) {
        fs::remove_all(dir_ / stale);
    }
    for (char const* outputs : {"--ckpt-dir {dir}/own_ckpt --metrics {dir}/own.jsonl", "--metrics {dir}/other.jsonl"}) {
        CommandResult const first = run_axonn(with_dir(run + "--steps 2 " + outputs), dir_);
        ASSERT_EQ(first.exit_status, 0) << first.stderr_text;
    }
    auto const run_ids = [](fs::path const& metrics) {
        std::set<std::string> ids;
        std::istringstream lines(file_bytes(metrics));
        for (std::string line; std::getline(lines, line);) ids.insert(nlohmann::json::parse(line).value("run", ""));
        return ids;
    };
    std::set<std::string> const own = run_ids(dir_ / "own.jsonl"), other = run_ids(dir_ / "other.jsonl");
    ASSERT_EQ(own.size(), 1u);
    ASSERT_EQ(other.size(), 1u);
    ASSERT_NE(*own.begin(), *other.begin());
    ASSERT_EQ(own.begin()->size(), 16u) << *own.begin();

    std::string const resume = run + "--steps 3 --ckpt-dir {dir}/own_ckpt --resume ";
    for (auto const& [metrics, problem] :
         {std::pair{"other.jsonl",
                    "line 1 is a record of run " + *other.begin() + ", not of this run (run " + *own.begin() + ")"},
          std::pair{"text.txt", std::string("line 1 is not a metrics record: a resumed run appends")}}) {
        SCOPED_TRACE(metrics);
        std::string const before = file_bytes(dir_ / metrics);
        CommandResult const refused = run_axonn(with_dir(resume + "--metrics {dir}/" + metrics), dir_);
        EXPECT_EQ(refused.exit_status, 1) << refused.stderr_text;
        EXPECT_NE(refused.stderr_text.find(problem), std::string::npos) << refused.stderr_text;
        EXPECT_NE(refused.stderr_text.find("name another --metrics path, or pass --overwrite"), std::string::npos);
        EXPECT_EQ(file_bytes(dir_ / metrics), before);
    }
    {
        std::ofstream torn(dir_ / "own.jsonl", std::ios::app);
        torn << R"({"step": 7, "lo)";
    }
    CommandResult const resumed = run_axonn(with_dir(resume + "--metrics {dir}/own.jsonl"), dir_);
    ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
    EXPECT_EQ(run_ids(dir_ / "own.jsonl"), own);
    EXPECT_EQ(step_losses(dir_ / "own.jsonl").size(), 3u);

    std::string const job = run + "--steps 2 --ckpt-dir {dir}/job_ckpt --metrics {dir}/job.jsonl";
    CommandResult const first_launch = run_axonn(with_dir(job), dir_);
    ASSERT_EQ(first_launch.exit_status, 0) << first_launch.stderr_text;
    fs::remove_all(dir_ / "job_ckpt");  // as if the job's first launch had ended before its first checkpoint
    CommandResult const relaunched = run_axonn(with_dir(job + " --resume latest"), dir_);
    EXPECT_EQ(relaunched.exit_status, 0) << relaunched.stderr_text;
    EXPECT_EQ(step_losses(dir_ / "job.jsonl").size(), 2u);

    // Two runs of `--ckpt-dir ck` launched from two folders are two runs, and so are two experiments (another
    // model) in one folder: one refuses the other's metrics (their ids came from the path as written and the seed,
    // and a resume of one cut the other's records). `ck/` is `ck`, also before the folder exists.
    std::map<std::string, std::set<std::string>> ids;
    for (std::string const folder : {"here", "there", "here/", "here again"}) {
        bool const again = folder == "here again";
        fs::path const cwd = dir_ / (again ? "here" : folder);
        fs::remove_all(cwd / "ck");
        fs::create_directories(cwd);
        std::string experiment = run;
        if (again) experiment.replace(experiment.find("gpt2-micro"), 10, "gpt2-tiny");
        std::string const ckpt_dir = folder == "here/" ? "ck/" : "ck";
        std::string const metrics = again ? "again.jsonl" : folder == "here/" ? "slash.jsonl" : "m.jsonl";
        CommandResult const launched =
            run_axonn(with_dir(experiment + "--steps 1 --ckpt-dir " + ckpt_dir + " --metrics " + metrics),
                      dir_, "cd " + cwd.string() + " &&");
        ASSERT_EQ(launched.exit_status, 0) << folder << ": " << launched.stderr_text;
        ids[folder] = run_ids(cwd / metrics);
    }
    EXPECT_NE(ids["here"], ids["there"]);
    EXPECT_EQ(ids["here"], ids["here/"]);
    EXPECT_NE(ids["here"], ids["here again"]);
}

// Not an error: a --batch far beyond the documents' windows takes rows for the windows there are (a --batch of
// 100000 for 4 documents asked for 63 GB and failed with the allocator's words).
TEST_F(CommandLineErrors, AnEvalBatchBeyondTheDocumentsTakesWhatTheyNeed) {
    train_model_once();
    CommandResult const result = run_axonn(
        with_dir("memorization eval --model-dir {dir}/model --documents {dir}/docs.jsonl --prefix 4 --suffix 4 "
                 "--batch 1000000"), dir_);
    EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
}

// The checkpoints of a run from --init-from may not go into the model it starts from (they were written inside the
// Hugging Face folder, beside its config.json).
TEST_F(CommandLineErrors, CheckpointsDoNotGoIntoTheModelTheRunStartsFrom) {
    train_model_once();
    fs::remove_all(dir_ / "init_hf");
    ASSERT_EQ(run_axonn(with_dir("export {dir}/model {dir}/init_hf"), dir_).exit_status, 0);
    CommandResult const refused = run_axonn(
        with_dir("train --data {dir}/good --tokenizer byte --init-from {dir}/init_hf --ckpt-dir {dir}/init_hf/ck"),
        dir_);
    EXPECT_EQ(refused.exit_status, 1) << refused.stderr_text;
    EXPECT_NE(refused.stderr_text.find(with_dir("--ckpt-dir {dir}/init_hf/ck lies inside {dir}/init_hf, which this "
                                                "run reads")),
              std::string::npos)
        << refused.stderr_text;
    EXPECT_FALSE(fs::exists(dir_ / "init_hf" / "ck"));
}

// A config.json whose vocab_size the weights do not have: every reader names the tensor that disagrees, not the
// tokenizer (which no --tokenizer could fix), for GPT-2's vocabulary smaller and larger than the weights'.
TEST_F(CommandLineErrors, AConfigThatDisagreesWithTheWeightsNamesTheTensor) {
    train_model_once();
    for (int const vocab : {256, 300}) {
        fs::remove_all(dir_ / "vocab_hf");
        ASSERT_EQ(run_axonn(with_dir("export {dir}/model {dir}/vocab_hf"), dir_).exit_status, 0);
        nlohmann::json config = nlohmann::json::parse(file_bytes(dir_ / "vocab_hf" / "config.json"));
        config["vocab_size"] = vocab;
        testing::write_file(dir_ / "vocab_hf" / "config.json", config.dump());
        std::string const expected =
            "wte.weight has shape [257, 64], but its config.json asks for [" + std::to_string(vocab) + ", 64]";
        for (std::string const command :
             {"generate --model-dir {dir}/vocab_hf --tokenizer byte --prompt hi",
              "train --data {dir}/good --tokenizer byte --model gpt2-micro --steps 1 --init-from {dir}/vocab_hf",
              "import {dir}/vocab_hf --out {dir}/vocab_imported"}) {
            CommandResult const result = run_axonn(with_dir(command), dir_);
            EXPECT_EQ(result.exit_status, 1) << command << "\n" << result.stderr_text;
            EXPECT_NE(result.stderr_text.find(expected), std::string::npos) << command << "\n" << result.stderr_text;
        }
    }
}

// Every byte from `from` on in a Hugging Face folder's model.safetensors (its weights, after the header) set to
// `byte`, over `count` bytes (all of them where 0).
void overwrite_weights(fs::path const& folder, std::string const& tensor, std::int64_t from, char byte,
                       std::int64_t count = 0) {
    std::fstream file(folder / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    std::uint64_t header = 0;
    file.read(reinterpret_cast<char*>(&header), sizeof header);
    std::string text(static_cast<std::size_t>(header), '\0');
    file.read(text.data(), static_cast<std::streamsize>(header));
    std::int64_t const begin =
        tensor.empty() ? 0 : nlohmann::json::parse(text)[tensor]["data_offsets"][0].get<std::int64_t>();
    auto const data = static_cast<std::int64_t>(fs::file_size(folder / "model.safetensors") - 8 - header);
    file.seekp(static_cast<std::streamoff>(8 + header + begin + from));
    file << std::string(static_cast<std::size_t>(count > 0 ? count : data - begin - from), byte);
}

// Weights that give a loss that is not finite before the run's first update (finite, but near float's largest) are
// blamed, not the learning rate: in the validation at step 0, and in the first step's training loss (data without
// validation). A weight that is not finite is refused as it is read, named as the folder names it, by every command
// that reads a Hugging Face folder: `import` before it makes its --out (it wrote them into a checkpoint that
// `generate` then called damaged), `generate`, and `train --init-from` (a NaN in a row the data never reads trained
// on unseen into every later checkpoint).
TEST_F(CommandLineErrors, WeightsThatAreNotFiniteAreNamedAtTheStartAndByImport) {
    train_model_once();
    fs::remove_all(dir_ / "huge_hf");
    ASSERT_EQ(run_axonn(with_dir("export {dir}/model {dir}/huge_hf"), dir_).exit_status, 0);
    overwrite_weights(dir_ / "huge_hf", "", 0, '\x7f');  // 0x7f7f7f7f: 3.4e38 in float32
    fs::create_directories(dir_ / "train_only");
    fs::copy_file(dir_ / "good" / "train.bin", dir_ / "train_only" / "train.bin", fs::copy_options::overwrite_existing);
    for (auto const& [data, what] :
         {std::pair{"{dir}/good", "validation loss"}, std::pair{"{dir}/train_only", "training loss"}}) {
        SCOPED_TRACE(data);
        CommandResult const result = run_axonn(
            with_dir(
                std::string("train --tokenizer byte --steps 2 --sample-tokens 0 --init-from {dir}/huge_hf --data ") +
                data),
            dir_);
        EXPECT_EQ(result.exit_status, 1) << result.stderr_text;
        // The NaN's sign bit is whatever the arithmetic left: "nan" or "-nan".
        EXPECT_NE(result.stderr_text.find(std::string("the ") + what + " is "), std::string::npos)
            << result.stderr_text;
        std::string const blame = "nan at step 0, before this run's first update: the weights it starts from "
                                  "(--init-from " + with_dir("{dir}/huge_hf") + ") give values that are not finite";
        EXPECT_NE(result.stderr_text.find(blame), std::string::npos) << result.stderr_text;
        EXPECT_EQ(result.stderr_text.find("lower --lr"), std::string::npos) << result.stderr_text;
    }
    // One NaN, the second element of the second layer's attention bias (axonn holds the layers in one tensor, and
    // calls this one qkvb): every reader names it as the file does.
    fs::remove_all(dir_ / "nan_hf");
    ASSERT_EQ(run_axonn(with_dir("export {dir}/model {dir}/nan_hf"), dir_).exit_status, 0);
    overwrite_weights(dir_ / "nan_hf", "h.1.attn.c_attn.bias", 4, '\xff', 4);
    std::string const named = with_dir("Hugging Face folder {dir}/nan_hf holds a weight that is not finite (NaN or "
                                       "infinite): element 1 of h.1.attn.c_attn.bias in model.safetensors: the model "
                                       "is damaged");
    fs::remove_all(dir_ / "nan_import");
    for (std::string const command :
         {"import --format hf {dir}/nan_hf --out {dir}/nan_import",
          "generate --model-dir {dir}/nan_hf --tokenizer byte --prompt x --max-new-tokens 2",
          "train --tokenizer byte --steps 2 --sample-tokens 0 --init-from {dir}/nan_hf --data {dir}/good"}) {
        SCOPED_TRACE(command);
        CommandResult const result = run_axonn(with_dir(command), dir_);
        EXPECT_EQ(result.exit_status, 1) << result.stderr_text;
        EXPECT_NE(result.stderr_text.find(named), std::string::npos) << result.stderr_text;
    }
    EXPECT_FALSE(fs::exists(dir_ / "nan_import")) << "a refused import left its --out";
}

// Where `warning` stands in `stderr_text`, which must hold it exactly once.
std::size_t warned_once(std::string const& stderr_text, std::string const& warning) {
    std::size_t const first = stderr_text.find(warning);
    EXPECT_NE(first, std::string::npos) << stderr_text;
    if (first != std::string::npos) {
        EXPECT_EQ(stderr_text.find(warning, first + 1), std::string::npos) << "warned twice: " << stderr_text;
    }
    return first;
}

// Not an error: --val-data naming a folder that prepare wrote validates on its val.bin, as --data's folder gives its
// train.bin (it was read as a folder of training shards, and one holding only val.bin was refused as such).
TEST_F(CommandLineErrors, AValidationFolderGivesItsValBin) {
    fs::create_directories(dir_ / "validation_only");
    fs::copy_file(dir_ / "good" / "val.bin", dir_ / "validation_only" / "val.bin",
                  fs::copy_options::overwrite_existing);
    CommandResult const result = run_axonn(
        with_dir("train --data {dir}/good/train.bin --val-data {dir}/validation_only --tokenizer byte --model "
                 "gpt2-micro --steps 1 --sample-tokens 0"),
        dir_);
    EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
    EXPECT_NE(result.stderr_text.find("final validation loss"), std::string::npos) << result.stderr_text;
}

// Not an error: --data naming a folder with a train.bin trains on it alone, and says which other shards of the
// folder it leaves out (it left them out without a word).
TEST_F(CommandLineErrors, AFoldersTrainBinLeavesItsOtherShardsOutAndSaysSo) {
    fs::remove_all(dir_ / "mixed");
    fs::create_directories(dir_ / "mixed");
    for (char const* shard : {"train.bin", "val.bin"}) fs::copy_file(dir_ / "good" / shard, dir_ / "mixed" / shard);
    fs::copy_file(dir_ / "good" / "train.bin", dir_ / "mixed" / "extra.bin");
    CommandResult const result = run_axonn(
        with_dir("train --data {dir}/mixed --tokenizer byte --model gpt2-micro --steps 1 --sample-tokens 0"), dir_);
    EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
    EXPECT_TRUE(printed(dir_, with_dir("--data {dir}/mixed trains on its train.bin alone, not on its other shards "
                                       "(extra.bin): name the shards to train on them all")));
}

// Not an error: a prompt longer than the model's context (gpt2-micro: 64) is continued from its last 64 tokens,
// and the run says so once.
TEST_F(CommandLineErrors, APromptLongerThanTheContextIsCutWithAWarning) {
    train_model_once();
    CommandResult const result = run_axonn(
        with_dir("generate --model-dir {dir}/model --tokenizer byte --max-new-tokens 3 --greedy --prompt " +
                 std::string(100, 'a')),
        dir_);
    EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
    warned_once(result.stderr_text, "prompt 1 has 100 tokens, more than the model's context of 64: generation reads "
                                    "only its last 64");
}

// The same for train's closing sample, whose context is --seq (32 here): said once, at the start.
TEST_F(CommandLineErrors, ATrainingPromptLongerThanItsSequencesIsCutWithAWarning) {
    CommandResult const result = run_axonn(
        with_dir("train --data {dir}/good --tokenizer byte --model gpt2-micro --steps 1 --seq 32 --sample-tokens 2 "
                 "--prompt " + std::string(100, 'a')),
        dir_);
    EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
    std::size_t const first = warned_once(result.stderr_text, "--prompt has 100 tokens, more than the 32 of the "
                                                              "sequences the model is trained on (--seq): the closing "
                                                              "sample reads only its last 32");
    std::size_t const training = result.stderr_text.find("train 100%");  // the progress line of the training
    ASSERT_NE(training, std::string::npos) << result.stderr_text;
    EXPECT_LT(first, training) << "warned after the training: " << result.stderr_text;
}

// Removes what an earlier run of a rollback test left in `dir`: the folder `name`, and its metrics and trace files
// (name.jsonl, name.json) with their copies (name.jsonl.rolled-back-T).
void remove_run_outputs(fs::path const& dir, std::string const& name) {
    fs::remove_all(dir / name);
    for (auto const& entry : fs::directory_iterator(dir)) {
        if (entry.path().filename().string().starts_with(name + ".")) fs::remove(entry.path());
    }
}

// Not an error: resuming from an earlier checkpoint of the run's own --ckpt-dir rolls it back. The later
// checkpoints are kept aside under a new name (never resumed or pruned), the run says so, and it saves its own
// later steps again; --resume latest then takes the rolled-back run's newest.
TEST_F(CommandLineErrors, RollingBackToAnEarlierCheckpointKeepsTheLaterOnesAside) {
    std::string const run = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 --steps 4 "
                            "--ckpt-every 2 --ckpt-dir {dir}/rollback --metrics {dir}/rollback.jsonl ";
    remove_run_outputs(dir_, "rollback");
    ASSERT_EQ(run_axonn(with_dir(run), dir_).exit_status, 0);
    std::string const branch_records = file_bytes(dir_ / "rollback.jsonl");
    CommandResult const rolled = run_axonn(with_dir(run + "--resume {dir}/rollback/step_00000002/"), dir_);
    ASSERT_EQ(rolled.exit_status, 0) << rolled.stderr_text;
    EXPECT_TRUE(printed(dir_, "rolling back to step 2: the later checkpoints are kept aside as "
                              "step_00000004.rolled-back-"));
    std::vector<std::string> aside;
    for (auto const& entry : fs::directory_iterator(dir_ / "rollback")) {
        std::string const name = entry.path().filename().string();
        if (name.starts_with("step_00000004.rolled-back-")) aside.push_back(name);
    }
    ASSERT_EQ(aside.size(), 1u);
    EXPECT_TRUE(fs::exists(dir_ / "rollback" / "step_00000004" / "COMPLETE")) << "the rolled-back run saves again";
    // The metrics file continues from step 2; the records it cut (steps 3 and 4 of the branch rolled back) are
    // kept in a copy of the file as it was, marked as the checkpoints are, and the run says where.
    std::string const mark = aside[0].substr(std::string("step_00000004").size());
    fs::path const copy = dir_ / ("rollback.jsonl" + mark);
    EXPECT_TRUE(printed(dir_, with_dir("; --metrics {dir}/rollback.jsonl continues from step 2, kept first in a copy "
                                       "of the file as it was, " + copy.string())));
    EXPECT_EQ(file_bytes(copy), branch_records);
    EXPECT_EQ(run_axonn(with_dir(run + "--resume latest"), dir_).exit_status, 0);

    // Resuming the branch set aside (its step 4): the file's records of steps 2 and 3 are the other branch's, and
    // go; the note on the gap names the copy that holds this branch's.
    CommandResult const branch = run_axonn(
        with_dir(run + "--steps 5 --resume {dir}/rollback/" + aside[0]), dir_);
    ASSERT_EQ(branch.exit_status, 0) << branch.stderr_text;
    EXPECT_TRUE(printed(dir_, with_dir("metrics file {dir}/rollback.jsonl has no record of steps 2 to 3 (cut from the "
                                       "file, lost to a write that failed, or trained without --metrics); it goes on "
                                       "from step 4; the branch "
                                       "resumed was set aside by a rollback, and its records of those steps are in " +
                                       copy.string() + ", the copy made then")));
}

// Resuming a checkpoint a rollback set aside returns to its branch: the checkpoints of the branch that replaced it
// (after the rollback's step) are set aside too, not only those of its own step and later, and the records that
// branch wrote before the resumed step are cut as another branch's (they stayed beside the resumed run's, which
// `--resume latest` and a later rollback would take for its own; the records were said to be cut "from the
// checkpoint's step on").
TEST_F(CommandLineErrors, ResumingABranchSetAsideSetsAsideTheBranchItLeaves) {
    std::string const run = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 --steps 6 "
                            "--ckpt-every 2 --ckpt-dir {dir}/branches --metrics {dir}/branches.jsonl ";
    remove_run_outputs(dir_, "branches");
    ASSERT_EQ(run_axonn(with_dir(run), dir_).exit_status, 0);
    ASSERT_EQ(run_axonn(with_dir(run + "--resume {dir}/branches/step_00000002"), dir_).exit_status, 0);
    std::string first_branch;  // its step 6, set aside by the rollback
    for (auto const& entry : fs::directory_iterator(dir_ / "branches")) {
        std::string const name = entry.path().filename().string();
        if (name.starts_with("step_00000006.rolled-back-")) first_branch = name;
    }
    ASSERT_FALSE(first_branch.empty());
    ASSERT_EQ(checkpoint_steps(dir_ / "branches"), (std::vector<std::int64_t>{2, 4, 6}));

    CommandResult const back = run_axonn(with_dir(run + "--steps 8 --resume {dir}/branches/" + first_branch), dir_);
    ASSERT_EQ(back.exit_status, 0) << back.stderr_text;
    EXPECT_TRUE(printed(dir_, "rolling back to step 6: the checkpoints of the branch it leaves (each one not on the "
                              "way to the one resumed) are kept aside as step_00000004.rolled-back-"));
    EXPECT_TRUE(printed(dir_, with_dir("metrics file {dir}/branches.jsonl: its records of steps 2 to 5, another "
                                       "branch's (launches the checkpoint's lineage does not name), are cut: this run "
                                       "does not compute those steps again")));
    // The step 2 on the way to both stays; the second branch's steps 4 and 6 are aside; the run saved its step 8.
    EXPECT_EQ(checkpoint_steps(dir_ / "branches"), (std::vector<std::int64_t>{2, 8}));
}

// A finished run resumed again at its last step computes nothing and validates again: the record of that
// validation, written by a launch that computed no step, was taken at the next resume for a record of step 1 that a
// rollback abandoned ("which this run cuts and does not compute again"), and each resume left another copy of the
// file. The resume step's own validation is the checkpoint's, whichever launch wrote it.
TEST_F(CommandLineErrors, AFinishedRunResumedAgainAndAgainCopiesNothing) {
    std::string const run = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 --steps 2 "
                            "--ckpt-dir {dir}/finished --metrics {dir}/finished.jsonl ";
    remove_run_outputs(dir_, "finished");
    ASSERT_EQ(run_axonn(with_dir(run), dir_).exit_status, 0);
    for (int again = 0; again < 2; ++again) {
        CommandResult const resumed = run_axonn(with_dir(run + "--resume latest"), dir_);
        ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
        EXPECT_FALSE(printed(dir_, "a rollback abandoned")) << "resume " << again + 1;
    }
    for (auto const& entry : fs::directory_iterator(dir_)) {
        EXPECT_FALSE(entry.path().filename().string().starts_with("finished.jsonl.")) << entry.path();
    }
    std::istringstream records(file_bytes(dir_ / "finished.jsonl"));
    std::vector<std::string> steps;  // "2" for a training record of step 2, "v2" for a validation alone
    for (std::string line; std::getline(records, line);) {
        nlohmann::json const record = nlohmann::json::parse(line);
        steps.push_back((record.contains("loss") ? "" : "v") + record["step"].dump());
    }
    EXPECT_EQ(steps, (std::vector<std::string>{"0", "1", "v2"}));
}

// A rollback run without --metrics or --trace leaves the abandoned branch's records and spans in those files; a
// later resume that names them cuts them and never computes those steps again, so it copies each file whole first,
// as a rollback does (they were cut without a copy, and the gap note blamed a missing --metrics alone).
TEST_F(CommandLineErrors, AResumeAfterARollbackWithoutTheMetricsKeepsTheAbandonedRecords) {
    std::string const run = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 "
                            "--ckpt-every 2 --ckpt-dir {dir}/abandoned ";
    std::string const logs = "--metrics {dir}/abandoned.jsonl --trace {dir}/abandoned.json ";
    remove_run_outputs(dir_, "abandoned");
    ASSERT_EQ(run_axonn(with_dir(run + logs + "--steps 4 --trace-steps 4"), dir_).exit_status, 0);
    std::string const metrics_before = file_bytes(dir_ / "abandoned.jsonl");
    std::string const trace_before = file_bytes(dir_ / "abandoned.json");
    CommandResult const rolled =
        run_axonn(with_dir(run + "--steps 4 --resume {dir}/abandoned/step_00000002"), dir_);  // neither log
    ASSERT_EQ(rolled.exit_status, 0) << rolled.stderr_text;
    CommandResult const resumed = run_axonn(with_dir(run + logs + "--steps 6 --resume latest"), dir_);
    ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
    std::map<std::string, fs::path> copies;  // by the file copied
    for (auto const& entry : fs::directory_iterator(dir_)) {
        std::string const name = entry.path().filename().string();
        std::size_t const mark = name.find(".rolled-back-");
        if (name.starts_with("abandoned.") && mark != std::string::npos) copies[name.substr(0, mark)] = entry.path();
    }
    ASSERT_EQ(copies.size(), 2u);
    EXPECT_EQ(file_bytes(copies["abandoned.jsonl"]), metrics_before);
    EXPECT_EQ(file_bytes(copies["abandoned.json"]), trace_before);
    std::string const output = file_bytes(dir_ / "stdout.txt");
    EXPECT_NE(output.find(with_dir("--metrics {dir}/abandoned.jsonl and --trace {dir}/abandoned.json hold records of "
                                   "steps ")),
              std::string::npos)
        << output;
    EXPECT_NE(output.find("that a rollback abandoned (it was not given the files to cut), which this run cuts and "
                          "does not compute again: they are kept in copies of the files as they were, " +
                          copies["abandoned.jsonl"].string() + " and " + copies["abandoned.json"].string()),
              std::string::npos)
        << output;
    // A resume with nothing abandoned in its files copies nothing.
    ASSERT_EQ(run_axonn(with_dir(run + logs + "--steps 8 --resume latest"), dir_).exit_status, 0);
    EXPECT_EQ(file_bytes(dir_ / "stdout.txt").find("that a rollback abandoned"), std::string::npos);
}

// A rollback without --metrics that ends before its first save (here it diverges at once) records itself in no
// checkpoint; the branch it set aside (step 4's) keeps its records in the metrics file. The next resume from the
// earlier checkpoint computes those steps again, with its own settings, and cuts them: it copies the file first.
// That resume diverges too, after recording its step 2; the one after it cuts that record, of no branch set aside,
// without a copy.
TEST_F(CommandLineErrors, AResumeCuttingTheRecordsOfABranchSetAsideCopiesThemFirst) {
    std::string const run = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 "
                            "--ckpt-every 2 --ckpt-dir {dir}/set_aside ";
    std::string const metrics = "--metrics {dir}/set_aside.jsonl ";
    std::string const diverging = "--lr 1e30 --warmup 0 ";
    remove_run_outputs(dir_, "set_aside");
    ASSERT_EQ(run_axonn(with_dir(run + metrics + "--steps 4"), dir_).exit_status, 0);
    std::string const before = file_bytes(dir_ / "set_aside.jsonl");
    CommandResult const rolled_back =
        run_axonn(with_dir(run + diverging + "--steps 6 --resume {dir}/set_aside/step_00000002"), dir_);
    ASSERT_EQ(rolled_back.exit_status, 1) << rolled_back.stderr_text;
    ASSERT_NE(rolled_back.stderr_text.find("the model diverged"), std::string::npos) << rolled_back.stderr_text;
    auto const copies = [&] {
        std::vector<fs::path> found;
        for (auto const& entry : fs::directory_iterator(dir_)) {
            if (entry.path().filename().string().starts_with("set_aside.jsonl.rolled-back-")) found.push_back(entry.path());
        }
        return found;
    };
    CommandResult const resumed = run_axonn(with_dir(run + metrics + diverging + "--steps 4 --resume latest"), dir_);
    ASSERT_EQ(resumed.exit_status, 1) << resumed.stderr_text;
    ASSERT_EQ(copies().size(), 1u);
    EXPECT_EQ(file_bytes(copies()[0]), before);
    EXPECT_TRUE(printed(dir_, with_dir("--metrics {dir}/set_aside.jsonl holds records of steps 2 to 3 that a rollback "
                                       "abandoned (it was not given the file to cut), which this run cuts and "
                                       "computes again from step 2 with its own settings: they are kept in ")));
    std::string const diverged = file_bytes(dir_ / "set_aside.jsonl");
    ASSERT_NE(diverged.find("\"step\":2"), std::string::npos) << "the diverging resume recorded no step 2";
    ASSERT_EQ(run_axonn(with_dir(run + metrics + "--steps 4 --resume latest"), dir_).exit_status, 0);
    EXPECT_FALSE(printed(dir_, "that a rollback abandoned"));
    EXPECT_EQ(copies().size(), 1u);
}

// The share of the training targets the Goldfish mask drops is measured, each step's in --metrics and the
// launch's at the end: with h = 1 the hash of one token decides, and on the bytes of a small corpus the share is
// the data's, not the banner's 1/k for varied h-grams.
TEST_F(CommandLineErrors, TheGoldfishShareDroppedIsMeasured) {
    fs::remove(dir_ / "goldfish_share.jsonl");
    CommandResult const result = run_axonn(
        with_dir("train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 --steps 3 "
                 "--goldfish k=4,h=1 --metrics {dir}/goldfish_share.jsonl"),
        dir_);
    ASSERT_EQ(result.exit_status, 0) << result.stderr_text;
    std::string const output = file_bytes(dir_ / "stdout.txt");
    EXPECT_NE(output.find("about 25.0% of the training targets leave the loss where the data's h-grams differ"),
              std::string::npos)
        << output;
    double sum = 0;
    int steps = 0;
    std::ifstream metrics(dir_ / "goldfish_share.jsonl");
    for (std::string line; std::getline(metrics, line);) {
        nlohmann::json const record = nlohmann::json::parse(line);
        if (!record.contains("loss")) continue;
        ASSERT_TRUE(record.contains("goldfish_dropped")) << line;
        sum += record["goldfish_dropped"].get<double>();
        ++steps;
    }
    ASSERT_EQ(steps, 3);
    // Every step's batch holds as many targets (none ignored here), so the launch's share is the steps' mean.
    std::string const end = fmt::format("Goldfish loss: {:.1f}% of this launch's training targets left the loss (",
                                        100 * sum / steps);
    EXPECT_NE(output.find(end), std::string::npos) << end << "\n" << output;
}

// A run that fails before its first save (it diverges at once) leaves no checkpoint folder it made, however deep:
// the folder held only its lock. A folder that was there before stays, and so does one a save went into.
TEST_F(CommandLineErrors, ARunThatFailsBeforeItsFirstSaveLeavesNoFolderItMade) {
    std::string const run = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 --steps 4 ";
    std::string const diverging = "--lr 1e30 --warmup 0 ";
    fs::remove_all(dir_ / "made_levels");
    CommandResult const failed = run_axonn(with_dir(run + diverging + "--ckpt-dir {dir}/made_levels/a/b"), dir_);
    ASSERT_EQ(failed.exit_status, 1) << failed.stderr_text;
    ASSERT_NE(failed.stderr_text.find("the model diverged"), std::string::npos) << failed.stderr_text;
    EXPECT_FALSE(fs::exists(dir_ / "made_levels")) << "a failed run left the checkpoint folder it made";
    fs::remove_all(dir_ / "there_before");
    fs::create_directories(dir_ / "there_before");
    ASSERT_EQ(run_axonn(with_dir(run + diverging + "--ckpt-dir {dir}/there_before"), dir_).exit_status, 1);
    EXPECT_TRUE(fs::is_directory(dir_ / "there_before"));
    ASSERT_EQ(run_axonn(with_dir(run + "--ckpt-dir {dir}/made_levels/a/b"), dir_).exit_status, 0);
    EXPECT_TRUE(fs::exists(dir_ / "made_levels" / "a" / "b" / "step_00000004" / "COMPLETE"));
}

// A rollback past many checkpoints names the first and the last it sets aside, and their count, not every one (a
// run saving every step listed each on one line).
TEST_F(CommandLineErrors, ARollbackPastManyCheckpointsNamesTheFirstAndTheLast) {
    std::string const run = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 --steps 8 "
                            "--ckpt-every 1 --ckpt-dir {dir}/every_step ";
    fs::remove_all(dir_ / "every_step");
    ASSERT_EQ(run_axonn(with_dir(run), dir_).exit_status, 0);
    CommandResult const rolled = run_axonn(with_dir(run + "--resume {dir}/every_step/step_00000002"), dir_);
    ASSERT_EQ(rolled.exit_status, 0) << rolled.stderr_text;
    std::string const output = file_bytes(dir_ / "stdout.txt");
    std::size_t const first = output.find("the later checkpoints are kept aside as step_00000003.rolled-back-");
    ASSERT_NE(first, std::string::npos) << output;
    std::size_t const last = output.find(" to step_00000008.rolled-back-", first);
    ASSERT_NE(last, std::string::npos) << output;
    EXPECT_NE(output.find(" (6 checkpoints) in ", last), std::string::npos) << output;
    EXPECT_EQ(output.find("step_00000005.rolled-back-"), std::string::npos) << "listed every one: " << output;
}

// A resumed run that names a --trace for the first time writes a new trace of its own steps, and says so; only a
// launch that continues the trace of the run's earlier launches says it continues it (every resumed run did), and
// it writes the trace back where it read it from.
TEST_F(CommandLineErrors, OnlyATraceThatIsContinuedIsSaidToBe) {
    std::string const run = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 "
                            "--ckpt-dir {dir}/traced ";
    fs::remove_all(dir_ / "traced");
    fs::remove(dir_ / "traced.json");
    ASSERT_EQ(run_axonn(with_dir(run + "--steps 2"), dir_).exit_status, 0);
    std::string const continuing = "(continuing the trace of the run's earlier launches)";
    ASSERT_EQ(run_axonn(with_dir(run + "--steps 3 --resume latest --trace {dir}/traced.json"), dir_).exit_status, 0);
    EXPECT_TRUE(printed(dir_, with_dir("trace of 1 step(s) from step 2 of every rank: {dir}/traced.json\n")));
    EXPECT_FALSE(printed(dir_, continuing));
    // Named through a symbolic link, the trace is continued where the link points, and the link stays (it was
    // replaced by a new file, and the run's earlier trace left behind at its target).
    fs::remove(dir_ / "kept_trace.json");
    fs::rename(dir_ / "traced.json", dir_ / "kept_trace.json");
    fs::create_symlink("kept_trace.json", dir_ / "traced.json");
    ASSERT_EQ(run_axonn(with_dir(run + "--steps 4 --resume latest --trace {dir}/traced.json"), dir_).exit_status, 0);
    EXPECT_TRUE(printed(dir_, with_dir("trace of 1 step(s) from step 3 of every rank: {dir}/traced.json " +
                                       continuing)));
    EXPECT_TRUE(fs::is_symlink(dir_ / "traced.json"));
    std::string const trace = file_bytes(dir_ / "kept_trace.json");
    EXPECT_NE(trace.find("\"step 2\""), std::string::npos) << "the earlier launch's step";
    EXPECT_NE(trace.find("\"step 3\""), std::string::npos) << "this launch's step";
}

// The same run rolled back to a copy of its earlier checkpoint kept elsewhere: it was refused, the later checkpoints
// said to "belong to another run" though they are its own (the same run id). It rolls back as from the folder
// itself: the later checkpoint is set aside and said so, and the original of the copy (its step) is kept.
TEST_F(CommandLineErrors, RollingBackToACopyOfTheRunsEarlierCheckpointElsewhereIsARollback) {
    std::string const run = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 --steps 4 "
                            "--ckpt-every 2 --ckpt-dir {dir}/copied ";
    fs::remove_all(dir_ / "copied");
    fs::remove_all(dir_ / "elsewhere");
    ASSERT_EQ(run_axonn(with_dir(run), dir_).exit_status, 0);
    fs::create_directories(dir_ / "elsewhere");
    fs::copy(dir_ / "copied" / "step_00000002", dir_ / "elsewhere" / "step_00000002", fs::copy_options::recursive);
    CommandResult const rolled = run_axonn(with_dir(run + "--resume {dir}/elsewhere/step_00000002"), dir_);
    ASSERT_EQ(rolled.exit_status, 0) << rolled.stderr_text;
    EXPECT_TRUE(printed(dir_, "rolling back to step 2: the later checkpoints are kept aside as "
                              "step_00000004.rolled-back-"));
    EXPECT_EQ(checkpoint_steps(dir_ / "copied"), (std::vector<std::int64_t>{2, 4}))
        << "the original of the copy kept, step 4 saved again";

    // A checkpoint of the rolled-back branch, resumed at its own step, sets the one of that step aside: said as such.
    fs::path branch;
    for (auto const& entry : fs::directory_iterator(dir_ / "copied")) {
        if (entry.path().filename().string().starts_with("step_00000004.rolled-back-")) branch = entry.path();
    }
    ASSERT_FALSE(branch.empty());
    CommandResult const back = run_axonn(with_dir(run + "--resume " + branch.string()), dir_);
    ASSERT_EQ(back.exit_status, 0) << back.stderr_text;
    EXPECT_TRUE(printed(dir_, "rolling back to step 4: the checkpoints of this step (other than the one resumed) "
                              "and later are kept aside as step_00000004."));

    // A copy whose step the folder holds from another branch (rolled back since and computed again): the folder's
    // checkpoint of that step is not the copy's original, and is set aside too (it was kept, mixing branches).
    fs::remove_all(dir_ / "elsewhere" / "step_00000004");
    fs::copy(dir_ / "copied" / "step_00000004", dir_ / "elsewhere" / "step_00000004", fs::copy_options::recursive);
    ASSERT_EQ(run_axonn(with_dir(run + "--resume {dir}/copied/step_00000002"), dir_).exit_status, 0);
    std::string const longer = with_dir(run) + "--steps 6 --resume " + (dir_ / "elsewhere" / "step_00000004").string();
    CommandResult const other_branch = run_axonn(longer, dir_);
    ASSERT_EQ(other_branch.exit_status, 0) << other_branch.stderr_text;
    EXPECT_TRUE(printed(dir_, "rolling back to step 4: the checkpoints of this step (other than the one resumed) "
                              "and later are kept aside as step_00000004."));
    EXPECT_EQ(checkpoint_steps(dir_ / "copied"), (std::vector<std::int64_t>{2, 6}));
}

// A run resumed at its last step has nothing to train and saves nothing: its --keep pruned nothing either, and the
// older checkpoints stayed. It prunes as a save would have.
TEST_F(CommandLineErrors, KeepPrunesWhenTheResumedRunHasNothingLeftToTrain) {
    std::string const run = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 --steps 4 "
                            "--ckpt-every 2 --ckpt-dir {dir}/done ";
    fs::remove_all(dir_ / "done");
    ASSERT_EQ(run_axonn(with_dir(run), dir_).exit_status, 0);
    CommandResult const resumed = run_axonn(with_dir(run + "--resume latest --keep 1"), dir_);
    ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
    EXPECT_EQ(checkpoint_steps(dir_ / "done"), (std::vector<std::int64_t>{4}));
}

// A --ckpt-dir holding a checkpoint of another run, or an import's, at a step no later than the run's start was
// taken, and --keep deleted it as the run's own. It is refused, naming the checkpoint, and left whole.
// A --metrics file that is another name (a hard link) of a checkpoint's COMPLETE marker, with --overwrite, or of a
// checkpoint folder's empty lock: the run writes a new file of its own under that name, and the checkpoint keeps
// its marker and its folder its lock. (The metrics were written into both, and the folder could not be resumed.)
TEST_F(CommandLineErrors, AMetricsFileThatIsAnotherNameOfACheckpointsFileIsReplacedNotWrittenThrough) {
    train_model_once();
    fs::path const marker = dir_ / "model" / "step_00000001" / "COMPLETE";
    std::string const marker_text = file_bytes(marker);
    std::string const train = "train --data {dir}/good --tokenizer byte --model gpt2-micro --steps 1 --sample-tokens 0 ";
    for (auto const& [linked, option] : {std::pair{marker, "--overwrite"}, std::pair{dir_ / "model" / ".lock", ""}}) {
        fs::path const metrics = dir_ / ("hard_link_to_" + linked.filename().string() + ".jsonl");
        fs::remove(metrics);
        fs::create_hard_link(linked, metrics);
        CommandResult const run = run_axonn(with_dir(train + "--metrics " + metrics.string() + " " + option), dir_);
        ASSERT_EQ(run.exit_status, 0) << run.stderr_text;
        EXPECT_NE(file_bytes(metrics).find("\"step\":1"), std::string::npos) << file_bytes(metrics);
    }
    EXPECT_EQ(file_bytes(marker), marker_text);
    EXPECT_EQ(file_bytes(dir_ / "model" / ".lock"), "");
    fs::remove_all(dir_ / "export_after_links");
    CommandResult const exported = run_axonn(with_dir("export {dir}/model {dir}/export_after_links"), dir_);
    EXPECT_EQ(exported.exit_status, 0) << exported.stderr_text;
}

// A checkpoint whose run state records the Goldfish setting as an earlier build wrote it, with an h that its
// strategy does not read ("k=4,h=13,strategy=static"), resumes with the same setting, not as a changed --goldfish.
TEST_F(CommandLineErrors, AResumeReadsTheGoldfishSettingAnEarlierBuildWrote) {
    fs::remove_all(dir_ / "goldfish_static");
    std::string const train = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 "
                              "--goldfish k=4,strategy=static --ckpt-dir {dir}/goldfish_static ";
    ASSERT_EQ(run_axonn(with_dir(train + "--steps 1"), dir_).exit_status, 0);
    fs::path const index = dir_ / "goldfish_static" / "step_00000001" / "index.json";
    nlohmann::json written = nlohmann::json::parse(file_bytes(index));
    EXPECT_EQ(written["run"]["goldfish"], "k=4,strategy=static");
    written["run"]["goldfish"] = "k=4,h=13,strategy=static";
    std::ofstream(index) << written.dump();
    CommandResult const resumed = run_axonn(with_dir(train + "--steps 2 --resume latest"), dir_);
    ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
    EXPECT_EQ(resumed.stderr_text.find("--goldfish"), std::string::npos) << resumed.stderr_text;
    EXPECT_EQ(file_bytes(dir_ / "stdout.txt").find("--goldfish"), std::string::npos);
}

// A --ckpt-dir that another run holds is refused for that, before any check of the checkpoints in it: a resume
// there with a --steps below its newest checkpoint was told to raise --steps, and then found the folder in use.
TEST_F(CommandLineErrors, AFolderInUseIsRefusedForThatBeforeItsCheckpointsAreChecked) {
    fs::remove_all(dir_ / "run_in_use");
    std::string const train = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 "
                              "--ckpt-dir {dir}/run_in_use ";
    ASSERT_EQ(run_axonn(with_dir(train + "--steps 2"), dir_).exit_status, 0);
    CheckpointDirLock const other_run(dir_ / "run_in_use");
    CommandResult const resumed = run_axonn(with_dir(train + "--steps 1 --resume latest"), dir_);
    EXPECT_EQ(resumed.exit_status, 1);
    EXPECT_EQ(resumed.stderr_text, with_dir("axonn: error: --ckpt-dir {dir}/run_in_use is in use by another run (it "
                                            "is locked): choose another folder, or wait for that run to end\n"));
}

// A Hugging Face model folder named where a checkpoint is read (--resume, export's CKPT) is called what it is, with
// what reads it, not "neither a checkpoint nor a folder of checkpoints".
TEST_F(CommandLineErrors, AHuggingFaceFolderGivenAsACheckpointIsNamedAsOne) {
    train_model_once();
    fs::remove_all(dir_ / "hf_not_a_checkpoint");
    ASSERT_EQ(run_axonn(with_dir("export {dir}/model {dir}/hf_not_a_checkpoint"), dir_).exit_status, 0);
    for (auto const& [command, option] :
         {std::pair{"train --data {dir}/good --tokenizer byte --steps 2 --resume {dir}/hf_not_a_checkpoint", "--resume"},
          std::pair{"export {dir}/hf_not_a_checkpoint {dir}/hf_again", "CKPT"}}) {
        CommandResult const result = run_axonn(with_dir(command), dir_);
        EXPECT_EQ(result.exit_status, 1);
        EXPECT_EQ(result.stderr_text,
                  with_dir("axonn: error: {dir}/hf_not_a_checkpoint is a Hugging Face model folder, not a checkpoint: "
                           "start a run from its weights with --init-from, or make it a checkpoint with `axonn "
                           "import`; check ") + option + "\n");
    }
}

TEST_F(CommandLineErrors, KeepNeverDeletesACheckpointOfAnotherRun) {
    train_model_once();
    std::string const micro = "--tokenizer byte --model gpt2-micro --sample-tokens 0 ";
    fs::remove_all(dir_ / "foreign");
    fs::remove_all(dir_ / "keep_dir");
    ASSERT_EQ(run_axonn(with_dir("train --data {dir}/good " + micro + "--steps 1 --seed 7 --ckpt-dir {dir}/foreign"),
                        dir_).exit_status, 0);
    fs::create_directories(dir_ / "keep_dir");
    fs::copy(dir_ / "foreign" / "step_00000001", dir_ / "keep_dir" / "step_00000001", fs::copy_options::recursive);
    CommandResult const resumed = run_axonn(
        with_dir("train --data {dir}/good " + micro + "--steps 3 --ckpt-dir {dir}/keep_dir --keep 1 "
                 "--resume {dir}/model/step_00000001"),
        dir_);
    EXPECT_EQ(resumed.exit_status, 1) << resumed.stderr_text;
    EXPECT_NE(resumed.stderr_text.find(with_dir("--ckpt-dir {dir}/keep_dir holds {dir}/keep_dir/step_00000001, a "
                                                "checkpoint of another run (")),
              std::string::npos)
        << resumed.stderr_text;
    // The run resumed is named too: the refusal called the folder's checkpoint "another run" without saying whose
    // this one is.
    std::string const resumed_run =
        nlohmann::json::parse(file_bytes(dir_ / "model" / "step_00000001" / "index.json"))["run"]["run_id"];
    EXPECT_NE(resumed.stderr_text.find("while this is run " + resumed_run + ": the two runs' checkpoints would mix"),
              std::string::npos)
        << resumed.stderr_text;
    EXPECT_TRUE(fs::exists(dir_ / "keep_dir" / "step_00000001" / "COMPLETE"));

    fs::remove_all(dir_ / "hf_keep");
    fs::remove_all(dir_ / "imported_keep");
    ASSERT_EQ(run_axonn(with_dir("export {dir}/model {dir}/hf_keep"), dir_).exit_status, 0);
    ASSERT_EQ(run_axonn(with_dir("import {dir}/hf_keep --out {dir}/imported_keep"), dir_).exit_status, 0);
    CommandResult const fresh = run_axonn(
        with_dir("train --data {dir}/good " + micro + "--steps 2 --ckpt-dir {dir}/imported_keep --keep 1"), dir_);
    EXPECT_EQ(fresh.exit_status, 1) << fresh.stderr_text;
    EXPECT_NE(fresh.stderr_text.find("a checkpoint of weights alone (an import's) or of a run without an id, while "
                                     "this is run "),
              std::string::npos)
        << fresh.stderr_text;
    EXPECT_NE(fresh.stderr_text.find(with_dir("(to start from its weights: --init-from "
                                              "{dir}/imported_keep/step_00000000 with another --ckpt-dir)")),
              std::string::npos)
        << fresh.stderr_text;
    EXPECT_TRUE(fs::exists(dir_ / "imported_keep" / "step_00000000" / "COMPLETE"));
    // Another import over it is refused, naming it an earlier import's, and replaces it only with --overwrite.
    CommandResult const again = run_axonn(with_dir("import {dir}/hf_keep --out {dir}/imported_keep"), dir_);
    EXPECT_EQ(again.exit_status, 1);
    EXPECT_NE(again.stderr_text.find(with_dir("--out {dir}/imported_keep already holds an earlier import's checkpoint "
                                              "of step 0 ({dir}/imported_keep/step_00000000): choose another folder, "
                                              "or pass --overwrite to replace it")),
              std::string::npos)
        << again.stderr_text;
    EXPECT_EQ(run_axonn(with_dir("import {dir}/hf_keep --out {dir}/imported_keep --overwrite"), dir_).exit_status, 0);
}

// Not an error: validation data too small for the default 8 batches. The good folder's 3,000 validation tokens
// hold 5 batches of 4 x 128, and the default evaluates those 5 (an --eval-batches of 6 is refused).
TEST_F(CommandLineErrors, TheDefaultEvaluationFitsASmallValidationSet) {
    std::string const run = "train --data {dir}/good --tokenizer byte --model gpt2-micro --batch 4 "
                            "--context 128 --seq 128 --steps 1 --sample-tokens 0 --metrics {dir}/small_val.jsonl "
                            "--overwrite";
    CommandResult const result = run_axonn(with_dir(run), dir_);
    EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "small_val.jsonl").find("val_loss"), std::string::npos);
    CommandResult const too_many = run_axonn(with_dir(run + " --eval-batches 6"), dir_);
    EXPECT_EQ(too_many.exit_status, 2);
    EXPECT_NE(too_many.stderr_text.find("it has 5 batches of 4 x 128 tokens; use at most 5"), std::string::npos)
        << too_many.stderr_text;
}

// Not an error: a val.bin beside the training data too small for one batch, with --eval-batches defaulted too, leaves
// the run without validation and says why; asked for by --eval-batches, it is refused.
TEST_F(CommandLineErrors, TheDefaultsTrainWithoutValidationWhereNotOneBatchFits) {
    fs::create_directories(dir_ / "tiny_val");
    std::vector<std::int32_t> tokens(600);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(i * 11 % 256);
    write_token_shard(dir_ / "tiny_val" / "train.bin", tokens, 16);
    write_token_shard(dir_ / "tiny_val" / "val.bin", std::span(tokens).first(72), 16);
    std::string const run = "train --data {dir}/tiny_val --tokenizer byte --model gpt2-micro --batch 4 --seq 32 "
                            "--steps 1 --sample-tokens 0";
    CommandResult const result = run_axonn(with_dir(run), dir_);
    EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
    std::string const printed = file_bytes(dir_ / "stdout.txt");
    EXPECT_NE(printed.find(with_dir("no validation: {dir}/tiny_val/val.bin holds 72 tokens, fewer than one batch of 4 "
                                    "x 32 needs (129)")),
              std::string::npos)
        << printed;
    CommandResult const asked = run_axonn(with_dir(run + " --eval-batches 1"), dir_);
    EXPECT_EQ(asked.exit_status, 1);
    EXPECT_NE(asked.stderr_text.find("holds 72 tokens, fewer than one batch needs (129 = B·T + 1)"), std::string::npos)
        << asked.stderr_text;
}

// Not an error: shape options that agree with --init-from's model (gpt2-micro: 2 layers, width 64) are accepted;
// the default preset's other dimensions are not held against it.
TEST_F(CommandLineErrors, InitFromWithShapeOptionsThatAgreeTrains) {
    train_model_once();
    CommandResult const result = run_axonn(
        with_dir("train --data {dir}/good --tokenizer byte --init-from {dir}/model --n-layer 2 --n-embd 64 "
                 "--steps 1 --seq 32 --sample-tokens 0"),
        dir_);
    EXPECT_EQ(result.exit_status, 0) << result.stderr_text;
}

// A prepare refused after it made its output folder (an empty input, found while tokenizing) removes the folders
// it made; a folder that was there before stays.
TEST_F(CommandLineErrors, ARefusedPrepareLeavesNoFolderBehind) {
    std::ofstream(dir_ / "empty_input.txt").flush();
    CommandResult const result =
        run_axonn(with_dir("prepare --input {dir}/empty_input.txt --out {dir}/never_made/out --tokenizer byte"), dir_);
    EXPECT_EQ(result.exit_status, 1) << result.stderr_text;
    EXPECT_NE(result.stderr_text.find("is empty"), std::string::npos) << result.stderr_text;
    EXPECT_FALSE(fs::exists(dir_ / "never_made"));
    fs::create_directories(dir_ / "made_before");
    EXPECT_EQ(run_axonn(with_dir("prepare --input {dir}/empty_input.txt --out {dir}/made_before --tokenizer byte"), dir_)
                  .exit_status,
              1);
    EXPECT_TRUE(fs::is_directory(dir_ / "made_before"));
}

// Not an error: `memorization eval` of a trained checkpoint prints one JSON object with a summary per bucket.
TEST_F(CommandLineErrors, MemorizationEvalOfACheckpointPrintsItsScores) {
    train_model_once();
    std::ofstream(dir_ / "eval_docs.jsonl") << "{\"tokens\": [1, 2, 3, 4, 5, 6, 7, 8, 9], \"repetitions\": 2}\n"
                                            << "{\"text\": \"abc\"}\n";  // 3 byte tokens: too short, skipped
    CommandResult const result = run_axonn(
        with_dir("memorization eval --model-dir {dir}/model --documents {dir}/eval_docs.jsonl --heldout "
                 "{dir}/docs.jsonl --tokenizer byte --prefix 4 --suffix 4 --goldfish k=2,h=1 --json"),
        dir_);
    ASSERT_EQ(result.exit_status, 0) << result.stderr_text;
    nlohmann::json const report = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    EXPECT_EQ(report["skipped_short"], 1);
    EXPECT_EQ(report["members"]["documents"], 1);
    ASSERT_EQ(report["buckets"].size(), 2u);  // the held-out bucket sorts first
    EXPECT_EQ(report["buckets"][0]["repetitions"], "held out");
    EXPECT_EQ(report["buckets"][1]["repetitions"], 2);
    EXPECT_TRUE(report["mia_auc"].is_number());
    double const token_match = report["members"]["token_match"];
    EXPECT_GE(token_match, 0.0);
    EXPECT_LE(token_match, 1.0);
}

// Not an error: `axonn generate` of a trained checkpoint, one prompt per line, prints each continuation, and
// generates the same from the checkpoint exported to Hugging Face's format.
TEST_F(CommandLineErrors, GenerateFromACheckpointPrintsEachContinuation) {
    train_model_once();
    std::ofstream(dir_ / "prompts.txt") << "It is\n\nShe said\n";
    CommandResult const result = run_axonn(
        with_dir("generate --model-dir {dir}/model --tokenizer byte --prompt-file {dir}/prompts.txt "
                 "--max-new-tokens 5 --greedy --json"),
        dir_);
    ASSERT_EQ(result.exit_status, 0) << result.stderr_text;
    EXPECT_NE(result.stderr_text.find("generated 10 tokens for 2 prompt(s)"), std::string::npos) << result.stderr_text;
    nlohmann::json const report = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    ASSERT_EQ(report.size(), 2u);
    EXPECT_EQ(report[0]["prompt"], "It is");
    EXPECT_EQ(report[1]["prompt"], "She said");
    EXPECT_EQ(report[1]["prompt_tokens"], 8);
    for (nlohmann::json const& entry : report) {
        ASSERT_EQ(entry["tokens"].size(), 5u);
        for (int token : entry["tokens"]) EXPECT_TRUE(token >= 0 && token < 257);
    }
    // The same model exported to Hugging Face's format continues the prompts alike.
    ASSERT_EQ(run_axonn(with_dir("export --format hf {dir}/model {dir}/model_hf"), dir_).exit_status, 0);
    CommandResult const from_hf = run_axonn(
        with_dir("generate --model-dir {dir}/model_hf --tokenizer byte --prompt-file {dir}/prompts.txt "
                 "--max-new-tokens 5 --greedy --json"),
        dir_);
    ASSERT_EQ(from_hf.exit_status, 0) << from_hf.stderr_text;
    EXPECT_EQ(nlohmann::json::parse(file_bytes(dir_ / "stdout.txt")), report);
}

// Not an error: fine-tuning records prepared with their loss mask train from a checkpoint (--init-from), counting
// only the responses, in the loss and in validation; a run resumed from its checkpoint continues bit for bit.
TEST_F(CommandLineErrors, FinetuningOnRecordsFromACheckpointCountsTheResponses) {
    train_model_once();
    CommandResult const prepared = run_axonn(
        with_dir("prepare --format jsonl --template alpaca --input {dir}/records.jsonl --out {dir}/records "
                 "--tokenizer byte"),
        dir_);
    ASSERT_EQ(prepared.exit_status, 0) << prepared.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("(54 records, "), std::string::npos)
        << file_bytes(dir_ / "stdout.txt");
    CommandResult const trained = run_axonn(
        with_dir("train --data {dir}/records --init-from {dir}/model --tokenizer byte --steps 2 --batch 2 --seq 32 "
                 "--eval-batches 1 --sample-tokens 0"),
        dir_);
    ASSERT_EQ(trained.exit_status, 0) << trained.stderr_text;
    std::string const out = file_bytes(dir_ / "stdout.txt");
    EXPECT_NE(out.find("training tokens count as targets (responses, not prompts); validation is masked alike"),
              std::string::npos) << out;
    EXPECT_NE(out.find("weights from"), std::string::npos) << out;

    std::string const run = "train --data {dir}/records --tokenizer byte --model gpt2-micro --steps 6 --batch 2 "
                            "--seq 32 --eval-batches 1 --sample-tokens 0 --gemm-tuning off --ckpt-every 3 ";
    CommandResult const whole_run = run_axonn(
        with_dir(run + "--init-from {dir}/model --ckpt-dir {dir}/ft_whole --metrics {dir}/ft_whole.jsonl"), dir_);
    ASSERT_EQ(whole_run.exit_status, 0) << whole_run.stderr_text;
    CommandResult const resumed = run_axonn(
        with_dir(run + "--ckpt-dir {dir}/ft_resumed --resume {dir}/ft_whole/step_00000003 --metrics "
                 "{dir}/ft_resumed.jsonl"),
        dir_);
    ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
    std::map<int, double> whole = step_losses(dir_ / "ft_whole.jsonl");
    ASSERT_EQ(whole.size(), 6u);
    whole.erase(whole.begin(), whole.find(3));
    EXPECT_EQ(step_losses(dir_ / "ft_resumed.jsonl"), whole);
}

// Not an error: `plan` of Llama 3.1 405B on 4,096 of Frontier's GCDs lists the grids that fit, each splitting Y
// no further than the 8 key/value heads allow.
TEST_F(CommandLineErrors, PlanListsLlamaGridsThatFitOnFrontier) {
    CommandResult const result = run_axonn("plan --model llama3.1-405b --gpus 4096 --machine frontier --batch 1024 "
                                           "--seq 8192 --recompute layer --precision bf16 --json", dir_);
    ASSERT_EQ(result.exit_status, 0) << result.stderr_text;
    nlohmann::json const grids = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    ASSERT_FALSE(grids.empty());
    for (nlohmann::json const& grid : grids) {
        EXPECT_FALSE(grid.contains("excluded"));
        EXPECT_EQ(8 % grid["grid"]["y"].get<int>(), 0) << grid.dump();
        EXPECT_LE(grid["memory_bytes"].get<double>(), 64.0 * (1 << 30)) << grid.dump();
    }
}

// Not an error: `plan --weak-scaling` of GPT presets on Frontier prints one row per point, the first at 100%
// efficiency, with the same numbers in --json (the batch growing with the devices, or fixed with
// --weak-scaling-batch fixed), and writes its plot as a PNG (replacing its own with --overwrite). And the planner on its largest count,
// 1,048,576 devices (every grid of 2^20 evaluated), answers within issue 13's 10 seconds.
TEST_F(CommandLineErrors, PlanWeakScalingWritesItsTableAndPlot) {
    std::string const series = "plan --weak-scaling gpt-5b:512,gpt-10b:1024,gpt-20b:2048 --batch 512 --seq 2048 "
                               "--machine frontier --precision bf16 --recompute layer --plot {dir}/weak.png --overwrite";
    CommandResult const result = run_axonn(with_dir(series + " --json"), dir_);
    ASSERT_EQ(result.exit_status, 0) << result.stderr_text;
    nlohmann::json const points = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    ASSERT_EQ(points.size(), 3u);
    EXPECT_EQ(points[0]["efficiency"], 1.0);
    EXPECT_EQ(points[2]["devices"], 2048);
    EXPECT_EQ(points[2]["batch"], 2048);
    EXPECT_EQ(file_bytes(dir_ / "weak.png").substr(0, 8), std::string("\x89PNG\r\n\x1a\n"));
    ASSERT_EQ(run_axonn(with_dir(series), dir_).exit_status, 0);
    EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("efficiency"), std::string::npos);
    // A fixed batch: every point trains --batch sequences.
    ASSERT_EQ(run_axonn(with_dir(series + " --json --weak-scaling-batch fixed"), dir_).exit_status, 0);
    nlohmann::json const fixed = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    ASSERT_EQ(fixed.size(), 3u);
    for (auto const& point : fixed) EXPECT_EQ(point["batch"], 512) << point.dump();
    EXPECT_EQ(fixed[2]["devices"], 2048);

    // A million devices are planned for in seconds (none fits that batch: exit 1, the empty list printed).
    auto const start = std::chrono::steady_clock::now();
    CommandResult const million =
        run_axonn("plan --model gpt-175b --gpus 1048576 --batch 1048576 --machine frontier --top 1 --json", dir_);
    EXPECT_EQ(million.exit_status, 1) << million.stderr_text;
    EXPECT_EQ(file_bytes(dir_ / "stdout.txt"), "[]\n");
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
}

// Not an error: `axonn generate` from a Hugging Face Llama folder (written by the PyTorch twin, with the byte
// tokenizer's 257 ids) continues a prompt, greedily, by the tokens asked for.
TEST_F(CommandLineErrors, GenerateFromAHuggingFaceLlamaFolder) {
    nlohmann::json const config = {{"model_type", "llama"}, {"vocab_size", 257}, {"hidden_size", 32},
                                   {"intermediate_size", 48}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                                   {"num_key_value_heads", 2}, {"max_position_embeddings", 32},
                                   {"rms_norm_eps", 1e-5}, {"rope_theta", 10000.0}};
    fs::create_directories(dir_ / "llama_inputs");
    std::ofstream(dir_ / "llama_inputs" / "config.json") << config.dump();
    Tensor tokens({1, 4}, DType::i32);
    std::fill_n(tokens.data<std::int32_t>(), 4, 65);
    NamedTensors inputs;
    inputs.emplace("tokens", std::move(tokens));
    write_tensor_file(dir_ / "llama_inputs" / "batch.axt", inputs);
    std::string const twin = std::string("/usr/bin/python3 ") + AXONN_SOURCE_DIR +
                             "/tests/reference/llama_reference.py --write-hf " + (dir_ / "llama_hf").string() +
                             " --input " + (dir_ / "llama_inputs").string() + " --output " +
                             (dir_ / "llama_logits.axt").string();
    ASSERT_EQ(std::system(twin.c_str()), 0) << twin;
    CommandResult const result = run_axonn(
        with_dir("generate --model-dir {dir}/llama_hf --tokenizer byte --prompt abc --max-new-tokens 6 --greedy --json"),
        dir_);
    ASSERT_EQ(result.exit_status, 0) << result.stderr_text;
    nlohmann::json const report = nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"));
    ASSERT_EQ(report.size(), 1u);
    EXPECT_EQ(report[0]["prompt_tokens"], 3);
    EXPECT_EQ(report[0]["tokens"].size(), 6u);
}

// Not an error: `tokenize` prints a text's ids as a JSON list (Llama 3's, as Hugging Face gives them), and
// `tokenize --decode` of that list prints the text back, byte for byte; standard input (no FILE, or -) works too.
TEST_F(CommandLineErrors, TokenizeThenDecodeGivesTheTextBack) {
    std::ofstream(dir_ / "cute.txt") << "Hello, my dog is cute";
    CommandResult const encoded = run_axonn(with_dir("tokenize --tokenizer llama3 {dir}/cute.txt"), dir_);
    ASSERT_EQ(encoded.exit_status, 0) << encoded.stderr_text;
    std::string const ids = file_bytes(dir_ / "stdout.txt");
    EXPECT_EQ(nlohmann::json::parse(ids), nlohmann::json({9906, 11, 856, 5679, 374, 19369})) << ids;
    std::ofstream(dir_ / "cute_ids.json") << ids;
    CommandResult const decoded = run_axonn(with_dir("tokenize --tokenizer llama3 --decode {dir}/cute_ids.json"), dir_);
    ASSERT_EQ(decoded.exit_status, 0) << decoded.stderr_text;
    EXPECT_EQ(file_bytes(dir_ / "stdout.txt"), "Hello, my dog is cute");
    for (char const* input : {"", "- "}) {
        CommandResult const piped =
            run_axonn(with_dir(std::string("tokenize --tokenizer llama3 ") + input + "< {dir}/cute.txt"), dir_);
        ASSERT_EQ(piped.exit_status, 0) << piped.stderr_text;
        EXPECT_EQ(file_bytes(dir_ / "stdout.txt"), ids) << "FILE '" << input << "'";
    }
    CommandResult const piped_ids = run_axonn(with_dir("tokenize --tokenizer llama3 --decode < {dir}/cute_ids.json"), dir_);
    ASSERT_EQ(piped_ids.exit_status, 0) << piped_ids.stderr_text;
    EXPECT_EQ(file_bytes(dir_ / "stdout.txt"), "Hello, my dog is cute");
}

// Not an error: an empty --prompt is one of its values (the continuation starts from the end-of-text token), which
// the check of empty values lets through, the same written `--prompt ""`, `--prompt=` or `prompt = ""` in a config
// file. CLI11 read `--prompt=` as the option without a value and took the
// next argument: `--prompt= --greedy` prompted with "--greedy" and sampled.
TEST_F(CommandLineErrors, AnEmptyPromptIsTheSameWrittenAnyWay) {
    train_model_once();
    std::ofstream(dir_ / "empty_prompt.toml") << "prompt = \"\"\n";
    std::string const generate = "generate --model-dir {dir}/model --tokenizer byte --max-new-tokens 4 --json ";
    CommandResult const quoted = run_axonn(with_dir(generate + "--prompt '' --greedy"), dir_);
    ASSERT_EQ(quoted.exit_status, 0) << quoted.stderr_text;
    std::string const tokens = file_bytes(dir_ / "stdout.txt");
    EXPECT_NE(tokens.find("\"prompt\":\"\""), std::string::npos) << tokens;
    for (char const* written : {"--prompt= --greedy", "--config {dir}/empty_prompt.toml --greedy"}) {
        CommandResult const result = run_axonn(with_dir(generate + written), dir_);
        ASSERT_EQ(result.exit_status, 0) << written << ": " << result.stderr_text;
        EXPECT_EQ(file_bytes(dir_ / "stdout.txt"), tokens) << written;
    }
}

// A warm-up longer than the run (the learning rate never reaches --lr) and a --prompt with no sample to continue:
// the run said nothing of either (a prompt is not refused: a config file may set one that --sample-tokens 0 drops).
TEST_F(CommandLineErrors, AWarmupLongerThanTheRunAndAnUnusedPromptAreSaid) {
    std::string const train =
        "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 --lr 0.001 ";
    CommandResult const longer = run_axonn(with_dir(train + "--steps 2 --warmup 10 --prompt Once"), dir_);
    ASSERT_EQ(longer.exit_status, 0) << longer.stderr_text;
    EXPECT_TRUE(printed(dir_, "--warmup 10 is longer than the run's 2 steps: the learning rate climbs throughout and "
                              "never reaches --lr 0.001"));
    EXPECT_TRUE(printed(dir_, "--prompt is not used: --sample-tokens 0 draws no sample at the end"));
    CommandResult const as_long = run_axonn(with_dir(train + "--steps 2 --warmup 2"), dir_);  // reached at step 2
    ASSERT_EQ(as_long.exit_status, 0) << as_long.stderr_text;
    EXPECT_EQ(file_bytes(dir_ / "stdout.txt").find("--warmup"), std::string::npos);
    EXPECT_EQ(file_bytes(dir_ / "stdout.txt").find("--prompt"), std::string::npos);
}

// A standard stream the caller closed (`<&-`, `>&-`) is the next descriptor open() hands out: standard input was
// the first file the command opened (`tokenize` printed "[]"), and a run's banner went into the first file it
// opened (the MPI session's lock file; the metrics file, had it come first). Both now hold /dev/null, reading a
// closed standard input is refused, and so is a closed standard output, at the start.
TEST_F(CommandLineErrors, ClosedStandardStreamsAreNeitherReadAsEmptyNorWrittenIntoFiles) {
    CommandResult const closed_input = run_axonn("tokenize --tokenizer byte <&-", dir_);
    EXPECT_EQ(closed_input.exit_status, 1);
    EXPECT_EQ(closed_input.stderr_text,
              "axonn: error: standard input is closed: name the text file as FILE, or pipe it in\n");
    // A closed standard output: what the command prints (token ids, generated text, JSON, a run's banner and
    // sample) was lost with exit status 0. Refused before anything is opened or written, for every command.
    fs::path const metrics = dir_ / "stdout_closed.jsonl";
    for (std::string const& command :
         {"train --data " + (dir_ / "good").string() + " --tokenizer byte --model gpt2-micro --steps 2 "
          "--sample-tokens 0 --metrics " + metrics.string(),
          std::string("tokenize --tokenizer byte ") + (dir_ / "good" / "train.bin").string(), std::string("--help")}) {
        std::string const closed = "timeout 60 " + binary().string() + " " + command + " >&- 2> " +
                                   (dir_ / "stderr.txt").string();
        int const status = std::system(closed.c_str());
        EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 1) << command;
        EXPECT_EQ(file_bytes(dir_ / "stderr.txt"),
                  "axonn: error: standard output is closed (>&-): what the command prints would be lost; redirect "
                  "it to a file, or to /dev/null to discard it\n")
            << command;
    }
    EXPECT_FALSE(fs::exists(metrics)) << "the run started";
}

// The `axonn` command blocks every stop signal before it becomes axonn-main, whose signal thread takes a pending one
// once it starts: a SIGHUP or Ctrl-C in the milliseconds while the loader maps axonn-main's libraries ended a run by
// the signal's default action (129, no checkpoint), where a SIGTERM then was held and saved (75). Seen through an
// axonn-main that prints the signal mask it inherits.
TEST_F(CommandLineErrors, TheLauncherHoldsEveryStopSignalUntilTheProgramTakesThem) {
    fs::path const folder = dir_ / "launcher";
    fs::create_directories(folder);
    fs::copy_file(binary(), folder / "axonn", fs::copy_options::overwrite_existing);
    std::ofstream(folder / "axonn-main") << "#!/bin/sh\nexec grep '^SigBlk:' /proc/self/status\n";
    fs::permissions(folder / "axonn-main", fs::perms::owner_all);
    std::string const command = (folder / "axonn").string() + " > " + (dir_ / "mask.txt").string();
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    std::string const line = file_bytes(dir_ / "mask.txt");
    ASSERT_EQ(line.rfind("SigBlk:", 0), 0u) << line;
    std::uint64_t const blocked = std::stoull(line.substr(std::string("SigBlk:").size()), nullptr, 16);
    for (int const signal : {SIGTERM, SIGUSR1, SIGINT, SIGHUP}) {
        EXPECT_TRUE((blocked >> (signal - 1)) & 1) << strsignal(signal) << " is not held: " << line;
    }
}

// A byte-order mark that starts the file is not text: the ids are those of the text after it, as `prepare` trains
// on. FILE may be a pipe (a FIFO, or a shell's <(command)), read to its end as standard input is; a regular file of
// the same text gives the same ids.
TEST_F(CommandLineErrors, TokenizeReadsAPipeAndDropsAByteOrderMark) {
    std::ofstream(dir_ / "cute.txt") << "Hello, my dog is cute";
    std::ofstream(dir_ / "marked.txt") << "\xEF\xBB\xBFHello, my dog is cute";
    ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0600), 0);
    CommandResult const plain = run_axonn(with_dir("tokenize --tokenizer llama3 {dir}/cute.txt"), dir_);
    ASSERT_EQ(plain.exit_status, 0) << plain.stderr_text;
    std::string const ids = file_bytes(dir_ / "stdout.txt");
    CommandResult const marked = run_axonn(with_dir("tokenize --tokenizer llama3 {dir}/marked.txt"), dir_);
    ASSERT_EQ(marked.exit_status, 0) << marked.stderr_text;
    EXPECT_EQ(file_bytes(dir_ / "stdout.txt"), ids);
    CommandResult const piped = run_axonn(with_dir("tokenize --tokenizer llama3 {dir}/pipe"), dir_,
                                          with_dir("cat {dir}/marked.txt > {dir}/pipe &"));
    ASSERT_EQ(piped.exit_status, 0) << piped.stderr_text;
    EXPECT_EQ(file_bytes(dir_ / "stdout.txt"), ids);
}

TEST_P(CommandLineErrors, OneLineErrorAndNonZeroExit) {
    BadInput const& input = GetParam();
    // The model, and the links to its files and the copy that train_model_once makes.
    for (char const* needs_the_model :
         {"{dir}/model", "{dir}/link", "{dir}/incomplete_only", "{dir}/renamed", "{dir}/unmarked", "{dir}/overlong"}) {
        if (input.arguments.find(needs_the_model) != std::string::npos) train_model_once();
    }
    CommandResult const result = run_axonn(with_dir(input.arguments), dir_, with_dir(input.launcher));
    EXPECT_EQ(result.exit_status, input.exit_status) << result.stderr_text;
    ASSERT_FALSE(result.stderr_text.empty());
    ASSERT_EQ(result.stderr_text.back(), '\n') << result.stderr_text;
    // The error is the last line; a run that fails mid-way printed its progress before it.
    std::size_t const last_line = result.stderr_text.rfind('\n', result.stderr_text.size() - 2) + 1;
    if (!input.after_progress) {
        EXPECT_EQ(last_line, 0u) << "not one line: " << result.stderr_text;
    }
    std::string const error = result.stderr_text.substr(last_line);
    EXPECT_NE(error.find(with_dir(input.expected)), std::string::npos) << result.stderr_text;
    EXPECT_EQ(error.rfind("axonn: error: ", 0), 0u) << result.stderr_text;
}

INSTANTIATE_TEST_SUITE_P(BadInputs, CommandLineErrors, ::testing::ValuesIn(bad_inputs),
                         [](auto const& info) { return info.param.name; });

// Two commands writing the same new output folder both passed its checks before either wrote, and the second
// replaced the first's files, both exiting 0 without --overwrite. A folder another command holds is refused.
// So did two imports, an import and a training run, and two memorization studies (each replacing some of the
// other's results); a training run or an import holds its folder too, so an export or a prepare is not mixed into it.
TEST_F(CommandLineErrors, AnOutputFolderAnotherCommandWritesIsRefused) {
    train_model_once();
    std::string const export_model = binary().string() + " export " + (dir_ / "model").string() + " " +
                                     (dir_ / "hf_to_import").string() + " > /dev/null 2>&1";
    if (!fs::exists(dir_ / "hf_to_import")) {
        ASSERT_EQ(std::system(export_model.c_str()), 0) << export_model;
    }
    for (auto const& [folder, arguments, what] :
         {std::tuple{dir_ / "held_export", with_dir("export {dir}/model {dir}/held_export"), "export folder"},
          std::tuple{dir_ / "held_shards", with_dir("prepare --input {dir}/text.txt --out {dir}/held_shards "
                                                    "--tokenizer byte"),
                     "token shard folder"},
          std::tuple{dir_ / "held_import", with_dir("import {dir}/hf_to_import --out {dir}/held_import"),
                     "checkpoint folder"},
          std::tuple{dir_ / "held_run", with_dir("train --data {dir}/good --tokenizer byte --steps 1 --ckpt-dir "
                                                 "{dir}/held_run"),
                     "checkpoint folder"},
          std::tuple{dir_ / "held_study", with_dir("memorization study --quick --out {dir}/held_study"),
                     "results folder"}}) {
        fs::create_directories(folder);
        FolderLock const other_command(folder, what);
        CommandResult const result = run_axonn(arguments, dir_);
        EXPECT_EQ(result.exit_status, 1) << arguments;
        EXPECT_NE(result.stderr_text.find(fmt::format("the {} {} is being written by another command: wait until it "
                                                      "ends, or choose another folder",
                                                      what, folder.string())),
                  std::string::npos)
            << result.stderr_text;
        // Nothing written there (a training run's or an import's lock file aside).
        for (fs::directory_entry const& entry : fs::directory_iterator(folder)) {
            EXPECT_EQ(entry.path().filename(), ".lock") << arguments;
        }
    }
}

// Reporting an error must not fail in turn when stderr cannot be written: an exit status, not SIGABRT.
TEST_F(CommandLineErrors, AnErrorWithStderrOnAFullDiskStillExitsWithItsStatus) {
    std::string const command = "timeout 60 " + binary().string() + " train --data " + (dir_ / "nowhere").string() +
                                " --tokenizer byte > /dev/null 2> /dev/full";
    int const status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 1);
}

// A command's result (a plan, a JSON record) that standard output cannot take is a failure, not exit 0.
TEST_F(CommandLineErrors, AResultThatCannotBeWrittenIsAFailure) {
    // The table (about 1 KB) fails when it is flushed at the end; the JSON (over 5 KB, more than the stream's
    // buffer) fails mid-command, in the middle of a print.
    // A training run's banner fails in a print, and the final flush succeeds: the reason was another call's errno
    // ("No such file or directory"). The help exited 0.
    for (std::string const& arguments : {std::string("--help"), std::string("train --help"),
                                        std::string("plan --model gpt-5b --gpus 8 --batch 8"),
                                        std::string("plan --model gpt-5b --gpus 8 --batch 8 --json"),
                                        "train --data " + (dir_ / "good").string() + " --tokenizer byte --steps 3"}) {
        std::string const command = "timeout 60 " + binary().string() + " " + arguments + " > /dev/full 2> " +
                                    (dir_ / "stderr.txt").string();
        int const status = std::system(command.c_str());
        ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
        EXPECT_EQ(WEXITSTATUS(status), 1) << arguments;
        std::string const error = file_bytes(dir_ / "stderr.txt");
        std::string const last_line = error.substr(error.rfind('\n', error.size() - 2) + 1);
        EXPECT_EQ(last_line.rfind("axonn: error: cannot write the output: No space left on device", 0), 0u) << error;
    }
}

// A metrics file that stops growing mid-run (a full disk, here a file-size limit) ends the run and keeps whole lines.
TEST_F(CommandLineErrors, MetricsOnAFillingDiskKeepWholeLines) {
    fs::path const metrics = dir_ / "whole_lines.jsonl";
    CommandResult const result = run_axonn("train --data " + (dir_ / "good").string() + " --tokenizer byte --steps 40 "
                                           "--eval-every 1000 --metrics " + metrics.string(),
                                           dir_, "ulimit -f 8; PMIX_MCA_gds=hash");
    EXPECT_EQ(result.exit_status, 1) << result.stderr_text;
    std::string const lines = file_bytes(metrics);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.back(), '\n') << "a torn last line: " << lines.substr(lines.rfind('\n') + 1);
    EXPECT_LT(std::count(lines.begin(), lines.end(), '\n'), 40);
}

// A save that fails mid-run (a full disk, here a file-size limit) says what is left to resume: the newest complete
// checkpoint and --resume latest, or that none is complete yet (it said only which file it could not write).
TEST_F(CommandLineErrors, ASaveThatFailsSaysWhatIsLeftToResume) {
    std::string const run = "train --data {dir}/good --tokenizer byte --model gpt2-micro --sample-tokens 0 "
                            "--ckpt-dir {dir}/failing_saves ";
    // The run's error, under a file-size limit that no checkpoint file fits.
    auto const failed_save = [&](std::string const& arguments) {
        CommandResult const result = run_axonn(with_dir(run + arguments), dir_, "ulimit -f 8; PMIX_MCA_gds=hash");
        EXPECT_EQ(result.exit_status, 1) << arguments;
        return result.stderr_text;
    };
    remove_run_outputs(dir_, "failing_saves");
    // With a --trace, which an error ends unwritten: said, before the error.
    std::string const first = failed_save("--steps 2 --trace {dir}/failing_saves.json");
    EXPECT_NE(first.find(with_dir("axonn: the --trace file {dir}/failing_saves.json is not written: the run ended on "
                                  "the error below\naxonn: error: cannot write checkpoint file ")),
              std::string::npos)
        << first;
    EXPECT_NE(first.find(with_dir("the file system's largest file; no checkpoint is complete in {dir}/failing_saves "
                                  "yet: fix that, and run again")),
              std::string::npos)
        << first;
    ASSERT_EQ(run_axonn(with_dir(run + "--steps 2"), dir_).exit_status, 0);
    std::string const later = failed_save("--steps 4 --resume latest");
    EXPECT_NE(later.find(with_dir("the file system's largest file; the newest checkpoint, "
                                  "{dir}/failing_saves/step_00000002, is whole: fix that, then continue with --resume "
                                  "latest")),
              std::string::npos)
        << later;
}

// A run refused over its outputs makes nothing: not the --ckpt-dir (nor its lock), not a folder named as a file.
TEST_F(CommandLineErrors, ARefusedRunLeavesNothingBehind) {
    struct Refused {
        std::string arguments;
        fs::path left_out;
    };
    for (Refused const& refused :
         {Refused{"train --data " + (dir_ / "good").string() + " --tokenizer byte --ckpt-dir " +
                      (dir_ / "fresh_ckpt").string() + " --metrics " + (dir_ / "fresh_ckpt").string(),
                  dir_ / "fresh_ckpt"},
          Refused{"train --data " + (dir_ / "good").string() + " --tokenizer byte --ckpt-dir " +
                      (dir_ / "fresh_ckpt2").string() + " --metrics " + (dir_ / "fresh_m.jsonl/").string(),
                  dir_ / "fresh_ckpt2"},
          Refused{"tune --model gpt2-micro --tokenizer byte --batch 8 --seq 16 --out " +
                      (dir_ / "fresh_grid.json/").string(),
                  dir_ / "fresh_grid.json"}}) {
        CommandResult const result = run_axonn(refused.arguments, dir_);
        EXPECT_EQ(result.exit_status, 1) << refused.arguments << ": " << result.stderr_text;
        EXPECT_FALSE(fs::exists(refused.left_out)) << refused.arguments;
    }
    EXPECT_FALSE(fs::exists(dir_ / "fresh_m.jsonl"));
}

// A prepare that runs out of disk leaves the previous train.bin and val.bin as they were, and no partial file.
TEST_F(CommandLineErrors, PrepareOnAFullDiskKeepsThePreviousPair) {
    fs::path const out = dir_ / "pair";
    std::string const prepare = "prepare --tokenizer byte --out " + out.string() + " --input ";
    ASSERT_EQ(run_axonn(prepare + (dir_ / "text.txt").string(), dir_).exit_status, 0);
    std::string const train_before = file_bytes(out / "train.bin"), val_before = file_bytes(out / "val.bin");
    std::ofstream(dir_ / "long.txt") << std::string(200000, 'x');  // 400 KB of 16-bit tokens: past the limit
    CommandResult const result =
        run_axonn(prepare + (dir_ / "long.txt").string() + " --overwrite", dir_, "ulimit -f 64; PMIX_MCA_gds=hash");
    EXPECT_EQ(result.exit_status, 1) << result.stderr_text;
    EXPECT_NE(result.stderr_text.find("size limit"), std::string::npos) << result.stderr_text;
    EXPECT_EQ(file_bytes(out / "train.bin"), train_before);
    EXPECT_EQ(file_bytes(out / "val.bin"), val_before);
    EXPECT_FALSE(fs::exists(out / "train.bin.partial"));
    EXPECT_FALSE(fs::exists(out / "val.bin.partial"));
}

}  // namespace
}  // namespace axonn
