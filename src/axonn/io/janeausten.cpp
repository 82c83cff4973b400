// Reading the janeaustenr lazy-load database without R.
//
// Rdata.rdx is one compressed (gzip or zlib) R serialization of list(variables = list(<name> = c(offset, length),
// ...), references = ..., compressed = <1, 2 or 3>). Each variable is the byte range [offset, offset + length)
// of Rdata.rdb holding one record: a 4-byte big-endian uncompressed size, then, when `compressed` is 2 or 3, a
// type byte ('Z' zlib, '2' bzip2, 'X' xz, '0' stored), then the compressed serialization of the object. The
// novels are character vectors, one element per line.
#include "axonn/io/janeausten.h"

#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/io/inflate.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace axonn {
namespace {

std::filesystem::path data_folder(std::filesystem::path const& package_root) {
    return package_root / "usr" / "lib" / "R" / "site-library" / "janeaustenr" / "data";
}

// The package's files are a few megabytes and its index inflates to a few kilobytes; nothing of it, read or
// inflated, comes near these.
constexpr std::size_t max_package_bytes = std::size_t{256} << 20;
constexpr std::size_t max_package_index_bytes = std::size_t{16} << 20;

std::string read_package_file(std::filesystem::path const& path, std::filesystem::path const& package_root) {
    return read_input_file(path, "Jane Austen package file",
                           fmt::format("extract the Jane Austen package into {} (apt-get download r-cran-janeaustenr, "
                                       "then dpkg-deb -x r-cran-janeaustenr_*.deb {})",
                                       package_root.string(), package_root.string()),
                           max_package_bytes);
}

template <typename... Args>
[[noreturn]] void fail_corrupt_package_file(std::filesystem::path const& file, fmt::format_string<Args...> detail,
                               Args&&... args) {
    fail("{} is corrupt ({}): extract r-cran-janeaustenr again", file.string(),
         fmt::format(detail, std::forward<Args>(args)...));
}

// ---- Decompression --------------------------------------------------------------------------------------------------

// Inflates one stream: to exactly expected_bytes when the record says how many, else (the index) to at most
// max_package_index_bytes.
std::string inflate_stream(std::string_view compressed, std::size_t expected_bytes, std::filesystem::path const& file) {
    std::size_t const limit = expected_bytes > 0 ? max_package_bytes : max_package_index_bytes;
    return inflate_bounded(compressed, expected_bytes, limit, file, "extract r-cran-janeaustenr again");
}

// ---- R's XDR serialization ------------------------------------------------------------------------------------------

// SEXP type codes (R Internals, "Serialization formats"), those the database uses.
namespace sexp {
constexpr int symbol = 1;
constexpr int pairlist = 2;
constexpr int character = 9;
constexpr int logical = 10;
constexpr int integer = 13;
constexpr int string = 16;
constexpr int list = 19;
constexpr int nil = 254;
constexpr int reference = 255;
}  // namespace sexp

// One deserialized object, keeping only what the database needs.
struct RObject {
    int type = sexp::nil;
    std::vector<std::int32_t> integers;               // logical or integer vector
    std::vector<std::optional<std::string>> strings;  // character vector (nullopt = NA); a symbol's name
    std::vector<RObject> elements;                    // list elements, or a pairlist's values
    std::vector<std::string> names;                   // the names attribute, or a pairlist's tags
};

RObject const& named_element(RObject const& object, std::string_view name, std::filesystem::path const& file) {
    auto const found = std::find(object.names.begin(), object.names.end(), name);
    if (object.type != sexp::list || found == object.names.end() || object.names.size() != object.elements.size()) {
        fail_corrupt_package_file(file, "no element named {}", name);
    }
    return object.elements[found - object.names.begin()];
}

class RReader {
public:
    RReader(std::string_view bytes, std::filesystem::path file) : bytes_(bytes), file_(std::move(file)) {}

    // The database nests lists three deep; a crafted file nested deeper would otherwise overflow the stack.
    static constexpr int max_depth = 64;

    RObject read() {
        read_header();
        return read_item(read_int());
    }

private:
    static constexpr std::int32_t has_attributes = 1 << 9;
    static constexpr std::int32_t has_tag = 1 << 10;

    // "X\n", the format version (2 or 3), the writer's and the oldest reader's R versions, and in version 3 the
    // native encoding's name.
    void read_header() {
        if (read_bytes(2) != "X\n") fail_corrupt_package_file(file_, "not an R XDR serialization");
        std::int32_t const version = read_int();
        if (version != 2 && version != 3) fail_corrupt_package_file(file_, "R serialization version {}", version);
        read_int();
        read_int();
        if (version == 3) read_bytes(checked_length(read_int(), 1));
    }

    std::int32_t read_int() {
        auto const bytes = read_bytes(4);
        std::uint32_t value = 0;
        for (char byte : bytes) value = (value << 8) | static_cast<unsigned char>(byte);
        return static_cast<std::int32_t>(value);
    }

