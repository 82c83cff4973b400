#include "axonn/core/standard_streams.h"

#include <fcntl.h>
#include <unistd.h>

namespace axonn {
namespace {

bool input_closed = false;
bool output_closed = false;

bool descriptor_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

}  // namespace

void reserve_standard_streams() {
    input_closed = !descriptor_open(STDIN_FILENO);
    output_closed = !descriptor_open(STDOUT_FILENO);
    for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
        if (descriptor_open(fd)) continue;
        // open() returns the lowest free descriptor: this one, since those below it are open.
        int const null = ::open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
        if (null != -1 && null != fd) ::close(null);  // /dev/null missing: nothing better to put there
    }
}

bool standard_input_closed() { return input_closed; }

bool standard_output_closed() { return output_closed; }

}  // namespace axonn
