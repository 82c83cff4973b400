#include "axonn/cli/commands.h"
#include "axonn/core/file_io.h"
#include "axonn/io/janeausten.h"

#include <fmt/format.h>

#include <memory>

namespace axonn {

namespace {

// "Pride and Prejudice" → "pride-and-prejudice"
std::string file_stem(std::string const& title) {
    std::string stem;
    for (char c : title) stem += c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return stem;
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

    austen->callback([package, out] {
        require_one_process("corpus");
        std::vector<Book> const books = read_janeausten(*package);
        create_folder(*out, "novels");
        for (auto const& book : books) {
            std::filesystem::path const path = *out / (file_stem(book.title) + ".txt");
            write_file_atomically(path, book.text + '\n', "novel");
            fmt::print("{} ({} bytes)\n", path.string(), book.text.size() + 1);
        }
    });
}

}  // namespace axonn
