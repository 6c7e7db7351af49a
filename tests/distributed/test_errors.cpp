// What goes wrong between processes is reported, never hangs or crashes:
// structure mismatches name the first differing key and both shapes; a closed
// peer and the group's timeout fail the call; unsendable leaves are refused.
#include <catch2/catch.hpp>

#include <thread>

#include "../message_of.h"
#include "samples.h"

using namespace td_test;
namespace td = tensordict;

TEST_CASE("recv names the first differing key and both shapes, and the ranks stay in step", "[distributed][errors]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    if (r.rank == 0) {
      td::send(TensorDict({{"a", at::zeros({2})}, {"b", at::ones({3, 4})}}, {}), r.group, 1, packed());
      td::send(TensorDict({{"a", at::zeros({2})}, {"c", at::ones({3})}}, {}), r.group, 1, packed());
      td::send(TensorDict({{"a", at::full({2}, 5.0)}}, {}), r.group, 1, packed());  // then a matching one
    } else {
      TensorDict got({{"a", at::zeros({2})}, {"b", at::ones({3, 5})}}, {});
      check_message(message_of([&] { td::recv(got, r.group, 0, packed()); }),
                    {"recv from rank 0", "structure mismatch at key 'b'", "the sender (rank 0) has float32 [3, 4]",
                     "this tensordict has float32 [3, 5]"});
      check_message(message_of([&] { td::recv(got, r.group, 0, packed()); }),
                    {"the sender (rank 0) has key 'c' (float32 [3])", "this tensordict has key 'b' (float32 [3, 5])"});
      TensorDict ok({{"a", at::zeros({2})}}, {});
      td::recv(ok, r.group, 0, packed());
      check(at::equal(ok.get("a"), at::full({2}, 5.0)), "the next message arrives intact");
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("irecv reports a structure mismatch at wait()", "[distributed][errors]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    if (r.rank == 0) {
      td::send(TensorDict({{"a", at::zeros({2}, at::kInt)}}, {}), r.group, 1, packed());
      td::send(TensorDict({{"a", at::zeros({64}, at::kFloat)}}, {}), r.group, 1, packed(3));
    } else {
      TensorDict got({{"a", at::zeros({2}, at::kFloat)}}, {});
      auto work = td::irecv(got, r.group, 0, packed());
      const std::string message = message_of([&] { work.wait(); });
      check_message(message, {"irecv from rank 0", "key 'a'", "int32 [2]", "float32 [2]"});
      check(message_of([&] { work.wait(); }) == message, "a failed work fails again the same way");
      // A larger message than this tensordict holds (Gloo would abort on a
      // message larger than the posted buffer): sized by the header, reported.
      auto bigger = td::irecv(got, r.group, 0, packed(3));
      check_message(message_of([&] { bigger.wait(); }),
                    {"irecv from rank 0 (tag 3): structure mismatch at key 'a'", "float32 [64]", "float32 [2]"});
    }
  });
  REQUIRE(failures == "");
}

TEST_CASE("collectives name the rank and key that differ, on every rank", "[distributed][errors]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    TensorDict mine({{"x", at::zeros({r.rank == 0 ? 2 : 3})}}, {});
    check_message(message_of([&] { td::all_reduce(mine, r.group, packed_reduce()); }),
                  {"all_reduce", "structure mismatch at key 'x'", "float32 [2]", "float32 [3]"});
    // The group is still usable after the diagnosis.
    TensorDict same({{"x", at::ones({2})}}, {});
    td::all_reduce(same, r.group, packed_reduce());
    check(at::equal(same.get("x"), at::full({2}, 2.0)), "later all_reduce");

    TensorDict wrong = r.rank == 0 ? TensorDict({{"x", at::zeros({3, 2})}}, {3}) : TensorDict({{"x", at::zeros({2})}}, {});
    const std::string message = message_of([&] { td::gather_and_stack(wrong, r.group, 0, {.protocol = td::WireProtocol::packed}); });
    check_message(message, {"gather_and_stack to rank 0", "batch size [3] must start with world_size - 1 = 1"});
  });
  REQUIRE(failures == "");
}

TEST_CASE("a peer that is gone fails recv instead of hanging", "[distributed][errors]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    // Both ranks finish connecting first (else rank 1 fails while building its group).
    r.group->barrier()->wait();
    if (r.rank == 0) ::_exit(0);  // leaves without sending, its sockets closed
    TensorDict got = sample_template();
    check_message(message_of([&] { td::recv(got, r.group, 0, packed()); }), {"recv from rank 0 (tag 0): "});
  }, {.group_timeout = std::chrono::seconds(5), .deadline = std::chrono::seconds(30)});
  REQUIRE(failures == "");
}

TEST_CASE("the group's timeout bounds a recv nobody answers", "[distributed][errors]") {
  const std::string failures = run_ranks(2, [](const Rank& r) {
    if (r.rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // alive, silent
      return;
    }
    TensorDict got = sample_template();
    const auto start = std::chrono::steady_clock::now();
    const std::string message = message_of([&] { td::recv(got, r.group, 0, packed()); });
    check_message(message, {"recv from rank 0"});
    check(message.find("imed out") != std::string::npos || message.find("imeout") != std::string::npos, "a timeout: " + message);
    check(std::chrono::steady_clock::now() - start < std::chrono::seconds(5), "within the group's timeout");
  }, {.group_timeout = std::chrono::seconds(1), .deadline = std::chrono::seconds(30)});
  REQUIRE(failures == "");
}

TEST_CASE("leaves that cannot travel as bytes are refused, naming the key", "[distributed][errors]") {
  const std::string failures = run_ranks(1, [](const Rank& r) {
    TensorDict sparse({{"a", TensorDict({{"s", at::eye(3).to_sparse()}}, {})}}, {});
    check_message(message_of([&] { td::send(sparse, r.group, 0, packed()); }),
                  {"send: key ('a', 's') is not a strided (dense) tensor (layout Sparse)", "to_dense()"});
    check_message(message_of([&] { td::all_reduce(sparse, r.group, packed_reduce()); }), {"all_reduce: key ('a', 's')"});
  });
  REQUIRE(failures == "");
}
