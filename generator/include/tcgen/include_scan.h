// The files an annotated header would #include, checked before libclang reads
// any of them: clang reads whatever an #include names, and never comes back
// from a FIFO (the open blocks) or from /dev/zero (it reads until memory runs
// out). libclang has no hook on the files it opens, so the includes are found
// here, by reading the headers as text.
#pragma once

#include <string>
#include <vector>

#include "tcgen/diagnostics.h"

namespace tcgen {

// Follows the #include, #include_next and #import directives of `file` and of
// every file they find, each name searched as clang searches it: a quoted one
// in the including file's directory first, then `search_dirs` in order (the -I
// directories). What a directive finds must be a regular file of at most
// 16 MiB; otherwise the error is at the directive. Conservative where text alone cannot
// tell: directives in #if'd-out blocks and in comments are checked too. Not
// checked: names made by a macro (#include NAME), and the includes of headers
// found only in the system's directories (not searched here). Returns false
// when it added an error.
bool check_includes(const std::string& file, const std::vector<std::string>& search_dirs, Diagnostics& diags);

}  // namespace tcgen
