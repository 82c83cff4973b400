// Jane Austen's six novels, read straight from Debian's r-cran-janeaustenr package (extracted with
// `dpkg-deb -x`), without R: the novels are R character vectors, one element per line, in the package's lazy-load
// database data/Rdata.rdb, indexed by data/Rdata.rdx. This is the project's default training corpus.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace axonn {

struct Book {
    std::string title;  // e.g. "Pride and Prejudice"
    std::string text;   // the lines joined with '\n' (no newline after the last); a missing (NA) line is empty
};

// The books in the index's order (alphabetical by R object name: Emma, Mansfield Park, Northanger Abbey,
// Persuasion, Pride and Prejudice, Sense and Sensibility). package_root is the folder the package was extracted
// into, holding usr/lib/R/site-library/janeaustenr/data/.
std::vector<Book> read_janeausten(std::filesystem::path const& package_root);

// All the books as one text: their texts joined by a blank line ("\n\n"), ending with a newline.
std::string janeausten_text(std::vector<Book> const& books);

}  // namespace axonn
