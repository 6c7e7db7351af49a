// zlib for the zip format: CRC-32, and raw deflate streams (method 8) read and
// written in bounded pieces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

namespace tensordict::detail::zip {

// The CRC-32 of `n` bytes at `data`, continuing from `crc` (0 to start).
uint32_t crc32(const void* data, std::size_t n, uint32_t crc = 0);

// Inflates the raw deflate stream `in` into exactly `out_size` bytes at `out`;
// RuntimeError "<what>: <why>" unless the stream is valid, ends exactly there
// (not one byte more or less, nothing after it) and its CRC-32 is `crc`.
// Writes at most `out_size` bytes whatever the stream claims: a zip bomb
// stops at the size the directory recorded.
void inflate_exact(std::string_view in, void* out, std::size_t out_size, uint32_t crc, std::string_view what);

// A raw deflate stream written in pieces: each add() hands the compressed
// bytes produced so far to `sink`; finish() flushes the rest.
class Deflater {
 public:
  using Sink = std::function<void(const void* data, std::size_t n)>;
  explicit Deflater(Sink sink);
  ~Deflater();
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  void add(const void* data, std::size_t n);
  void finish();

 private:
  struct State;
  void run(int flush);
  std::unique_ptr<State> state_;
  Sink sink_;
};

}  // namespace tensordict::detail::zip
