// Generated tensorclasses (bench.yaml) against the hand-written loop
// (bench_common.h): Flat has ten tensor fields, Nested the same ten spread over
// three levels (Nested -> Mid -> Inner).
#include <tensordict/tensordict.h>

#include "bench.tc.h"
#include "bench_common.h"

using namespace bench;

namespace {

bench::Flat make_flat(Leaves l) {
  const int64_t b = l[0].size(0);
  return bench::Flat({.f0 = std::move(l[0]),
                      .f1 = std::move(l[1]),
                      .f2 = std::move(l[2]),
                      .f3 = std::move(l[3]),
                      .f4 = std::move(l[4]),
                      .f5 = std::move(l[5]),
                      .f6 = std::move(l[6]),
                      .f7 = std::move(l[7]),
                      .f8 = std::move(l[8]),
                      .f9 = std::move(l[9])},
                     {b});
}

bench::Nested make_nested(Leaves l) {
  const std::vector<int64_t> b{l[0].size(0)};
  bench::Inner inner({.c0 = std::move(l[7]), .c1 = std::move(l[8]), .c2 = std::move(l[9])}, b);
  bench::Mid mid({.b0 = std::move(l[4]), .b1 = std::move(l[5]), .b2 = std::move(l[6]), .inner = std::move(inner)}, b);
  return bench::Nested({.a0 = std::move(l[0]), .a1 = std::move(l[1]), .a2 = std::move(l[2]), .a3 = std::move(l[3]), .mid = std::move(mid)}, b);
}

template <class T>
void add_variant(const std::string& name, T (*make)(Leaves), const Leaves& a, const Leaves& b,
                 const std::vector<Leaves>& many) {
  static const Indices& idx = indices();
  // Built once and kept alive for the whole run (benchmarks capture by reference).
  static T x = make(a), y = make(b);
  static T half = make(b).index({Slice(0, kBatch / 2)});
  static std::vector<T> pair{x, y};
  static std::vector<T> all;
  for (const auto& m : many) all.push_back(make(m));

  add("index_int", name, [&] { return x.index({3}); });
  add("index_slice", name, [&] { return x.index({Slice(8, 40)}); });
  add("index_long", name, [&] { return x.index({idx.long_index}); });
  add("index_mask", name, [&] { return x.index({idx.mask}); });
  add("index_put_slice", name, [&] {
    x.index_put_({Slice(0, kBatch / 2)}, half);
    return 0;
  });
  add("stack2", name, [&] { return T::stack(pair, 0); });
  add("stack64", name, [&] { return T::stack(all, 0); });
  add("cat2", name, [&] { return T::cat(pair, 0); });
  add("to_float64", name, [&] { return x.to(at::kDouble); });
  add("clone", name, [&] { return x.clone(); });
  add("apply_mul2", name, [&] { return x.apply([](const at::Tensor& t) { return t * 2; }); });
  add("reshape", name, [&] { return x.reshape({8, 8}); });
  add("unbind0", name, [&] { return x.unbind(0); });
  add("construct", name, [make] {
    Leaves l;
    l.reserve(kLeaves);
    for (int i = 0; i < kLeaves; ++i) l.push_back(at::empty({kBatch, kFeature}));
    return make(std::move(l));  // the fresh leaves move in, as the loop's do
  });
}

}  // namespace

int main(int argc, char** argv) {
  const Operands& ops = setup();
  add_variant<bench::Flat>("tensorclass", make_flat, ops.a, ops.b, ops.many);
  add_variant<bench::Nested>("tensorclass_nested", make_nested, ops.a, ops.b, ops.many);
  return run(argc, argv);
}
