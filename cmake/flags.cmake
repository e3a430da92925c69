# Warnings, sanitizers and hardening for every target in the tree.

add_compile_options(
  -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes
  -Wimplicit-fallthrough -Wundef -Wpointer-arith -Wvla -Wno-missing-field-initializers
  -fno-strict-aliasing -fno-common)
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  # Messages are cut to their buffers on purpose; GCC's guess that they might be is noise.
  add_compile_options(-Wno-format-truncation)
endif()
if(XPOOL_WERROR)
  add_compile_options(-Werror)
endif()

if(XPOOL_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -O1)
  add_link_options(-fsanitize=address,undefined -fno-sanitize-recover=all)
elseif(CMAKE_BUILD_TYPE MATCHES "Rel")
  # Release hardening: fortify, stack protector, PIE, full RELRO, non-executable stack.
  add_compile_definitions(_FORTIFY_SOURCE=2)
  add_compile_options(-fstack-protector-strong -fstack-clash-protection -fPIE)
  add_link_options(-pie -Wl,-z,relro -Wl,-z,now -Wl,-z,noexecstack)
endif()

if(XPOOL_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "XPOOL_FUZZ needs clang (libFuzzer): configure with CC=clang")
  endif()
  # Coverage instrumentation everywhere; only the fuzz targets link the libFuzzer main.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
