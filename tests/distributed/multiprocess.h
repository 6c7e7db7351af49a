// run_ranks(): a test body run by N forked processes that meet in a Gloo
// group on loopback, each case bounded in time.
//
// The parent only forks and waits (it runs no libtorch op, so the children
// inherit no thread pool in use); each child builds its group over a
// FileStore in a fresh directory, runs the body and reports through a pipe.
// A child that throws, crashes or outlives the deadline fails the case with
// its rank and message; the parent kills what is left at the deadline.
#pragma once

#include <ATen/Parallel.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../temp_dir.h"
#include "tensordict/distributed.h"

namespace td_test {

struct Rank {
  int rank, world;
  tensordict::ProcessGroupPtr group;
};

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Throws with `what` unless `ok` (children cannot use Catch2's assertions).
inline void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("check failed: " + what);
}

// Throws unless `message` holds every one of `parts`.
inline void check_message(const std::string& message, std::initializer_list<std::string> parts) {
  for (const auto& part : parts) {
    check(message.find(part) != std::string::npos, "message \"" + message + "\" lacks \"" + part + "\"");
  }
}

// The packed protocol's options: these suites test it among C++ ranks
// (tests/distributed/mixed tests tensordict's protocol against Python).
inline tensordict::SendOptions packed(int init_tag = 0) {
  return {.init_tag = init_tag, .protocol = tensordict::WireProtocol::packed};
}
inline tensordict::ReduceOpOptions packed_reduce(tensordict::ReduceOpOptions options = {}) {
  options.protocol = tensordict::WireProtocol::packed;
  return options;
}

struct RanksOptions {
  std::chrono::milliseconds group_timeout = std::chrono::seconds(20);
  std::chrono::seconds deadline = std::chrono::seconds(60);
};

// Runs `body` on `world` ranks; returns "" when every rank succeeded, else a
// report naming each failing rank and what it said.
inline std::string run_ranks(int world, const std::function<void(const Rank&)>& body, RanksOptions options = {}) {
  TempDir dir;
  const std::string store_path = (dir.path() / "store").string();
  struct Child {
    pid_t pid;
    int read_fd;
    std::string said;
    int status = -1;
    bool done = false;
  };
  std::vector<Child> children;
  for (int rank = 0; rank < world; ++rank) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      std::string message;
      int code = 0;
      try {
        at::set_num_threads(1);
        auto store = c10::make_intrusive<c10d::FileStore>(store_path, world);
        Rank r{rank, world, tensordict::gloo_process_group(store, rank, world, options.group_timeout)};
        body(r);
      } catch (const std::exception& e) {
        message = e.what();
        code = 1;
      } catch (...) {
        message = "unknown exception";
        code = 1;
      }
      if (!message.empty()) [[maybe_unused]] auto n = ::write(fds[1], message.data(), message.size());
      ::_exit(code);  // no atexit handlers or static destructors of the parent's copy
    }
    ::close(fds[1]);
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    children.push_back({pid, fds[0], {}});
  }

  const auto deadline = std::chrono::steady_clock::now() + options.deadline;
  auto drain = [](Child& c) {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(c.read_fd, buf, sizeof buf)) > 0) c.said.append(buf, static_cast<std::size_t>(n));
  };
  std::size_t left = children.size();
  bool timed_out = false;
  while (left > 0) {
    for (auto& c : children) {
      if (c.done) continue;
      drain(c);
      if (::waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        drain(c);
        c.done = true;
        --left;
      }
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      for (auto& c : children) {
        if (!c.done) {
          ::kill(c.pid, SIGKILL);
          ::waitpid(c.pid, &c.status, 0);
          c.done = true;
        }
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::ostringstream report;
  for (std::size_t r = 0; r < children.size(); ++r) {
    auto& c = children[r];
    ::close(c.read_fd);
    const bool ok = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
    if (ok) continue;
    report << "rank " << r << ": ";
    if (WIFSIGNALED(c.status)) report << "killed by signal " << WTERMSIG(c.status) << (timed_out ? " (deadline)" : "") << "; ";
    report << c.said << "\n";
  }
  return report.str();
}

}  // namespace td_test
