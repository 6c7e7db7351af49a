// .tdz archives (tensordict/_archive.py 0.15.3): memmap(), save() and
// memmap_like() with a ".tdz" prefix, load_memmap() of one, pack_memmap, and
// hostile archives, each refused with the archive and the reason. Archives
// crossing with Python tensordict both ways: tests/interop/run_archive.py.
#include <zlib.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "../temp_dir.h"
#include "helpers.h"

using namespace tensordict;
using Catch::Matchers::Contains;
using td_test::iota;
using td_test::same;
using td_test::TempDir;

namespace {

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// tensordict's TestMemmapArchive._nested_td.
TensorDict nested_td() {
  TensorDict td({{"a", at::randn({3, 4})},
                 {NestedKey({"b", "c"}), at::ones({3, 2}, at::kBool)},
                 {NestedKey({"b", "d"}), at::arange(3, at::kShort)}},
                {3});
  td.set_non_tensor("e", "hello");
  return td;
}

void check_same(const TensorDict& got, const TensorDict& want) {
  CHECK(got.batch_size().vec() == want.batch_size().vec());
  const KeysOptions leaves{.include_nested = true, .leaves_only = true};
  CHECK(got.keys(leaves) == want.keys(leaves));
  for (const auto& key : want.keys(leaves)) CHECK(same(got.get(key), want.get(key)));
  const auto got_data = got.non_tensor_items({.include_nested = true});
  const auto want_data = want.non_tensor_items({.include_nested = true});
  REQUIRE(got_data.size() == want_data.size());
  for (std::size_t i = 0; i < want_data.size(); ++i) {
    CHECK(got_data[i].first == want_data[i].first);
    CHECK(got.get_non_tensor(want_data[i].first) == want.get_non_tensor(want_data[i].first));
  }
}

// ---- a zip written here, independently of the runtime's writer ----------------
struct Member {
  std::string name = {};
  std::string data = {};             // as stored (deflated bytes for method 8)
  uint16_t method = 0;
  uint64_t size = 0;            // uncompressed; 0: data.size()
  std::string local_name = {};       // the local header's name; "": name
  uint32_t mode = 0100644;      // Unix mode in the directory
  uint16_t flags = 0;
  std::optional<uint32_t> crc = std::nullopt;  // default: zlib's CRC-32 of data
  std::optional<uint64_t> header_offset = std::nullopt;  // default: where it is written
  std::optional<uint64_t> claimed = std::nullopt;        // the directory's compressed size; default: data.size()
};

void put(std::string& out, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string zip_of(const std::vector<Member>& members) {
  std::string out, directory;
  for (const Member& m : members) {
    const uint64_t size = m.size ? m.size : m.data.size();
    const uint32_t crc = m.crc ? *m.crc
                               : static_cast<uint32_t>(::crc32(0, reinterpret_cast<const Bytef*>(m.data.data()),
                                                               static_cast<uInt>(m.data.size())));
    const std::string local_name = m.local_name.empty() ? m.name : m.local_name;
    const uint64_t offset = out.size();
    put(out, 0x04034b50, 4), put(out, 20, 2), put(out, m.flags, 2), put(out, m.method, 2), put(out, 0, 4);
    put(out, crc, 4), put(out, m.data.size(), 4), put(out, size, 4), put(out, local_name.size(), 2), put(out, 0, 2);
    out += local_name + m.data;
    put(directory, 0x02014b50, 4), put(directory, (3 << 8) | 20, 2), put(directory, 20, 2), put(directory, m.flags, 2);
    put(directory, m.method, 2), put(directory, 0, 4), put(directory, crc, 4), put(directory, m.claimed.value_or(m.data.size()), 4);
    put(directory, size, 4), put(directory, m.name.size(), 2), put(directory, 0, 2), put(directory, 0, 2);
    put(directory, 0, 2), put(directory, 0, 2), put(directory, uint64_t{m.mode} << 16, 4);
    put(directory, m.header_offset.value_or(offset), 4);
    directory += m.name;
  }
  const uint64_t at = out.size();
  out += directory;
  put(out, 0x06054b50, 4), put(out, 0, 4), put(out, members.size(), 2), put(out, members.size(), 2);
  put(out, directory.size(), 4), put(out, at, 4), put(out, 0, 2);
  return out;
}

std::string deflated(const std::string& data) {
  z_stream s{};
  deflateInit2(&s, Z_BEST_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&s, data.size()), '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  deflate(&s, Z_FINISH);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

const std::string kMeta = R"({"shape":[2],"device":"cpu","_type":"<class 'tensordict._td.TensorDict'>",)"
                          R"("x":{"device":"cpu","shape":[2],"dtype":"torch.float32","is_nested":false}})";
const std::string kFloats = std::string("\0\0\x80\x3f\0\0\0\x40", 8);  // 1.0f, 2.0f

std::string load_error(const std::filesystem::path& path) {
  try {
    (void)TensorDict::load_memmap(path.string());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(loaded)";
}

}  // namespace

TEST_CASE("archive: save to a .tdz path and load it back: nested, non-tensor, every leaf one mapping",
          "[archive][test_methods.py::TestMemmapArchive::test_archive_zero_copy]") {
  TempDir dir;
  const auto archive = dir / "data.tdz";
  const TensorDict td = nested_td();
  const TensorDict saved = td.save(archive.string());
  CHECK(std::filesystem::is_regular_file(archive));
  CHECK(is_memmap_archive(archive.string()));
  CHECK(!is_memmap_archive((dir / "nothing.tdz").string()));
  check_same(saved, td);
  const TensorDict loaded = TensorDict::load_memmap(archive.string());
  check_same(loaded, td);
  // As tensordict: an archive's tensordict is not memory-mapped, nor locked.
  CHECK(!loaded.is_memmap());
  CHECK(!loaded.is_locked());
  // Every leaf views one mapping of the file.
  const auto* storage = loaded.get("a").storage().unsafeGetStorageImpl();
  CHECK(loaded.get({"b", "c"}).storage().unsafeGetStorageImpl() == storage);
  CHECK(loaded.get({"b", "d"}).storage().unsafeGetStorageImpl() == storage);
  CHECK(loaded.get("a").storage().nbytes() == std::filesystem::file_size(archive));
  // In-place writes are copy-on-write: the file is not modified.
  const std::string before = file_bytes(archive);
  loaded.get("a").add_(1);
  CHECK(file_bytes(archive) == before);
  CHECK(same(TensorDict::load(archive.string()).get("a"), td.get("a")));
  // LoadOptions::copy: the leaves are read into memory, nothing stays mapped.
  const TensorDict copied = TensorDict::load_memmap(archive.string(), std::nullopt, {.copy = true});
  check_same(copied, td);
  CHECK(copied.get("a").storage().nbytes() == static_cast<std::size_t>(td.get("a").numel() * 4));
  CHECK(copied.get("a").storage().unsafeGetStorageImpl() != copied.get({"b", "d"}).storage().unsafeGetStorageImpl());
}

TEST_CASE("archive: tensor payloads start at multiples of 64 bytes",
          "[archive][test_methods.py::TestMemmapArchive::test_archive_tensor_payloads_are_aligned]") {
  TempDir dir;
  const auto archive = dir / "data.tdz";
  nested_td().save(archive.string());
  const std::string bytes = file_bytes(archive);
  // Each local header: the payload follows its name and extra field.
  int payloads = 0;
  for (std::size_t at = bytes.find("PK\x03\x04"); at != std::string::npos; at = bytes.find("PK\x03\x04", at + 4)) {
    const auto u16 = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]) | static_cast<unsigned char>(bytes[i + 1]) << 8; };
    const std::string name = bytes.substr(at + 30, u16(at + 26));
    if (!name.ends_with(".memmap")) continue;
    ++payloads;
    CHECK((at + 30 + u16(at + 26) + u16(at + 28)) % 64 == 0);
  }
  CHECK(payloads == 3);
}

