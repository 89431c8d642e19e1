#pragma once
// HTML the workers render themselves (status pages, dashboards): every value that reaches a page
// goes through html_escape, in text and in attribute values alike.

#include <string>
#include <string_view>

namespace ss {

// & < > " ' → entities; everything else (UTF-8 included) is kept as is.
std::string html_escape(std::string_view text);

}  // namespace ss
