# Regenerates the tool output a documentation page prints and fails when the page is stale.
# A page marks such an output with a comment holding the command's arguments, right before the
# ```text block that shows what it prints:
#
#   <!-- output: plan --search --top 5 --model tests/data/plan/llama3_8b.json ... -->
#   ```text
#   ...exactly what `pipesched plan --search ...` prints, run from the repository's root...
#   ```
#
# Usage: cmake -DTOOL=<pipesched> -DPAGE=<page.md> -DROOT=<source dir> -P check_doc_output.cmake
file(READ "${PAGE}" page)
string(REGEX MATCHALL "<!-- output: [^\n]*-->\n```text\n" markers "${page}")
list(LENGTH markers count)
if(count EQUAL 0)
    message(FATAL_ERROR "${PAGE}: no '<!-- output: ... -->' marker")
endif()
set(rest "${page}")
foreach(marker IN LISTS markers)
    string(FIND "${rest}" "${marker}" at)
    string(LENGTH "${marker}" marker_length)
    math(EXPR body_start "${at} + ${marker_length}")
    string(SUBSTRING "${rest}" ${body_start} -1 rest)
    string(FIND "${rest}" "```\n" end)
    string(SUBSTRING "${rest}" 0 ${end} printed)
    string(REGEX REPLACE "^<!-- output: (.*) -->\n```text\n$" "\\1" arguments "${marker}")
    separate_arguments(argv UNIX_COMMAND "${arguments}")
    execute_process(COMMAND "${TOOL}" ${argv} WORKING_DIRECTORY "${ROOT}"
                    OUTPUT_VARIABLE actual ERROR_VARIABLE errors RESULT_VARIABLE status)
    if(NOT status EQUAL 0 OR NOT errors STREQUAL "")
        message(FATAL_ERROR "${PAGE}: `pipesched ${arguments}` exited ${status}: ${errors}")
    endif()
    if(NOT actual STREQUAL printed)
        message(FATAL_ERROR "${PAGE} is stale: `pipesched ${arguments}` now prints\n${actual}\n"
                            "where the page shows\n${printed}\nPaste the new output into the page.")
    endif()
endforeach()
message(STATUS "${PAGE}: ${count} output(s) as printed")
