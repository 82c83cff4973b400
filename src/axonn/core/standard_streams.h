// Standard input, output and error that the caller closed (`axonn tokenize <&-`, `axonn train ... >&-`). A closed
// descriptor 0, 1 or 2 is the next one open() hands out, so the first file the command opened became its "standard
// output" (a run's banner went into the MPI session's lock file) or its "standard input" (read as an empty text).
#pragma once

namespace axonn {

// Opens /dev/null on each of descriptors 0, 1 and 2 that is closed, and remembers whether standard input and
// output were: for main, before anything opens a file.
void reserve_standard_streams();

// Whether standard input was closed when the command started (reads of it would see /dev/null's nothing).
bool standard_input_closed();

// Whether standard output was closed when the command started: what it prints would be lost without a word (every
// write to /dev/null succeeds), so main refuses to start.
bool standard_output_closed();

}  // namespace axonn