TEST_CASE("archive: MemmapOptions::archive writes any file name, false writes a directory",
          "[archive][test_methods.py::TestMemmapArchive::test_archive_explicit_flag]") {
  TempDir dir;
  const TensorDict td = nested_td();
  td.save((dir / "weights.bin").string(), {.archive = true});
  CHECK(is_memmap_archive((dir / "weights.bin").string()));
  check_same(TensorDict::load_memmap((dir / "weights.bin").string()), td);
  const TensorDict tree = td.memmap((dir / "tree.tdz").string(), {.archive = false});
  CHECK(std::filesystem::is_directory(dir / "tree.tdz"));
  CHECK(tree.is_memmap());
}

TEST_CASE("archive: deflate makes a smaller archive that loads the same",
          "[archive][test_methods.py::TestMemmapArchive::test_archive_compression]") {
  TempDir dir;
  TensorDict td({{"a", at::zeros({1000}, at::kByte)}, {NestedKey({"b", "c"}), at::zeros({100})}}, {});
  td.save((dir / "stored.tdz").string());
  const TensorDict loaded = td.save((dir / "compressed.tdz").string(), {.compression = ArchiveCompression::Deflate});
  CHECK(std::filesystem::file_size(dir / "compressed.tdz") < std::filesystem::file_size(dir / "stored.tdz"));
  check_same(loaded, td);
  check_same(TensorDict::load_memmap((dir / "compressed.tdz").string()), td);
}

