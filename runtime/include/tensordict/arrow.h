// Arrow tables and Parquet files (tensorclass::arrow, an optional library
// built where Apache Arrow C++ is found), with tensordict 0.15's names and
// rules (tensordict/_arrow.py, tensordict/_tabular.py):
//
//   auto table = tensordict::to_arrow(td);                    // one column per entry
//   TensorDict back = tensordict::from_arrow(*table, {.nulls = ArrowNulls::Mask});
//   tensordict::write_parquet_table(*table, "rollout.parquet");           // pq.write_table
//   TensorDict again = tensordict::from_arrow(*tensordict::read_parquet_table("rollout.parquet"));
//
//   tensordict::to_parquet(td, "flat.parquet", {.separator = "."});      // td.to_parquet
//   TensorDict rows = tensordict::from_parquet("flat.parquet", {.separator = "."});
//
// Two families, as in tensordict. from_arrow/to_arrow convert every Arrow
// type they can: list columns are nested (jagged) tensors, struct columns
// nested tensordicts, fixed-size lists and arrow.fixed_shape_tensor columns
// tensors with feature dims, other columns (strings, ...) non-tensor stacks,
// with a rule for nulls. from_parquet/to_parquet are tensordict's tabular
// conversions (those of from_pandas and to_pandas): one column per leaf, 1-D
// tensors only, nested keys through a separator. A Parquet file written by
// pyarrow.parquet.write_table(to_arrow(td)) in Python is read here by
// from_arrow(*read_parquet_table(path)), and the other way round.
#pragma once

#include <arrow/type_fwd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensordict/base.h"

