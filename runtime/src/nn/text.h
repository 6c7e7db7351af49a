// How tensordict.nn prints keys and modules (shared by the nn sources).
#pragma once

#include <torch/nn/module.h>

#include <string>
#include <string_view>
#include <vector>

#include "tensordict/nn/module_base.h"

namespace tensordict::nn::text {

// ['a', ('b', 'c')]
std::string keys_repr(const Keys& keys);
// {'a', ('b', 'c')}: a Python set of keys, in the order given.
std::string key_set_repr(const Keys& keys);
// Python's str() of a key: a (no quotes) or ('b', 'c').
std::string key_str(const NestedKey& key);
// Every line after the first indented by n (Python's torch.nn _addindent).
std::string add_indent(const std::string& text, std::size_t n);
// Type(\n    field,\n    field)
std::string fields_repr(std::string_view type, const std::vector<std::string>& fields);
// A libtorch module printed like Python: without the "torch::nn::" prefix.
std::string torch_module_repr(const torch::nn::Module& module);

bool contains_key(const Keys& keys, const NestedKey& key);

// tensordict's _add_suffix: `suffix` appended to the key's last part
// (("agent", "action"), "_log_prob" -> ("agent", "action_log_prob")).
NestedKey add_suffix(const NestedKey& key, std::string_view suffix);

}  // namespace tensordict::nn::text
