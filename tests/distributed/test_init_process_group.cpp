// init_process_group among C++ ranks (both libtorches): file://, tcp:// and
// env:// rendezvous, and the messages of what a caller can get wrong. Against
// Python ranks: tests/distributed/mixed ("rendezvous").
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "../message_of.h"
#include "../temp_dir.h"
#include "samples.h"

using namespace td_test;
namespace td = tensordict;

namespace {

// A loopback port free when probed (rank 0's TCPStore binds it moments later).
int free_port() {
  sockaddr_in addr{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {htonl(INADDR_LOOPBACK)}, .sin_zero = {}};
  socklen_t len = sizeof addr;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) throw std::runtime_error("no free port on loopback");
  return ntohs(addr.sin_port);
}

// The group init_process_group made sums rank + 1 over its ranks.
void check_group(const td::ProcessGroupPtr& group, int rank, int world) {
  check(group->getRank() == rank && group->getSize() == world, "rank and size");
  TensorDict t({{"x", at::full({2}, double(rank + 1))}}, {});
  td::all_reduce(t, group);
  check(at::equal(t.get("x"), at::full({2}, world * (world + 1) / 2.0)), "all_reduce over the new group");
}

}  // namespace

TEST_CASE("init_process_group: file://, tcp:// and env:// form a group", "[distributed][init_process_group]") {
  TempDir dir;
  const std::string file = "file://" + (dir.path() / "rendezvous").string();
  const int port = free_port();
  const std::string method = GENERATE(std::string("file"), std::string("tcp"), std::string("env"));
  const std::string failures = run_ranks(2, [&](const Rank& r) {
    ::setenv("GLOO_SOCKET_IFNAME", "lo", 1);  // Gloo on loopback, as the mixed suite runs it
    td::InitProcessGroupOptions options{.timeout = std::chrono::seconds(20)};
    if (method == "file") {
      options.init_method = file;
      options.rank = r.rank;
      options.world_size = 2;
    } else if (method == "tcp") {
      // rank and world_size from the URL's query
      options.init_method = "tcp://127.0.0.1:" + std::to_string(port) + "?rank=" + std::to_string(r.rank) + "&world_size=2";
    } else {
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("RANK", std::to_string(r.rank).c_str(), 1);
      ::setenv("WORLD_SIZE", "2", 1);
    }
    check_group(td::init_process_group(options), r.rank, 2);
  });
  REQUIRE(failures == "");
}

TEST_CASE("init_process_group: a wrong argument or a missing variable is a ValueError naming it",
          "[distributed][init_process_group][errors]") {
  auto message = [](td::InitProcessGroupOptions options) {
    return message_of([&] { td::init_process_group(options); });
  };
  // The backend's name: test_nccl.cpp.
  CHECK(message({.init_method = "localhost:29500"}) ==
        "init_process_group: init_method 'localhost:29500' is not a URL such as env://, tcp://host:port or "
        "file:///path");
  CHECK(message({.init_method = "udp://h:1"}) == "init_process_group: No rendezvous handler for udp://");
  CHECK(message({.init_method = "tcp://127.0.0.1:29500", .world_size = 2}) ==
        "init_process_group: Error initializing torch.distributed using tcp:// rendezvous: rank parameter missing");
  CHECK(message({.init_method = "file:///tmp/x", .rank = 0}) ==
        "init_process_group: Error initializing torch.distributed using file:// rendezvous: world size parameter "
        "missing");
  CHECK(message({.init_method = "tcp://127.0.0.1", .rank = 0, .world_size = 1}) ==
        "init_process_group: Error initializing torch.distributed using tcp:// rendezvous: port number missing");
  CHECK(message({.init_method = "tcp://127.0.0.1:70000", .rank = 0, .world_size = 1}) ==
        "init_process_group: the port must be an integer in [0, 65535], got '70000'");
  CHECK(message({.init_method = "file:///tmp/x?rank=one&world_size=2"}) ==
        "init_process_group: rank must be an integer in [0, 2147483647], got 'one'");
  CHECK(message({.init_method = "file:///tmp/x", .rank = 2, .world_size = 2}) ==
        "init_process_group: rank 2 is not in [0, world_size) with world_size 2");
  CHECK(message({.rank = 0, .world_size = 1, .timeout = std::chrono::milliseconds(0)}) ==
        "init_process_group: the timeout must be positive, got 0 ms");
  // env:// reads what the arguments leave out.
  ::unsetenv("RANK");
  CHECK(message({}) ==
        "init_process_group: Error initializing torch.distributed using env:// rendezvous: environment variable "
        "RANK expected, but not set");
  ::unsetenv("MASTER_ADDR");
  CHECK(message({.rank = 0, .world_size = 1}) ==
        "init_process_group: Error initializing torch.distributed using env:// rendezvous: environment variable "
        "MASTER_ADDR expected, but not set");
}
