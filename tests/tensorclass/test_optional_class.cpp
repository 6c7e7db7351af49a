// An optional nested tensorclass field (`optional: true` on a class field) is
// a std::optional member: absent means absent through construction, ops,
// stacking, the tensordict form, memmap and h5, as tensordict's None.
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <catch2/catch.hpp>
#include <tensordict/tensordict.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "../builders.h"
#include "../message_of.h"
#include "../temp_dir.h"
#include "../text_files.h"
#include "tc_optional.tc.h"

using tct::opt::Frame;
using tct::opt::Pose;
using td_test::message_of;
namespace fs = std::filesystem;

namespace {

using td_test::iota;
using td_test::read_text;

Frame with_pose() { return Frame({.reward = iota({4}), .pose = Pose({.xyz = iota({4, 3}) + 10}, {4}), .label = "on"}, {4}); }
Frame without_pose() { return Frame({.reward = iota({4}) + 1}, {4}); }

}  // namespace

TEST_CASE("an optional nested class may be left out at construction and is then absent") {
  const Frame f = without_pose();  // threw "Frame.pose.xyz: required field is not set" when the flag was ignored
  CHECK_FALSE(f.pose.has_value());
  CHECK(f.repr().find("pose: None") != std::string::npos);
  const Frame g = with_pose();
  REQUIRE(g.pose.has_value());
  CHECK(at::equal(g.pose->xyz, iota({4, 3}) + 10));
  CHECK(at::equal(g.get({"pose", "xyz"}), iota({4, 3}) + 10));
  CHECK(message_of([&] { f.get({"pose", "xyz"}); }) == "Frame.pose is not set (optional field)");
  // A present member is validated like any other, with its full path.
  Frame bad = without_pose();
  bad.pose = Pose();
  bad.pose->xyz = iota({4, 2});
  CHECK(message_of([&] { bad.validate(); }).find("Frame.pose") != std::string::npos);
}

TEST_CASE("ops keep an optional class absent, or apply to it when present") {
  for (const Frame& f : {with_pose(), without_pose()}) {
    const bool present = f.pose.has_value();
    CAPTURE(present);
    const Frame i = f.index({at::indexing::Slice(1, 3)});
    CHECK(i.pose.has_value() == present);
    CHECK(at::equal(i.reward, f.reward.narrow(0, 1, 2)));
    if (present) CHECK(at::equal(i.pose->xyz, f.pose->xyz.narrow(0, 1, 2)));
    const Frame r = f.reshape({2, 2});
    CHECK(r.pose.has_value() == present);
    if (present) CHECK(r.pose->batch_size() == at::IntArrayRef({2, 2}));
    const auto parts = f.unbind(0);
    CHECK(parts[3].pose.has_value() == present);
    if (present) CHECK(at::equal(parts[3].pose->xyz, f.pose->xyz[3]));
    const Frame c = f.clone();
    CHECK(c.pose.has_value() == present);
    if (present) CHECK(c.pose->xyz.data_ptr() != f.pose->xyz.data_ptr());
    const Frame s = Frame::stack({f, f}, 0);
    CHECK(s.pose.has_value() == present);
    if (present) CHECK(at::equal(s.pose->xyz, at::stack({f.pose->xyz, f.pose->xyz})));
    const Frame twice = f * 2;
    if (present) CHECK(at::equal(twice.pose->xyz, f.pose->xyz * 2));
    Frame locked = f;
    locked.lock_();
    if (present) CHECK(locked.pose->is_locked());
  }
  // Present in some inputs only: refused, naming the field.
  CHECK(message_of([] { Frame::stack({with_pose(), without_pose()}, 0); }) ==
        "stack: optional field Frame.pose is set in element 0 but not in element 1 (or the reverse)");
  CHECK(message_of([] { Frame::cat({without_pose(), with_pose()}, 0); }) ==
        "cat: optional field Frame.pose is set in element 0 but not in element 1 (or the reverse)");
  // Pairing two instances: present in one of them only is refused too.
  auto sum = [](const at::Tensor& a, const at::Tensor& b) { return a + b; };
  CHECK(message_of([&] { with_pose().apply(sum, without_pose()); }) ==
        "apply: optional field Frame.pose is set in element 0 but not in element 1 (or the reverse)");
  CHECK(message_of([&] { without_pose().where(at::ones({4}, at::kBool), with_pose()); }) ==
        "apply: optional field Frame.pose is set in element 0 but not in element 1 (or the reverse)");
  Frame target = with_pose();
  Frame no_pose = without_pose();
  no_pose.label = "on";  // only the optional class differs (another label is refused first)
  CHECK(message_of([&] { target.index_put_({at::indexing::Slice()}, no_pose); }) ==
        "write: optional field Frame.pose is set in element 0 but not in element 1 (or the reverse)");
  // Present in both: paired member by member.
  const Frame both = with_pose().apply(sum, with_pose());
  REQUIRE(both.pose.has_value());
  CHECK(at::equal(both.pose->xyz, (iota({4, 3}) + 10) * 2));
  CHECK(at::equal(both.reward, iota({4}) * 2));
}

TEST_CASE("an absent optional class is absent from the tensordict form, and comes back absent") {
  const auto td = without_pose().to_tensordict();
  CHECK_FALSE(td.contains("pose"));
  CHECK_FALSE(Frame::from_tensordict(td).pose.has_value());
  const auto full = with_pose().to_tensordict();
  REQUIRE(full.contains({"pose", "xyz"}));
  const Frame back = Frame::from_tensordict(full);
  REQUIRE(back.pose.has_value());
  CHECK(at::equal(back.pose->xyz, iota({4, 3}) + 10));
}

TEST_CASE("memmap and h5 store an optional class when present and leave it out when absent") {
  td_test::TempDir tmp;
  without_pose().memmap((tmp / "absent").string());
  // tensordict's tensorclass layout keeps the unset field as None.
  CHECK(read_text(tmp / "absent" / "meta.json").find("\"pose\":null") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp / "absent" / "_tensordict" / "pose"));
  const Frame absent = Frame::load_memmap((tmp / "absent").string());
  CHECK_FALSE(absent.pose.has_value());
  CHECK(at::equal(absent.reward, iota({4}) + 1));

  with_pose().memmap((tmp / "present").string());
  const Frame present = Frame::load_memmap((tmp / "present").string());
  REQUIRE(present.pose.has_value());
  CHECK(at::equal(present.pose->xyz, iota({4, 3}) + 10));
  CHECK(present.label == "on");

  without_pose().to_h5((tmp / "absent.h5").string()).close();
  CHECK_FALSE(Frame::from_h5((tmp / "absent.h5").string()).pose.has_value());
  with_pose().to_h5((tmp / "present.h5").string()).close();
  const Frame h5 = Frame::from_h5((tmp / "present.h5").string());
  REQUIRE(h5.pose.has_value());
  CHECK(at::equal(h5.pose->xyz, iota({4, 3}) + 10));
}
