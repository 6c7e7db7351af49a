#include "child.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>

#if defined(__SANITIZE_ADDRESS__)
#define HOSTILE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOSTILE_ASAN 1
#endif
#endif

namespace hostile {

std::string Outcome::describe() const {
  switch (status) {
    case Status::Returned: return "returned: " + text;
    case Status::Threw: return "threw: " + text;
    case Status::Crashed: return "crashed with signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    case Status::TimedOut: return "timed out";
  }
  return "?";
}

namespace {
void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}
}  // namespace

Outcome in_child(const std::function<std::string()>& fn, Limits limits) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(fds[0]);
    // The test framework's crash handlers would print a report of the whole
    // run from the child: a crash here must just end the child by its signal.
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) ::signal(sig, SIG_DFL);
#ifndef HOSTILE_ASAN
    const rlim_t bytes = static_cast<rlim_t>(limits.memory_mb) << 20;
    const rlimit as{bytes, bytes};
    ::setrlimit(RLIMIT_AS, &as);
#endif
    ::alarm(limits.seconds);  // SIGALRM's default action ends the child
    int status = 0;
    std::string text;
    try {
      text = fn();
    } catch (const std::exception& e) {
      text = e.what();
      status = 1;
    } catch (...) {
      text = "a non-std exception";
      status = 1;
    }
    write_all(fds[1], text);
    ::_exit(status);  // no static destructors, no atexit handlers of the parent
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  Outcome out;
  out.text = text;
  if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
    out.status = out.signal == SIGALRM ? Outcome::Status::TimedOut : Outcome::Status::Crashed;
  } else {
    out.status = WEXITSTATUS(status) == 0 ? Outcome::Status::Returned : Outcome::Status::Threw;
  }
  return out;
}

}  // namespace hostile
