// tensorclass-gen stand-in: only the type names matter to the generator.
#pragma once
namespace c10 {
struct Device {};
}  // namespace c10
namespace at {
class Tensor {};
using c10::Device;
}  // namespace at
