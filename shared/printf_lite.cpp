#include "shared/printf_lite.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ss {

// Helper names are unique to this file: the native and Emscripten builds compile shared/ as one unit.
namespace {
namespace printf_lite_impl {

// A programming error (a conversion this formatter does not do): trap, never print something wrong.
[[noreturn]] void unsupported() { __builtin_trap(); }

// Counts every character and stores the ones that fit before the NUL.
struct Sink {
  char* out;
  std::size_t size;
  std::size_t len = 0;

  void put(char c) {
    if (len + 1 < size) out[len] = c;
    ++len;
  }
  void put(const char* s, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) put(s[i]);
  }
  void pad(char c, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) put(c);
  }
};

struct Spec {
  bool left = false;
  bool zero = false;
  bool plus = false;
  bool space = false;
  bool alt = false;
  std::size_t width = 0;
  int precision = -1;  // -1: none given
};

// prefix (sign, 0x), `zeros` zeros, then body, padded to the width: with spaces before (or after,
// left-justified), or with zeros after the prefix when the '0' flag applies.
void emit(Sink& s, const Spec& spec, const char* prefix, std::size_t zeros, const char* body,
          std::size_t body_len, bool zero_pad) {
  const std::size_t prefix_len = std::strlen(prefix);
  const std::size_t len = prefix_len + zeros + body_len;
  const std::size_t fill = spec.width > len ? spec.width - len : 0;
  const bool pad_zeros = zero_pad && spec.zero && !spec.left;
  if (!spec.left && !pad_zeros) s.pad(' ', fill);
  s.put(prefix, prefix_len);
  if (pad_zeros) s.pad('0', fill);
  s.pad('0', zeros);
  s.put(body, body_len);
  if (spec.left) s.pad(' ', fill);
}

void format_integer(Sink& s, const Spec& spec, std::uintmax_t value, bool negative, char conv) {
  const unsigned base = conv == 'o' ? 8 : (conv == 'x' || conv == 'X') ? 16 : 10;
  const char* set = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  char reversed[sizeof(std::uintmax_t) * 3];
  std::size_t n = 0;
  for (; value != 0; value /= base) reversed[n++] = set[value % base];
  const bool nonzero = n > 0;
  char body[sizeof reversed];
  for (std::size_t i = 0; i < n; ++i) body[i] = reversed[n - 1 - i];
  const std::size_t precision = spec.precision < 0 ? 1 : static_cast<std::size_t>(spec.precision);
  std::size_t zeros = precision > n ? precision - n : 0;
  // '#' with o: the first digit is a zero (a zero value with precision 0 prints "0").
  if (conv == 'o' && spec.alt && zeros == 0) zeros = 1;
  const char* prefix = "";
  if (conv == 'd' || conv == 'i') {
    prefix = negative ? "-" : spec.plus ? "+" : spec.space ? " " : "";
  } else if (spec.alt && nonzero && conv == 'x') {
    prefix = "0x";
  } else if (spec.alt && nonzero && conv == 'X') {
    prefix = "0X";
  }
  emit(s, spec, prefix, zeros, body, n, /*zero_pad=*/spec.precision < 0);
}

// An unsigned integer of up to kWords 32-bit words (little-endian), enough for any double
// (< 2^1024) times 10^kMaxFixedPrecision (< 2^1329).
constexpr int kMaxFixedPrecision = 400;
constexpr std::size_t kWords = 80;

struct Big {
  std::uint32_t w[kWords] = {};
  std::size_t n = 0;  // words in use; the top one is non-zero

  explicit Big(std::uint64_t v) {
    for (; v != 0; v >>= 32) w[n++] = static_cast<std::uint32_t>(v);
  }
  bool zero() const { return n == 0; }
  void mul(std::uint32_t k) {
    std::uint64_t carry = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t t = static_cast<std::uint64_t>(w[i]) * k + carry;
      w[i] = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
    if (carry != 0) push(static_cast<std::uint32_t>(carry));
  }
  void push(std::uint32_t word) {
    if (n == kWords) unsupported();
    w[n++] = word;
  }
  void shift_left(std::size_t bits) {
    const std::size_t words = bits / 32;
    const unsigned rest = bits % 32;
    if (zero()) return;
    if (n + words + 1 > kWords) unsupported();
    w[n + words] = 0;
    for (std::size_t i = n; i-- > 0;) {
      std::uint64_t t = static_cast<std::uint64_t>(w[i]) << rest;
      w[i + words + 1] |= static_cast<std::uint32_t>(t >> 32);
      w[i + words] = static_cast<std::uint32_t>(t);
    }
    for (std::size_t i = 0; i < words; ++i) w[i] = 0;
    n += words + 1;
    trim();
  }
  void shift_right(std::size_t bits) {
    const std::size_t words = bits / 32;
    const unsigned rest = bits % 32;
    if (words >= n) {
      n = 0;
      return;
    }
    for (std::size_t i = 0; i + words < n; ++i) {
      std::uint64_t t = w[i + words];
      if (i + words + 1 < n) t |= static_cast<std::uint64_t>(w[i + words + 1]) << 32;
      w[i] = static_cast<std::uint32_t>(t >> rest);
    }
    n -= words;
    trim();
  }
  bool bit(std::size_t i) const { return i / 32 < n && ((w[i / 32] >> (i % 32)) & 1u) != 0; }
  bool any_below(std::size_t bits) const {
    for (std::size_t i = 0; i < bits / 32 && i < n; ++i) {
      if (w[i] != 0) return true;
    }
    const std::size_t i = bits / 32;
    return i < n && (w[i] & ((1u << (bits % 32)) - 1u)) != 0;
  }
  void add_one() {
    for (std::size_t i = 0; i < n; ++i) {
      if (++w[i] != 0) return;
    }
    push(1);
  }
  // Divides in place; returns the remainder.
  std::uint32_t divide(std::uint32_t d) {
    std::uint64_t rem = 0;
    for (std::size_t i = n; i-- > 0;) {
      std::uint64_t t = (rem << 32) | w[i];
      w[i] = static_cast<std::uint32_t>(t / d);
      rem = t % d;
    }
    trim();
    return static_cast<std::uint32_t>(rem);
  }
  void trim() {
    while (n > 0 && w[n - 1] == 0) --n;
  }
};

