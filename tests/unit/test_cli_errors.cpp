// Bad input to the `axonn` command: each case must end with exactly one line on stderr that names the problem,
// a non-zero exit status (2 for the command line, 1 for bad data or values), and no crash or hang.
#include "axonn/io/token_shard.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace axonn {
namespace {

namespace fs = std::filesystem;

struct CommandResult {
    int exit_status;
    std::string stderr_text;
};

fs::path binary() { return fs::path(AXONN_BUILD_DIR) / "axonn"; }

CommandResult run_axonn(std::string const& arguments, fs::path const& dir) {
    fs::path const err = dir / "stderr.txt";
    // `timeout` turns a hang into a failure instead of a stuck test suite.
    std::string const command = "timeout 60 " + binary().string() + " " + arguments + " > " +
                                (dir / "stdout.txt").string() + " 2> " + err.string();
    int const status = std::system(command.c_str());
    std::ifstream in(err);
    std::stringstream text;
    text << in.rdbuf();
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text.str()};
}

struct BadInput {
    std::string name;
    std::string arguments;   // {dir} is replaced with the test's scratch folder
    std::string expected;    // a piece of the one-line message
    int exit_status;

    friend void PrintTo(BadInput const& input, std::ostream* out) { *out << input.name; }
};

std::vector<BadInput> const bad_inputs = {
    {"unknown_flag", "train --data {dir}/good --bogus-flag 3", "bogus-flag", 2},
    {"unknown_subcommand", "trian", "trian", 2},
    {"no_subcommand", "", "a subcommand is required", 2},
    {"unknown_config_key", "train --config {dir}/extra_key.toml", "bogus_key", 2},
    {"missing_config_file", "train --config {dir}/nowhere.toml --data {dir}/good", "nowhere.toml", 2},
    {"heads_do_not_divide_width", "train --data {dir}/good --tokenizer byte --n-head 5", "5 heads do not divide", 2},
    {"zero_steps", "train --data {dir}/good --tokenizer byte --steps 0", "--steps must be at least 1", 2},
    {"seq_longer_than_context", "train --data {dir}/good --tokenizer byte --seq 300", "longer than the model's context", 2},
    {"unknown_preset", "train --data {dir}/good --model gpt7", "unknown model preset 'gpt7'", 2},
    {"negative_learning_rate", "train --data {dir}/good --tokenizer byte --lr -1", "--lr must be positive", 2},
    {"missing_data", "train --data {dir}/nowhere --tokenizer byte", "does not exist", 1},
    {"empty_data_folder", "train --data {dir}/empty --tokenizer byte", "no .bin token shards", 1},
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
    {"grid_unknown_axis", "train --data {dir}/good --tokenizer byte --grid w=2", "w=2", 2},
    {"parity_grid_larger_than_job", "parity --grid z=8", "has 8 ranks but the job has 1", 2},
    {"plan_unknown_machine", "plan --model gpt-5b --gpus 8 --batch 8 --machine mars", "mars", 2},
    {"plan_zero_devices", "plan --model gpt-5b --gpus 0 --batch 8", "--gpus must be at least 1", 2},
    {"plan_sequence_beyond_context", "plan --model gpt-5b --gpus 8 --batch 8 --seq 9999", "--seq 9999", 2},
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
    }
    static void TearDownTestSuite() { temp_dir_.reset(); }
    static inline std::unique_ptr<testing::TempDir> temp_dir_;
    static inline fs::path dir_;
};

TEST_P(CommandLineErrors, OneLineErrorAndNonZeroExit) {
    BadInput const& input = GetParam();
    std::string arguments = input.arguments;
    for (std::size_t at; (at = arguments.find("{dir}")) != std::string::npos;) arguments.replace(at, 5, dir_.string());
    CommandResult const result = run_axonn(arguments, dir_);
    EXPECT_EQ(result.exit_status, input.exit_status) << result.stderr_text;
    ASSERT_FALSE(result.stderr_text.empty());
    EXPECT_EQ(result.stderr_text.find('\n'), result.stderr_text.size() - 1) << "not one line: " << result.stderr_text;
    EXPECT_NE(result.stderr_text.find(input.expected), std::string::npos) << result.stderr_text;
    EXPECT_EQ(result.stderr_text.rfind("axonn: error: ", 0), 0u) << result.stderr_text;
}

INSTANTIATE_TEST_SUITE_P(BadInputs, CommandLineErrors, ::testing::ValuesIn(bad_inputs),
                         [](auto const& info) { return info.param.name; });

}  // namespace
}  // namespace axonn
