# libFuzzer target for the soft rail's header decoder (wire.c) and, behind
# it, the rail's receive path: responder and completer.
# Included by tests/fuzz/CMakeLists.txt when RY_FUZZ=ON (clang only).
add_executable(fuzz_packet ${CMAKE_CURRENT_LIST_DIR}/fuzz_packet.c)
target_link_libraries(fuzz_packet PRIVATE railyard_static ry_core)
target_include_directories(fuzz_packet PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_options(fuzz_packet PRIVATE
	-fsanitize=fuzzer,address,undefined)
target_link_options(fuzz_packet PRIVATE -fsanitize=fuzzer,address,undefined)
add_test(NAME fuzz_packet COMMAND fuzz_packet -runs=20000 -max_len=4096)
set_tests_properties(fuzz_packet PROPERTIES LABELS fuzz TIMEOUT 600)
# Coverage for the library code the target drives: without it libFuzzer
# sees only this file's edges.  The sanitizer runtimes (RY_SANITIZE) carry
# the coverage callbacks every other program linking ry_core then needs.
if(RY_SANITIZE)
	target_compile_options(ry_core PRIVATE -fsanitize=fuzzer-no-link)
endif()
