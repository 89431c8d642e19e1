#include "shared/text.h"

#include <charconv>

namespace ss {

std::optional<std::int64_t> parse_decimal(std::string_view text, std::int64_t min,
                                          std::int64_t max) {
  if (text.empty() || !kDigits.all_of(text)) return std::nullopt;
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;  // overflow
  if (value < min || value > max) return std::nullopt;
  return value;
}

}  // namespace ss
