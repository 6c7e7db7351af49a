// Semantic checks over the IR; resolves dims, nested types and emission order.
#pragma once

#include "tcgen/diagnostics.h"
#include "tcgen/ir.h"

namespace tcgen {

// Checks `schema` (classes visible from elsewhere in `externals`), reporting
// every problem to `diags`, and fills the resolved parts of the IR.
void validate(Schema& schema, const ExternalClasses& externals, Diagnostics& diags);

}  // namespace tcgen
