// The subset of Python's pickle that tensordict's wire protocol carries
// (private): what torch.distributed's object-list calls put on the wire for
// tensordict's consolidated metadata, read and written without Python.
//
// Values are JSON (ordered: a dict keeps its insertion order, as Python's):
// dict (str keys), list and tuple (both arrays), str, int (64-bit), float,
// bool and None. A class reference (STACK_GLOBAL) is read only as the value
// of a "cls" key, where tensordict's metadata names a nested tensorclass, and
// becomes the string "<class 'module.Name'>" that a consolidated file's JSON
// holds for it (nothing is imported or called). Anything else (another
// opcode, a length past the message, nesting deeper than kMaxNestingDepth, a
// value that would expand past a bound proportional to the message through
// shared references) is refused with a RuntimeError naming `context`, the
// byte offset and the opcode.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tensordict::dist::pickle {

// tensordict::Json (value.h), named here so that the fuzz target needs no libtorch.
using Json = nlohmann::ordered_json;

// The value the pickle `bytes` holds.
Json loads(std::string_view bytes, const std::string& context);

// How the arrays and strings of a value map back to Python types.
enum class Layout {
  // Every array is a list; every string a str.
  Plain,
  // tensordict's consolidated metadata: the entries of "leaves" and
  // "non_tensors" are tuples, and a "cls" of the form "<class 'module.Name'>"
  // is a class reference, as consolidate(metadata=True) makes them.
  ConsolidatedMetadata,
};

// `value` as a protocol-4 pickle, as Python's pickle.dumps reads it back.
// Throws ValueError naming `context` for a value the subset cannot hold (a
// float NaN is fine; a binary JSON value is not).
std::string dumps(const Json& value, Layout layout, const std::string& context);

}  // namespace tensordict::dist::pickle
