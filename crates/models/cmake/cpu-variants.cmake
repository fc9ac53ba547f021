# Which of llama.cpp's x86 CPU kernel variants the build compiles.
#
# metarag builds llama.cpp with its CPU backend as loadable modules, one per instruction
# set (`dynamic-backends`: GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS), and picks the best one
# for the CPU when the model loads, so that one build runs AVX-512 VNNI or AMX kernels
# where the CPU has them and AVX2 elsewhere. ggml's list has 14 x86 variants; compiling
# every one costs about four more minutes on two cores, so only those in
# GGML_CPU_VARIANTS_KEEP are built (set in .cargo/config.toml; leave it empty to build all).
#
# llama-cpp-sys-2 passes CMAKE_* and GGML_* environment variables to CMake, and
# CMAKE_PROJECT_INCLUDE makes CMake include this file after every project() call. ggml
# offers no option to choose variants, so the filter wraps the function that adds one:
# ggml_add_cpu_backend_variant() sets GGML_CPU_TAG_NAME, then calls
# ggml_add_cpu_backend_variant_impl(tag). The first time that variable is set, the
# implementation has been defined (by ggml-cpu/CMakeLists.txt) and the variants are about
# to be added: it is then wrapped (CMake keeps the wrapped definition as
# _ggml_add_cpu_backend_variant_impl) to skip tags not in the list. Only x86 is filtered.
include_guard(GLOBAL)

function(_metarag_filter_cpu_variants variable access value)
    if (NOT access STREQUAL "MODIFIED_ACCESS" OR NOT GGML_SYSTEM_ARCH STREQUAL "x86")
        return()
    endif()
    if ("${GGML_CPU_VARIANTS_KEEP}" STREQUAL "")
        return()
    endif()
    get_property(wrapped GLOBAL PROPERTY METARAG_CPU_VARIANTS_WRAPPED)
    if (wrapped)
        return()
    endif()
    set_property(GLOBAL PROPERTY METARAG_CPU_VARIANTS_WRAPPED TRUE)
    message(STATUS "metarag: building the CPU variants ${GGML_CPU_VARIANTS_KEEP} only")
    function(ggml_add_cpu_backend_variant_impl tag_name)
        if (tag_name STREQUAL "" OR tag_name IN_LIST GGML_CPU_VARIANTS_KEEP)
            _ggml_add_cpu_backend_variant_impl(${tag_name})
        endif()
    endfunction()
endfunction()

variable_watch(GGML_CPU_TAG_NAME _metarag_filter_cpu_variants)
