// The IR as JSON (for --dump-ir and tests).
#pragma once

#include <nlohmann/json.hpp>

#include "tcgen/ir.h"

namespace tcgen {

// Locations and the file name are included only when `with_locations`.
nlohmann::json to_json(const Schema& schema, bool with_locations);

}  // namespace tcgen
