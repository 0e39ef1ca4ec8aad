# Checks that what the documentation names exists, so that moving a header or a page cannot
# leave a stale path behind. Run by ctest as pipesched_doc_paths:
#   cmake -DPIPESCHED_SOURCE_DIR=<repo> -P tests/check_docs.cmake
#
# Pages: README.md, CONTRIBUTING.md, docs/*.md, benchmarks/README.md.
#  - Relative links `[text](path)` and `[text](path#anchor)` must name an existing file or folder
#    (relative to the page).
#  - Every file name in backticks or angle brackets ending in .hpp, .cpp or .md
#    (`analysis/validate.hpp`, <pipesched/io/csv.hpp>, `examples/simulator_example.cpp`) must
#    exist: a path with a folder relative to the repository, to include/, to include/pipesched/
#    or to tools/ or tests/; a bare name anywhere under include/pipesched/, tools/, tests/,
#    examples/ or benchmarks/. A `*` in a name is a wildcard that must match at least one file.
#    A name written as `<name>.hpp` or containing `NAME`-style placeholders is skipped.
cmake_minimum_required(VERSION 3.23)

if(NOT DEFINED PIPESCHED_SOURCE_DIR)
    message(FATAL_ERROR "check_docs.cmake: pass -DPIPESCHED_SOURCE_DIR=<repository>")
endif()
set(root "${PIPESCHED_SOURCE_DIR}")

file(GLOB pages "${root}/docs/*.md")
list(PREPEND pages "${root}/README.md" "${root}/CONTRIBUTING.md" "${root}/benchmarks/README.md")

set(search_roots "${root}" "${root}/include" "${root}/include/pipesched" "${root}/tools" "${root}/tests"
    "${root}/benchmarks")
set(bare_roots "${root}/include/pipesched" "${root}/tools" "${root}/tests" "${root}/examples"
    "${root}/benchmarks" "${root}/docs")

set(problems "")

function(name_exists name out)
    set(found FALSE)
    if(name MATCHES "/")
        foreach(base IN LISTS search_roots)
            file(GLOB matches "${base}/${name}")
            if(matches)
                set(found TRUE)
                break()
            endif()
        endforeach()
    else()
        file(GLOB matches "${root}/${name}") # top-level files; build trees are never searched
        if(matches)
            set(found TRUE)
        endif()
        foreach(base IN LISTS bare_roots)
            if(found)
                break()
            endif()
            file(GLOB_RECURSE matches "${base}/${name}")
            if(matches)
                set(found TRUE)
                break()
            endif()
        endforeach()
    endif()
    set(${out} ${found} PARENT_SCOPE)
endfunction()

foreach(page IN LISTS pages)
    if(NOT EXISTS "${page}")
        string(APPEND problems "  ${page}: the page does not exist\n")
        continue()
    endif()
    file(RELATIVE_PATH page_name "${root}" "${page}")
    get_filename_component(page_dir "${page}" DIRECTORY)
    file(READ "${page}" text)

    # Relative links.
    string(REGEX MATCHALL "\\]\\([^)# ]+[^) ]*\\)" links "${text}")
    foreach(link IN LISTS links)
        string(REGEX REPLACE "^\\]\\(([^)#]*).*\\)$" "\\1" target "${link}")
        if(target STREQUAL "" OR target MATCHES "^[a-z]+:")
            continue()
        endif()
        if(NOT EXISTS "${page_dir}/${target}")
            string(APPEND problems "  ${page_name}: link to ${target}, which does not exist\n")
        endif()
    endforeach()

    # File names in backticks or angle brackets.
    string(REGEX MATCHALL "[`<][A-Za-z0-9_./*+-]+\\.(hpp|cpp|md)[`>]" names "${text}")
    list(REMOVE_DUPLICATES names)
    foreach(quoted IN LISTS names)
        string(REGEX REPLACE "^[`<](.*)[`>]$" "\\1" name "${quoted}")
        string(REGEX REPLACE "^pipesched/" "include/pipesched/" name "${name}")
        if(name MATCHES "[A-Z][A-Z]+" AND NOT name MATCHES "README|CONTRIBUTING|DESIGN|LICENSE")
            continue() # a placeholder such as FILE.cpp or <NAME>.hpp
        endif()
        if(name MATCHES "^/")
            continue()
        endif()
        name_exists("${name}" found)
        if(NOT found)
            string(APPEND problems "  ${page_name}: names ${name}, which does not exist\n")
        endif()
    endforeach()
endforeach()

if(problems)
    message(FATAL_ERROR "The documentation names files that do not exist:\n${problems}")
endif()
list(LENGTH pages page_count)
message(STATUS "pipesched_doc_paths: ${page_count} pages, every named file and link exists")
