#include "axonn/cli/tokenizer_dir_option.h"

#include "axonn/core/error.h"

namespace axonn {

CLI::Option* add_tokenizer_dir_option(CLI::App& command, std::filesystem::path& target, std::string const& tokenizer) {
    CLI::Option* option = command.add_option("--tokenizer-dir", target, "folder with GPT-2's encoder.json and vocab.bpe");
    command.parse_complete_callback([option, &tokenizer] {
        if (option->count() == 0 || tokenizer == "gpt2") return;
        throw UsageError(fmt::format("--tokenizer-dir names a folder of GPT-2's encoder.json and vocab.bpe, which "
                                     "--tokenizer {} does not read: leave --tokenizer-dir out, or pass --tokenizer "
                                     "gpt2",
                                     tokenizer));
    });
    return option;
}

}  // namespace axonn
