// io/json.hpp: the JSON text shared by the library's writers and the tool.
#include <doctest/doctest.h>

#include <pipesched/detail/json_reader.hpp>
#include <pipesched/detail/json_escape.hpp>
#include <pipesched/io/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace json = pipesched::json;

namespace {

std::string string_of(std::string_view s) {
    std::string out;
    json::append_string(out, s);
    return out;
}

template <class T>
std::string number_of(T x) {
    std::string out;
    json::append_number(out, x);
    return out;
}

} // namespace

TEST_CASE("json: strings are escaped per RFC 8259") {
    CHECK(string_of("1F1B") == "\"1F1B\"");
    CHECK(string_of("") == "\"\"");
    CHECK(string_of("a\"b\\c") == "\"a\\\"b\\\\c\"");
    CHECK(string_of("\b\f\n\r\t") == "\"\\b\\f\\n\\r\\t\"");
    CHECK(string_of(std::string_view{"\x00\x1b\x1f", 3}) == "\"\\u0000\\u001b\\u001f\"");
    // Other bytes, UTF-8 included, are copied.
    CHECK(string_of("\x7f\xc3\xa9") == "\"\x7f\xc3\xa9\"");
}

TEST_CASE("json: what the writer escapes, the reader reads back (one table of escapes)") {
    std::string all;
    for (int c = 1; c < 128; ++c) all += static_cast<char>(c);
    all += '\0';
    const auto r = pipesched::json::parse(string_of(all));
    REQUIRE(r);
    CHECK(r.document->text == all);
    // '/' may be written escaped and reads as itself; the writer never escapes it.
    CHECK(pipesched::json::parse("\"a\\/b\"").document->text == "a/b");
    CHECK(string_of("a/b") == "\"a/b\"");
    CHECK_FALSE(pipesched::json::parse("\"\\x\""));
}

TEST_CASE("json: numbers") {
    CHECK(number_of(std::uint64_t{0}) == "0");
    CHECK(number_of(std::uint64_t{18446744073709551615u}) == "18446744073709551615");
    CHECK(number_of(28.5) == "28.5");
    CHECK(number_of(0.1) == "0.1"); // shortest text that reads back to the same double
    CHECK(number_of(0.15789473684210525) == "0.15789473684210525");
    CHECK(number_of(1e21) == "1000000000000000000000"); // fixed notation, never an exponent
    CHECK(number_of(-2.0) == "-2");
    CHECK(number_of(5e-324).size() > 300); // the smallest denormal, in full
    // JSON has no infinity or NaN.
    CHECK(number_of(std::numeric_limits<double>::infinity()) == "null");
    CHECK(number_of(-std::numeric_limits<double>::infinity()) == "null");
    CHECK(number_of(std::numeric_limits<double>::quiet_NaN()) == "null");
}

TEST_CASE("json: arrays of numbers and of strings") {
    const auto array_of = [](const auto& items) {
        std::string out;
        json::append_array(out, items);
        return out;
    };
    CHECK(array_of(std::vector<double>{}) == "[]");
    CHECK(array_of(std::vector<double>{2.0, 3.5, std::numeric_limits<double>::infinity()}) == "[2,3.5,null]");
    CHECK(array_of(std::vector<std::string>{"a", "b\"c"}) == "[\"a\",\"b\\\"c\"]");
    CHECK(array_of(std::vector<std::string_view>{"x"}) == "[\"x\"]");
}

namespace {
/// detail/json_escape.hpp: every short escape reads back to the byte it writes, '/' is read but
/// never written escaped, and \u (and any other letter) is no short escape.
constexpr bool short_escapes_round_trip() {
    for (const auto& e : json::detail::short_escapes) {
        if (json::detail::escaped_byte(e.letter) != e.byte) return false;
        if (e.byte != '/' && json::detail::escape_letter(e.byte) != e.letter) return false;
    }
    return json::detail::escape_letter('/') == '\0' && json::detail::escaped_byte('u') == '\0' &&
           json::detail::escaped_byte('x') == '\0' && json::detail::escape_letter('a') == '\0' &&
           json::detail::escape_letter('\n') == 'n' && json::detail::escaped_byte('t') == '\t';
}
static_assert(short_escapes_round_trip());
} // namespace

TEST_CASE("json: the short escapes, one table for the reader and the writer") {
    CHECK(short_escapes_round_trip());
}
