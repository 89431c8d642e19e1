#pragma once
// The CSS selector subset a monitor's mustContain may use: what lol-html (HTMLRewriter) matches
// while streaming, restricted to what the contract promises — type (`form`), `#id`, `.class`,
// `[attr]`, `[attr=value]` (value bare or quoted), `*`, compounds of those (`form#contact.big`)
// and descendant (`main form`) or child (`main > form`) combinations. Anything else
// (pseudo-classes,
// `~`, `+`, attribute operators like `^=`, escapes, selector lists) is refused up front, so the
// host never receives a selector it cannot match.

#include <cstddef>
#include <string>
#include <string_view>

namespace ss::monitoring {

inline constexpr std::size_t kMaxSelectorLength = 200;

// "" when `selector` is valid; otherwise why not (for the 400 message).
std::string selector_error(std::string_view selector);

// A valid selector as lol-html must be given it to match what a browser matches: attribute names
// lower-cased (they are case-insensitive in HTML; lol-html compares the selector's as written with
// the document's, which its parser lower-cases), everything else as written.
std::string matchable_selector(std::string_view selector);

// CSS whitespace (space, tab, LF, CR, FF): between a selector's parts, and trimmed around it.
inline constexpr std::string_view kCssWhitespace = " \t\n\r\f";

}  // namespace ss::monitoring
