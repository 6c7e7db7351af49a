// The tensorclass runtime, all of it: #include <tensordict/tensordict.h>.
#pragma once

#include "tensordict/base.h"
#include "tensordict/batch_index.h"
#include "tensordict/device_sync.h"
#include "tensordict/dtype.h"
#include "tensordict/errors.h"
#include "tensordict/functional.h"
#include "tensordict/key.h"
#include "tensordict/lazy.h"
#include "tensordict/memmap.h"
#include "tensordict/non_tensor.h"
#include "tensordict/persistent.h"
#include "tensordict/remove_tree.h"
#include "tensordict/repr.h"
#include "tensordict/schema.h"
#include "tensordict/state_dict.h"
#include "tensordict/sub.h"
