# Command-line tests of the SVG diagram (included from CMakeLists.txt, which defines the helpers):
# the formats, the pictures the documentation shows (regenerated, and compared with the
# committed files), and a parse of the tool's pictures with Python's xml.etree.

set(svg_head "^<svg xmlns=\"http://www[.]w3[.]org/2000/svg\" width=\"[0-9.]+\" height=\"[0-9.]+\"")
pipesched_cli_test(simulate_svg ARGS simulate --schedule 1F1B --ranks 4 --microbatches 8 --format svg
    STDOUT "${svg_head}[^\n]*>\n<title>1F1B p=4 m=8 v=1</title>\n.*bubble fraction 0[.]273, makespan 33 [(]cost units[)], 4 ranks, 64 actions</text>.*<title>rank 3: 3B7, 25 to 27</title>.*</svg>\n$"
    STDERR "^$")
pipesched_cli_test(simulate_svg_iteration ARGS simulate --schedule 1F1B --ranks 4 --microbatches 8 --iteration --format svg
    STDOUT "${svg_head}[^\n]*>\n<title>1F1B p=4 m=8 v=1 [(]one iteration[)]</title>\n.*class=\"ps-lane\".*class=\"ps-O\".*</svg>\n$"
    STDERR "^$")
pipesched_cli_test(autoschedule_svg ARGS autoschedule --ranks 4 --microbatches 8 --memory-limit 4 --placement loop --format svg
    STDOUT "${svg_head}[^\n]*>\n<title>autoschedule p=4 m=8 [(][^)]*[)]</title>\n.*bubble fraction 0[.]111, makespan 27 .*class=\"ps-W\".*</svg>\n$"
    STDERR "^$")
pipesched_cli_test(plan_emit_svg ARGS plan ${plan_8b} --emit svg --out "${CMAKE_CURRENT_BINARY_DIR}/plan_emit.svg"
    ${plan_8b_args} STDOUT "\nwrote 1 file: [^\n]*plan_emit[.]svg\n")
pipesched_cli_error(plan_emit_bad "--emit must be csv, chakra, chrome or svg, got 'png'"
    plan ${plan_8b} --emit png --out x.png ${plan_8b_args})

# The pictures in README.md and docs/diagrams.md. To rewrite one after a deliberate change, run
# the command the failure message names from the repository's root.
function(pipesched_doc_image name file)
    add_test(NAME cli.doc_image_${name}
        COMMAND "${CMAKE_COMMAND}"
            "-DCMD=$<TARGET_FILE:pipesched_cli>;${ARGN}"
            "-DFILE=${PROJECT_SOURCE_DIR}/${file}"
            "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}"
            -P "${CMAKE_CURRENT_LIST_DIR}/doc_image.cmake")
    set_tests_properties(cli.doc_image_${name} PROPERTIES LABELS "cli;docs" TIMEOUT 120)
endfunction()
pipesched_doc_image(1f1b docs/images/1f1b_p4_m8.svg
    simulate --schedule 1F1B --ranks 4 --microbatches 8 --format svg)
pipesched_doc_image(zbv docs/images/zbv_p4_m8.svg
    simulate --schedule ZBVZeroBubble --ranks 4 --microbatches 8 --format svg)
pipesched_doc_image(dualpipev docs/images/dualpipev_p4_m10.svg
    simulate --schedule DualPipeV --ranks 4 --microbatches 10 --format svg)
pipesched_doc_image(iteration docs/images/1f1b_p4_m8_iteration.svg
    simulate --schedule 1F1B --ranks 4 --microbatches 8 --iteration --format svg)

# Every picture the tool draws parses as XML, with one box per action (tests/tools/check_svg.py).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
    add_test(NAME cli.svg_xml
        COMMAND "${Python3_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/tests/tools/check_svg.py"
            "$<TARGET_FILE:pipesched_cli>" "${CMAKE_CURRENT_BINARY_DIR}/svg_xml" "${plan_data}/llama3_8b.json")
    set_tests_properties(cli.svg_xml PROPERTIES LABELS cli TIMEOUT 120)
endif()
