// Writers over existing trees: what a rewrite keeps, views of mapped files,
// stale lazy members, concurrent and interrupted writers, the working directory.
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "hostile.h"

using namespace tensordict;
using namespace hostile;
using td_test::TempDir;
using at::indexing::Slice;

TEST_CASE("hostile writers: saving a view of a leaf mapped at the destination stores the view") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict({{"a", at::arange(10)}}, {}).memmap(dir.string());
  const std::string got = HOSTILE_RETURNS({
    auto loaded = load_memmap(dir.string());
    TensorDict({{"a", loaded.get("a").index({Slice(4, 8)})}}, {}).memmap(dir.string());
    return c10::str(load_memmap(dir.string()).get("a"));
  });
  REQUIRE_THAT(got, Contains(" 4\n 5\n 6\n 7\n") && Contains("[ CPULongType{4} ]"));
}

TEST_CASE("hostile writers: a lazy stack of 3 rewritten as 2 loads back as 2") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  const std::string got = HOSTILE_RETURNS({
    auto member = [](int v) { return TensorDict(TensorDict({{"x", at::full({2}, v)}}, {2})); };
    LazyStackedTensorDict({member(1), member(2), member(3)}, 0).memmap(dir.string());
    LazyStackedTensorDict({member(4), member(5)}, 0).memmap(dir.string());
    auto back = LazyStackedTensorDict::load_memmap(dir.string());
    return std::to_string(back.tensordicts().size()) + " " + std::to_string(back.get("x").sum().item<int64_t>());
  });
  REQUIRE(got == "2 18");
  REQUIRE_FALSE(fs::exists(dir / "2"));
}

TEST_CASE("hostile writers: a rewrite keeps FIFOs, sockets, foreign files and directory modes") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict td({{"x", at::arange(3)}}, {3});
  td.set({"n", "y"}, at::arange(3));
  td.memmap(dir.string());
  REQUIRE(::mkfifo((dir / "pipe").c_str(), 0600) == 0);
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = (dir / "n" / "sock").string();
  REQUIRE(sock_path.size() < sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock_path.c_str());
  REQUIRE(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  ::close(sock);
  write_text(dir / "notes" / "readme.txt", "keep me");
  ::chmod((dir / "n").c_str(), 0700);
  ::chmod(dir.c_str(), 0750);
  ::chmod((dir / "notes").c_str(), 0711);

  HOSTILE_RETURNS({
    TensorDict({{"x", at::arange(5)}}, {5}).memmap(dir.string());
    return "";
  });
  REQUIRE(fs::is_fifo(fs::symlink_status(dir / "pipe")));
  REQUIRE(fs::is_socket(fs::symlink_status(dir / "n" / "sock")));
  REQUIRE(read_text(dir / "notes" / "readme.txt") == "keep me");
  const auto mode = [](const fs::path& p) {
    struct stat st {};
    ::stat(p.c_str(), &st);
    return st.st_mode & 07777;
  };
  REQUIRE(mode(dir) == 0750);
  REQUIRE(mode(dir / "n") == 0700);
  REQUIRE(mode(dir / "notes") == 0711);
  REQUIRE(load_memmap(dir.string()).get("x").size(0) == 5);
}

TEST_CASE("hostile writers: a file of another user that cannot be kept makes the rewrite fail, keeping the tree") {
  if (::geteuid() != 0) {
    WARN("needs root to create another user's file: case skipped");
    return;
  }
  TempDir tmp;
  const fs::path dir = tmp / "t";
  ::chmod(tmp.path().c_str(), 0777);
  // The writer is an unprivileged user (nobody); root adds its 0600 file.
  const std::string first = HOSTILE_RETURNS({
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) throw std::runtime_error("setuid failed");
    TensorDict({{"x", at::arange(3)}}, {3}).memmap(dir.string());
    return "";
  });
  write_text(dir / "root_secret", "root only");
  ::chmod((dir / "root_secret").c_str(), 0600);
  const std::string message = HOSTILE_THROWS({
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) throw std::runtime_error("setuid failed");
    TensorDict({{"x", at::arange(5)}}, {5}).memmap(dir.string());
  });
  REQUIRE_THAT(message, Contains((dir / "root_secret").string()) && Contains("cannot be kept in the new tree"));
  REQUIRE(read_text(dir / "root_secret") == "root only");
  REQUIRE(load_memmap(dir.string()).get("x").size(0) == 3);
}

