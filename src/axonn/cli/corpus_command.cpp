#include "axonn/cli/commands.h"
#include "axonn/cli/config_file.h"
#include "axonn/core/file_io.h"
#include "axonn/io/janeausten.h"
#include "axonn/train/output_kinds.h"

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>

namespace axonn {

namespace {

// "Pride and Prejudice" → "pride-and-prejudice"
std::string file_stem(std::string const& title) {
    std::string stem;
    for (char c : title) stem += c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return stem;
}

std::filesystem::path novel_path(std::filesystem::path const& folder, Book const& book) {
    return folder / (file_stem(book.title) + ".txt");
}

// Whether `path` is a file that holds something other than `text` (a file of the same text is left as it is).
// Only a file of the same size is read.
bool holds_other_text(std::filesystem::path const& path, std::string const& text) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) return false;
    std::uintmax_t const size = std::filesystem::file_size(path, error);
    if (error || size == 0) return false;
    return size != text.size() || read_input_file(path, "novel", "", text.size()) != text;
}

}  // namespace

void add_corpus_command(CLI::App& app) {
    CLI::App* command = app.add_subcommand("corpus", "Extract a bundled public-domain corpus as text files");
    CLI::App* austen = command->add_subcommand("janeausten", "Jane Austen's six novels from Debian's r-cran-janeaustenr");
    austen->footer("Get the package without installing R:\n"
                   "  apt-get download r-cran-janeaustenr && dpkg-deb -x r-cran-janeaustenr_*.deb PACKAGE_DIR\n"
                   "scripts/demo does this for you.");
    command->require_subcommand(1);
    auto package = std::make_shared<std::filesystem::path>();
    auto out = std::make_shared<std::filesystem::path>();
    austen->add_option("--package", *package, "folder the .deb was extracted into")->required();
    austen->add_option("--out", *out, "folder for the novels, one .txt file each")->required();
    auto overwrite = std::make_shared<bool>(false);
    austen->add_flag("--overwrite", *overwrite, "replace files in --out of the novels' names that hold other text");

    austen->callback([austen, package, out, overwrite] {
        require_one_process("corpus");
        require_apart_from_config_files(*out, "--out", *austen);
        require_folder_for(*out, "--out", OutputKind::other);
        require_not_an_input(*out, "--out", {*package});
        std::vector<Book> const books = read_janeausten(*package);
        // Before any is written: a file of a novel's name with other text in it is replaced only when asked, and
        // anything else there that is not a regular file (a device, a FIFO) never.
        for (auto const& book : books) {
            std::filesystem::path const path = novel_path(*out, book);
            std::error_code error;
            if (!std::filesystem::is_regular_file(path, error) || holds_other_text(path, book.text + '\n')) {
                require_replaceable_output(path, "novel", *overwrite);
            }
        }
        create_folder(*out, "novels");
        for (auto const& book : books) {
            std::filesystem::path const path = novel_path(*out, book);
            write_file_atomically(path, book.text + '\n', "novel");
            fmt::print("{} ({} bytes)\n", path.string(), book.text.size() + 1);
        }
    });
}

}  // namespace axonn