TEST_CASE("archive: compression needs an archive, and memmap_ writes a directory",
          "[archive][errors][test_methods.py::TestMemmapArchive::test_archive_compression_requires_archive]") {
  TempDir dir;
  const TensorDict td = nested_td();
  CHECK_THROWS_AS(td.save((dir / "plain").string(), {.compression = ArchiveCompression::Deflate}), ValueError);
  CHECK_THROWS_WITH(td.save((dir / "plain").string(), {.compression = ArchiveCompression::Deflate}),
                    Contains("compression is only supported when writing a memmap archive"));
  TensorDict in_place = nested_td();
  CHECK_THROWS_WITH(in_place.memmap_((dir / "x").string(), {.archive = true}),
                    Contains("memmap_ writes a directory"));
  // As tensordict's memmap_, a ".tdz" prefix is a directory name.
  in_place.memmap_((dir / "dir.tdz").string());
  CHECK(std::filesystem::is_directory(dir / "dir.tdz"));
}

TEST_CASE("archive: a lazy stack is saved in its layout and loads as one",
          "[archive][test_methods.py::TestMemmapArchive::test_subpath]") {
  TempDir dir;
  std::vector<TensorDict> members;
  for (int i = 0; i < 3; ++i) {
    members.push_back(TensorDict({{"x", at::full({2}, float(i))}, {NestedKey({"sub", "y"}), at::ones({2}) * i}}, {2}));
  }
  const LazyStackedTensorDict stack(members, 0);
  TensorDict(stack).save((dir / "saved.tdz").string());
  const TensorDict loaded = TensorDict::load_memmap((dir / "saved.tdz").string());
  REQUIRE(loaded.kind() == Kind::LazyStack);
  CHECK(same(loaded.get("x"), TensorDict(stack).get("x")));
  CHECK(same(loaded.get({"sub", "y"}), TensorDict(stack).get({"sub", "y"})));
}

