// share_memory_() across processes: a process forked afterwards reads and
// writes the same memory as this one (and does not without share_memory_,
// where fork copies on write), and the port of tensordict's multiprocessing
// test that drives two workers through in-place writes.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers.h"

using namespace tensordict;
using namespace td_test;

namespace {

// A forked child that talks to the parent through two pipes, one byte pair
// (command, value) at a time. The child runs `body` (it uses no Catch2
// assertion: a failed check exits with status 1) and exits; one still
// running when the parent is done with it is killed.
class ForkedChild {
 public:
  struct Message {
    char command;
    int8_t value;
  };
  using Body = std::function<void(ForkedChild&)>;

  explicit ForkedChild(const Body& body) {
    int down[2], up[2];
    if (::pipe(down) != 0 || ::pipe(up) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(down[1]);
      ::close(up[0]);
      in_ = down[0];
      out_ = up[1];
      int code = 0;
      try {
        body(*this);
      } catch (...) {
        code = 1;
      }
      ::_exit(code);  // no atexit handlers or static destructors of the parent's copy
    }
    ::close(down[0]);
    ::close(up[1]);
    out_ = down[1];
    in_ = up[0];
  }
  ~ForkedChild() {
    ::close(in_);
    ::close(out_);
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ForkedChild(const ForkedChild&) = delete;
  ForkedChild& operator=(const ForkedChild&) = delete;

  void send(char command, int8_t value = 0) {
    const char bytes[2] = {command, static_cast<char>(value)};
    if (::write(out_, bytes, 2) != 2) throw std::runtime_error("write to the other process failed");
  }
  // The next message, or nullopt when none comes within 30 s (or the other
  // side closed its end).
  std::optional<Message> receive() {
    pollfd p{in_, POLLIN, 0};
    if (::poll(&p, 1, 30000) != 1) return std::nullopt;
    char bytes[2];
    if (::read(in_, bytes, 2) != 2) return std::nullopt;
    return Message{bytes[0], static_cast<int8_t>(bytes[1])};
  }
  // The parent: the child's exit status once it ended (-1 if it did not
  // exit normally).
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  bool reaped_ = false;
};

// In a child: a failed check ends it with status 1.
void check(bool ok) {
  if (!ok) ::_exit(1);
}

bool all_equal(const at::Tensor& t, double value) { return t.eq(value).all().item<bool>(); }

// The child writes 2 into x after it saw the parent write 1 there; the
// parent reports what it reads then.
double value_after_child_writes(TensorDict td) {
  ForkedChild child([td](ForkedChild& self) mutable {
    check(self.receive().has_value());
    check(all_equal(td.get("x"), 1));
    td.set_("x", at::full({4}, 2.0));
    self.send('d');
  });
  td.get("x").fill_(1);  // after the fork: the child sees it only in shared memory
  child.send('w');
  const auto answer = child.receive();
  const int status = child.wait();
  if (!answer) return status == 1 ? -1.0 : -2.0;  // -1: the child did not see the parent's write
  REQUIRE(status == 0);
  return td.get("x")[0].item<double>();
}

}  // namespace

TEST_CASE("share_memory_: a process forked afterwards reads and writes the same memory", "[share_memory][fork]") {
  TensorDict shared({{"x", at::zeros({4})}}, {4});
  shared.share_memory_();
  REQUIRE(value_after_child_writes(shared) == 2.0);
  // Without it, fork copies on write: neither side sees the other's writes.
  const TensorDict plain({{"x", at::zeros({4})}}, {4});
  REQUIRE(value_after_child_writes(plain) == -1.0);
}

namespace {

// tensordict's TestMPInplace._remote_process: the commands a worker runs on
// its piece of the tensordict, each answered 'd'.
void serve(ForkedChild& self, TensorDict piece) {
  for (;;) {
    const auto message = self.receive();
    check(message.has_value());
    const int8_t value = message->value;
    switch (message->command) {
      case 'r':  // recv: the parent's write is seen
        check(all_equal(piece.get("b"), value));
        break;
      case 's': {  // send: a write in place
        const at::Tensor a = at::ones({2}) * value;
        piece.set_("a", a);
        check(piece.get("a").equal(a));
        break;
      }
      case 'D':  // set_done
        piece.set_("done", at::ones({1}, at::kBool));
        break;
      case 'U':  // set_undone_
        piece.set_("done", at::zeros({1}, at::kBool));
        break;
      case '+':  // update
        piece.update_(TensorDict({{"a", piece.get("a").clone() + 1}}, piece.batch_size()));
        break;
      case '-':  // update_
        piece.update_(TensorDict({{"a", piece.get("a").clone() - 1}}, piece.batch_size()));
        break;
      case 'c':  // close
        return;
      default:
        check(false);
    }
    self.send('d');
  }
}

// tensordict's TestMPInplace._driver_func: two workers, one per piece of
// `td`, each answering every command before the next.
void drive(TensorDict td, const std::vector<TensorDict>& pieces) {
  std::vector<std::unique_ptr<ForkedChild>> workers;
  for (const auto& piece : pieces) {
    workers.push_back(std::make_unique<ForkedChild>([piece](ForkedChild& self) mutable { serve(self, piece); }));
  }
  auto each = [&](char command, auto value_of) {
    for (std::size_t i = 0; i < workers.size(); ++i) {
      workers[i]->send(command, static_cast<int8_t>(value_of(i)));
      const auto answer = workers[i]->receive();
      INFO("command " << command << " to worker " << i);
      REQUIRE(answer.has_value());
      REQUIRE(answer->command == 'd');
    }
  };
  td.set_("b", at::ones({2, 1}) * 10);
  REQUIRE(all_equal(td.get("b"), 10));
  each('r', [](std::size_t) { return 10; });
  each('s', [](std::size_t i) { return static_cast<int>(i); });
  const at::Tensor a = td.get("a").clone();
  REQUIRE(all_equal(a[0], 0));
  REQUIRE(all_equal(a[1], 1));

  REQUIRE_FALSE(td.get("done").any().item<bool>());
  each('D', [](std::size_t) { return 0; });
  REQUIRE(td.get("done").all().item<bool>());
  each('U', [](std::size_t) { return 0; });
  REQUIRE_FALSE(td.get("done").any().item<bool>());

  at::Tensor before = td.get("a").clone();
  each('-', [](std::size_t) { return 0; });
  REQUIRE(td.get("a").allclose(before - 1));
  before = td.get("a").clone();
  each('+', [](std::size_t) { return 0; });
  REQUIRE(td.get("a").allclose(before + 1));

  for (auto& worker : workers) {
    worker->send('c');
    REQUIRE(worker->wait() == 0);
  }
}

TensorDict mp_source() {
  return TensorDict(
      {{"a", at::randn({2, 2})}, {"b", at::randn({2, 1})}, {"done", at::zeros({2, 1}, at::kBool)}}, {2});
}

std::vector<TensorDict> pieces_of(const TensorDict& td, const std::string& unbind_as) {
  if (unbind_as == "iter") return {td.index({0}), td.index({1})};
  if (unbind_as == "subtd") return {td.get_sub_tensordict({0}), td.get_sub_tensordict({1})};
  return td.unbind(0);
}

}  // namespace

TEST_CASE("share_memory_: workers write into their pieces of a shared tensordict in place",
          "[share_memory][fork][test_mp.py::TestMPInplace::test_mp]") {
  for (const std::string unbind_as : {"iter", "subtd", "unbind"}) {
    DYNAMIC_SECTION("contiguous, " << unbind_as) {
      TensorDict td = mp_source();
      td.share_memory_();
      drive(td, pieces_of(td, unbind_as));
    }
    DYNAMIC_SECTION("stack, " << unbind_as) {
      const TensorDict source = mp_source();
      TensorDict first = source.index({0}).clone();
      TensorDict second = source.index({1}).clone();
      first.share_memory_();
      second.share_memory_();
      const TensorDict td = lazy_stack({first, second}, 0);
      drive(td, pieces_of(td, unbind_as));
    }
  }
}
