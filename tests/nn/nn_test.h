// What every nn test file uses: the nn headers, Catch and the names below.
#pragma once

#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <tensordict/nn.h>

#include "../message_of.h"

using tensordict::KeyError;
using tensordict::NestedKey;
using tensordict::TensorDict;
using tensordict::TensorDict;
namespace tnn = tensordict::nn;
using td_test::message_of;
