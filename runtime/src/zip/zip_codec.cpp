#include "zip/zip_codec.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "tensordict/errors.h"

namespace tensordict::detail::zip {
namespace {

// zlib counts in uInt: larger buffers go through in pieces of this size.
constexpr std::size_t kPiece = std::size_t{1} << 30;
// -15: a raw deflate stream (no zlib header), as zip stores it.
constexpr int kRawWindowBits = -15;

}  // namespace

uint32_t crc32(const void* data, std::size_t n, uint32_t crc) {
  auto* p = static_cast<const Bytef*>(data);
  uLong value = crc;
  while (n > 0) {
    const std::size_t piece = std::min(n, kPiece);
    value = ::crc32(value, p, static_cast<uInt>(piece));
    p += piece;
    n -= piece;
  }
  return static_cast<uint32_t>(value);
}

void inflate_exact(std::string_view in, void* out, std::size_t out_size, uint32_t crc, std::string_view what) {
  z_stream stream{};
  if (::inflateInit2(&stream, kRawWindowBits) != Z_OK) {
    throw RuntimeError(fmt::format("{}: zlib cannot start inflating", what));
  }
  struct End {
    z_stream* s;
    ~End() { ::inflateEnd(s); }
  } end{&stream};
  auto* next_in = reinterpret_cast<const Bytef*>(in.data());
  std::size_t in_left = in.size();
  auto* next_out = static_cast<Bytef*>(out);
  std::size_t out_left = out_size;
  // One spare byte past the expected end: a stream that fills it is longer than recorded.
  Bytef spare = 0;
  bool spare_used = false;
  int status = Z_OK;
  while (status == Z_OK) {
    const std::size_t in_piece = std::min(in_left, kPiece);
    stream.next_in = const_cast<Bytef*>(next_in);
    stream.avail_in = static_cast<uInt>(in_piece);
    if (out_left > 0) {
      stream.next_out = next_out;
      stream.avail_out = static_cast<uInt>(std::min(out_left, kPiece));
    } else {
      stream.next_out = &spare;
      stream.avail_out = 1;
    }
    const uInt out_given = stream.avail_out;
    status = ::inflate(&stream, Z_NO_FLUSH);
    const std::size_t consumed = in_piece - stream.avail_in;
    const std::size_t produced = out_given - stream.avail_out;
    next_in += consumed;
    in_left -= consumed;
    if (out_left > 0) {
      next_out += produced;
      out_left -= produced;
    } else if (produced > 0) {
      spare_used = true;
      break;
    }
    if (status == Z_BUF_ERROR && consumed == 0 && produced == 0) break;  // no progress: the input ended early
  }
  const auto bad = [&](std::string_view why) {
    throw RuntimeError(fmt::format("{}: its deflated data {}", what, why));
  };
  if (spare_used) bad(fmt::format("inflates to more than the {} bytes recorded", out_size));
  if (status == Z_DATA_ERROR || status == Z_NEED_DICT || status == Z_MEM_ERROR || status == Z_STREAM_ERROR) {
    bad(fmt::format("is corrupt ({})", stream.msg ? stream.msg : "zlib error"));
  }
  if (status != Z_STREAM_END) bad(fmt::format("ends before its {} bytes are inflated", out_size));
  if (out_left > 0) bad(fmt::format("inflates to {} bytes, not the {} recorded", out_size - out_left, out_size));
  if (in_left > 0) bad(fmt::format("has {} bytes after the end of its stream", in_left));
  const uint32_t actual = crc32(out, out_size);
  if (actual != crc) {
    throw RuntimeError(fmt::format("{}: its CRC-32 is {:08x}, the directory records {:08x}", what, actual, crc));
  }
}

struct Deflater::State {
  z_stream stream{};
  std::vector<Bytef> buffer = std::vector<Bytef>(std::size_t{1} << 20);
};

Deflater::Deflater(Sink sink) : state_(std::make_unique<State>()), sink_(std::move(sink)) {
  if (::deflateInit2(&state_->stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kRawWindowBits, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw RuntimeError("zlib cannot start deflating");
  }
}

Deflater::~Deflater() { ::deflateEnd(&state_->stream); }

void Deflater::run(int flush) {
  z_stream& stream = state_->stream;
  int status = Z_OK;
  do {
    stream.next_out = state_->buffer.data();
    stream.avail_out = static_cast<uInt>(state_->buffer.size());
    status = ::deflate(&stream, flush);
    if (status == Z_STREAM_ERROR) throw RuntimeError("zlib failed while deflating");
    const std::size_t produced = state_->buffer.size() - stream.avail_out;
    if (produced > 0) sink_(state_->buffer.data(), produced);
  } while (stream.avail_out == 0 || (flush == Z_FINISH && status != Z_STREAM_END));
}

void Deflater::add(const void* data, std::size_t n) {
  auto* p = static_cast<const Bytef*>(data);
  while (n > 0) {
    const std::size_t piece = std::min(n, kPiece);
    state_->stream.next_in = const_cast<Bytef*>(p);
    state_->stream.avail_in = static_cast<uInt>(piece);
    run(Z_NO_FLUSH);
    p += piece;
    n -= piece;
  }
}

void Deflater::finish() {
  state_->stream.next_in = nullptr;
  state_->stream.avail_in = 0;
  run(Z_FINISH);
}

}  // namespace tensordict::detail::zip
