# Installs the documentation so that its links resolve in the installed tree.
#
# tensorclass_install_docs(DESTINATION <dir> DOCS <source path>=<installed name>...)
# (at configure time, from TensorclassPackage.cmake) installs each Markdown
# file of the source tree under its new name in <dir> (other files, images,
# as they are, at their installed path). The installed copy is
# written at install time: every relative link to one of the installed files
# (a path relative to the linking file, in the source tree; an anchor kept)
# is rewritten to its installed name, and a relative link to any other file
# of the repository (a source file, a test's requirements) keeps its text
# without the link, since that file is not installed. Links inside code (fenced
# blocks) and targets with spaces (C++ lambdas in inline code) are no links.
# A link whose text is the path it points to takes the installed name as text.

function(tensorclass_install_docs)
  cmake_parse_arguments(PARSE_ARGV 0 TCD "" "DESTINATION" "DOCS")
  if(IS_ABSOLUTE "${TCD_DESTINATION}")
    set(_dest "${TCD_DESTINATION}")
  else()
    set(_dest "\${CMAKE_INSTALL_PREFIX}/${TCD_DESTINATION}")
  endif()
  # Editing a document needs no reconfigure: the rewrite runs at install time.
  install(CODE "
    set(TENSORCLASS_DOCS_SOURCE_DIR [==[${PROJECT_SOURCE_DIR}]==])
    set(TENSORCLASS_DOCS_WORK_DIR [==[${PROJECT_BINARY_DIR}/installed-docs]==])
    set(TENSORCLASS_DOCS [==[${TCD_DOCS}]==])
    set(TENSORCLASS_DOCS_DESTINATION \"${_dest}\")
    include([==[${CMAKE_CURRENT_FUNCTION_LIST_FILE}]==])
    _tensorclass_install_docs_now()")
endfunction()

# The text of a link to a file that is not installed: the link's text, a path
# set as code.
function(_tensorclass_unlinked text out)
  if(text MATCHES "^[^ \t\n`]+$" AND text MATCHES "[/.]")
    set(text "`${text}`")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Rewrites the links of prose (text outside fenced code) of the document at
# <doc> (its path in the source tree).
function(_tensorclass_rewrite_prose prose doc out)
  get_filename_component(_doc_dir "${TENSORCLASS_DOCS_SOURCE_DIR}/${doc}" DIRECTORY)
  set(_result "")
  set(_rest "${prose}")
  set(_link_re "\\[([^]]*)\\]\\(([^ \t\n)]+)\\)")
  string(REGEX MATCH "${_link_re}" _link "${_rest}")
  while(NOT _link STREQUAL "")
    set(_text "${CMAKE_MATCH_1}")
    set(_target "${CMAKE_MATCH_2}")
    string(FIND "${_rest}" "${_link}" _at)
    string(SUBSTRING "${_rest}" 0 ${_at} _before)
    string(LENGTH "${_link}" _length)
    math(EXPR _after "${_at} + ${_length}")
    string(SUBSTRING "${_rest}" ${_after} -1 _rest)
    string(APPEND _result "${_before}")
    # URLs (a scheme), anchors in the same file and absolute paths stay.
    if(_target MATCHES "^([A-Za-z][A-Za-z0-9+.-]*:|#|/)")
      string(APPEND _result "${_link}")
      string(REGEX MATCH "${_link_re}" _link "${_rest}")
      continue()
    endif()
    set(_path "${_target}")
    set(_fragment "")
    if(_target MATCHES "^([^#]*)(#.*)$")
      set(_path "${CMAKE_MATCH_1}")
      set(_fragment "${CMAKE_MATCH_2}")
    endif()
    get_filename_component(_abs "${_path}" ABSOLUTE BASE_DIR "${_doc_dir}")
    file(RELATIVE_PATH _rel "${TENSORCLASS_DOCS_SOURCE_DIR}" "${_abs}")
    string(MAKE_C_IDENTIFIER "${_rel}" _key)
    if(DEFINED _tensorclass_doc_${_key})
      set(_installed "${_tensorclass_doc_${_key}}")
      if(_text STREQUAL _path OR _text STREQUAL "`${_path}`")
        string(REPLACE "${_path}" "${_installed}" _text "${_text}")
      endif()
      string(APPEND _result "[${_text}](${_installed}${_fragment})")
    else()
      _tensorclass_unlinked("${_text}" _plain)
      string(APPEND _result "${_plain}")
    endif()
    string(REGEX MATCH "${_link_re}" _link "${_rest}")
  endwhile()
  set(${out} "${_result}${_rest}" PARENT_SCOPE)
endfunction()

# Runs at install time (install(CODE) above).
function(_tensorclass_install_docs_now)
  foreach(_doc IN LISTS TENSORCLASS_DOCS)
    string(REGEX REPLACE "=.*" "" _source "${_doc}")
    string(REGEX REPLACE "^[^=]*=" "" _installed "${_doc}")
    string(MAKE_C_IDENTIFIER "${_source}" _key)
    set(_tensorclass_doc_${_key} "${_installed}")
  endforeach()
  foreach(_doc IN LISTS TENSORCLASS_DOCS)
    string(REGEX REPLACE "=.*" "" _source "${_doc}")
    string(REGEX REPLACE "^[^=]*=" "" _installed "${_doc}")
    # Images and other files that are no Markdown are installed as they are,
    # in their folder below the destination.
    if(NOT _source MATCHES "\\.md$")
      get_filename_component(_subdir "${_installed}" DIRECTORY)
      file(INSTALL DESTINATION "${TENSORCLASS_DOCS_DESTINATION}/${_subdir}" TYPE FILE
           FILES "${TENSORCLASS_DOCS_SOURCE_DIR}/${_source}")
      continue()
    endif()
    file(READ "${TENSORCLASS_DOCS_SOURCE_DIR}/${_source}" _rest)
    # Fenced code blocks alternate with prose at each ```.
    set(_result "")
    set(_in_code FALSE)
    while(NOT _rest STREQUAL "")
      string(FIND "${_rest}" "```" _at)
      if(_at EQUAL -1)
        set(_chunk "${_rest}")
        set(_rest "")
      else()
        string(SUBSTRING "${_rest}" 0 ${_at} _chunk)
        math(EXPR _after "${_at} + 3")
        string(SUBSTRING "${_rest}" ${_after} -1 _rest)
      endif()
      if(NOT _in_code)
        _tensorclass_rewrite_prose("${_chunk}" "${_source}" _chunk)
      endif()
      string(APPEND _result "${_chunk}")
      if(NOT _at EQUAL -1)
        string(APPEND _result "```")
        if(_in_code)
          set(_in_code FALSE)
        else()
          set(_in_code TRUE)
        endif()
      endif()
    endwhile()
    set(_copy "${TENSORCLASS_DOCS_WORK_DIR}/${_installed}")
    file(WRITE "${_copy}" "${_result}")
    # file(INSTALL) as install(FILES) uses it: DESTDIR, the manifest, the log.
    file(INSTALL DESTINATION "${TENSORCLASS_DOCS_DESTINATION}" TYPE FILE FILES "${_copy}")
  endforeach()
  # file(INSTALL) lists what it installed in this variable: install_manifest.txt.
  set(CMAKE_INSTALL_MANIFEST_FILES "${CMAKE_INSTALL_MANIFEST_FILES}" PARENT_SCOPE)
endfunction()
