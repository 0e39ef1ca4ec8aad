// PIPESCHED_VERIFY(expr): one line that checks `expr` twice, at compile time (static_assert)
// and again at run time in a doctest test case of its own, so that sanitizers and coverage see
// every compile-time check (in the spirit of lexy's tests). Use it at namespace scope; the test
// case is named after the expression. The run-time check sees the whole expression as one bool
// (doctest cannot decompose `a && b`), so a failure prints the expression text, not operands.
#pragma once

#include <doctest/doctest.h>

#define PIPESCHED_VERIFY(...)                                                                      \
    static_assert(__VA_ARGS__);                                                                    \
    DOCTEST_TEST_CASE("verify: " #__VA_ARGS__) { DOCTEST_CHECK((__VA_ARGS__)); }                   \
    static_assert(true, "PIPESCHED_VERIFY ends with a semicolon")
