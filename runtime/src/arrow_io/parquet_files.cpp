// Arrow tables in Parquet files: pyarrow.parquet's read_table and
// write_table, with their defaults.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/arrow/writer.h>
#include <parquet/exception.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "arrow_io/arrow_common.h"
#include "memmap/memmap_detail.h"
#include "tensordict/arrow.h"
#include "tensordict/errors.h"

namespace tensordict {

namespace {

using detail::arrow_io::check;
using detail::arrow_io::value_or_throw;

// The Parquet leaf columns of a top-level field, in file order.
void leaf_columns(const parquet::arrow::SchemaField& field, std::vector<int>& out) {
  if (field.is_leaf()) out.push_back(field.column_index);
  for (const auto& child : field.children) leaf_columns(child, out);
}

std::shared_ptr<::arrow::Table> read_columns(parquet::arrow::FileReader& reader, const std::string& path,
                                             const std::vector<std::string>& columns, const std::string& context) {
  std::shared_ptr<::arrow::Schema> schema;
  check(reader.GetSchema(&schema), context);
  std::vector<int> leaves;
  for (const std::string& name : columns) {
    const int index = schema->GetFieldIndex(name);
    if (index < 0) {
      throw KeyError(fmt::format("the Parquet file {} has no column '{}' (its columns: '{}')", path, name,
                                 fmt::join(schema->field_names(), "', '")));
    }
    leaf_columns(reader.manifest().schema_fields[static_cast<std::size_t>(index)], leaves);
  }
  std::sort(leaves.begin(), leaves.end());
  leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
  const auto table = value_or_throw(reader.ReadTable(leaves), context);
  // The columns in the order asked for.
  std::vector<int> order;
  for (const std::string& name : columns) order.push_back(table->schema()->GetFieldIndex(name));
  return value_or_throw(table->SelectColumns(order), context);
}

}  // namespace

std::shared_ptr<::arrow::Table> read_parquet_table(const std::string& path,
                                                   const std::optional<std::vector<std::string>>& columns) {
  const std::string context = fmt::format("cannot read the Parquet file {}", path);
  try {
    const auto file = value_or_throw(::arrow::io::ReadableFile::Open(path), context);
    const auto reader = value_or_throw(parquet::arrow::OpenFile(file, ::arrow::default_memory_pool()), context);
    if (columns) return read_columns(*reader, path, *columns, context);
    return value_or_throw(reader->ReadTable(), context);
  } catch (const parquet::ParquetException& e) {
    throw RuntimeError(fmt::format("{}: {}", context, e.what()));
  }
}

void write_parquet_table(const ::arrow::Table& table, const std::string& path) {
  const std::string context = fmt::format("cannot write the Parquet file {}", path);
  detail::memmap::AtomicFile file(path);
  // Arrow's stream owns (and closes) its descriptor; the AtomicFile keeps its own.
  const int fd = ::dup(file.fd());
  if (fd < 0) throw RuntimeError(fmt::format("{}: dup failed: {}", context, std::strerror(errno)));
  const auto stream = value_or_throw(::arrow::io::FileOutputStream::Open(fd), context);
  // pyarrow.parquet.write_table's defaults: snappy, and the Arrow schema stored.
  const auto properties = parquet::WriterProperties::Builder().compression(parquet::Compression::SNAPPY)->build();
  const auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  try {
    check(parquet::arrow::WriteTable(table, ::arrow::default_memory_pool(), stream,
                                     parquet::DEFAULT_MAX_ROW_GROUP_LENGTH, properties, arrow_properties),
          context);
  } catch (const parquet::ParquetException& e) {
    throw RuntimeError(fmt::format("{}: {}", context, e.what()));
  }
  check(stream->Close(), context);
  file.commit(/*sync=*/true);
}

}  // namespace tensordict
