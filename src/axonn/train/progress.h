// Progress of a long loop: a bar redrawn in place on a terminal, plain lines every few percent otherwise
// (a log file or CI output stays readable instead of filling with carriage returns).
#pragma once

#include <cstdio>
#include <string>

namespace axonn {

class Progress {
public:
    // A null stream prints nothing (every rank but the first of a parallel run).
    Progress(std::string label, long total, std::FILE* stream = stderr);

    // Reports that `done` of `total` units are finished, with a short status text (loss, rate, ...).
    void update(long done, std::string const& status);
    // Ends the bar's line on a terminal.
    void finish();

private:
    std::string label_;
    long total_;
    std::FILE* stream_;
    bool terminal_;
    long last_printed_percent_ = -1;
};

}  // namespace axonn
