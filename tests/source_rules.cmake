# Rules the runtime's sources keep, checked by CTest ("sources: ..."):
#   RULE=error-root  no bare standard exception is thrown: every error the
#                    library throws derives from tensordict::Error (errors.h)
#   RULE=kind-tag    kinds are told apart by their tag (Kind), never by
#                    comparing type names
#   RULE=layout      docs/layout.md (the Layout page) names every folder of
#                    the tree's top, of runtime/src/ and of tests/
# cmake -DSOURCE_DIR=<repo> -DRULE=<rule> -P source_rules.cmake
if(RULE STREQUAL "layout")
  file(READ "${SOURCE_DIR}/docs/layout.md" layout)
  if(NOT layout MATCHES "\n\\| folder \\| what it holds \\|\n")
    message(FATAL_ERROR "docs/layout.md has no table of folders (| folder | what it holds |)")
  endif()
  set(missing "")
  foreach(parent "" "runtime/src/" "tests/")
    file(GLOB children LIST_DIRECTORIES true RELATIVE "${SOURCE_DIR}/${parent}" "${SOURCE_DIR}/${parent}*")
    foreach(child IN LISTS children)
      # Build trees, virtual environments, caches and other untracked outputs.
      if(NOT IS_DIRECTORY "${SOURCE_DIR}/${parent}${child}" OR child MATCHES "^(build|site$|dist$|\\.|__pycache__)")
        continue()
      endif()
      # A tests/ folder may be named by itself in the tests/ row.
      if(NOT layout MATCHES "`${parent}${child}/`" AND NOT (parent STREQUAL "tests/" AND layout MATCHES "`${child}/`"))
        string(APPEND missing "\n  ${parent}${child}/")
      endif()
    endforeach()
  endforeach()
  if(missing)
    message(FATAL_ERROR "docs/layout.md does not name these folders:${missing}")
  endif()
  return()
endif()
if(RULE STREQUAL "error-root")
  set(pattern "throw std::[a-z_:]+")
elseif(RULE STREQUAL "kind-tag")
  set(pattern "type_name\\(\\) *[!=]=")
else()
  message(FATAL_ERROR "unknown RULE '${RULE}'")
endif()
file(GLOB_RECURSE files "${SOURCE_DIR}/runtime/*.h" "${SOURCE_DIR}/runtime/*.cpp")
set(found "")
foreach(file IN LISTS files)
  file(STRINGS "${file}" lines REGEX "${pattern}")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(NOT line MATCHES "^//")  # comments may name what is not done
      file(RELATIVE_PATH rel "${SOURCE_DIR}" "${file}")
      string(APPEND found "\n  ${rel}: ${line}")
    endif()
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "rule ${RULE} broken:${found}")
endif()