    std::string_view read_bytes(std::size_t count) {
        if (count > bytes_.size() - position_) {
            fail_corrupt_package_file(file_, "an R object runs past the end of its data");
        }
        std::string_view const bytes = bytes_.substr(position_, count);
        position_ += count;
        return bytes;
    }

    // A vector length, checked against the bytes left (each element takes at least element_bytes) so that a
    // corrupt length fails cleanly instead of allocating gigabytes.
    std::size_t checked_length(std::int64_t length, std::size_t element_bytes) {
        if (length < 0 || static_cast<std::uint64_t>(length) > (bytes_.size() - position_) / element_bytes) {
            fail_corrupt_package_file(file_, "an R vector length of {} exceeds the data", length);
        }
        return static_cast<std::size_t>(length);
    }

    std::size_t read_length(std::size_t element_bytes) {
        std::int64_t length = read_int();
        if (length == -1) {  // a long vector: the length follows as two 32-bit halves
            std::int64_t const upper = read_int();
            length = (upper << 32) | static_cast<std::uint32_t>(read_int());
        }
        return checked_length(length, element_bytes);
    }

    // Counts the nesting of read_item while one is being read.
    class Nesting {
    public:
        explicit Nesting(RReader& reader) : reader_(reader) {
            if (++reader_.depth_ > max_depth) {
                fail_corrupt_package_file(reader_.file_, "R objects nested more than {} deep", max_depth);
            }
        }
        ~Nesting() { --reader_.depth_; }
        Nesting(Nesting const&) = delete;
        Nesting& operator=(Nesting const&) = delete;

    private:
        RReader& reader_;
    };

    RObject read_item(std::int32_t flags) {
        Nesting const nesting(*this);
        int const type = flags & 0xFF;
        RObject object;
        object.type = type;
        switch (type) {
        case sexp::nil:
            return object;
        case sexp::reference:
            return read_reference(flags);
        case sexp::symbol:
            object.strings = read_item(read_int()).strings;
            references_.push_back(object);
            return object;
        case sexp::pairlist:
            return read_pairlist(flags);
        case sexp::character:
            object.strings.push_back(read_character());
            return object;
        case sexp::logical:
        case sexp::integer:
            object.integers.resize(read_length(4));
            for (auto& value : object.integers) value = read_int();
            break;
        case sexp::string:
            object.strings.resize(read_length(8));
            for (auto& line : object.strings) line = read_string_element();
            break;
        case sexp::list:
            object.elements.resize(read_length(4));
            for (auto& element : object.elements) element = read_item(read_int());
            break;
        default:
            fail_corrupt_package_file(file_, "unexpected R object type {}", type);
        }
        if (flags & has_attributes) object.names = names_attribute(read_item(read_int()));
        return object;
    }

    // Symbols are written once and then referred to by their 1-based position in order of appearance.
    RObject read_reference(std::int32_t flags) {
        std::int64_t index = static_cast<std::uint32_t>(flags) >> 8;
        if (index == 0) index = read_int();
        if (index < 1 || index > static_cast<std::int64_t>(references_.size())) {
            fail_corrupt_package_file(file_, "R reference {} points nowhere", index);
        }
        return references_[index - 1];
    }

    // A length (-1 for NA) and that many bytes, after the CHARSXP's flags.
    std::optional<std::string> read_character() {
        std::int32_t const length = read_int();
        if (length == -1) return std::nullopt;
        return std::string(read_bytes(checked_length(length, 1)));
    }

    std::optional<std::string> read_string_element() {
        if ((read_int() & 0xFF) != sexp::character) {
            fail_corrupt_package_file(file_, "a character vector holds a non-string");
        }
        return read_character();
    }

    // Pairlists (attribute lists) are chains of (attributes?, tag?, value) nodes ending in nil.
    RObject read_pairlist(std::int32_t flags) {
        RObject list;
        list.type = sexp::pairlist;
        for (; (flags & 0xFF) == sexp::pairlist; flags = read_int()) {
            if (flags & has_attributes) read_item(read_int());
            RObject const tag = flags & has_tag ? read_item(read_int()) : RObject{};
            list.names.push_back(tag.strings.empty() ? std::string() : tag.strings.front().value_or(""));
            list.elements.push_back(read_item(read_int()));
        }
        if ((flags & 0xFF) != sexp::nil) fail_corrupt_package_file(file_, "an R pairlist does not end in NULL");
        return list;
    }

    std::vector<std::string> names_attribute(RObject const& attributes) {
        std::vector<std::string> names;
        for (std::size_t i = 0; i < attributes.names.size(); ++i) {
            if (attributes.names[i] != "names") continue;
            for (auto const& name : attributes.elements[i].strings) names.push_back(name.value_or(""));
        }
        return names;
    }

