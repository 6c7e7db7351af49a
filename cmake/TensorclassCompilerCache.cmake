# Compiles through ccache when it is installed, configured so that every
# checkout of the project on a machine shares one cache: a fresh clone of a
# commit (CI's) reuses the objects a developer's build of it made elsewhere.
#
# - CCACHE_BASEDIR=<source dir>: paths inside the checkout reach the compiler
#   and the hash relative to the build dir, so they read the same in any clone;
# - CCACHE_NOHASHDIR: the working directory is not hashed (it names the clone);
# - CCACHE_SLOPPINESS: precompiled headers are cached (pch_defines,
#   time_macros), and a fresh clone's new file times do not make ccache
#   distrust its headers.
#
# - CCACHE_MAXSIZE=12G for these compiles (unless the environment sets one):
#   ccache's default 5 GB is split into 16 buckets of about 300 MB, and each
#   precompiled header is an entry of 80-120 MB, so a few builds' headers
#   evicted each other and, with them, every object compiled against them:
#   a fresh clone of a commit built minutes before missed 51 of 123 compiles.
#   One commit's builds (two libtorches, the wheel's, the sanitizer build)
#   take about 3 GB compressed.
#
# Off: -DTENSORCLASS_CCACHE=OFF at configure time, or CCACHE_DISABLE=1 in the
# environment of a build (ccache then runs the compiler as it is).
option(TENSORCLASS_CCACHE "Compile through ccache (when installed) with a cache shared by every checkout" ON)

function(tensorclass_compiler_cache)
  # Off, or the user chose a launcher of their own (a bare ccache gets this set-up).
  if(NOT TENSORCLASS_CCACHE OR (CMAKE_CXX_COMPILER_LAUNCHER AND NOT CMAKE_CXX_COMPILER_LAUNCHER MATCHES "(^|/)ccache$"))
    return()
  endif()
  set(max_size 12G)
  if(DEFINED ENV{CCACHE_MAXSIZE})
    set(max_size "$ENV{CCACHE_MAXSIZE}")
  endif()
  find_program(TENSORCLASS_CCACHE_PROGRAM ccache)
  if(NOT TENSORCLASS_CCACHE_PROGRAM)
    return()
  endif()
  set(launcher env
      CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}
      CCACHE_NOHASHDIR=1
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      CCACHE_MAXSIZE=${max_size}
      ${TENSORCLASS_CCACHE_PROGRAM})
  foreach(lang CXX C)
    set(CMAKE_${lang}_COMPILER_LAUNCHER "${launcher}" PARENT_SCOPE)
  endforeach()
  message(STATUS "Compiler cache: ${TENSORCLASS_CCACHE_PROGRAM} (shared by every checkout; "
                 "off with -DTENSORCLASS_CCACHE=OFF or CCACHE_DISABLE=1)")
endfunction()
