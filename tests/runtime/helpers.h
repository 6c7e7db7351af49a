// Shared by the runtime suites: builders and assertions.
#pragma once

#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <tensordict/tensordict.h>

#include <string>
#include <vector>

#include "../builders.h"
#include "../message_of.h"

namespace td_test {

// The message of the exception `expr` throws, or "<no exception>".
#define TD_MESSAGE(expr) ::td_test::message_of([&] { (void)(expr); })

}  // namespace td_test
