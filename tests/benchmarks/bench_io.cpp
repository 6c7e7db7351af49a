// Persistence throughput against the same bytes moved by hand, in one run:
//
// - memmap_write: TensorDict::memmap of 16 leaves x 4 MiB vs `loop`, a plain
//   write() of each leaf's bytes to its own file, then fsync (our writer's
//   default, MemmapOptions::sync, fsyncs every file so that even a power loss
//   never leaves half a tree).
// - memmap_write_unsynced: the same with MemmapOptions::sync = false vs the
//   loop without fsync.
// - h5_read_all: PersistentTensorDict::from_h5(...).to_tensordict() of the
//   same 16 leaves vs `loop`, the HDF5 C API reading each dataset into a
//   fresh tensor (H5Fopen, H5Dopen, H5Dread).
//
// Trees and files go under the build tree (or $TENSORCLASS_BENCH_DIR).
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <hdf5.h>
#include <tensordict/persistent.h>
#include <tensordict/tensordict.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace fs = std::filesystem;
using tensordict::TensorDict;

namespace {

constexpr int kLeaves = 16;
constexpr int64_t kRows = 4096, kCols = 256;  // 4 MiB of float32 per leaf
constexpr int64_t kTotalBytes = kLeaves * kRows * kCols * 4;

fs::path bench_dir() {
  const char* env = std::getenv("TENSORCLASS_BENCH_DIR");
  return fs::path(env ? env : TENSORCLASS_BENCH_TMP) / "io";
}

TensorDict data() {
  static const TensorDict td = [] {
    TensorDict out({}, {kRows});
    for (int i = 0; i < kLeaves; ++i) out.set("leaf" + std::to_string(i), at::randn({kRows, kCols}));
    return out;
  }();
  return td;
}

// Where each iteration writes; the previous iteration's tree is removed
// outside the timed region.
fs::path fresh_dir(benchmark::State& state) {
  const fs::path dir = bench_dir() / "written";
  state.PauseTiming();
  tensordict::remove_tree(dir);
  fs::create_directories(bench_dir());
  state.ResumeTiming();
  return dir;
}

void write_leaves_by_hand(const TensorDict& td, const fs::path& dir, bool sync) {
  fs::create_directory(dir);
  for (const auto& [key, value] : td.items()) {
    const at::Tensor& t = value.tensor();
    const int fd = ::open((dir / (key.back() + ".memmap")).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) throw std::runtime_error("open failed");
    const char* p = static_cast<const char*>(t.data_ptr());
    std::size_t done = 0, bytes = t.nbytes();
    while (done < bytes) {
      const ssize_t n = ::write(fd, p + done, bytes - done);
      if (n < 0) throw std::runtime_error("write failed");
      done += static_cast<std::size_t>(n);
    }
    if (sync) ::fsync(fd);
    ::close(fd);
  }
}

void BM_memmap_write_loop(benchmark::State& state) {
  const TensorDict td = data();
  for (auto _ : state) write_leaves_by_hand(td, fresh_dir(state), true);
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}

void BM_memmap_write_unsynced_loop(benchmark::State& state) {
  const TensorDict td = data();
  for (auto _ : state) write_leaves_by_hand(td, fresh_dir(state), false);
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}

void memmap_write(benchmark::State& state, bool sync) {
  const TensorDict td = data();
  tensordict::MemmapOptions options;
  options.sync = sync;
  for (auto _ : state) {
    TensorDict written(td.memmap(fresh_dir(state).string(), options));
    benchmark::DoNotOptimize(written);
  }
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}
void BM_memmap_write_memmap(benchmark::State& state) { memmap_write(state, true); }
void BM_memmap_write_unsynced_memmap(benchmark::State& state) { memmap_write(state, false); }

std::string h5_file() {
  const fs::path path = bench_dir() / "data.h5";
  if (!fs::exists(path)) {
    fs::create_directories(path.parent_path());
    data().to_h5(path.string());
  }
  return path.string();
}

void BM_h5_read_all_loop(benchmark::State& state) {
  const std::string path = h5_file();
  for (auto _ : state) {
    std::vector<at::Tensor> leaves;
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    for (int i = 0; i < kLeaves; ++i) {
      const hid_t dset = H5Dopen2(file, ("leaf" + std::to_string(i)).c_str(), H5P_DEFAULT);
      const hid_t space = H5Dget_space(dset);
      hsize_t dims[2];
      H5Sget_simple_extent_dims(space, dims, nullptr);
      at::Tensor t = at::empty({static_cast<int64_t>(dims[0]), static_cast<int64_t>(dims[1])});
      H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data_ptr());
      H5Sclose(space);
      H5Dclose(dset);
      leaves.push_back(t);
    }
    H5Fclose(file);
    benchmark::DoNotOptimize(leaves);
  }
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}

void BM_h5_read_all_h5(benchmark::State& state) {
  const std::string path = h5_file();
  for (auto _ : state) {
    TensorDict td = tensordict::PersistentTensorDict::from_h5(path).to_tensordict();
    benchmark::DoNotOptimize(td);
  }
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}

}  // namespace

// Names follow bench_common.h's BM_<op>/<variant> so report.py pairs them.
BENCHMARK(BM_memmap_write_loop)->Name("BM_memmap_write/loop")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_memmap_write_memmap)->Name("BM_memmap_write/memmap")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_memmap_write_unsynced_loop)->Name("BM_memmap_write_unsynced/loop")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_memmap_write_unsynced_memmap)->Name("BM_memmap_write_unsynced/memmap")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_h5_read_all_loop)->Name("BM_h5_read_all/loop")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_h5_read_all_h5)->Name("BM_h5_read_all/h5")->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
