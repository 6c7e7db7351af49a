// The lists of leaf-wise ops, written once and expanded where the methods are
// declared (base.h) and defined (src/ops/math_ops.cpp). X(name) per op.
#pragma once

// Unary ops that have an in-place `name_` form in libtorch.
#define TENSORDICT_UNARY_OPS(X)                                                                                           \
  X(abs) X(neg) X(sign) X(reciprocal) X(exp) X(expm1) X(log) X(log1p) X(log2) X(log10) X(sqrt) X(sin) X(cos) X(tan)       \
  X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(sigmoid) X(erf) X(erfc) X(lgamma) X(frac) X(ceil) X(floor) X(round)   \
  X(trunc)

// Elementwise predicates: a tensordict of bools.
#define TENSORDICT_PREDICATES(X) X(isfinite) X(isnan) X(isinf) X(isposinf) X(isneginf) X(isreal)

// Binary ops whose in-place form libtorch has as `name_(other)`.
#define TENSORDICT_BINARY_OPS(X) X(mul) X(div) X(pow)

// Binary ops without an in-place libtorch form (in place = copy of the result).
#define TENSORDICT_BINARY_OPS_NO_INPLACE(X) X(maximum) X(minimum)

// Comparisons: a tensordict of bools; also the operators == != < <= > >=.
#define TENSORDICT_COMPARISONS(X) X(eq) X(ne) X(lt) X(le) X(gt) X(ge)

// Reductions over batch dims (see TensorDict::reduce).
#define TENSORDICT_REDUCTIONS(X) X(sum) X(mean) X(nansum) X(nanmean) X(prod) X(amax) X(amin) X(max) X(min)

// Named dtype casts: X(method, dtype). tensordict's float()/double()/int()/
// long()/bool() are C++ keywords, hence the to_ prefix for all of them.
#define TENSORDICT_DTYPE_CASTS(X) \
  X(to_float, at::kFloat) X(to_double, at::kDouble) X(to_half, at::kHalf) X(to_bfloat16, at::kBFloat16) X(to_int, at::kInt) \
  X(to_long, at::kLong) X(to_bool, at::kBool)