// %f: the exact decimal value of the double rounded to `precision` digits, ties to even (what
// the C library prints in the default rounding mode).
void format_fixed(Sink& s, const Spec& spec, double v, bool upper) {
  std::uint64_t bits;
  static_assert(sizeof bits == sizeof v);
  std::memcpy(&bits, &v, sizeof bits);
  const bool negative = (bits >> 63) != 0;
  const char* sign = negative ? "-" : spec.plus ? "+" : spec.space ? " " : "";
  const unsigned exponent_bits = static_cast<unsigned>((bits >> 52) & 0x7ff);
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  if (exponent_bits == 0x7ff) {
    const char* text = fraction != 0 ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf");
    emit(s, spec, sign, 0, text, 3, /*zero_pad=*/false);
    return;
  }
  const int precision = spec.precision < 0 ? 6 : spec.precision;
  if (precision > kMaxFixedPrecision) unsupported();
  // |v| = mantissa * 2^exponent exactly.
  const std::uint64_t mantissa =
      exponent_bits == 0 ? fraction : (fraction | (std::uint64_t{1} << 52));
  const int exponent = exponent_bits == 0 ? -1074 : static_cast<int>(exponent_bits) - 1075;
  // scaled = round(|v| * 10^precision), printed with the point `precision` digits from the right.
  Big scaled(mantissa);
  if (exponent >= 0) {
    scaled.shift_left(static_cast<std::size_t>(exponent));
    for (int i = 0; i < precision; ++i) scaled.mul(10);
  } else {
    for (int i = 0; i < precision; ++i) scaled.mul(10);
    const std::size_t k = static_cast<std::size_t>(-exponent);
    const bool half_bit = scaled.bit(k - 1);
    const bool above_half = half_bit && scaled.any_below(k - 1);
    scaled.shift_right(k);
    const bool odd = scaled.bit(0);
    if (above_half || (half_bit && odd)) scaled.add_one();
  }
  char reversed[kWords * 32 / 3 + 2];
  std::size_t n = 0;
  while (!scaled.zero()) reversed[n++] = static_cast<char>('0' + scaled.divide(10));
  const std::size_t fraction_digits = static_cast<std::size_t>(precision);
  while (n < fraction_digits + 1) reversed[n++] = '0';
  char body[sizeof reversed + 1];
  std::size_t len = 0;
  for (std::size_t i = n; i-- > fraction_digits;) body[len++] = reversed[i];
  if (precision > 0 || spec.alt) body[len++] = '.';
  for (std::size_t i = fraction_digits; i-- > 0;) body[len++] = reversed[i];
  emit(s, spec, sign, 0, body, len, /*zero_pad=*/true);
}

enum class Length { none, hh, h, l, ll, j, z, t };

std::intmax_t signed_arg(std::va_list& ap, Length length) {
  switch (length) {
    case Length::hh:
      return static_cast<signed char>(va_arg(ap, int));
    case Length::h:
      return static_cast<short>(va_arg(ap, int));
    case Length::none:
      return va_arg(ap, int);
    case Length::l:
      return va_arg(ap, long);
    case Length::ll:
      return va_arg(ap, long long);
    case Length::j:
      return va_arg(ap, std::intmax_t);
    case Length::z:
      return va_arg(ap, std::make_signed_t<std::size_t>);
    case Length::t:
      return va_arg(ap, std::ptrdiff_t);
  }
  unsupported();
}

