# Rules the runtime's sources keep, checked by CTest ("sources: ..."):
#   RULE=error-root  no bare standard exception is thrown: every error the
#                    library throws derives from tensordict::Error (errors.h)
#   RULE=kind-tag    kinds are told apart by their tag (Kind), never by
#                    comparing type names
#   RULE=layout      docs/layout.md (the Layout page) names every folder of
#                    the tree's top, of runtime/src/ and of tests/, and the
#                    top's files; every folder and file it names exists
#   RULE=layout-selftest  copies of the page with a folder left out or one
#                    the tree lacks fail the layout rule (WORK_DIR: where)
#   RULE=kind-questions  no file outside runtime/src/kinds/ asks a kind
#                    question (as_lazy(, kind() ==, kind() !=, kind_cast<)
#                    or walks a lazy stack's parts itself (as_stacked)
#                    but the few runtime/src/kinds/README.md lists, which
#                    this rule's allow-list names by file and text
#   RULE=layering    runtime/src's folders include only headers of their own
#                    level or below: core <- kinds <- ops <- storage, memmap,
#                    zip <- safetensors, arrow_io, rl, typed, distributed, nn
#                    (kinds/README.md, "Layering"); runtime/include includes
#                    none of them; no include climbs with "../"
#   RULE=rules-selftest  copies of a tree that break the kind-questions and
#                    layering rules fail them, naming the file and line
#                    (WORK_DIR: where)
# cmake -DSOURCE_DIR=<repo> -DRULE=<rule> [-DLAYOUT_FILE=<page>] -P source_rules.cmake
cmake_policy(VERSION 3.25)
# The layout rule's own test: pages that leave a folder out or name one
# the tree does not hold must fail it, naming the folder.
if(RULE STREQUAL "layout-selftest")
  file(READ "${SOURCE_DIR}/docs/layout.md" page)
  set(cases schemas-row tests-reliability nowhere-row)
  foreach(case IN LISTS cases)
    if(case STREQUAL "schemas-row")
      string(REGEX REPLACE "\n\\| `schemas/` \\|[^\n]*" "" broken "${page}")
      set(expected "does not name these folders and files:[ \n]+schemas/[ \n]")
    elseif(case STREQUAL "tests-reliability")
      string(REPLACE "`reliability/`" "reliability" broken "${page}")
      set(expected "does not name these folders and files:[ \n]+tests/reliability/[ \n]")
    else()
      string(REPLACE "\n| `dev` |" "\n| `nowhere/` | a folder the tree does not hold |\n| `dev` |" broken "${page}")
      set(expected "names these, which the tree does not hold:[ \n]+nowhere/[ \n]")
    endif()
    if(broken STREQUAL page)
      message(FATAL_ERROR "layout-selftest ${case}: docs/layout.md no longer has the text this case removes or adds")
    endif()
    set(copy "${WORK_DIR}/layout-${case}.md")
    file(WRITE "${copy}" "${broken}")
    execute_process(COMMAND "${CMAKE_COMMAND}" -DSOURCE_DIR=${SOURCE_DIR} -DRULE=layout -DLAYOUT_FILE=${copy}
                            -P "${CMAKE_CURRENT_LIST_FILE}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(rc EQUAL 0 OR NOT out MATCHES "${expected}")
      message(FATAL_ERROR "layout-selftest ${case}: the layout rule should fail matching \"${expected}\"; "
                          "it gave (exit ${rc}):\n${out}")
    endif()
  endforeach()
  return()
endif()
if(RULE STREQUAL "layout")
  # LAYOUT_FILE: another page to check (the rule's own test checks a copy
  # with a row removed).
  if(NOT LAYOUT_FILE)
    set(LAYOUT_FILE "${SOURCE_DIR}/docs/layout.md")
  endif()
  file(READ "${LAYOUT_FILE}" layout)
  if(NOT layout MATCHES "\n\\| folder \\| what it holds \\|\n")
    message(FATAL_ERROR "docs/layout.md has no table of folders (| folder | what it holds |)")
  endif()
  # The paths the table names: each row's first cell (a folder ends in /, else
  # a file), and the folders its description names in backquotes, which lie
  # inside the row's folder (`tests/`: `runtime/`, `distributed/mixed/`...).
  # Lines become list items; ; and [ ] would split or join them.
  string(REGEX REPLACE "[][;]" "," layout "${layout}")
  string(REPLACE "\n" ";" lines "${layout}")
  set(named "")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^\\| `([^`]+)` \\|(.*)$")
      continue()
    endif()
    set(row "${CMAKE_MATCH_1}")
    set(text "${CMAKE_MATCH_2}")
    list(APPEND named "${row}")
    if(row MATCHES "/$")
      string(REGEX MATCHALL "`[A-Za-z0-9_.-][A-Za-z0-9_./-]*/`" inner "${text}")
      foreach(folder IN LISTS inner)
        string(REPLACE "`" "" folder "${folder}")
        list(APPEND named "${row}${folder}")
      endforeach()
    endif()
  endforeach()
  # What must be named: the folders of the tree's top, of runtime/src/ and of
  # tests/, and the files of the top.
  set(missing "")
  foreach(parent "" "runtime/src/" "tests/")
    file(GLOB children LIST_DIRECTORIES true RELATIVE "${SOURCE_DIR}/${parent}" "${SOURCE_DIR}/${parent}*")
    foreach(child IN LISTS children)
      # Build trees, virtual environments, caches and other untracked outputs.
      if(child MATCHES "^(build|site$|dist$|\\.|__pycache__)")
        continue()
      endif()
      if(IS_DIRECTORY "${SOURCE_DIR}/${parent}${child}")
        set(path "${parent}${child}/")
      elseif(parent STREQUAL "")
        set(path "${child}")
      else()
        continue()
      endif()
      if(NOT path IN_LIST named)
        string(APPEND missing "\n  ${path}")
      endif()
    endforeach()
  endforeach()
  # What is named must be there.
  set(absent "")
  foreach(path IN LISTS named)
    string(REGEX REPLACE "/$" "" plain "${path}")
    if((path MATCHES "/$" AND NOT IS_DIRECTORY "${SOURCE_DIR}/${plain}") OR NOT EXISTS "${SOURCE_DIR}/${plain}")
      string(APPEND absent "\n  ${path}")
    endif()
  endforeach()
  if(missing OR absent)
    set(message "")
    if(missing)
      string(APPEND message "docs/layout.md does not name these folders and files:${missing}\n")
    endif()
    if(absent)
      string(APPEND message "docs/layout.md names these, which the tree does not hold:${absent}\n")
    endif()
    message(FATAL_ERROR "${message}")
  endif()
  return()