TEST_CASE("archive: existsok=false refuses an existing file, and a directory is never replaced",
          "[archive][errors][test_methods.py::TestMemmapArchive::test_archive_existsok]") {
  TempDir dir;
  const auto archive = dir / "data.tdz";
  const TensorDict td = nested_td();
  td.save(archive.string());
  CHECK_THROWS_AS(td.memmap(archive.string(), {.existsok = false}), RuntimeError);
  CHECK_THROWS_WITH(td.memmap(archive.string(), {.existsok = false}), Contains("already exists"));
  td.save(archive.string());  // overwriting is fine by default
  std::filesystem::create_directory(dir / "d.tdz");
  CHECK_THROWS_AS(td.save((dir / "d.tdz").string()), ValueError);
  CHECK_THROWS_WITH(td.save((dir / "d.tdz").string()),
                    "Cannot write an archive at " + (dir / "d.tdz").string() + ": it is an existing directory.");
}

TEST_CASE("archive: memmap_like preallocates a zero-filled archive that writes reach",
          "[archive][test_methods.py::TestMemmapArchive::test_archive_memmap_like]") {
  TempDir dir;
  const auto archive = dir / "buf.tdz";
  TensorDict td({{"a", at::randn({3, 4})}, {NestedKey({"b", "c"}), at::randn({3, 2})}}, {3});
  TensorDict buf = td.memmap_like(archive.string());
  CHECK(is_memmap_archive(archive.string()));
  CHECK(at::equal(buf.get("a"), at::zeros({3, 4})));
  buf.get("a").copy_(td.get("a"));
  buf.get({"b", "c"}).copy_(td.get({"b", "c"}));
  check_same(TensorDict::load_memmap(archive.string()), td);
}

TEST_CASE("archive: a zip of a memmap directory from elsewhere loads, unaligned leaves copied",
          "[archive][test_methods.py::TestMemmapArchive::test_archive_foreign_zip]") {
  TempDir dir;
  const auto path = dir / "foreign.zip";
  write_file(path, zip_of({{.name = "meta.json", .data = kMeta}, {.name = "x.memmap", .data = kFloats}}));
  const TensorDict td = TensorDict::load_memmap(path.string());
  CHECK(same(td.get("x"), at::tensor({1.f, 2.f})));
  // Deflated metadata and leaves are inflated.
  write_file(path, zip_of({{.name = "meta.json", .data = deflated(kMeta), .method = 8, .size = kMeta.size(),
                             .crc = static_cast<uint32_t>(::crc32(0, reinterpret_cast<const Bytef*>(kMeta.data()),
                                                                  static_cast<uInt>(kMeta.size())))},
                            {.name = "x.memmap", .data = deflated(kFloats), .method = 8, .size = 8,
                             .crc = static_cast<uint32_t>(::crc32(0, reinterpret_cast<const Bytef*>(kFloats.data()), 8))}}));
  CHECK(same(TensorDict::load_memmap(path.string()).get("x"), at::tensor({1.f, 2.f})));
}

TEST_CASE("archive: pack_memmap packs a directory memmap() wrote",
          "[archive][test_methods.py::TestMemmapArchive::test_pack_unpack_roundtrip]") {
  TempDir dir;
  const TensorDict td = nested_td();
  td.memmap((dir / "plain").string());
  pack_memmap((dir / "plain").string(), (dir / "packed.tdz").string());
  CHECK(is_memmap_archive((dir / "packed.tdz").string()));
  check_same(TensorDict::load_memmap((dir / "packed.tdz").string()), td);
  unpack_memmap((dir / "packed.tdz").string(), (dir / "unpacked").string());
  check_same(TensorDict::load_memmap((dir / "unpacked").string()), td);
  CHECK(file_bytes(dir / "unpacked" / "a.memmap") == file_bytes(dir / "plain" / "a.memmap"));
  CHECK_THROWS_WITH(pack_memmap((dir / "plain").string(), (dir / "plain" / "inside.tdz").string()),
                    Contains("must be outside the source directory"));
  CHECK_THROWS_WITH(pack_memmap((dir / "nothing").string(), (dir / "x.tdz").string()),
                    Contains("does not look like a memory-mapped tensordict directory (no meta.json found)"));
}

