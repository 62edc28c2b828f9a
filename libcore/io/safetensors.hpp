// safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON {"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets":
// [begin, end]}, ...} padded with spaces to a multiple of 8, then the tensor bytes (little-endian,
// C order), offsets relative to the end of the header.
// DTypes: BOOL U8 I8 I16 U16 F16 BF16 I32 U32 F32 F64 I64 U64.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "io/half.hpp"
#include "io/mapped_file.hpp"

namespace core::io {

// Bytes per element of a safetensors dtype name, 0 when the name is not a supported dtype.
std::size_t safetensors_dtype_size(std::string_view dtype);

template <class T>
constexpr std::string_view safetensors_dtype() {
  if constexpr (std::is_same_v<T, float>) return "F32";
  else if constexpr (std::is_same_v<T, double>) return "F64";
  else if constexpr (std::is_same_v<T, Float16>) return "F16";
  else if constexpr (std::is_same_v<T, BFloat16>) return "BF16";
  else if constexpr (std::is_same_v<T, bool>) return "BOOL";
  else if constexpr (std::is_same_v<T, std::int8_t>) return "I8";
  else if constexpr (std::is_same_v<T, std::uint8_t>) return "U8";
  else if constexpr (std::is_same_v<T, std::int16_t>) return "I16";
  else if constexpr (std::is_same_v<T, std::uint16_t>) return "U16";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "I32";
  else if constexpr (std::is_same_v<T, std::uint32_t>) return "U32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "I64";
  else if constexpr (std::is_same_v<T, std::uint64_t>) return "U64";
  else static_assert(!sizeof(T), "safetensors: unsupported element type");
}

// One tensor of an open SafetensorsFile; `bytes` points into the file's buffer (valid while the
// SafetensorsFile lives) and need not be aligned for the element type: copy out with memcpy.
struct TensorView {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> bytes;
  std::size_t numel() const;
};

// The elements of an F32, F16 or BF16 tensor as float (exact); throws DataError for other dtypes.
std::vector<float> to_f32(const TensorView& t);

// Collects tensors and metadata, then writes them in one go. Tensors are laid out in name order, the header is
// compact JSON padded with spaces to a multiple of 8 bytes. add() copies a tensor's bytes; add_view() only
// records where they are (the caller keeps them alive and unchanged until write()), so that write() streams a
// model's tensors straight from their buffers to the file without a second copy of the model in memory;
// add_filled() records how to make them (a model whose tensors live on a device: copied out one at a time).
class SafetensorsWriter {
 public:
  // Throws std::invalid_argument for an unknown dtype, a negative dimension, a byte count that does
  // not match shape x dtype size, a duplicate name, or the reserved name "__metadata__".
  void add(const std::string& name, const std::string& dtype, const std::vector<std::int64_t>& shape,
           std::span<const std::byte> bytes);
  template <class T>
  void add(const std::string& name, const std::vector<std::int64_t>& shape, std::span<const T> values) {
    add(name, std::string(safetensors_dtype<T>()), shape, std::as_bytes(values));
  }
  // As add(), without copying: `bytes` must stay valid until the last serialize() or write().
  void add_view(const std::string& name, const std::string& dtype, const std::vector<std::int64_t>& shape,
                std::span<const std::byte> bytes);
  template <class T>
  void add_view(const std::string& name, const std::vector<std::int64_t>& shape, std::span<const T> values) {
    add_view(name, std::string(safetensors_dtype<T>()), shape, std::as_bytes(values));
  }
  // As add_view, for bytes made while writing: fill(out) puts the tensor's `byte_count` bytes into `out`, a
  // buffer serialize() and write() reuse from tensor to tensor, so that no more than the largest such tensor
  // is held at once.
  void add_filled(const std::string& name, const std::string& dtype, const std::vector<std::int64_t>& shape,
                  std::size_t byte_count, std::function<void(std::span<std::byte>)> fill);
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

  std::string serialize() const;                           // the whole file's bytes
  void write(const std::filesystem::path& path) const;  // atomic; throws IoError

 private:
  std::string header() const;
  void check(const std::string& name, const std::string& dtype, const std::vector<std::int64_t>& shape,
             std::size_t byte_count) const;
  struct Entry {
    std::string dtype;
    std::vector<std::int64_t> shape;
    std::vector<std::byte> owned;     // add(): the copy; add_view(): empty
    std::span<const std::byte> bytes;  // the tensor's bytes (into `owned`, or the caller's buffer)
    std::size_t size = 0;              // bytes.size(), or add_filled()'s byte count
    std::function<void(std::span<std::byte>)> fill;  // add_filled()
  };
  // Each tensor's bytes in file order (add_filled()'s made in one reused buffer).
  void for_each_bytes(const std::function<void(std::span<const std::byte>)>& out) const;
  std::map<std::string, Entry> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A validated safetensors file: header parsed, every tensor's offsets in bounds, contiguous from 0
// to the end of the file without gaps or overlaps, and its byte count = product(shape) x dtype size.
class SafetensorsFile {
 public:
  enum class Mode { read, mmap };  // read: the whole file into memory; mmap: map it read-only
  // Throws InputMissingError, IoError, or DataError naming the file (and the tensor) for any defect.
  explicit SafetensorsFile(const std::filesystem::path& path, Mode mode = Mode::read);
  // Parses bytes already in memory; `source` names them in error messages.
  SafetensorsFile(std::vector<std::byte> bytes, std::string source);
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::vector<std::string>& names() const { return names_; }  // sorted
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  TensorView get(const std::string& name) const;  // throws DataError naming the tensor when absent

 private:
  void parse();
  struct Entry {
    std::string dtype;
    std::vector<std::int64_t> shape;
    std::size_t begin = 0, end = 0;  // relative to data_
  };
  std::string source_;
  std::vector<std::byte> owned_;
  MappedFile mapped_;
  std::span<const std::byte> file_;  // the whole file (owned_ or the mapping)
  std::span<const std::byte> data_;  // the tensor bytes after the header
  std::map<std::string, Entry> tensors_;
  std::vector<std::string> names_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace core::io