TEST_CASE("hostile writers: a mount point inside the tree makes the rewrite fail, keeping both") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict({{"x", at::arange(3)}}, {3}).memmap(dir.string());
  fs::create_directory(dir / "mnt");
  // The child mounts a tmpfs inside the tree in a mount namespace of its own
  // (private, so nothing reaches the machine's mounts), then rewrites it.
  const std::string got = HOSTILE_RETURNS({
    if (::unshare(CLONE_NEWNS) != 0) return std::string("no mount namespace");
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("none", (dir / "mnt").c_str(), "tmpfs", 0, nullptr) != 0) {
      return std::string("no mount namespace");
    }
    write_text(dir / "mnt" / "on_the_mount", "keep me");
    std::string message;
    try {
      TensorDict({{"x", at::arange(5)}}, {5}).memmap(dir.string());
    } catch (const std::exception& e) {
      message = e.what();
    }
    return message + " | " + read_text(dir / "mnt" / "on_the_mount") + " | " +
           std::to_string(load_memmap(dir.string()).get("x").size(0));
  });
  if (got == "no mount namespace") {
    WARN("mount namespaces are not permitted here: case skipped");
    return;
  }
  REQUIRE_THAT(got, Contains("cannot write the tensordict over ") &&
                        Contains((dir / "mnt").string() + " is a mount point inside the tree; unmount or move it first") &&
                        EndsWith(" | keep me | 3"));
}

TEST_CASE("hostile writers: concurrent writers of one prefix each get their own data") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  const std::string got = HOSTILE_RETURNS({
    std::atomic<int> wrong{0};
    auto writer = [&](int64_t value) {
      for (int i = 0; i < 20; ++i) {
        auto saved = TensorDict({{"x", at::full({64}, value)}}, {64}).memmap(dir.string());
        if (!saved.get("x").eq(value).all().item<bool>()) ++wrong;
      }
    };
    std::thread a(writer, 1), b(writer, 2);
    a.join();
    b.join();
    const auto x = load_memmap(dir.string()).get("x");
    const bool whole = x.eq(1).all().item<bool>() || x.eq(2).all().item<bool>();
    return std::to_string(wrong.load()) + (whole ? " whole" : " mixed");
  });
  REQUIRE(got == "0 whole");
}

TEST_CASE("hostile writers: a killed writer's staging is removed by the next, whatever its pid says") {
  TempDir tmp;
  const fs::path dir = tmp / "t";
  TensorDict({{"x", at::arange(3)}}, {3}).memmap(dir.string());
  // A staging directory named after a live pid (1): another PID namespace or
  // host may have written it; the lock, not the pid, says it is stale.
  fs::create_directories(tmp / ".t.tc-staging.1.0");
  // A writer killed while it holds the lock: the lock dies with it.
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (;;) TensorDict({{"x", at::arange(100000)}}, {100000}).memmap(dir.string());
  }
  ::usleep(300000);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  const std::string got = HOSTILE_RETURNS({
    TensorDict({{"x", at::arange(7)}}, {7}).memmap(dir.string());
    return std::to_string(load_memmap(dir.string()).get("x").size(0));
  });
  REQUIRE(got == "7");
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    INFO(entry.path().string());
    REQUIRE(entry.path().filename().string().find("tc-staging") == std::string::npos);
  }
}

TEST_CASE("hostile writers: memmap of the working directory is refused, leaving it in place") {
  TempDir tmp;
  fs::create_directories(tmp / "work");
  const std::string message = HOSTILE_THROWS({
    fs::current_path(tmp / "work");
    TensorDict({{"x", at::arange(3)}}, {3}).memmap(".");
  });
  REQUIRE_THAT(message, Contains((tmp / "work").string()) && Contains("current working directory"));
  REQUIRE_THAT(HOSTILE_THROWS({
                 fs::current_path(tmp / "work");
                 TensorDict({{"x", at::arange(3)}}, {3}).memmap("..");
               }),
               Contains("is (or contains) the current working directory"));
  REQUIRE(fs::is_directory(tmp / "work"));
}