    std::string_view bytes_;
    std::size_t position_ = 0;
    std::filesystem::path file_;
    std::vector<RObject> references_;
    int depth_ = 0;
};

// ---- The database ---------------------------------------------------------------------------------------------------

struct Record {
    std::string name;
    std::int64_t offset;
    std::int64_t length;
};

struct DatabaseIndex {
    std::vector<Record> records;
    int compression;  // 1: zlib; 2 or 3: a type byte says; 0: stored as is
};

DatabaseIndex read_index(std::filesystem::path const& rdx, std::filesystem::path const& package_root) {
    RObject const index = RReader(inflate_stream(read_package_file(rdx, package_root), 0, rdx), rdx).read();
    RObject const& variables = named_element(index, "variables", rdx);
    RObject const& compressed = named_element(index, "compressed", rdx);
    if (compressed.integers.size() != 1) fail_corrupt_package_file(rdx, "the compression flag is not one number");
    if (variables.type != sexp::list || variables.names.size() != variables.elements.size()) {
        fail_corrupt_package_file(rdx, "the variables are not a named list");
    }
    DatabaseIndex database{{}, compressed.integers.front()};
    for (std::size_t i = 0; i < variables.elements.size(); ++i) {
        auto const& range = variables.elements[i].integers;
        if (range.size() != 2) fail_corrupt_package_file(rdx, "{} has no (offset, length) pair", variables.names[i]);
        database.records.push_back({variables.names[i], range[0], range[1]});
    }
    return database;
}

std::string_view record_bytes(std::string const& database, Record const& record, std::filesystem::path const& rdb) {
    auto const size = static_cast<std::int64_t>(database.size());
    if (record.offset < 0 || record.length < 0 || record.offset > size || record.length > size - record.offset) {
        fail_corrupt_package_file(rdb, "{} lies outside the file", record.name);
    }
    return std::string_view(database).substr(record.offset, record.length);
}

std::string decompress_record(std::string_view record, int compression, std::filesystem::path const& rdb) {
    if (compression == 0) return std::string(record);
    if (record.size() < 5) fail_corrupt_package_file(rdb, "a record of {} bytes is too short", record.size());
    std::size_t expected = 0;
    for (char byte : record.substr(0, 4)) expected = (expected << 8) | static_cast<unsigned char>(byte);
    std::string_view payload = record.substr(4);
    char const type = compression == 1 ? 'Z' : payload.front();
    if (compression != 1) payload.remove_prefix(1);
    std::string serialized;
    switch (type) {
    case 'Z': serialized = inflate_stream(payload, expected, rdb); break;
    case '0': serialized = std::string(payload); break;
    case '2': fail("{} is bzip2-compressed, which axonn does not read: use a zlib-compressed build", rdb.string());
    case 'X': fail("{} is xz-compressed, which axonn does not read: use a zlib-compressed build", rdb.string());
    default: fail_corrupt_package_file(rdb, "unknown compression type byte 0x{:02X}", static_cast<unsigned char>(type));
    }
    if (serialized.size() != expected) {
        fail_corrupt_package_file(rdb, "a record inflates to {} bytes, not {}", serialized.size(), expected);
    }
    return serialized;
}

std::string join_lines(std::vector<std::optional<std::string>> const& lines) {
    std::string text;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) text += '\n';
        text += lines[i].value_or("");
    }
    return text;
}

// janeaustenr names its objects without spaces; the books go by their real titles.
std::string book_title(std::string const& object_name) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> titles = {{
        {"emma", "Emma"},
        {"mansfieldpark", "Mansfield Park"},
        {"northangerabbey", "Northanger Abbey"},
        {"persuasion", "Persuasion"},
        {"prideprejudice", "Pride and Prejudice"},
        {"sensesensibility", "Sense and Sensibility"},
    }};
    for (auto const& [name, title] : titles) {
        if (name == object_name) return std::string(title);
    }
    return object_name;
}

}  // namespace

std::vector<Book> read_janeausten(std::filesystem::path const& package_root) {
    std::filesystem::path const folder = data_folder(package_root);
    std::filesystem::path const rdb = folder / "Rdata.rdb";
    DatabaseIndex const index = read_index(folder / "Rdata.rdx", package_root);
    std::string const database = read_package_file(rdb, package_root);
    std::vector<Book> books;
    for (Record const& record : index.records) {
        std::string_view const bytes = record_bytes(database, record, rdb);
        RObject const lines = RReader(decompress_record(bytes, index.compression, rdb), rdb).read();
        if (lines.type != sexp::string) fail_corrupt_package_file(rdb, "{} is not a character vector", record.name);
        books.push_back({book_title(record.name), join_lines(lines.strings)});
    }
    return books;
}

std::string janeausten_text(std::vector<Book> const& books) {
    std::string text;
    for (std::size_t i = 0; i < books.size(); ++i) {
        if (i > 0) text += "\n\n";
        text += books[i].text;
    }
    text += '\n';
    return text;
}

}  // namespace axonn
