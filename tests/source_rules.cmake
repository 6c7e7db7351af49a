# Rules the runtime's sources keep, checked by CTest ("sources: ..."):
#   RULE=error-root  no bare standard exception is thrown: every error the
#                    library throws derives from tensordict::Error (errors.h)
#   RULE=kind-tag    kinds are told apart by their tag (Kind), never by
#                    comparing type names
# cmake -DSOURCE_DIR=<repo> -DRULE=<rule> -P source_rules.cmake
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
