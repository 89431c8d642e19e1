#include "shared/printf_lite.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace ss {

namespace {

std::string printf_lite_call(const char* format, ...) {
  char buf[2048];
  std::va_list args;
  va_start(args, format);
  int n = printf_lite(buf, sizeof buf, format, args);
  va_end(args);
  REQUIRE(n >= 0);
  REQUIRE(static_cast<std::size_t>(n) < sizeof buf);
  CHECK(std::strlen(buf) == static_cast<std::size_t>(n));
  return buf;
}

// The C library's output for the same call (the wasm build used to link wasi-libc's, musl-based).
template <class... Args>
std::string libc_snprintf(const char* format, Args... args) {
  char buf[2048];
  int n = std::snprintf(buf, sizeof buf, format, args...);
  REQUIRE(n >= 0);
  return buf;
}

#define PRINTF_SAME(format, ...) \
  CHECK(printf_lite_call(format, __VA_ARGS__) == libc_snprintf(format, __VA_ARGS__))

}  // namespace

TEST_CASE("printf_lite prints nlohmann's escapes and error texts like the C library") {
  for (unsigned c : {0u, 1u, 0x1fu, 0x7fu, 0xffu, 0xd83du, 0xde00u, 0xffffu}) {
    CAPTURE(c);
    PRINTF_SAME("\\u%04x", c);
    PRINTF_SAME("\\u%04x\\u%04x", c, c + 1);
    PRINTF_SAME("<U+%.4X>", c);
    PRINTF_SAME("%.2X", c);
    PRINTF_SAME("%.2hhX", static_cast<unsigned char>(c));
  }
  CHECK(printf_lite_call("\\u%04x", 0x1fu) == "\\u001f");
  CHECK(printf_lite_call("<U+%.4X>", 0xau) == "<U+000A>");
}

TEST_CASE("printf_lite's integer, character and string conversions match the C library") {
  const long long values[] = {0,         1,        -1,        7,         42,      -42,
                              255,       65535,    INT32_MAX, INT32_MIN, 1 << 20, 1234567890123LL,
                              INT64_MAX, INT64_MIN};
  const char* formats[] = {"%d",      "%5d",  "%-5d|", "%05d", "%+d", "% d", "%.3d", "%8.3d",
                           "%-8.3d|", "%.0d", "%x",    "%#x",  "%#o", "%o",  "%.0o", "%#.0o",
                           "%X",      "%#X",  "%08X",  "%u",   "%3u", "%i"};
  for (long long v : values) {
    for (const char* f : formats) {
      CAPTURE(f);
      CAPTURE(v);
      PRINTF_SAME(f, static_cast<int>(v));
    }
    CAPTURE(v);
    PRINTF_SAME("%lld|%llx|%llu|%20lld|%-20lld|", v, v, v, v, v);
    PRINTF_SAME("%jd %zu %td %ld %hd %hhd %hu %hhu", static_cast<std::intmax_t>(v),
                static_cast<std::size_t>(v), static_cast<std::ptrdiff_t>(v), static_cast<long>(v),
                static_cast<int>(v), static_cast<int>(v), static_cast<unsigned>(v),
                static_cast<unsigned>(v));
  }
  PRINTF_SAME("%*d|%-*d|%.*d|%*.*d", 6, 42, 6, 42, 4, 42, -6, 3, 7);
  PRINTF_SAME("%.*d", -1, 5);
  PRINTF_SAME("%c%c%3c%-3c|", 'a', '%', 'b', 'c');
  PRINTF_SAME("%s|%10s|%-10s|%.2s|%*.*s|", "abc", "abc", "abc", "abc", 6, 1, "xyz");
  PRINTF_SAME("100%% %s", "done");
  PRINTF_SAME("%s", "");
}

TEST_CASE("printf_lite's %f is exact and rounds ties to even, like the C library") {
  use_printf_fixed();  // as monitoring and analytics do (printf_lite.h)
  const double values[] = {0.0,
                           -0.0,
                           1.0,
                           0.5,
                           1.5,
                           2.5,
                           0.125,
                           0.375,
                           0.625,
                           99.995,
                           99.99499,
                           100.0,
                           0.005,
                           0.015,
                           1e-7,
                           -1e-7,
                           123.456,
                           1e15,
                           1e22,
                           1e300,
                           -1e300,
                           5e-324,
                           2.2250738585072014e-308,
                           std::numeric_limits<double>::max(),
                           1.0 / 3,
                           2.0 / 3,
                           9.995,
                           0.045,
                           1234.5,
                           -0.5};
  const char* formats[] = {"%.2f%%",  "%f",    "%.0f",  "%#.0f", "%.1f",  "%10.3f", "%-10.3f|",
                           "%010.3f", "%+.2f", "% .2f", "%.17f", "%.30f", "%F",     "%lf"};
  for (double v : values) {
    for (const char* f : formats) {
      CAPTURE(f);
      CAPTURE(v);
      PRINTF_SAME(f, v);
    }
  }
  for (double v : {INFINITY, -INFINITY, NAN, -NAN}) {
    CAPTURE(v);
    PRINTF_SAME("%f|%F|%5.2f|%-6f|", v, v, v, v);
  }
  // Monitoring's status page: uptime percentages.
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> percent(0.0, 100.0);
  for (int i = 0; i < 20000; ++i) {
    double v = percent(rng);
    CAPTURE(v);
    PRINTF_SAME("%.2f%%", v);
  }
  // Any bit pattern (finite), a few precisions.
  for (int i = 0; i < 3000; ++i) {
    std::uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    if (!std::isfinite(v)) continue;
    CAPTURE(v);
    PRINTF_SAME("%.3f", v);
    PRINTF_SAME("%.40f", v);
  }
}

TEST_CASE("printf_lite truncates like snprintf and reports the full length") {
  char buf[6];
  std::memset(buf, 'x', sizeof buf);
  auto call = [&](std::size_t size, const char* format, ...) {
    std::va_list args;
    va_start(args, format);
    int n = printf_lite(buf, size, format, args);
    va_end(args);
    return n;
  };
  CHECK(call(sizeof buf, "%s-%d", "abcd", 12345) == 10);
  CHECK(std::string(buf) == "abcd-");
  CHECK(call(1, "%d", 7) == 1);
  CHECK(buf[0] == '\0');
  buf[0] = 'q';
  CHECK(call(0, "%d", 7) == 1);
  CHECK(buf[0] == 'q');
}

#undef PRINTF_SAME

}  // namespace ss
