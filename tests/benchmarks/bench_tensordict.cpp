// The dynamic TensorDict against the hand-written loop (bench_common.h), flat
// (ten leaves at one level) and nested (4 + 3 + 3 leaves over three levels).
#include <tensordict/tensordict.h>

#include <filesystem>

#include "bench_common.h"

using tensordict::TensorDict;
using tensordict::TensorDict;
using namespace bench;

namespace {

TensorDict flat_td(Leaves l) {
  const int64_t b = l[0].size(0);
  std::vector<TensorDict::Entry> entries;
  entries.reserve(kLeaves);
  for (int i = 0; i < kLeaves; ++i) entries.emplace_back(std::string{'f', static_cast<char>('0' + i)}, std::move(l[i]));
  return TensorDict(std::move(entries), {b});
}

TensorDict nested_td(Leaves l) {
  const int64_t b = l[0].size(0);
  TensorDict inner({{"c0", std::move(l[7])}, {"c1", std::move(l[8])}, {"c2", std::move(l[9])}}, {b});
  TensorDict mid({{"b0", std::move(l[4])}, {"b1", std::move(l[5])}, {"b2", std::move(l[6])}, {"inner", inner}}, {b});
  return TensorDict({{"a0", std::move(l[0])}, {"a1", std::move(l[1])}, {"a2", std::move(l[2])}, {"a3", std::move(l[3])}, {"mid", mid}}, {b});
}

// The operands of one variant, built once and alive for the whole run.
struct Data {
  TensorDict x, y, half;
  std::vector<TensorDict> pair, all;
};

void add_variant(const std::string& name, TensorDict (*make)(Leaves), const Leaves& a, const Leaves& b,
                 const std::vector<Leaves>& many) {
  auto* d = new Data{make(a), make(b), TensorDict(make(b).index({Slice(0, kBatch / 2)})), {}, {}};  // never freed
  d->pair = {d->x, d->y};
  for (const auto& m : many) d->all.push_back(make(m));
  const Indices* idx = &indices();

  add("index_int", name, [=] { return d->x.index({3}); });
  add("index_slice", name, [=] { return d->x.index({Slice(8, 40)}); });
  add("index_long", name, [=] { return d->x.index({idx->long_index}); });
  add("index_mask", name, [=] { return d->x.index({idx->mask}); });
  add("index_put_slice", name, [=] {
    d->x.index_put_({Slice(0, kBatch / 2)}, d->half);
    return 0;
  });
  add("stack2", name, [=] { return tensordict::stack(d->pair, 0); });
  add("stack64", name, [=] { return tensordict::stack(d->all, 0); });
  add("cat2", name, [=] { return tensordict::cat(d->pair, 0); });
  add("to_float64", name, [=] { return d->x.to(at::kDouble); });
  add("clone", name, [=] { return d->x.clone(); });
  add("apply_mul2", name, [=] { return d->x.apply([](const at::Tensor& t) { return t * 2; }); });
  add("reshape", name, [=] { return d->x.reshape({8, 8}); });
  add("unbind0", name, [=] { return d->x.unbind(0); });
  add("construct", name, [make] {
    Leaves l;
    l.reserve(kLeaves);
    for (int i = 0; i < kLeaves; ++i) l.push_back(at::empty({kBatch, kFeature}));
    return make(std::move(l));  // the fresh leaves move in, as the loop's do
  });
}

// The flat tensordict written with memmap() and loaded back (its leaves map
// the files): indexing it costs what indexing the in-memory one costs.
void add_memmap_variant(const Leaves& a) {
  const std::string dir = std::string(TENSORCLASS_BENCH_TMP) + "/index_memmap";
  tensordict::remove_tree(dir);
  flat_td(a).memmap(dir);
  const auto* x = new TensorDict(TensorDict::load_memmap(dir));  // never freed
  const Indices* idx = &indices();
  const std::string name = "tensordict_memmap";
  add("index_int", name, [=] { return x->index({3}); });
  add("index_slice", name, [=] { return x->index({Slice(8, 40)}); });
  add("index_long", name, [=] { return x->index({idx->long_index}); });
  add("index_mask", name, [=] { return x->index({idx->mask}); });
}

}  // namespace

int main(int argc, char** argv) {
  const Operands& ops = setup();
  add_variant("tensordict", flat_td, ops.a, ops.b, ops.many);
  add_variant("tensordict_nested", nested_td, ops.a, ops.b, ops.many);
  add_memmap_variant(ops.a);
  return run(argc, argv);
}
