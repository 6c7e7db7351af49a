// dtype <-> HDF5 type mapping, as numpy/h5py write them.
#include <cstring>
#include <stdexcept>

#include "core/format.h"
#include "kinds/persistent/h5_detail.h"

namespace tensordict::detail::h5 {

namespace {

Hid copy(hid_t type) { return Hid(H5Tcopy(type), H5Tclose); }

// A 2-byte little-endian float with the given exponent/mantissa split.
Hid float16_type(std::size_t exponent_bits, std::size_t mantissa_bits, std::size_t bias) {
  Hid t = copy(H5T_IEEE_F32LE);
  H5Tset_fields(t.get(), 15, mantissa_bits, exponent_bits, 0, mantissa_bits);
  H5Tset_size(t.get(), 2);
  H5Tset_ebias(t.get(), bias);
  return t;
}

Hid complex_type(hid_t part, std::size_t part_size) {
  Hid t(H5Tcreate(H5T_COMPOUND, 2 * part_size), H5Tclose);
  H5Tinsert(t.get(), "r", 0, part);
  H5Tinsert(t.get(), "i", part_size, part);
  return t;
}

// h5py's bool: an enum over int8 with FALSE=0, TRUE=1.
Hid bool_type() {
  Hid t(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
  int8_t f = 0, v = 1;
  H5Tenum_insert(t.get(), "FALSE", &f);
  H5Tenum_insert(t.get(), "TRUE", &v);
  return t;
}

bool is_bool_enum(hid_t type) {
  if (H5Tget_size(type) != 1 || H5Tget_nmembers(type) != 2) return false;
  for (unsigned i = 0; i < 2; ++i) {
    char* name = H5Tget_member_name(type, i);
    int8_t value = -1;
    H5Tget_member_value(type, i, &value);
    const bool ok =
        name && ((std::strcmp(name, "FALSE") == 0 && value == 0) || (std::strcmp(name, "TRUE") == 0 && value == 1));
    H5free_memory(name);
    if (!ok) return false;
  }
  return true;
}

at::ScalarType integer_dtype(std::size_t size, bool is_signed, const std::string& where) {
  switch (size) {
    case 1:
      return is_signed ? at::kChar : at::kByte;
    case 2:
      return is_signed ? at::kShort : at::kInt;  // uint16 widens to int32
    case 4:
      return is_signed ? at::kInt : at::kLong;  // uint32 widens to int64
    case 8:
      return at::kLong;  // uint64 reads as int64 (a value past 2^63 fails the read: CheckedTransfer)
    default:
      throw RuntimeError(fmt::format("{}: {}-byte integers have no tensor dtype", where, size));
  }
}

hid_t native_integer(at::ScalarType dtype) {
  switch (dtype) {
    case at::kChar:
      return H5T_NATIVE_INT8;
    case at::kByte:
      return H5T_NATIVE_UINT8;
    case at::kShort:
      return H5T_NATIVE_INT16;
    case at::kInt:
      return H5T_NATIVE_INT32;
    default:
      return H5T_NATIVE_INT64;
  }
}

}  // namespace

Hid string_type() {
  Hid t = copy(H5T_C_S1);
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

ReadType read_type(hid_t type, const std::string& where) {
  ReadType out;
  const std::size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      out.dtype = integer_dtype(size, H5Tget_sign(type) == H5T_SGN_2, where);
      out.memtype = copy(native_integer(out.dtype));
      return out;
    case H5T_FLOAT:
      if (size == 4) {
        out.dtype = at::kFloat;
        out.memtype = copy(H5T_NATIVE_FLOAT);
      } else if (size == 8) {
        out.dtype = at::kDouble;
        out.memtype = copy(H5T_NATIVE_DOUBLE);
      } else if (size == 2) {
        std::size_t spos, epos, esize, mpos, msize;
        H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize);
        const bool bf16 = esize == 8 && msize == 7;
        out.dtype = bf16 ? at::kBFloat16 : at::kHalf;
        out.memtype = bf16 ? float16_type(8, 7, 127) : float16_type(5, 10, 15);
      } else {
        throw RuntimeError(fmt::format("{}: {}-byte floats have no tensor dtype", where, size));
      }
      return out;
    case H5T_ENUM:
      if (is_bool_enum(type)) {
        out.dtype = at::kBool;
        out.memtype = bool_type();
      } else {
        // Other enums read as their integer values.
        out.memtype = copy(type);
        H5Tset_order(out.memtype.get(), H5T_ORDER_LE);
        Hid base(H5Tget_super(type), H5Tclose);
        if (H5Tget_size(base.get()) == 2 && H5Tget_sign(base.get()) != H5T_SGN_2) {
          throw RuntimeError(fmt::format("{}: unsigned 16-bit enums are not supported", where));
        }
        out.dtype = integer_dtype(H5Tget_size(base.get()), H5Tget_sign(base.get()) == H5T_SGN_2, where);
        if (H5Tget_size(base.get()) != c10::elementSize(out.dtype)) {
          throw RuntimeError(fmt::format("{}: unsigned enum base types are not supported", where));
        }
      }
      return out;
    case H5T_COMPOUND:
      if (H5Tget_nmembers(type) == 2) {
        Hid part(H5Tget_member_type(type, 0), H5Tclose);
        char* n0 = H5Tget_member_name(type, 0);
        char* n1 = H5Tget_member_name(type, 1);
        const bool ri = n0 && n1 && std::strcmp(n0, "r") == 0 && std::strcmp(n1, "i") == 0;
        H5free_memory(n0);
        H5free_memory(n1);
        if (ri && H5Tget_class(part.get()) == H5T_FLOAT &&
            (H5Tget_size(part.get()) == 4 || H5Tget_size(part.get()) == 8)) {
          const bool single = H5Tget_size(part.get()) == 4;
          out.dtype = single ? at::kComplexFloat : at::kComplexDouble;
          out.memtype = complex_type(single ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, single ? 4 : 8);
          return out;
        }
      }
      throw RuntimeError(
          fmt::format("{}: compound datasets other than h5py's complex (r, i) are not supported", where));
    case H5T_STRING:
      out.content = ReadType::Content::String;
      return out;
    default:
      throw RuntimeError(
          fmt::format("{}: HDF5 type class {} has no tensor dtype", where, static_cast<int>(H5Tget_class(type))));
  }
}

Hid write_type(at::ScalarType dtype, const std::string& where) {
  switch (dtype) {
    case at::kFloat:
      return copy(H5T_NATIVE_FLOAT);
    case at::kDouble:
      return copy(H5T_NATIVE_DOUBLE);
    case at::kHalf:
      return float16_type(5, 10, 15);
    // Not writable by numpy; stored as a 2-byte float with bfloat16's fields
    // (h5py reads it as float16 through HDF5's conversion).
    case at::kBFloat16:
      return float16_type(8, 7, 127);
    case at::kBool:
      return bool_type();
    case at::kComplexFloat:
      return complex_type(H5T_NATIVE_FLOAT, 4);
    case at::kComplexDouble:
      return complex_type(H5T_NATIVE_DOUBLE, 8);
    case at::kChar:
    case at::kByte:
    case at::kShort:
    case at::kInt:
    case at::kLong:
      return copy(native_integer(dtype));
    default:
      throw RuntimeError(fmt::format("{}: dtype {} cannot be written to h5", where, c10::toString(dtype)));
  }
}

}  // namespace tensordict::detail::h5
