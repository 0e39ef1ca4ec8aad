# Runs one command and checks its exit status and output; used by the tests in this folder.
#
#   cmake -DCMD=<program;arg;...>
#         [-DEXPECT_EXIT=<n>]                 exit status, default 0
#         [-DEXPECT_STDOUT=<regex>]           regex that stdout must match
#         [-DEXPECT_STDERR=<regex>]           regex that stderr must match
#         [-DEXPECT_STDOUT_EXACT_FILE=<file>] file whose content stdout must equal byte for byte
#         [-DTIMEOUT=<seconds>]               kill the command after this long, default 120
#         -P expect.cmake
#
# An option left out or given empty is not checked. Regexes are CMake regexes matched against
# the whole output: `^` and `$` are its start and end, `.` also matches a newline, and a line
# is `[^\n]*` (with a real newline character). A command killed by a signal or by the timeout
# never matches EXPECT_EXIT, so crashes and hangs fail the test.

cmake_minimum_required(VERSION 3.23) # policies for the script, e.g. CMP0054 for the if()s

if(NOT DEFINED CMD OR "${CMD}" STREQUAL "")
    message(FATAL_ERROR "expect.cmake: -DCMD=<program;arg;...> is required")
endif()
if(NOT DEFINED EXPECT_EXIT OR "${EXPECT_EXIT}" STREQUAL "")
    set(EXPECT_EXIT 0)
endif()
if(NOT DEFINED TIMEOUT OR "${TIMEOUT}" STREQUAL "")
    set(TIMEOUT 120)
endif()

execute_process(
    COMMAND ${CMD}
    RESULT_VARIABLE actual_exit
    OUTPUT_VARIABLE actual_stdout
    ERROR_VARIABLE actual_stderr
    TIMEOUT ${TIMEOUT})

set(problems "")

# RESULT_VARIABLE is a number for a normal exit and a text such as "Segmentation fault" or
# "Process terminated due to timeout" otherwise, so compare as strings.
if(NOT "${actual_exit}" STREQUAL "${EXPECT_EXIT}")
    string(APPEND problems "\n  exit status: expected ${EXPECT_EXIT}, got ${actual_exit}")
endif()

# Newlines in a regex are shown as \n in the report.
foreach(stream IN ITEMS STDOUT STDERR)
    string(TOLOWER "${stream}" lower)
    if(NOT "${EXPECT_${stream}}" STREQUAL "" AND NOT actual_${lower} MATCHES "${EXPECT_${stream}}")
        string(REPLACE "\n" "\\n" shown_regex "${EXPECT_${stream}}")
        string(APPEND problems "\n  ${lower} does not match the regex: ${shown_regex}")
    endif()
endforeach()

if(NOT "${EXPECT_STDOUT_EXACT_FILE}" STREQUAL "")
    if(NOT EXISTS "${EXPECT_STDOUT_EXACT_FILE}")
        string(APPEND problems "\n  expected-output file not found: ${EXPECT_STDOUT_EXACT_FILE}")
    else()
        file(READ "${EXPECT_STDOUT_EXACT_FILE}" expected_stdout)
        if(NOT "${actual_stdout}" STREQUAL "${expected_stdout}")
            string(APPEND problems
                "\n  stdout differs from ${EXPECT_STDOUT_EXACT_FILE}, which holds:\n"
                "------\n${expected_stdout}------")
        endif()
    endif()
endif()

if(NOT problems STREQUAL "")
    # Show at most the first 4000 characters of each stream.
    foreach(stream IN ITEMS stdout stderr)
        string(LENGTH "${actual_${stream}}" length)
        if(length GREATER 4000)
            string(SUBSTRING "${actual_${stream}}" 0 4000 shown_${stream})
            string(APPEND shown_${stream} "\n[... ${length} characters in all]\n")
        else()
            set(shown_${stream} "${actual_${stream}}")
        endif()
    endforeach()
    list(JOIN CMD " " command_line)
    # NOTICE prints the text as it is; FATAL_ERROR would re-flow it.
    message(NOTICE
        "command: ${command_line}${problems}\n"
        "exit status: ${actual_exit}\n"
        "stdout:\n------\n${shown_stdout}------\n"
        "stderr:\n------\n${shown_stderr}------")
    message(FATAL_ERROR "expect.cmake: the command did not behave as expected (see above)")
endif()
