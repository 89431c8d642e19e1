#include "workers/monitoring/selector.h"

#include <doctest/doctest.h>

using ss::monitoring::selector_error;

TEST_CASE("monitoring selector: the contract's forms are accepted") {
  for (const char* s :
       {"form", "#contact", ".hero", "[data-ready]", "[type=submit]", "[type=\"submit\"]",
        "[data-x='a b']", "form#contact", "main form#contact", "main > form",
        "div.a.b#c[role=main]", "*", "  body  main  ", "section [name=email]", "main\r\nform",
        "main\fform", "\tform\r"}) {  // CSS whitespace: space, tab, CR, LF, FF
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
  // The limit counts UTF-8 bytes, and the message says so: 100 "é" are 200 bytes, 101 are 202.
  std::string e100;
  for (int i = 0; i < 100; ++i) e100 += "\xc3\xa9";
  CHECK(selector_error("#" + e100.substr(2)).empty());
  CHECK(selector_error("#" + e100) == "is longer than 200 bytes");
}

// Found by tests/fuzz/selector_fuzz.cpp and checked in workerd's HTMLRewriter (lol-html), which
// throws "Invalid or unescaped class name" and the like on each: CSS identifiers cannot start with
// "-" followed by a digit or stand as a lone "-", and a string cannot hold a line break. The
// validator accepted them, so the monitor was stored and every probe failed on the selector.
TEST_CASE("monitoring selector: what CSS does not tokenize as an identifier or string is refused") {
  for (const char* s : {".-1", "-1", ".-", "#-1", "[-1]", "[a=-1]", "[a=-]", "[x=\"a\nb\"]",
                        "[x='a\rb']", "form .-"}) {
    CAPTURE(s);
    CHECK_FALSE(selector_error(s).empty());
  }
  // Identifiers starting with "-" followed by a letter, "_" or "-" are CSS (and lol-html matches them).
  for (const char* s : {"#-a", ".--x", "-_x", "#--", "[data-x=-y]", "form#-a.--b"}) {
    CAPTURE(s);
    CHECK(selector_error(s).empty());
  }
}

// lol-html compares a selector's attribute names as written with the document's, which its parser
// lower-cases: "[DATA-ROLE]" matched nothing, even on <form Data-Role=…>. HTML attribute names are
// case-insensitive, so the host gets them lower-cased; ids, classes and values keep their case.
TEST_CASE("monitoring selector: attribute names go to the host lower-cased, nothing else") {
  CHECK(matchable_selector("[DATA-ROLE]") == "[data-role]");
  CHECK(matchable_selector("main > FORM#Contact.Big[Data-X=Send][ TiTle = 'A B' ]") ==
        "main > FORM#Contact.Big[data-x=Send][ title = 'A B' ]");
  CHECK(matchable_selector("[a=\"]X[\"] [B]") == "[a=\"]X[\"] [b]");
  CHECK(matchable_selector("form#contact") == "form#contact");
}

// CSS names take any non-ASCII code point, and lol-html matches them (`.café` on class="café"):
// the validator took ASCII only and refused such a monitor with 400.
TEST_CASE("monitoring selector: non-ASCII names are CSS identifiers") {
  for (const char* s : {".café", "#über", "bäckerei", "[data-größe]", "[title=café]", "-é", "#-ü",
                        "main .caf\xc3\xa9 > #\xc3\xbc"}) {
    CAPTURE(s);
    CHECK(selector_error(s).empty());
  }
  // Still refused: a digit first, a lone '-', and bytes that are not UTF-8.
  for (const char* s : {".1é", "[a=-]", ".caf\xe9", "#\xc3"}) {
    CAPTURE(s);
    CHECK_FALSE(selector_error(s).empty());
  }
}
