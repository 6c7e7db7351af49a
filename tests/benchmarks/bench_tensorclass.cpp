// Generated tensorclasses (bench.yaml) against the hand-written loop
// (bench_common.h): Flat has ten tensor fields, Nested the same ten spread over
// three levels (Nested -> Mid -> Inner).
#include <tensordict/tensordict.h>

#include "bench.tc.h"
#include "bench_common.h"

using namespace bench;

namespace {

bench::Flat make_flat(const Leaves& l) {
  return bench::Flat({.f0 = l[0], .f1 = l[1], .f2 = l[2], .f3 = l[3], .f4 = l[4], .f5 = l[5], .f6 = l[6], .f7 = l[7],
                      .f8 = l[8], .f9 = l[9]},
                     {l[0].size(0)});
}

bench::Nested make_nested(const Leaves& l) {
  const std::vector<int64_t> b{l[0].size(0)};
  bench::Inner inner({.c0 = l[7], .c1 = l[8], .c2 = l[9]}, b);
  bench::Mid mid({.b0 = l[4], .b1 = l[5], .b2 = l[6], .inner = std::move(inner)}, b);
  return bench::Nested({.a0 = l[0], .a1 = l[1], .a2 = l[2], .a3 = l[3], .mid = std::move(mid)}, b);
}

template <class T>
void add_variant(const std::string& name, T (*make)(const Leaves&), const Leaves& a, const Leaves& b,
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
    for (int i = 0; i < kLeaves; ++i) l.push_back(at::empty({kBatch, kFeature}));
    return make(l);
  });
}

}  // namespace

int main(int argc, char** argv) {
  static const Leaves a = make_leaves(), b = make_leaves();
  static const std::vector<Leaves> many = make_many();
  add_loops(a, b, many);
  add_variant<bench::Flat>("tensorclass", make_flat, a, b, many);
  add_variant<bench::Nested>("tensorclass_nested", make_nested, a, b, many);
  bench::register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
