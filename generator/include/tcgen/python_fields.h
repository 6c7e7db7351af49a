// What both Python forms of a schema class spell alike (python_emitter.cpp's
// @tensorclass, typed_tensordict_emitter.cpp's TypedTensorDict): the module
// name, field annotations and defaults, the contract table's rows, docstrings.
#pragma once

#include <string>
#include <vector>

#include "tcgen/ir.h"

namespace tcgen {

// "a.b.c" -> {"a", "b", "c"}.
std::vector<std::string> split_module(const std::string& module);
// The schema's Python module, checked: dotted identifiers, none a keyword.
// Throws Error at the schema's namespace otherwise.
std::string checked_python_module(const Schema& s);

// Throws Error at each class whose name is a Python keyword.
void check_python_class_names(const Schema& s);

// "(a, b)", "(a,)": a Python tuple display of already spelled items.
std::string python_tuple(const std::vector<std::string>& items);

// A field's annotation, naming types through the module's `_tc__` aliases
// (`_tc__int`, `_tc__<Class>`): a field may be named `int` or after a class.
std::string python_annotation(const Field& f);
// The default of a field the constructor may omit (a Python literal); "" for
// required ones (tensors and nested classes that are not optional).
std::string python_default(const Field& f);
// The row of the module's contract table for a field: its name, kind, dtype,
// declared dims and whether it is optional (templates' `_Field`).
std::string python_contract_row(const Field& f);
// The batch dim names of a class's contract: a tuple of literals, or None.
std::string python_batch_names(const Class& c);
// The class docstring, indented for a class body: the class's doc (or where it
// comes from) and an `Attributes:` section listing every field.
std::string python_docstring(const Schema& s, const Class& c);

}  // namespace tcgen