endif()
# "path:line" of each line of `file` (relative `rel`) that matches `regex`,
# with its text: appended to `out_var` as "rel:line: text" items.
function(matching_lines file rel regex out_var)
  set(out "")
  file(STRINGS "${file}" hits REGEX "${regex}")
  if(NOT hits)
    set(${out_var} "" PARENT_SCOPE)
    return()
  endif()
  file(READ "${file}" content)
  set(from 0)
  foreach(hit IN LISTS hits)
    string(STRIP "${hit}" text)
    if(text MATCHES "^//")  # comments may name what is not done
      continue()
    endif()
    string(SUBSTRING "${content}" ${from} -1 rest)
    string(FIND "${rest}" "${hit}" at)
    if(at LESS 0)
      set(line "?")
    else()
      math(EXPR at "${from} + ${at}")
      string(SUBSTRING "${content}" 0 ${at} before)
      string(REGEX MATCHALL "\n" newlines "${before}")
      list(LENGTH newlines line)
      math(EXPR line "${line} + 1")
      string(LENGTH "${hit}" length)
      math(EXPR from "${at} + ${length}")
    endif()
    string(REPLACE ";" "\\;" text "${text}")  # one list item, whatever it holds
    list(APPEND out "${rel}:${line}: ${text}")
  endforeach()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

