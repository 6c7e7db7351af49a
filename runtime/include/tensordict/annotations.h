// Annotation macros for tensorclasses declared in C++ headers.
//
// For the normal compiler these expand to nothing. When tensorclass-gen parses
// a header it defines TENSORCLASS_GENERATOR, and the macros become
// `annotate` attributes that the generator's libclang frontend reads:
//
//   struct TC_TENSORCLASS(batch = "env,time") Observation
//       : tensordict::TensorClass<Observation> {
//     TC_FIELD(dtype = "uint8", shape = "..., 3, H, W") at::Tensor pixels;
//     TC_FIELD(optional) at::Tensor depth;
//   };
//
// Argument syntax: a comma-separated list of `key = "string"`,
// `key = integer` or bare `flag` entries.
//   TC_TENSORCLASS keys: batch (comma-separated names), doc
//   TC_FIELD keys: dtype, shape (comma-separated dims), optional, doc
//
// This header includes nothing and is safe to include anywhere.
#pragma once

#if defined(TENSORCLASS_GENERATOR)
#define TC_TENSORCLASS(...) __attribute__((annotate("tc:class:" #__VA_ARGS__)))
#define TC_FIELD(...) __attribute__((annotate("tc:field:" #__VA_ARGS__)))
#else
#define TC_TENSORCLASS(...)
#define TC_FIELD(...)
#endif
