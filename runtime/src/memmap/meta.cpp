// meta.json (and any JSON metadata read from a file): parsing with errors that
// name the file, writing, leaf entries.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unordered_map>

#include "core/format.h"
#include "memmap/memmap_detail.h"
#include "tensordict/dtype.h"
#include "tensordict/non_tensor.h"

namespace tensordict::detail::memmap {

namespace {

// Builds the JSON value of a meta.json, bounded: nesting deeper than
// kMaxJsonDepth is refused (a recursive walk of the value would overflow the
// stack), and an object's keys are found through a hash index, so an object of
// n keys costs O(n) (nlohmann's ordered_json searches its keys linearly: 100k
// keys took seconds). As JSON parsers do, a repeated key keeps its first
// position and its last value.
class MetaBuilder : public nlohmann::json_sax<Json> {
 public:
  explicit MetaBuilder(const fs::path& file) : file_(file) {}
  Json result() && { return std::move(root_); }

  bool null() override { return add(Json(nullptr)); }
  bool boolean(bool v) override { return add(Json(v)); }
  bool number_integer(number_integer_t v) override { return add(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return add(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return add(Json(v)); }
  bool string(string_t& v) override { return add(Json(std::move(v))); }
  bool binary(binary_t& v) override { return add(Json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(Json::object()); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw RuntimeError(fmt::format("malformed JSON in {}: {}", file_.string(), e.what()));
  }

 private:
  struct Open {
    Json* value;
    std::unordered_map<std::string, std::size_t> slots;  // objects: key -> position
  };

  // Adds `v` to the innermost open container (or makes it the root); returns
  // where it now lives. Only the innermost container grows, so the pointers
  // to the open ones stay valid.
  Json* place(Json v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Open& top = open_.back();
    if (top.value->is_array()) {
      auto& array = top.value->get_ref<Json::array_t&>();
      array.push_back(std::move(v));
      return &array.back();
    }
    auto& object = top.value->get_ref<Json::object_t&>();
    auto [slot, added] = top.slots.try_emplace(key_, object.size());
    if (!added) {
      // (ordered_map's operator[] takes a key: index the vector through begin())
      Json& existing = (object.begin() + static_cast<std::ptrdiff_t>(slot->second))->second;
      existing = std::move(v);
      return &existing;
    }
    object.emplace_back(key_, std::move(v));
    return &object.back().second;
  }
  bool add(Json v) {
    place(std::move(v));
    return true;
  }
  bool open(Json container) {
    if (open_.size() >= kMaxJsonDepth) {
      throw RuntimeError(
          fmt::format("malformed {}: JSON nested more than {} levels deep", file_.string(), kMaxJsonDepth));
    }
    Json* at = place(std::move(container));
    open_.push_back(Open{at, {}});
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  const fs::path& file_;
  Json root_;
  std::vector<Open> open_;
  std::string key_;
};


}  // namespace

std::string read_text(const fs::path& file, const fs::path& dir) {
  if (auto text = archive_text(file, kMaxMetaBytes)) return *std::move(text);
  struct stat st {};
  const int fd = open_tree_file(file, O_RDONLY, &st, "the metadata file");
  if (fd < 0) {
    throw RuntimeError(fmt::format("cannot load a memmap tensordict from {}: {} is missing or unreadable ({})",
                                         dir.string(), file.string(), std::strerror(errno)));
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size > kMaxMetaBytes) {
    ::close(fd);
    throw RuntimeError(fmt::format("{} has {} bytes, more than the {} a meta.json may have", file.string(), size,
                                         kMaxMetaBytes));
  }
  // At most the size fstat gave: a file growing meanwhile is read as it was.
  std::string text(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, text.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  text.resize(done);
  return text;
}

Json parse_json(std::string_view text, const fs::path& file) {
  MetaBuilder builder(file);
  Json::sax_parse(text, &builder);
  return std::move(builder).result();
}

Json read_meta(const fs::path& dir) {
  const fs::path file = dir / "meta.json";
  const std::string text = read_text(file, dir);
  Json meta = parse_json(text, file);
  if (!meta.is_object()) {
    throw RuntimeError(
        fmt::format("malformed {}: expected a JSON object, got {}", file.string(), meta.type_name()));
  }
  return meta;
}

std::string dump_meta(const Json& meta, const fs::path& file, std::string_view what) {
  std::string text;
  try {
    text = meta.dump();
  } catch (const nlohmann::json::type_error&) {
    // (nlohmann's own message names neither the key nor the file.)
    throw ValueError(fmt::format("cannot write {}: {} holds a string that is not valid UTF-8, which JSON cannot "
                                 "store; store bytes in a uint8 tensor",
                                 file.string(), what));
  }
  // A writer must not write what its own loader refuses (read_text).
  if (text.size() > kMaxMetaBytes) {
    throw ValueError(fmt::format("cannot write {}: {} makes it {} bytes, more than the {} a meta.json may have to "
                                 "load again; store large data in a tensor",
                                 file.string(), what, text.size(), kMaxMetaBytes));
  }
  return text;
}

std::string device_string(std::optional<at::Device> device) { return device ? device->str() : "None"; }

}  // namespace tensordict::detail::memmap