namespace tensordict {

// What from_arrow does with null values (tensordict's nulls=).
enum class ArrowNulls {
  // A ValueError naming the column, for a null row and for a null inside the
  // rows of a list, a struct, a map, a list view or the dictionary values a
  // dictionary-encoded column selects (tensordict 0.15 returns the last three
  // as None with a FutureWarning, and announces this error for 0.18).
  Raise,
  // NaN in floating-point tensors, 0 (false) in the others, an empty list in
  // jagged tensors, null in non-tensor stacks; a null struct makes each of
  // its fields null. Filling copies the column.
  Fill,
  // As Fill, and a boolean entry at (*mask_key, *key) for each entry `key`
  // that has null rows: true where the row is not null.
  Mask,
};

// tensordict's from_arrow keywords.
struct FromArrowOptions {
  // nullopt views the buffers Arrow marks as mutable and copies the
  // immutable ones (a memory-mapped file's); true copies every column; false
  // views every column it can (an in-place write into a view of an immutable
  // buffer then crashes the process, as libtorch has no read-only tensors).
  std::optional<bool> copy = std::nullopt;
  ArrowNulls nulls = ArrowNulls::Raise;
  // The key of the masks of ArrowNulls::Mask ("_mask" when nullopt); with
  // another rule, a ValueError.
  std::optional<NestedKey> mask_key = std::nullopt;
  // The result's device; nullopt keeps the tensors on the CPU, no device.
  std::optional<at::Device> device = std::nullopt;
};

// tensordict's from_arrow: a TensorDict of batch size [num_rows], one entry
// per column, viewing the Arrow data where it can:
// - integer, floating-point and boolean columns: tensors (booleans are
//   copied: Arrow packs them as bits). uint16/32/64 need a libtorch with
//   those dtypes (2.3 and later): elsewhere a TypeError names the column;
// - list and large_list columns of those: nested (jagged) tensors, one
//   component per row (copied: libtorch's C++ API builds nested tensors by
//   copying);
// - fixed_size_list and arrow.fixed_shape_tensor columns: tensors with
//   trailing dims (the extension's permutation applied);
// - struct columns: nested tensordicts;
// - other columns whose values JSON holds (strings, lists of them, structs
//   of them, maps, dictionary-encoded values, nulls): a non-tensor stack of
//   the values pyarrow's to_pylist gives (a map row: a list of [key, value]).
//   Binary, temporal, decimal, union and run-end encoded columns are a
//   TypeError naming the column (tensordict stores Python objects).
// A column of several chunks is concatenated first (a copy). Tensors that
// view Arrow data keep its buffers alive.
TensorDict from_arrow(const arrow::Table& table, const FromArrowOptions& options = {});
TensorDict from_arrow(const arrow::RecordBatch& batch, const FromArrowOptions& options = {});

// tensordict's to_arrow: a table of td.batch_size()[0] rows (ValueError for
// another number of batch dims), one column per entry:
// - 1-D tensors: primitive columns that view the tensor's data when it is
//   contiguous on the CPU (the table keeps it alive); booleans are copied;
// - tensors with more dims: arrow.fixed_shape_tensor columns;
// - nested tensors whose components differ only in their first dim:
//   large_list columns (a ValueError for a ragged dim elsewhere);
// - nested tensordicts: struct columns;
// - non-tensor entries: columns of the type pyarrow.array infers from their
//   values (a TypeError naming the key for values no Arrow type holds).
// bfloat16 and complex tensors have no Arrow type: a TypeError names the key.
std::shared_ptr<arrow::Table> to_arrow(const TensorDict& td);

// Reads a Parquet file into an Arrow table (pyarrow.parquet.read_table),
// the columns named in `columns` only, in that order (a KeyError names a
// missing one). A file that is not Parquet is a RuntimeError naming it.
std::shared_ptr<arrow::Table> read_parquet_table(const std::string& path,
                                                 const std::optional<std::vector<std::string>>& columns = std::nullopt);
// Writes an Arrow table to a Parquet file, atomically (readers see the old
// file or the new one), as pyarrow.parquet.write_table does by default:
// snappy compression, and the Arrow schema stored in the file so that
// extension types (arrow.fixed_shape_tensor), large lists and unsigned
// types read back as they were written.
void write_parquet_table(const arrow::Table& table, const std::string& path);

// tensordict's from_parquet keywords.
struct FromParquetOptions {
  // The columns to read; all when nullopt.
  std::optional<std::vector<std::string>> columns = std::nullopt;
  // Splits the column names on it to build nested entries ("obs.x" ->
  // ("obs", "x")).
  std::optional<std::string> separator = std::nullopt;
  // Casts the numeric and boolean columns to it.
  std::optional<at::ScalarType> dtype = std::nullopt;
  // The batch size ([num_rows] when nullopt).
  std::optional<std::vector<int64_t>> batch_size = std::nullopt;
  // The longest leading shape every entry shares, of at most `batch_dims`
  // dims (batch_dims alone turns it on, tensordict 0.17's announced rule);
  // with batch_size, a TypeError.
  bool auto_batch_size = false;
  std::optional<int64_t> batch_dims = std::nullopt;
  std::optional<at::Device> device = std::nullopt;
};

// tensordict's from_parquet: one entry per column, as tensordict converts a
// column read by pyarrow:
// - integer and floating-point columns: tensors of their dtype; with nulls,
//   NaN in their place, in float64 for integers;
// - boolean columns: bool tensors; with nulls, a non-tensor stack of
//   true/false/null (tensordict keeps NumPy's object array as one value);
// - timestamp columns: int64 nanoseconds (a null: INT64_MIN, NumPy's NaT);
// - arrow.fixed_shape_tensor columns of numbers without nulls: tensors with
//   the extension's shape;
// - every other column through its values, as a Python list of them becomes
//   an entry: nested lists of numbers of one shape make a tensor (int64,
//   float32 as torch.tensor infers, bool), anything else a non-tensor stack
//   (a column with no rows: an empty float32 tensor). Rows that are lists of
//   different lengths are a stack of JSON lists (tensordict: of tensors).
TensorDict from_parquet(const std::string& path, const FromParquetOptions& options = {});

// tensordict's to_parquet keywords.
struct ToParquetOptions {
  // Joins the keys of nested entries with it to build the column names;
  // required when the tensordict has nested tensordicts.
  std::optional<std::string> separator = std::nullopt;
};

// tensordict's to_parquet (its columns as to_pandas builds them): one column
// per leaf, each a 1-D tensor (a ValueError names another) or non-tensor
// data with one value per row; written as write_parquet_table does.
void to_parquet(const TensorDict& td, const std::string& path, const ToParquetOptions& options = {});

}  // namespace tensordict
