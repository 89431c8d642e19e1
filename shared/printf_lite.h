#pragma once
// A small vsnprintf for the wasm32-wasi modules. wasi-libc's printf core (with its floating-point
// formatting, fmod, frexp and stdio plumbing) was 13 KiB of every module, 6 KiB gzipped, only for
// nlohmann's `\u%04x` escapes and error texts and one "%.2f" on monitoring's status page
// (docs/performance.md "Size"). printf_lite.cpp defines snprintf on top of this in the WASI build;
// native builds keep the C library's, and the tests compare the two.
//
// Supported: flags `-0+ #`, width and precision (digits or `*`), length modifiers hh h l ll j z t,
// conversions d i u o x X c s % and f F (exact, round-half-even like the C library, any double; only
// after use_printf_fixed()). Anything else (e, g, a, p, n, L, wide characters) is a programming error:
// it traps rather than print something wrong.

#include <cstdarg>
#include <cstddef>

namespace ss {

// vsnprintf's contract: writes at most `size - 1` characters and a NUL (when size > 0), returns
// the length the whole output would have.
int printf_lite(char* out, std::size_t size, const char* format, std::va_list args);

// Turns on %f and %F. Their exact formatter is about 0.9 KiB gzipped of a module, and only monitoring
// (its status page) and analytics (its dashboard) print a double, so it is linked only into a module
// that calls this (each does when its App is made); without it %f and %F trap like %e and %g.
void use_printf_fixed();

}  // namespace ss
