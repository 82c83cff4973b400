// --config files are TOML: strings with escapes and on several lines, numbers, switches and arrays become the
// arguments they stand for, placed before the command line's own, and a value of the wrong type is refused.
#include "axonn/cli/argument_values.h"
#include "axonn/cli/commands.h"
#include "axonn/cli/config_file.h"
#include "axonn/core/error.h"
#include "support/error_of.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace axonn {
namespace {

using Arguments = std::vector<std::string>;
using testing::error_of;

// The arguments a config file expands to, without the file itself, which the command gets last
// (ConfigFile.TheFileIsPassedOnToTheCommand).
Arguments expand(std::string const& command, std::string const& toml, Arguments const& rest = {}) {
    testing::TempDir dir;
    std::ofstream(dir / "run.toml") << toml;
    CLI::App app;
    add_train_command(app);
    add_prepare_command(app);
    Arguments arguments = {"axonn", command, "--config", (dir / "run.toml").string()};
    arguments.insert(arguments.end(), rest.begin(), rest.end());
    Arguments expanded = expand_config_files(app, arguments);
    EXPECT_EQ(expanded.back(), "--config=" + (dir / "run.toml").string());
    expanded.pop_back();
    return expanded;
}

// A command of subcommands takes its subcommand's keys (`memorization study`'s were checked against `memorization`,
// which has none, and named its help).
TEST(ConfigFile, ASubcommandsFileHoldsItsOwnOptions) {
    testing::TempDir dir;
    std::ofstream(dir / "study.toml") << "quick = true\nepochs = 2\n";
    std::ofstream(dir / "bogus.toml") << "bogus = 1\n";
    CLI::App app;
    add_memorization_command(app);
    Arguments const arguments = {"axonn", "memorization", "study", "--config", (dir / "study.toml").string(),
                                 "--out", "x"};
    EXPECT_EQ(expand_config_files(app, arguments),
              (Arguments{"axonn", "memorization", "study", "--epochs=2", "--quick", "--out", "x",
                         "--config=" + (dir / "study.toml").string()}));  // keys sorted
    std::string const refused = error_of([&] {
        expand_config_files(app, {"axonn", "memorization", "eval", "--config", (dir / "bogus.toml").string()});
    });
    EXPECT_NE(refused.find("unknown key 'bogus': `axonn memorization eval --help` lists the valid names"),
              std::string::npos)
        << refused;
}

// Every command reads its config files' paths (no output of it may be one).
TEST(ConfigFile, TheFileIsPassedOnToTheCommand) {
    testing::TempDir dir;
    std::ofstream(dir / "a.toml") << "steps = 2\n";
    std::ofstream(dir / "b.toml") << "out = \"data\"\n";
    CLI::App app;
    add_train_command(app);
    add_prepare_command(app);
    std::string const a = (dir / "a.toml").string(), b = (dir / "b.toml").string();
    EXPECT_EQ(expand_config_files(app, {"axonn", "train", "--config", a, "--lr", "1"}),
              (Arguments{"axonn", "train", "--steps=2", "--lr", "1", "--config=" + a}));
    EXPECT_EQ(expand_config_files(app, {"axonn", "prepare", "--config=" + b}),
              (Arguments{"axonn", "prepare", "--out=data", "--config=" + b}));
}

TEST(ConfigFile, ValuesBecomeArgumentsBeforeTheCommandLine) {
    Arguments const arguments = expand("train",
                                       "steps = 20\n"
                                       "lr = 6e-4\n"
                                       "model = \"gpt2-mini\"\n"
                                       "debug-collectives = true\n"
                                       "overwrite = false\n",
                                       {"--steps", "30"});
    // In the order of the names (a TOML table has no other); each option once, so the order does not matter. The
    // command line's --steps wins: the file's is left out.
    EXPECT_EQ(arguments, (Arguments{"axonn", "train", "--debug-collectives", "--lr=0.0006", "--model=gpt2-mini",
                                    "--steps", "30"}));
}

// A file's option gives way to the command line's, and to a later file's, also where the two exclude each other
// (`greedy = true` in a file and `--temperature 0.5` given was an error: "--greedy excludes --temperature"), and for
// an option of several values (the file's inputs were added to the command line's).
TEST(ConfigFile, TheCommandLineAndALaterFileWin) {
    testing::TempDir dir;
    std::ofstream(dir / "greedy.toml") << "greedy = true\nmax-new-tokens = 3\n";
    std::ofstream(dir / "sampled.toml") << "temperature = 0.5\n";
    CLI::App app;
    add_generate_command(app);
    add_prepare_command(app);
    std::string const greedy = (dir / "greedy.toml").string(), sampled = (dir / "sampled.toml").string();
    EXPECT_EQ(expand_config_files(app, {"axonn", "generate", "--config", greedy, "--temperature", "0.7"}),
              (Arguments{"axonn", "generate", "--max-new-tokens=3", "--temperature", "0.7", "--config=" + greedy}));
    EXPECT_EQ(expand_config_files(app, {"axonn", "generate", "--config", greedy, "--config", sampled}),
              (Arguments{"axonn", "generate", "--max-new-tokens=3", "--temperature=0.5", "--config=" + greedy,
                         "--config=" + sampled}));
    EXPECT_EQ(expand("prepare", "input = [\"a.txt\", \"b.txt\"]\n", {"--input", "c.txt"}),
              (Arguments{"axonn", "prepare", "--input", "c.txt"}));
    // A value given way to is still of its option's type.
    EXPECT_NE(error_of([] { expand("train", "steps = \"abc\"\n", {"--steps", "3"}); })
                  .find("'steps' must be an integer, not a string"),
              std::string::npos);
}

TEST(ConfigFile, StringsKeepTheirEscapesAndLines) {
    Arguments const arguments = expand("train",
                                       "prompt = \"say \\\"hi\\\"\\n\\tthen \\u00e9\"\n"
                                       "tokenizer-dir = '''/data/with \"quotes\"'''\n"
                                       "metrics = \"\"\"\n"
                                       "runs/two\n"
                                       "lines.jsonl\"\"\"\n");
    EXPECT_EQ(arguments, (Arguments{"axonn", "train", "--metrics=runs/two\nlines.jsonl",
                                    "--prompt=say \"hi\"\n\tthen \xC3\xA9", "--tokenizer-dir=/data/with \"quotes\""}));
}

// The options whose empty value is one of theirs take it from a file too, and it reaches CLI11 as its own argument
// (CLI11 reads `--prompt=` as the option without a value, and would take the next argument).
TEST(ConfigFile, AnEmptyValueOfItsOwnIsKept) {
    Arguments const expanded = expand("train", "prompt = \"\"\n");
    EXPECT_EQ(expanded, (Arguments{"axonn", "train", "--prompt="}));
    EXPECT_EQ(empty_values_apart(expanded), (Arguments{"axonn", "train", "--prompt", ""}));
    EXPECT_NE(error_of([] { expand("train", "model = \"\"\n"); }).find("'model' is empty"), std::string::npos);
}

TEST(ConfigFile, AValueThatStartsWithADashStaysAValue) {
    EXPECT_EQ(expand("train", "prompt = \"--not-an-option\"\n"),
              (Arguments{"axonn", "train", "--prompt=--not-an-option"}));
}

TEST(ConfigFile, ArraysGiveOptionsOfSeveralValues) {
    EXPECT_EQ(expand("prepare", "input = [\"a.txt\", \"b.txt\"]\nout = \"data\"\n"),
              (Arguments{"axonn", "prepare", "--input", "a.txt", "b.txt", "--out=data"}));
    EXPECT_EQ(expand("prepare", "input = \"a.txt\"\n"), (Arguments{"axonn", "prepare", "--input", "a.txt"}));
}

TEST(ConfigFile, AnOptionalValueTakesTrueFalseOrTheValue) {
    EXPECT_EQ(expand("train", "resume = true\n"), (Arguments{"axonn", "train", "--resume"}));
    EXPECT_EQ(expand("train", "resume = false\n"), (Arguments{"axonn", "train"}));
    EXPECT_EQ(expand("train", "resume = \"latest\"\n"), (Arguments{"axonn", "train", "--resume=latest"}));
    EXPECT_EQ(expand("train", "resume = \"runs/ckpt/step_00000300\"\n"),
              (Arguments{"axonn", "train", "--resume=runs/ckpt/step_00000300"}));
    // An empty string is no value (false is no resume), as everywhere in a config file.
    std::string const empty = error_of([] { expand("train", "resume = \"\"\n"); });
    EXPECT_NE(empty.find("run.toml:1:10: 'resume' is empty: give it a value, or remove the line"), std::string::npos)
        << empty;
    std::string const refused = error_of([] { expand("train", "resume = 3\n"); });
    EXPECT_NE(refused.find("run.toml:1:10: 'resume' must be true, false or a string, not an integer"),
              std::string::npos) << refused;
}

// An option of off and on (--overlap, BOOLEAN in --help) takes a boolean, or its words.
TEST(ConfigFile, AnOffOrOnOptionTakesABoolean) {
    EXPECT_EQ(expand("train", "overlap = false\n"), (Arguments{"axonn", "train", "--overlap=off"}));
    EXPECT_EQ(expand("train", "overlap = true\n"), (Arguments{"axonn", "train", "--overlap=on"}));
    EXPECT_EQ(expand("train", "overlap = \"off\"\n"), (Arguments{"axonn", "train", "--overlap=off"}));
}

// An integer option whose check names its values (--logit-rows INT:ROWS) takes an integer as the others do.
TEST(ConfigFile, AnIntegerOptionWithANamedCheckTakesAnInteger) {
    EXPECT_EQ(expand("train", "logit-rows = 512\n"), (Arguments{"axonn", "train", "--logit-rows=512"}));
}

TEST(ConfigFile, AValueOfTheWrongTypeIsRefusedWhereItStands) {
    EXPECT_THROW(expand("train", "steps = 2.5\n"), Error);          // an integer option
    // Numbers in decimal, as on the command line, whatever the option's type.
    for (char const* based : {"steps = 0x2\n", "steps = 0o3\n", "steps = 0b11\n", "lr = 0x10\n"}) {
        EXPECT_NE(error_of([&] { expand("train", based); }).find("is written in base "), std::string::npos) << based;
    }
    EXPECT_NE(error_of([] { expand("train", "lr = 0x10\n"); }).find("run.toml:1:6: 'lr' is written in base 16: write "
                                                                    "it in decimal digits"),
              std::string::npos);
    EXPECT_THROW(expand("train", "lr = \"fast\"\n"), Error);        // a number
    EXPECT_THROW(expand("train", "model = 5\n"), Error);            // a string
    EXPECT_THROW(expand("train", "overwrite = \"yes\"\n"), Error);  // a switch
    EXPECT_THROW(expand("prepare", "input = []\n"), Error);         // an empty list
    std::string const empty = error_of([] { expand("train", "data = \"\"\n"); });
    EXPECT_NE(empty.find("run.toml:1:8: 'data' is empty: give it a value, or remove the line"), std::string::npos)
        << empty;
    std::string const refused = error_of([] { expand("train", "\nseed = [1, 2]\n"); });
    EXPECT_NE(refused.find("run.toml:2:8: 'seed' must be an integer, not an array"), std::string::npos) << refused;
}

}  // namespace
}  // namespace axonn
