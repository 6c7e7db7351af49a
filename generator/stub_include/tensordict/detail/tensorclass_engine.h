// tensorclass-gen stand-in for the runtime's typed engine, which a generated
// <schema>.tc.cpp includes: the stand-in TensorClass (../tensorclass.h)
// defines its few members in the class, so there is nothing here. The
// generator's CMake tests compile generated sources against this tree.
#pragma once
#include <tensordict/tensorclass.h>
