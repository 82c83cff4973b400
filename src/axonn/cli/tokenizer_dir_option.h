// --tokenizer-dir, shared by every command that loads a tokenizer: the folder of GPT-2's files, which only
// `--tokenizer gpt2` reads.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

namespace axonn {

// Registers --tokenizer-dir on `command`, into `target`. Given with a `tokenizer` (the command's --tokenizer value,
// read once the command line is parsed) other than gpt2, it is refused: it was ignored without a word.
CLI::Option* add_tokenizer_dir_option(CLI::App& command, std::filesystem::path& target, std::string const& tokenizer);

}  // namespace axonn
