#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ss {

// Request-body helpers so a plain HTML <form> can post to a worker: Content-Type parsing,
// application/x-www-form-urlencoded, multipart/form-data (text fields only) and URL query strings.
// Nothing here throws; malformed input is std::nullopt (with a reason where the API has one).
// Body size limits are enforced by the caller (413) before these run; these bound the field count.
inline constexpr std::size_t kMaxFormFields = 200;
inline constexpr std::size_t kMaxQueryParams = 200;
inline constexpr std::size_t kMaxContentTypeLength = 1024;
inline constexpr std::size_t kMaxContentTypeParams = 16;
inline constexpr std::size_t kMaxBoundaryLength = 70;  // RFC 2046 section 5.1.1
inline constexpr std::size_t kMaxPartHeaders = 16;

struct ContentType {
  std::string media_type;                     // lower-case, e.g. "multipart/form-data"
  std::map<std::string, std::string> params;  // lower-case keys, unquoted values; first one wins
};

// RFC 9110 `type/subtype *(; name=value)`, values as tokens or quoted strings.
std::optional<ContentType> parse_content_type(std::string_view header);

// A header value (or a piece of one) without the optional whitespace (spaces, tabs) around it.
std::string_view trim_ows(std::string_view s);

// '+' -> space, %XX -> byte; an invalid escape ("%", "%4", "%zz") is kept literally. The result is
// raw bytes: callers that need UTF-8 validate it themselves.
std::string percent_decode_form(std::string_view s);
// application/x-www-form-urlencoded encoding of one name or value (unreserved characters kept).
std::string percent_encode_form(std::string_view s);
// name=value&… from pairs, each part encoded.
std::string encode_urlencoded(const std::vector<std::pair<std::string, std::string>>& fields);

using FormFields = std::vector<std::pair<std::string, std::string>>;

// `a=1&b=two+words`, in order, duplicates kept; empty segments skipped; a name without '=' gets "".
// std::nullopt when there are more than kMaxFormFields fields.
std::optional<FormFields> parse_urlencoded(std::string_view body);

// multipart/form-data (RFC 7578) with text fields only: a part with a filename is a file. Without
// `files` a file refuses the body with why = "file uploads are not accepted"; with it, each file's
// field name is added there and its content skipped (the caller decides). A file part with an empty
// filename and no content (a file input left empty) is skipped either way. Malformed framing is
// std::nullopt plus a reason. CRLF framing only; a preamble before the first boundary and an
// epilogue after the closing one are ignored. `boundary` is the Content-Type's boundary parameter,
// without the leading "--".
std::optional<FormFields> parse_multipart(std::string_view body, std::string_view boundary,
                                          std::string* why = nullptr,
                                          std::vector<std::string>* files = nullptr);

// URL query strings (a leading '?' and any '#fragment' are ignored); the first value of a repeated
// name wins; parameters past kMaxQueryParams are ignored.
std::map<std::string, std::string> parse_query(std::string_view query);

}  // namespace ss
