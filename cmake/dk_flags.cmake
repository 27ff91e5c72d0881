# dk_flags.cmake — the one place that lists dk's compiler warnings and libdk's dependencies.
# Included by CMakeLists.txt (libdk, the CLI, tests) and python/CMakeLists.txt (the binding);
# the JNI build reads the same lists from the generated <build>/dk-build.mk, and pkg-config
# users from dk.pc.

# Warnings for every C target of the project (warnings are errors).
set(DK_WARNINGS -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wvla -Wformat=2 -Wundef -Wpointer-arith -Wwrite-strings -Wno-unused-parameter
    $<$<C_COMPILER_ID:GNU>:-Wno-format-truncation>)
# The same list without generator expressions (for dk-build.mk, read by make with gcc or clang).
set(DK_WARNINGS_PLAIN -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wvla -Wformat=2 -Wundef -Wpointer-arith -Wwrite-strings -Wno-unused-parameter)

# libdk's dependencies: pkg-config modules, and libraries without a .pc file.
set(DK_PC_DEPS libzstd snappy liblz4 zlib libdeflate libbrotlidec libbrotlienc libpcre2-8 libmd)
set(DK_PLAIN_DEPS roaring)
# The S3 backend's (DK_WITH_S3).
set(DK_S3_PC_DEPS libcurl expat)
