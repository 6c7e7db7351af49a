// init_process_group: torch.distributed's rendezvous (torch/distributed/
// rendezvous.py) and default group (distributed_c10d.py's
// init_process_group and _new_process_group_helper), step for step, so that
// C++ and Python ranks meet in one group:
// - env:// and tcp://: rank 0 serves a multi-tenant TCPStore at the master
//   address, every rank waits for world_size of them; file://: a FileStore;
// - the store's timeout is the group's;
// - the group's store is PrefixStore("0/", PrefixStore("default_pg", store))
//   (the default group is named "0"), its Gloo backend's is that with
//   "cpu/" (the first device gloo serves; torch registers one backend for all);
//   an NCCL backend's "cuda/" (nccl_group.cpp: which NCCL, on which device);
// - the timeout defaults to torch's for the backend (Gloo 30 min, NCCL 10);
// - torch 2.x's sequence-number handshake (_set_sequence_number_for_group) is
//   a no-op in the torch this speaks to, and no barrier follows unless
//   TORCH_DIST_INIT_BARRIER=1, which is not followed here.
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <limits>
#include <map>

#include "distributed/calls.h"
#include "tensordict/errors.h"

namespace tensordict {

namespace {

constexpr const char* kContext = "init_process_group";

struct Url {
  std::string scheme, location;  // "tcp", "host:port"
  std::map<std::string, std::string> query;
};

Url parse_url(const std::string& url) {
  const std::size_t sep = url.find("://");
  if (sep == std::string::npos) {
    throw ValueError(fmt::format("{}: init_method '{}' is not a URL such as env://, tcp://host:port or file:///path",
                                 kContext, url));
  }
  Url u{url.substr(0, sep), url.substr(sep + 3), {}};
  const std::size_t q = u.location.find('?');
  if (q != std::string::npos) {
    std::string rest = u.location.substr(q + 1);
    u.location.resize(q);
    while (!rest.empty()) {
      const std::size_t amp = rest.find('&');
      const std::string item = rest.substr(0, amp);
      const std::size_t eq = item.find('=');
      if (eq != std::string::npos) u.query[item.substr(0, eq)] = item.substr(eq + 1);
      rest = amp == std::string::npos ? "" : rest.substr(amp + 1);
    }
  }
  return u;
}

int64_t parse_int(const std::string& text, const std::string& what, int64_t low, int64_t high) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || value < low || value > high) {
    throw ValueError(fmt::format("{}: {} must be an integer in [{}, {}], got '{}'", kContext, what, low, high, text));
  }
  return value;
}

// Python's _rendezvous_error wording, prefixed with this call.
[[noreturn]] void rendezvous_error(const std::string& scheme, const std::string& what) {
  throw ValueError(
      fmt::format("{}: Error initializing torch.distributed using {}:// rendezvous: {}", kContext, scheme, what));
}

std::string env_or_raise(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    rendezvous_error("env", fmt::format("environment variable {} expected, but not set", name));
  }
  return value;
}

// rank or world_size: the argument, else the URL's query, else (env://) the environment.
// `spoken`: the name in Python's message ("world size").
int resolve(int given, const Url& url, const char* key, const char* spoken, const char* env_name) {
  if (given != -1) return given;
  if (auto it = url.query.find(key); it != url.query.end()) {
    return static_cast<int>(parse_int(it->second, key, 0, std::numeric_limits<int>::max()));
  }
  if (url.scheme != "env") rendezvous_error(url.scheme, fmt::format("{} parameter missing", spoken));
  return static_cast<int>(parse_int(env_or_raise(env_name), env_name, 0, std::numeric_limits<int>::max()));
}

// libuv is TCPStore's default server in torch 2.x; USE_LIBUV=0 or ?use_libuv=0
// asks for the older one, as in Python. libtorch 1.x has no such option.
template <class Options>
void set_libuv(Options& options, bool use_libuv) {
  if constexpr (requires { options.useLibUV; }) options.useLibUV = use_libuv;
}

bool use_libuv(const Url& url) {
  if (auto it = url.query.find("use_libuv"); it != url.query.end()) return it->second == "1";
  const char* env = std::getenv("USE_LIBUV");
  return env == nullptr || std::string(env) == "1";
}