std::uintmax_t unsigned_arg(std::va_list& ap, Length length) {
  switch (length) {
    case Length::hh:
      return static_cast<unsigned char>(va_arg(ap, unsigned));
    case Length::h:
      return static_cast<unsigned short>(va_arg(ap, unsigned));
    case Length::none:
      return va_arg(ap, unsigned);
    case Length::l:
      return va_arg(ap, unsigned long);
    case Length::ll:
      return va_arg(ap, unsigned long long);
    case Length::j:
      return va_arg(ap, std::uintmax_t);
    case Length::z:
      return va_arg(ap, std::size_t);
    case Length::t:
      return va_arg(ap, std::make_unsigned_t<std::ptrdiff_t>);
  }
  unsupported();
}

std::size_t parse_count(const char*& p) {
  std::size_t n = 0;
  while (*p >= '0' && *p <= '9') n = n * 10 + static_cast<std::size_t>(*p++ - '0');
  return n;
}

// %f and %F: null until use_printf_fixed(), so a module that never calls it links no formatter.
void (*fixed_formatter)(Sink&, const Spec&, double, bool) = nullptr;

}  // namespace printf_lite_impl
}  // namespace

void use_printf_fixed() { printf_lite_impl::fixed_formatter = printf_lite_impl::format_fixed; }

int printf_lite(char* out, std::size_t size, const char* format, std::va_list args) {
  using namespace printf_lite_impl;
  Sink s{out, size};
  std::va_list ap;
  va_copy(ap, args);
  for (const char* p = format; *p != '\0'; ++p) {
    if (*p != '%') {
      s.put(*p);
      continue;
    }
    ++p;
    Spec spec;
    for (;; ++p) {
      if (*p == '-') {
        spec.left = true;
      } else if (*p == '0') {
        spec.zero = true;
      } else if (*p == '+') {
        spec.plus = true;
      } else if (*p == ' ') {
        spec.space = true;
      } else if (*p == '#') {
        spec.alt = true;
      } else {
        break;
      }
    }
    if (*p == '*') {
      int width = va_arg(ap, int);
      if (width < 0) {
        spec.left = true;
        width = -width;
      }
      spec.width = static_cast<std::size_t>(width);
      ++p;
    } else {
      spec.width = parse_count(p);
    }
    if (*p == '.') {
      ++p;
      if (*p == '*') {
        int precision = va_arg(ap, int);
        spec.precision = precision < 0 ? -1 : precision;
        ++p;
      } else {
        spec.precision = static_cast<int>(parse_count(p));
      }
    }
    Length length = Length::none;
    if (p[0] == 'h' && p[1] == 'h') {
      length = Length::hh;
      p += 2;
    } else if (p[0] == 'l' && p[1] == 'l') {
      length = Length::ll;
      p += 2;
    } else if (*p == 'h' || *p == 'l' || *p == 'j' || *p == 'z' || *p == 't') {
      length = *p == 'h'   ? Length::h
               : *p == 'l' ? Length::l
               : *p == 'j' ? Length::j
               : *p == 'z' ? Length::z
                           : Length::t;
      ++p;
    }
    switch (*p) {
      case 'd':
      case 'i': {
        std::intmax_t v = signed_arg(ap, length);
        std::uintmax_t magnitude = v < 0 ? std::uintmax_t{0} - static_cast<std::uintmax_t>(v)
                                         : static_cast<std::uintmax_t>(v);
        format_integer(s, spec, magnitude, v < 0, *p);
        break;
      }
      case 'u':
      case 'o':
      case 'x':
      case 'X':
        format_integer(s, spec, unsigned_arg(ap, length), false, *p);
        break;
      case 'c': {
        if (length != Length::none) unsupported();
        const char c = static_cast<char>(va_arg(ap, int));
        emit(s, spec, "", 0, &c, 1, /*zero_pad=*/false);
        break;
      }
      case 's': {
        if (length != Length::none) unsupported();
        const char* text = va_arg(ap, const char*);
        if (text == nullptr) text = "(null)";
        const std::size_t len = spec.precision < 0
                                    ? std::strlen(text)
                                    : strnlen(text, static_cast<std::size_t>(spec.precision));
        emit(s, spec, "", 0, text, len, /*zero_pad=*/false);
        break;
      }
      case 'f':
      case 'F':
        if ((length != Length::none && length != Length::l) || fixed_formatter == nullptr)
          unsupported();
        fixed_formatter(s, spec, va_arg(ap, double), *p == 'F');
        break;
      case '%':
        s.put('%');
        break;
      default:
        unsupported();
    }
  }
  va_end(ap);
  if (size > 0) out[s.len < size ? s.len : size - 1] = '\0';
  return static_cast<int>(s.len);
}

}  // namespace ss

#if defined(__wasi__)
// Replaces wasi-libc's snprintf (and with it the printf core) in the wasm32-wasi modules: the
// linker takes this definition from libss_shared.a before it reaches libc.a.
extern "C" int snprintf(char* __restrict out, std::size_t size, const char* __restrict format,
                        ...) {
  std::va_list args;
  va_start(args, format);
  const int n = ss::printf_lite(out, size, format, args);
  va_end(args);
  return n;
}
#endif