TEST_CASE("archive: a file that is no archive is refused as tensordict refuses it",
          "[archive][errors][hostile][test_methods.py::TestMemmapArchive::test_archive_bad_file]") {
  TempDir dir;
  write_file(dir / "bad.tdz", "not a zip file");
  CHECK(load_error(dir / "bad.tdz") == "the archive " + (dir / "bad.tdz").string() +
                                          " cannot be read as a zip archive: it is shorter than a zip's end record");
  write_file(dir / "bad.tdz", std::string(100, 'x'));
  CHECK(load_error(dir / "bad.tdz") ==
        "the archive " + (dir / "bad.tdz").string() + " cannot be read as a zip archive: it has no end record");
  write_file(dir / "nometa.tdz", zip_of({{.name = "x.memmap", .data = kFloats}}));
  CHECK_THROWS_AS(TensorDict::load_memmap((dir / "nometa.tdz").string()), ValueError);
  CHECK(load_error(dir / "nometa.tdz") ==
        (dir / "nometa.tdz").string() +
            " is a file but not a memory-mapped tensordict archive (expected a zip file with a top-level meta.json "
            "entry)");
  CHECK(!is_memmap_archive((dir / "bad.tdz").string()));
}

TEST_CASE("archive: hostile archives are refused before anything is read, naming the entry", "[archive][errors][hostile]") {
  TempDir dir;
  const auto path = dir / "hostile.tdz";
  const std::string what = "the archive " + path.string();
  const auto refused = [&](std::vector<Member> members) {
    write_file(path, zip_of(members));
    return load_error(path);
  };
  const Member meta{.name = "meta.json", .data = kMeta};
  CHECK(refused({meta, {.name = "../x.memmap", .data = kFloats}}) ==
        what + ": its entry '../x.memmap' climbs out of the directory it is extracted to (a '..' part)");
  CHECK(refused({meta, {.name = "/abs.memmap", .data = kFloats}}) == what + ": its entry '/abs.memmap' is an absolute path");
  CHECK(refused({meta, {.name = "x.memmap", .data = kFloats, .mode = 0120777}}) ==
        what + ": its entry 'x.memmap' is a symbolic link");
  CHECK(refused({meta, {.name = "a//x.memmap", .data = kFloats}}) ==
        what + ": its entry 'a//x.memmap' has an empty or '.' part in its name");
  CHECK(refused({meta, {.name = "x.memmap", .data = kFloats, .flags = 1}}) == what + ": its entry 'x.memmap' is encrypted");
  CHECK(refused({meta, {.name = "x.memmap", .data = kFloats}, {.name = "x.memmap", .data = kFloats}}) ==
        what + ": its entry 'x.memmap' appears twice");
  // Two entries sharing bytes: a write through one leaf would change the other.
  CHECK(refused({meta, {.name = "x.memmap", .data = kFloats, .size = 40, .claimed = 40},
                 {.name = "y.memmap", .data = kFloats}}) == what + ": its entries 'x.memmap' and 'y.memmap' overlap");
  CHECK(refused({meta, {.name = "x.memmap", .data = kFloats, .local_name = "y.memmap"}}) ==
        what + " cannot be read as a zip archive: entry 'x.memmap' has another name in its local header");
  // A zip bomb: more than deflate can encode in the bytes given.
  CHECK(refused({meta, {.name = "x.memmap", .data = deflated(kFloats), .method = 8, .size = uint64_t{1} << 31}}) ==
        what + ": its entry 'x.memmap' claims 2147483648 bytes inflated from " + std::to_string(deflated(kFloats).size()) +
            " deflated bytes, more than deflate can encode in them");
  CHECK(refused({meta, {.name = "x.memmap", .data = kFloats, .size = 4}}) ==
        what + ": its entry 'x.memmap' is stored with 8 bytes but records 4 uncompressed");
  CHECK(refused({meta, {.name = "x", .data = kFloats}, {.name = "x/y", .data = kFloats}}) ==
        what + ": 'x' is both an entry and a directory");
  // A truncated archive: its end record is gone.
  write_file(path, zip_of({meta, {.name = "x.memmap", .data = kFloats}}).substr(0, 40));
  CHECK(load_error(path) == what + " cannot be read as a zip archive: it has no end record");
}