if(RULE STREQUAL "kind-questions")
  # The conversions that must stay, "file|text they hold|why"; every other
  # kind question belongs in the kind's folder (a KindOps entry,
  # core/kind_ops.h, or a TensorDictImpl hook). An entry that matches nothing
  # fails too, so that the list stays exact.
  set(allowed
    "runtime/src/core/dict.cpp|if (kind() != expected)|require_kind: as<K>()'s checked conversion itself"
    "runtime/src/memmap/load.cpp|td.kind() != Kind::LazyStack|LazyStackedTensorDict::load_memmap: the checked conversion of what it loaded, with its message"
    "runtime/include/tensordict/tensorclass_lazy.h|result.kind() != Kind::LazyStack|a typed lazy stack's apply_tensordict checks that fn gave a lazy stack back, with its message"
    "runtime/src/ops/combine.cpp|kind_cast<detail::DenseImpl>|stack's dense fast path: dense members' entries read in place (the benchmarks' instruction counts)"
    "runtime/src/distributed/wire.cpp|leaf.level.kind() == Kind::Dense|recv's dense fast path: a dense level's leaf written in place (the benchmarks' instruction counts)"
    "runtime/src/core/dict_convert.cpp|c10::TypeKind|libtorch's IValue type kind, not a tensordict's"
    # The walks that still go through a lazy stack's parts (Stacked) outside
    # its folder: each builds with its own layer's private code, or asks a
    # yes or no that no kind's code follows.
    "runtime/src/core/kind_ops.h|inline const Stacked* as_stacked(|its definition"
    "runtime/src/core/stacked_parts.cpp|as_stacked(*other.impl())|parts_for_members: another stack's own members when it stacks along the same dim"
    "runtime/src/core/repr.cpp|detail::as_stacked(|the detailed repr of a lazy stack (exclusive fields, stack_dim, ragged entries) with the repr's private field builders"
    "runtime/src/core/repr_compact.cpp|return as_stacked(|the compact repr's lazy levels, with its private node builder"
    "runtime/src/ops/map_pairs.cpp|as_stacked(*a.impl())|the pair walker pairs a nested lazy stack member by member inside its own recursion"
    "runtime/src/ops/math_ops.cpp|found = detail::as_stacked(|where: whether the pair walker will meet a nested lazy stack, a yes or no"
    "runtime/src/ops/math_ops.cpp|auto lazy = detail::as_stacked(|apply's filter_empty prunes a lazy stack member by member inside its own recursion"
    "runtime/src/storage/consolidate.cpp|detail::as_stacked(|consolidation copies a lazy stack's members' leaves where they are into the storage's views"
    "runtime/src/storage/consolidated_file_write.cpp|detail::as_stacked(|a consolidated file's metadata describes a lazy stack member by member"
    "runtime/src/memmap/write.cpp|as_stacked(*impl)|memmap's layout: one directory per member, planned by the writer"
    "runtime/src/memmap/anonymous.cpp|detail::as_stacked(|anonymous shared memory maps a lazy stack's members where they are"
    "runtime/src/memmap/append.cpp|detail::as_stacked(|append refuses a saved lazy stack, a yes or no for its message"
    "runtime/src/safetensors/safetensors_write.cpp|detail::as_stacked(|safetensors' metadata of a lazy stack (exclusive keys refused, its stack dim)"
    "runtime/src/distributed/wire.cpp|detail::as_stacked(|the wire messages: a lazy stack sent member after member"
    "runtime/src/distributed/reduce_per_leaf.cpp|detail::as_stacked(|all_reduce's order: a lazy stack member by member"
    "runtime/src/distributed/remote_init.cpp|detail::as_stacked(|remote_init's structure message: a lazy stack's members and stack dim"
    "runtime/src/distributed/consolidated_wire.cpp|detail::as_stacked(|a received tensorclass type refused for a lazy stack, a yes or no for its message")
  set(pattern "as_lazy\\(|kind\\(\\) *[!=]=|kind_cast<|as_stacked\\(")
  file(GLOB_RECURSE files RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/runtime/*.h" "${SOURCE_DIR}/runtime/*.cpp")
  set(found "")
  set(used "")
  foreach(rel IN LISTS files)
    if(rel MATCHES "^runtime/src/kinds/")
      continue()
    endif()
    matching_lines("${SOURCE_DIR}/${rel}" "${rel}" "${pattern}" hits)
    foreach(hit IN LISTS hits)
      set(ok FALSE)
      foreach(entry IN LISTS allowed)
        string(REPLACE "|" ";" parts "${entry}")
        list(GET parts 0 entry_file)
        list(GET parts 1 entry_text)
        string(FIND "${hit}" "${entry_text}" at)
        if(rel STREQUAL entry_file AND at GREATER -1)
          set(ok TRUE)
          list(APPEND used "${entry_file}|${entry_text}")
        endif()
      endforeach()
      if(NOT ok)
        string(APPEND found "\n  ${hit}")
      endif()
    endforeach()
  endforeach()
  set(stale "")
  if(NOT SKIP_STALE)
    foreach(entry IN LISTS allowed)
      string(REPLACE "|" ";" parts "${entry}")
      list(GET parts 0 entry_file)
      list(GET parts 1 entry_text)
      if(NOT "${entry_file}|${entry_text}" IN_LIST used)
        string(APPEND stale "\n  ${entry_file}: ${entry_text}")
      endif()
    endforeach()
  endif()
  if(found OR stale)
    set(message "")
    if(found)
      string(APPEND message "rule kind-questions broken: these lines outside runtime/src/kinds/ ask a tensordict's "
                            "kind; move what the kind does differently into its folder, behind a KindOps entry "
                            "(core/kind_ops.h) or a TensorDictImpl hook (impl.h), or, for a checked conversion, add "
                            "it to this rule's allow-list and to kinds/README.md with its reason:${found}\n")
    endif()
    if(stale)
      string(APPEND message "rule kind-questions: the allow-list names these, which no longer ask; remove them "
                            "(and their rows in kinds/README.md):${stale}\n")
    endif()
    message(FATAL_ERROR "${message}")
  endif()
  return()
endif()

if(RULE STREQUAL "layering")
  # Each folder of runtime/src and its level; a folder includes headers of
  # its own level or a lower one (kinds/README.md, "Layering").
  set(levels core=0 kinds=1 ops=2 storage=3 memmap=3 zip=3
             safetensors=4 arrow_io=4 rl=4 typed=4 distributed=4 nn=4)
  set(order "core <- kinds <- ops <- storage, memmap, zip <- safetensors, arrow_io, rl, typed, distributed, nn")
  set(folders "")
  foreach(pair IN LISTS levels)
    string(REPLACE "=" ";" pair "${pair}")
    list(GET pair 0 folder)
    list(GET pair 1 level)
    set(level_${folder} ${level})
    list(APPEND folders ${folder})
  endforeach()
  set(found "")
  file(GLOB children LIST_DIRECTORIES true RELATIVE "${SOURCE_DIR}/runtime/src" "${SOURCE_DIR}/runtime/src/*")
  foreach(child IN LISTS children)
    if(IS_DIRECTORY "${SOURCE_DIR}/runtime/src/${child}" AND NOT child IN_LIST folders)
      string(APPEND found "\n  runtime/src/${child}/: a folder the layering does not place; give it a level in "
                          "tests/source_rules.cmake and kinds/README.md")
    endif()
  endforeach()
  string(REPLACE ";" "|" any_folder "${folders}")
  file(GLOB_RECURSE files RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/runtime/*.h" "${SOURCE_DIR}/runtime/*.cpp")
  foreach(rel IN LISTS files)
    matching_lines("${SOURCE_DIR}/${rel}" "${rel}" "^[ \t]*#[ \t]*include[ \t]*\"" hits)
    set(own "")
    if(rel MATCHES "^runtime/src/([^/]+)/")
      set(own "${CMAKE_MATCH_1}")
    endif()
    foreach(hit IN LISTS hits)
      if(hit MATCHES "#[ \t]*include[ \t]*\"\\.\\./")
        string(APPEND found "\n  ${hit}: climbs with \"../\"; include it by its folder from runtime/src")
      elseif(hit MATCHES "#[ \t]*include[ \t]*\"(${any_folder})/")
        set(target "${CMAKE_MATCH_1}")
        if(own STREQUAL "")
          string(APPEND found "\n  ${hit}: a public header includes runtime/src/${target}/, which users do not have")
        elseif(level_${target} GREATER level_${own})
          string(APPEND found "\n  ${hit}: ${own}/ includes a header of ${target}/, a folder above it")
        endif()
      endif()
    endforeach()
  endforeach()
  if(found)
    message(FATAL_ERROR "rule layering broken:${found}\nA folder of runtime/src includes headers of its own "
                        "level and those below: ${order}. Move what a lower folder needs down (a KindOps entry, "
                        "core/kind_ops.h, when it is a kind's behaviour).\n")
  endif()
  return()
endif()

# The two rules' own test: trees that break them must fail, naming the file
# and line.
if(RULE STREQUAL "rules-selftest")
  set(tree "${WORK_DIR}/rules-selftest")
  file(REMOVE_RECURSE "${tree}")
  file(WRITE "${tree}/runtime/src/core/handle.cpp" "// core\n#include \"core/handle.h\"\n\n#include \"ops/walk.h\"\n")
  file(WRITE "${tree}/runtime/src/core/handle.h" "#pragma once\n")
  file(WRITE "${tree}/runtime/src/ops/walk.h" "#pragma once\n")
  file(WRITE "${tree}/runtime/src/ops/walk.cpp"
       "#include \"ops/walk.h\"\n#include \"../core/handle.h\"\n// td.kind() == Kind::Dense in a comment\n"
       "void f(const TensorDict& td) {\n  if (td.kind() == Kind::LazyStack) return;\n"
       "  if (detail::as_stacked(*td.impl())) return;\n}\n")
  file(WRITE "${tree}/runtime/src/kinds/lazy/lazy.cpp"
       "bool g(const TensorDict& td) { return td.kind() == Kind::LazyStack || detail::as_stacked(*td.impl()); }\n")
  file(WRITE "${tree}/runtime/src/extra/x.cpp" "\n")
  set(cases
    "layering|runtime/src/core/handle.cpp:4: #include \"ops/walk.h\": core/ includes a header of ops/, a folder above it"
    "layering|runtime/src/ops/walk.cpp:2: #include \"../core/handle.h\": climbs"
    "layering|runtime/src/extra/: a folder the layering does not place"
    "kind-questions|runtime/src/ops/walk.cpp:5: if \\(td.kind\\(\\) == Kind::LazyStack\\) return."
    "kind-questions|runtime/src/ops/walk.cpp:6: if \\(detail::as_stacked\\(\\*td.impl\\(\\)\\)\\) return.")
  foreach(case IN LISTS cases)
    string(REPLACE "|" ";" parts "${case}")
    list(GET parts 0 rule)
    list(GET parts 1 expected)
    execute_process(COMMAND "${CMAKE_COMMAND}" -DSOURCE_DIR=${tree} -DRULE=${rule} -DSKIP_STALE=ON
                            -P "${CMAKE_CURRENT_LIST_FILE}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(rc EQUAL 0 OR NOT out MATCHES "${expected}")
      message(FATAL_ERROR "rules-selftest: the ${rule} rule should fail matching \"${expected}\"; "
                          "it gave (exit ${rc}):\n${out}")
    endif()
    # The comment and the kind's own folder are not reported.
    if(rule STREQUAL "kind-questions" AND (out MATCHES "in a comment" OR out MATCHES "kinds/lazy"))
      message(FATAL_ERROR "rules-selftest: the kind-questions rule reported a comment or a kind's folder:\n${out}")
    endif()
  endforeach()
  file(REMOVE_RECURSE "${tree}")
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
