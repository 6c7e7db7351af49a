// tensorclass-gen stand-in: only the type name matters to the generator.
#pragma once
namespace at {
class Tensor {};
}  // namespace at