c10::intrusive_ptr<c10d::Store> tcp_store(const std::string& host, const std::string& port_text, const Url& url,
                                          int rank, int world_size, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(parse_int(port_text, "the port", 0, 65535));
  options.isServer = rank == 0;
  options.numWorkers = static_cast<std::size_t>(world_size);
  options.waitWorkers = true;
  options.timeout = timeout;
  options.multiTenant = true;
  set_libuv(options, use_libuv(url));
  return dist::guarded(fmt::format("{}: the TCPStore at {}:{}", kContext, host, options.port),
                       [&] { return c10::make_intrusive<c10d::TCPStore>(host, options); });
}

#ifdef TENSORCLASS_HAS_NCCL
constexpr bool kHasNccl = true;
#else
constexpr bool kHasNccl = false;
#endif
// The backends this build has, as the error names them.
constexpr const char* kAvailable = kHasNccl ? "'gloo', 'nccl'" : "'gloo'";

// torch's default timeout for the backend (its _get_default_timeout).
std::chrono::milliseconds default_timeout(bool nccl) {
#ifdef TENSORCLASS_HAS_NCCL
  if (nccl) return dist::nccl_default_timeout();
#endif
  return std::chrono::minutes(30);
}

}  // namespace

ProcessGroupPtr init_process_group(const InitProcessGroupOptions& options) {
  const bool nccl = options.backend == "nccl";
  if (nccl && !kHasNccl) {
    throw ValueError(fmt::format("{}: backend 'nccl' is not available: this build of tensorclass::distributed has no "
                                 "NCCL, as its libtorch has no c10d NCCL (build against a CUDA libtorch such as "
                                 "PyPI's torch; available: {})",
                                 kContext, kAvailable));
  }
  if (!nccl && options.backend != "gloo") {
    throw ValueError(fmt::format("{}: backend '{}' is not available in tensorclass::distributed (available: {})",
                                 kContext, options.backend, kAvailable));
  }
  const std::chrono::milliseconds timeout = options.timeout.value_or(default_timeout(nccl));
  if (timeout.count() <= 0) {
    throw ValueError(fmt::format("{}: the timeout must be positive, got {} ms", kContext, timeout.count()));
  }
  const Url url = parse_url(options.init_method);
  if (url.scheme != "env" && url.scheme != "tcp" && url.scheme != "file") {
    throw ValueError(fmt::format("{}: No rendezvous handler for {}://", kContext, url.scheme));
  }
  const int rank = resolve(options.rank, url, "rank", "rank", "RANK");
  const int world_size = resolve(options.world_size, url, "world_size", "world size", "WORLD_SIZE");
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw ValueError(fmt::format("{}: rank {} is not in [0, world_size) with world_size {}", kContext, rank, world_size));
  }

  c10::intrusive_ptr<c10d::Store> store;
  if (url.scheme == "file") {
    if (url.location.empty()) rendezvous_error("file", "path missing");
    store = dist::guarded(fmt::format("{}: the FileStore {}", kContext, url.location),
                          [&] { return c10::make_intrusive<c10d::FileStore>(url.location, world_size); });
  } else if (url.scheme == "tcp") {
    const std::size_t colon = url.location.rfind(':');
    if (colon == std::string::npos || colon + 1 == url.location.size()) rendezvous_error("tcp", "port number missing");
    store = tcp_store(url.location.substr(0, colon), url.location.substr(colon + 1), url, rank, world_size,
                      timeout);
  } else {
    const std::string addr = env_or_raise("MASTER_ADDR");  // checked first, as in Python
    const std::string port = env_or_raise("MASTER_PORT");
    store = tcp_store(addr, port, url, rank, world_size, timeout);
  }
  store->setTimeout(timeout);
  auto default_pg = c10::make_intrusive<c10d::PrefixStore>("default_pg", store);
  auto group_store = c10::make_intrusive<c10d::PrefixStore>("0/", default_pg);
  auto backend_store = c10::make_intrusive<c10d::PrefixStore>(nccl ? "cuda/" : "cpu/", group_store);
  const std::string context = fmt::format("{}(rank {} of {})", kContext, rank, world_size);
#ifdef TENSORCLASS_HAS_NCCL
  if (nccl) return dist::nccl_group_for_torch(group_store, backend_store, rank, world_size, timeout, context);
#endif
  return dist::gloo_group_for_torch(group_store, backend_store, rank, world_size, timeout, context);
}

bool is_nccl_available() { return kHasNccl; }

}  // namespace tensordict
