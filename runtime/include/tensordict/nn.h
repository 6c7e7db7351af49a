// tensordict::nn, all of it: #include <tensordict/nn.h> and link
// tensorclass::nn. The only public headers that include torch/nn headers.
#pragma once

#include "tensordict/nn/composite.h"
#include "tensordict/nn/cudagraphs.h"
#include "tensordict/nn/distributions.h"
#include "tensordict/nn/ensemble.h"
#include "tensordict/nn/function.h"
#include "tensordict/nn/module.h"
#include "tensordict/nn/module_base.h"
#include "tensordict/nn/params.h"
#include "tensordict/nn/probabilistic.h"
#include "tensordict/nn/sequential.h"
#include "tensordict/nn/tensordict_params.h"
#include "tensordict/nn/wrapper.h"
#include "tensordict/tensordict.h"
