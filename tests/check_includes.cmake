# Checks the library's floors (CONTRIBUTING.md, "Layout"): every #include "..." of a header under
# include/pipesched/ points to a lower floor, or to its own group on the same floor, and a
# policy includes no other policy. Run as `cmake -DROOT=<repo> -P check_includes.cmake`; it
# fails naming each include that points up or sideways, and each header it cannot place.
#
#   floor  group        what
#   0      vocabulary   event, shape, action, the timing model, version; detail/'s text, enum,
#                       JSON and list-cursor helpers
#   1      concepts     policy.hpp, sink.hpp, stage_map.hpp
#   2      generators   the rest of detail/: the generator engine and the stored orders
#   3      policies     policies/ (each includes no other policy)
#   4      catalog      catalog.hpp
#   5      iteration    iteration.hpp
#   6      analysis     analysis/
#   7      search       search/
#   8      plan         plan/
#   9      io, chakra, simai (three groups: none includes another)
#   10     umbrella     pipesched.hpp
cmake_minimum_required(VERSION 3.20)

if(NOT DEFINED ROOT)
    get_filename_component(ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
endif()
set(lib "${ROOT}/include/pipesched")

set(vocabulary_files event.hpp shape.hpp action.hpp timing_model.hpp version.hpp
    detail/text.hpp detail/enum_table.hpp detail/json_escape.hpp detail/json_reader.hpp
    detail/list_cursor.hpp)
set(concept_files policy.hpp sink.hpp stage_map.hpp)

# Sets <out_floor> and <out_group> for a path relative to include/pipesched/ ("" if unknown).
function(floor_of path out_floor out_group)
    set(floor "")
    set(group "")
    if(path IN_LIST vocabulary_files)
        set(floor 0)
        set(group vocabulary)
    elseif(path IN_LIST concept_files)
        set(floor 1)
        set(group concepts)
    elseif(path MATCHES "^detail/")
        set(floor 2)
        set(group generators)
    elseif(path MATCHES "^policies/")
        set(floor 3)
        set(group policies)
    elseif(path STREQUAL "catalog.hpp")
        set(floor 4)
        set(group catalog)
    elseif(path STREQUAL "iteration.hpp")
        set(floor 5)
        set(group iteration)
    elseif(path MATCHES "^analysis/")
        set(floor 6)
        set(group analysis)
    elseif(path MATCHES "^search/")
        set(floor 7)
        set(group search)
    elseif(path MATCHES "^plan/")
        set(floor 8)
        set(group plan)
    elseif(path MATCHES "^(io|chakra|simai)/")
        set(floor 9)
        set(group "${CMAKE_MATCH_1}")
    elseif(path STREQUAL "pipesched.hpp")
        set(floor 10)
        set(group umbrella)
    endif()
    set(${out_floor} "${floor}" PARENT_SCOPE)
    set(${out_group} "${group}" PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE headers RELATIVE "${lib}" "${lib}/*.hpp")
set(problems "")
set(checked 0)
foreach(header IN LISTS headers)
    floor_of("${header}" from_floor from_group)
    if(from_floor STREQUAL "")
        string(APPEND problems "  ${header}: on no floor (add it to tests/check_includes.cmake and CONTRIBUTING.md)\n")
        continue()
    endif()
    get_filename_component(dir "${lib}/${header}" DIRECTORY)
    file(STRINGS "${lib}/${header}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line IN LISTS lines)
        string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" target "${line}")
        get_filename_component(resolved "${dir}/${target}" ABSOLUTE)
        file(RELATIVE_PATH rel "${lib}" "${resolved}")
        if(rel MATCHES "^\\.\\.")
            string(APPEND problems "  ${header}: includes \"${target}\", outside include/pipesched/\n")
            continue()
        endif()
        floor_of("${rel}" to_floor to_group)
        math(EXPR checked "${checked} + 1")
        if(to_floor STREQUAL "")
            string(APPEND problems "  ${header}: includes ${rel}, which is on no floor\n")
        elseif(to_floor GREATER from_floor)
            string(APPEND problems "  ${header} (${from_group}, floor ${from_floor}) includes ${rel} (${to_group}, floor ${to_floor}): up\n")
        elseif(to_floor EQUAL from_floor AND NOT to_group STREQUAL from_group)
            string(APPEND problems "  ${header} (${from_group}) includes ${rel} (${to_group}): sideways on floor ${from_floor}\n")
        elseif(from_group STREQUAL "policies" AND to_group STREQUAL "policies")
            string(APPEND problems "  ${header} includes ${rel}: a policy includes another policy\n")
        endif()
    endforeach()
endforeach()

list(LENGTH headers count)
if(NOT problems STREQUAL "")
    message(FATAL_ERROR "pipesched include floors: includes that break the layout (CONTRIBUTING.md):\n${problems}")
endif()
message(STATUS "pipesched include floors: ${count} headers, ${checked} includes, all pointing down")