TEST_CASE("archive: entries that lie about their content are refused when read", "[archive][errors][hostile]") {
  TempDir dir;
  const auto path = dir / "lying.tdz";
  const std::string what = "the archive " + path.string();
  const Member meta{.name = "meta.json", .data = kMeta};
  // meta.json's shape needs more bytes than the entry holds.
  write_file(path, zip_of({meta, {.name = "x.memmap", .data = kFloats.substr(0, 4)}}));
  CHECK(load_error(path) == "the data file " + (path / "x.memmap").string() +
                                " of key 'x' is truncated: it has 4 bytes, shape [2] of Float needs 8 bytes");
  // meta.json does not match its CRC-32.
  write_file(path, zip_of({{.name = "meta.json", .data = kMeta, .crc = 7}, {.name = "x.memmap", .data = kFloats}}));
  CHECK(load_error(path) ==
        what + ": the entry 'meta.json' (" + (path / "meta.json").string() + ") does not match its CRC-32");
  // A deflated leaf that inflates to fewer bytes than recorded, or is corrupt.
  const std::string short_stream = deflated(kFloats.substr(0, 4));
  write_file(path, zip_of({meta, {.name = "x.memmap", .data = short_stream, .method = 8, .size = 8}}));
  CHECK_THAT(load_error(path), Contains("its deflated data inflates to 4 bytes, not the 8 recorded"));
  write_file(path, zip_of({meta, {.name = "x.memmap", .data = std::string("\xff\xff\xff\xff", 4), .method = 8, .size = 8}}));
  CHECK_THAT(load_error(path), Contains("its deflated data is corrupt"));
  // A method this reader does not inflate.
  write_file(path, zip_of({meta, {.name = "x.memmap", .data = kFloats, .method = 12, .size = 8}}));
  CHECK(load_error(path) == what + ": the entry 'x.memmap' is compressed with method bzip2 (12); this reader reads stored "
                                   "(0) and deflated (8) entries (save the archive with compression stored or deflate)");
  // A missing leaf.
  write_file(path, zip_of({meta}));
  CHECK_THAT(load_error(path), Contains("x.memmap"));
}

TEST_CASE("archive: unpack_memmap writes nothing outside its directory", "[archive][errors][hostile]") {
  TempDir dir;
  const auto path = dir / "slip.tdz";
  write_file(path, zip_of({{.name = "meta.json", .data = kMeta}, {.name = "../escaped.memmap", .data = kFloats}}));
  CHECK_THROWS_WITH(unpack_memmap(path.string(), (dir / "out").string()),
                    Contains("its entry '../escaped.memmap' climbs out of the directory it is extracted to"));
  CHECK(!std::filesystem::exists(dir / "escaped.memmap"));
  CHECK(!std::filesystem::exists(dir / "out"));
  // A stored entry whose bytes do not match its CRC-32 is not extracted.
  write_file(path, zip_of({{.name = "meta.json", .data = kMeta}, {.name = "x.memmap", .data = kFloats, .crc = 1}}));
  CHECK_THROWS_WITH(unpack_memmap(path.string(), (dir / "out").string()),
                    Contains("the entry 'x.memmap' does not match its CRC-32"));
  CHECK(!std::filesystem::exists(dir / "out"));
  CHECK_THROWS_WITH(unpack_memmap((dir / "none.tdz").string(), (dir / "out").string()),
                    Contains("is not a memory-mapped tensordict archive"));
}
