#include "axonn/core/float_environment.h"

#include <omp.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace axonn {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6): SSE and AVX arithmetic both follow it.
constexpr unsigned flush_bits = 0x8000u | 0x0040u;

void set_on_this_thread(bool flush) {
    unsigned const control = _mm_getcsr();
    _mm_setcsr(flush ? control | flush_bits : control & ~flush_bits);
}

bool set_here() { return (_mm_getcsr() & flush_bits) == flush_bits; }
#elif defined(__aarch64__)
// FPCR's FZ (bit 24) flushes denormal inputs and results of single and double precision alike.
constexpr unsigned long flush_bits = 1ul << 24;

unsigned long read_fpcr() {
    unsigned long control = 0;
    asm volatile("mrs %0, fpcr" : "=r"(control));
    return control;
}

void set_on_this_thread(bool flush) {
    unsigned long const control = read_fpcr();
    unsigned long const wanted = flush ? control | flush_bits : control & ~flush_bits;
    asm volatile("msr fpcr, %0" : : "r"(wanted));
}

bool set_here() { return (read_fpcr() & flush_bits) == flush_bits; }
#else
void set_on_this_thread(bool) {}
bool set_here() { return false; }
#endif

}  // namespace

void flush_denormals(bool flush) {
    set_on_this_thread(flush);
#pragma omp parallel
    set_on_this_thread(flush);
}

bool denormals_flushed_on_this_thread() { return set_here(); }

}  // namespace axonn
