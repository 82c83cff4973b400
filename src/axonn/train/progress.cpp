#include "axonn/train/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace axonn {

Progress::Progress(std::string label, long total, std::FILE* stream)
    : label_(std::move(label)), total_(std::max(1L, total)), stream_(stream),
      terminal_(stream != nullptr && isatty(fileno(stream)) != 0) {}

void Progress::update(long done, std::string const& status) {
    if (stream_ == nullptr) return;
    long const percent = done * 100 / total_;
    if (terminal_) {
        constexpr int width = 30;
        int const filled = static_cast<int>(done * width / total_);
        fmt::print(stream_, "\r{} [{}{}] {:>3}% {}/{} {}\033[K", label_, std::string(filled, '#'),
                   std::string(width - filled, '.'), percent, done, total_, status);
        std::fflush(stream_);
        return;
    }
    // Off a terminal: a line every 10% (and the last step), never more.
    if (percent / 10 == last_printed_percent_ / 10 && done != total_) return;
    last_printed_percent_ = percent;
    fmt::print(stream_, "{} {:>3}% {}/{} {}\n", label_, percent, done, total_, status);
    std::fflush(stream_);
}

void Progress::finish() {
    if (terminal_) fmt::print(stream_, "\n");  // terminal_ implies a stream
}

}  // namespace axonn
