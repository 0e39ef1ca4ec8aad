# Regenerates a picture the documentation shows and fails if the committed file differs, so that
# a change to the diagram or to a schedule cannot leave a stale picture behind.
#
#   cmake -DCMD=<program;arg;...> -DFILE=<committed file> -DSOURCE_DIR=<repository> -P doc_image.cmake
#
# The message names the command that rewrites the file (run from the repository's root).

cmake_minimum_required(VERSION 3.23)

foreach(required IN ITEMS CMD FILE SOURCE_DIR)
    if(NOT DEFINED ${required} OR "${${required}}" STREQUAL "")
        message(FATAL_ERROR "doc_image.cmake: -D${required}=... is required")
    endif()
endforeach()

execute_process(COMMAND ${CMD} RESULT_VARIABLE status OUTPUT_VARIABLE actual ERROR_VARIABLE errors TIMEOUT 120)
if(NOT "${status}" STREQUAL "0")
    message(FATAL_ERROR "doc_image.cmake: the command failed (${status}): ${errors}")
endif()
file(RELATIVE_PATH shown "${SOURCE_DIR}" "${FILE}")
list(REMOVE_AT CMD 0)
list(JOIN CMD " " arguments)
if(NOT EXISTS "${FILE}")
    message(FATAL_ERROR "doc_image.cmake: ${shown} is missing; write it with: pipesched ${arguments} > ${shown}")
endif()
file(READ "${FILE}" committed)
if(NOT actual STREQUAL committed)
    message(FATAL_ERROR "doc_image.cmake: ${shown} is stale (the tool now draws it differently); "
                        "rewrite it with: pipesched ${arguments} > ${shown}")
endif()
