#include "workers/monitoring/selector.h"

#include <doctest/doctest.h>

using ss::monitoring::selector_error;

TEST_CASE("monitoring selector: the contract's forms are accepted") {
  for (const char* s :
       {"form", "#contact", ".hero", "[data-ready]", "[type=submit]", "[type=\"submit\"]",
        "[data-x='a b']", "form#contact", "main form#contact", "main > form",
        "div.a.b#c[role=main]", "*", "  body  main  ", "section [name=email]"}) {
    CAPTURE(s);
    CHECK(selector_error(s).empty());
  }
}

TEST_CASE("monitoring selector: unknown syntax is refused with a reason") {
  for (const char* s :
       {"", "   ", "a:hover", "a, b", "a ~ b", "a + b", "[href^=x]", "#", ".", "[", "[x", "[x=]",
        "[x=\"y]", "main >", "> main", "a::before", "[x=\"a\\\"b\"]", "#1abc", "form#contact{}"}) {
    CAPTURE(s);
    CHECK_FALSE(selector_error(s).empty());
  }
  CHECK_FALSE(selector_error(std::string(300, 'a')).empty());
}
