// send/recv/isend/irecv in tensordict's protocol against Python ranks.
// Scenario "p2p KIND MODE": rank 0 sends make(KIND, r) to every other rank r,
// which answers make(KIND, 100 + r); both sides check every leaf.
// MODE: plain, tag (init_tag 5), pseudo (pseudo_rand, init_tag 3),
// consolidated, async (isend/irecv).
#include <fmt/format.h>

#include "mixed_rank.h"
#include "samples.h"

namespace {

namespace td = tensordict;

// Every tensor leaf of `want` (a lazy stack member by member) equals `got`'s.
void expect_td(const td::TensorDict& got, const td::TensorDict& want, const std::string& what) {
  if (want.kind() == td::Kind::LazyStack) {
    const auto g = td::LazyStackedTensorDict(got).tensordicts(), w = td::LazyStackedTensorDict(want).tensordicts();
    mixed::expect(g.size() == w.size(), what + ": number of members");
    for (std::size_t i = 0; i < w.size(); ++i) expect_td(g[i], w[i], fmt::format("{} [{}]", what, i));
    return;
  }
  for (const auto& [key, value] : want.items()) {
    const std::string where = fmt::format("{}: key {}", what, key.repr());
    if (value.is_tensor()) mixed::expect_equal(got.get(key), value.tensor(), where);
    if (value.is_tensordict()) expect_td(got.get_td(key), value.tensordict(), where);
  }  // non-tensor data stays behind on each side
}

int64_t tensor_leaves(const td::TensorDict& t) {
  if (t.kind() == td::Kind::LazyStack) {
    int64_t n = 0;
    for (const auto& member : td::LazyStackedTensorDict(t).tensordicts()) n += tensor_leaves(member);
    return n;
  }
  int64_t n = 0;
  for (const auto& [key, value] : t.items()) {
    n += value.is_tensor() ? 1 : value.is_tensordict() ? tensor_leaves(value.tensordict()) : 0;
  }
  return n;
}

td::SendOptions options_of(const std::string& mode) {
  if (mode == "plain" || mode == "async") return {};
  if (mode == "tag") return {.init_tag = 5};
  if (mode == "pseudo") return {.init_tag = 3, .pseudo_rand = true};
  if (mode == "consolidated") return {.consolidated = true};
  throw std::invalid_argument("no mode '" + mode + "'");
}

void send_to(const td::TensorDict& t, const mixed::Rank& r, int dst, const std::string& mode) {
  if (mode == "async") {
    td::isend(t, r.group, dst, options_of(mode)).wait();
  } else {
    td::send(t, r.group, dst, options_of(mode));
  }
}

// Receives into a template of `kind` and checks it against make(kind, v).
void recv_from(const mixed::Rank& r, int src, const std::string& kind, const std::string& mode, int64_t v) {
  td::TensorDict got = mixed::make(kind, -7);
  if (mode == "consolidated") got = got.consolidate();
  const td::TensorDict want = mixed::make(kind, v);
  const std::string what = fmt::format("{} {} from rank {}", kind, mode, src);
  if (mode == "async") {
    td::Work work = td::irecv(got, r.group, src);
    work.wait();
    mixed::expect(work.is_completed(), what + ": completed after wait()");
  } else {
    const int last = td::recv(got, r.group, src, options_of(mode));
    if (mode == "plain" || mode == "tag") {
      const int init_tag = options_of(mode).init_tag;
      mixed::expect(last == init_tag + tensor_leaves(want) - 1,
                    fmt::format("{}: recv returned {}, the tag of the last of {} leaves from {}", what, last,
                                tensor_leaves(want), init_tag));
    }
  }
  expect_td(got, want, what);
}

mixed::Register p2p("p2p", [](const mixed::Rank& r) {
  const std::string& kind = r.args.at(0);
  const std::string& mode = r.args.at(1);
  if (r.rank == 0) {
    for (int peer = 1; peer < r.world; ++peer) {
      send_to(mixed::make(kind, peer), r, peer, mode);
      recv_from(r, peer, kind, mode, 100 + peer);
    }
  } else {
    recv_from(r, 0, kind, mode, r.rank);
    send_to(mixed::make(kind, 100 + r.rank), r, 0, mode);
  }
});

}  // namespace
