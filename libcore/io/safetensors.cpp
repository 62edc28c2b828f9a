// safetensors reading (whole file or mmap) and writing, with the validation of the reference
// implementation (huggingface/safetensors, safetensors/src/tensor.rs): header length bounded, JSON
// object, known dtypes, offsets contiguous from 0 to the end of the buffer, sizes consistent.
// Requires a little-endian host (checked at compile time).
#include "io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/rundir.hpp"
#include "io/input.hpp"
#include "io/jsonl.hpp"
#include "io/mapped_file.hpp"

static_assert(std::endian::native == std::endian::little, "core::io safetensors assumes a little-endian host");

namespace core::io {
namespace {

constexpr std::uint64_t kMaxHeaderSize = 100'000'000;  // as the reference implementation

struct DTypeInfo {
  std::string_view name;
  std::size_t size;
};
constexpr DTypeInfo kSafetensorsDTypes[] = {{"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"I16", 2}, {"U16", 2},
                                 {"F16", 2},  {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},
                                 {"F64", 8},  {"I64", 8},  {"U64", 8}};

// Product of the dimensions times itemsize, or nullopt on overflow or a negative dimension.
std::optional<std::size_t> byte_count(const std::vector<std::int64_t>& shape, std::size_t itemsize) {
  std::size_t n = itemsize;
  for (std::int64_t d : shape) {
    if (d < 0) return std::nullopt;
    const auto u = static_cast<std::size_t>(d);
    if (u != 0 && n > std::numeric_limits<std::size_t>::max() / u) return std::nullopt;
    n *= u;
  }
  return n;
}

std::string shape_str(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s.append(i ? "," : "").append(std::to_string(shape[i]));
  return s + "]";
}

}  // namespace

std::size_t safetensors_dtype_size(std::string_view dtype) {
  for (const DTypeInfo& d : kSafetensorsDTypes)
    if (d.name == dtype) return d.size;
  return 0;
}

std::size_t TensorView::numel() const {
  std::size_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

std::vector<float> to_f32(const TensorView& t) {
  const std::size_t n = t.numel();
  std::vector<float> out(n);
  if (t.dtype == "F32") {
    if (n) std::memcpy(out.data(), t.bytes.data(), n * 4);
  } else if (t.dtype == "F16" || t.dtype == "BF16") {
    const bool bf = t.dtype == "BF16";
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t h;
      std::memcpy(&h, t.bytes.data() + 2 * i, 2);
      out[i] = bf ? bf16_to_float(h) : f16_to_float(h);
    }
  } else {
    throw DataError("tensor '" + t.name + "' has dtype " + t.dtype + ", expected F32, F16 or BF16");
  }
  return out;
}

// ---- writer ----

void SafetensorsWriter::check(const std::string& name, const std::string& dtype, const std::vector<std::int64_t>& shape,
                              std::size_t bytes) const {
  const std::size_t itemsize = safetensors_dtype_size(dtype);
  if (itemsize == 0) throw std::invalid_argument("safetensors: tensor '" + name + "': unknown dtype '" + dtype + "'");
  if (name == "__metadata__") throw std::invalid_argument("safetensors: '__metadata__' is not a valid tensor name");
  if (tensors_.count(name)) throw std::invalid_argument("safetensors: duplicate tensor '" + name + "'");
  const std::optional<std::size_t> expected = byte_count(shape, itemsize);
  if (!expected || *expected != bytes)
    throw std::invalid_argument("safetensors: tensor '" + name + "': " + std::to_string(bytes) +
                                " bytes do not match shape " + shape_str(shape) + " of " + dtype);
}

void SafetensorsWriter::add(const std::string& name, const std::string& dtype, const std::vector<std::int64_t>& shape,
                            std::span<const std::byte> bytes) {
  check(name, dtype, shape, bytes.size());
  Entry& e = tensors_[name] =
      Entry{dtype, shape, std::vector<std::byte>(bytes.begin(), bytes.end()), {}, bytes.size(), {}};
  e.bytes = e.owned;  // map nodes and a vector's heap buffer do not move
}

void SafetensorsWriter::add_view(const std::string& name, const std::string& dtype,
                                 const std::vector<std::int64_t>& shape, std::span<const std::byte> bytes) {
  check(name, dtype, shape, bytes.size());
  tensors_[name] = Entry{dtype, shape, {}, bytes, bytes.size(), {}};
}

void SafetensorsWriter::add_filled(const std::string& name, const std::string& dtype,
                                   const std::vector<std::int64_t>& shape, std::size_t byte_count,
                                   std::function<void(std::span<std::byte>)> fill) {
  check(name, dtype, shape, byte_count);
  tensors_[name] = Entry{dtype, shape, {}, {}, byte_count, std::move(fill)};
}

void SafetensorsWriter::for_each_bytes(const std::function<void(std::span<const std::byte>)>& out) const {
  std::vector<std::byte> scratch;
  for (const auto& [name, e] : tensors_) {
    if (!e.fill) {
      out(e.bytes);
      continue;
    }
    scratch.resize(e.size);
    e.fill(scratch);
    out(scratch);
  }
}

std::string SafetensorsWriter::header() const {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata_.empty()) h["__metadata__"] = metadata_;
  std::size_t offset = 0;
  for (const auto& [name, e] : tensors_) {
    h[name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {offset, offset + e.size}}};
    offset += e.size;
  }
  std::string text;
  try {
    text = h.dump();
  } catch (const nlohmann::json::exception& ex) {
    throw std::invalid_argument(std::string("safetensors: a tensor name or metadata string is not valid UTF-8: ") +
                                ex.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((std::uint64_t{text.size()} >> (8 * i)) & 0xFF);
  return out + text;
}

std::string SafetensorsWriter::serialize() const {
  std::string out = header();
  for_each_bytes([&](std::span<const std::byte> b) { out.append(reinterpret_cast<const char*>(b.data()), b.size()); });
  return out;
}

void SafetensorsWriter::write(const std::filesystem::path& path) const {
  const std::string head = header();
  AtomicFile out(path);
  out.stream().write(head.data(), static_cast<std::streamsize>(head.size()));
  for_each_bytes([&](std::span<const std::byte> b) {
    out.stream().write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  });
  out.commit();
}

// ---- reader ----

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path, Mode mode) : source_(path.string()) {
  if (mode == Mode::read) {
    owned_ = read_file_bytes(path);
    file_ = owned_;
  } else {
    mapped_ = MappedFile(path);
    file_ = mapped_.bytes();
  }
  parse();
}

SafetensorsFile::SafetensorsFile(std::vector<std::byte> bytes, std::string source)
    : source_(std::move(source)), owned_(std::move(bytes)), file_(owned_) {
  parse();
}

// Moving keeps file_ and data_ valid: the owned buffer and the mapping keep their addresses.
SafetensorsFile::~SafetensorsFile() = default;
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;

void SafetensorsFile::parse() {
  const auto fail = [&](const std::string& what) -> void { throw DataError(source_ + ": " + what); };
  if (file_.size() < 8)
    fail("truncated safetensors file (" + std::to_string(file_.size()) + " bytes, the header length alone needs 8)");
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t{static_cast<unsigned char>(file_[i])} << (8 * i);
  if (n > kMaxHeaderSize) fail("safetensors header length " + std::to_string(n) + " exceeds 100 MB (corrupt file?)");
  if (n > file_.size() - 8)
    fail("truncated safetensors header (length " + std::to_string(n) + ", file has " + std::to_string(file_.size()) +
         " bytes)");
  const std::string_view text(reinterpret_cast<const char*>(file_.data()) + 8, n);
  data_ = file_.subspan(8 + n);
  if (text.empty() || text.front() != '{') fail("safetensors header does not start with '{'");

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    throw DataError(source_ + ": safetensors header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) fail("safetensors header is not a JSON object");

  const auto index = [](const nlohmann::json& v) -> std::optional<std::uint64_t> {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
    return std::nullopt;
  };
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) fail("__metadata__ is not an object of strings");
      for (const auto& [k, v] : info.items()) {
        if (!v.is_string()) fail("__metadata__ value of '" + k + "' is not a string");
        metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "': ";
    if (!info.is_object()) fail(where + "entry is not an object");
    const auto dtype = info.find("dtype"), shape = info.find("shape"), offsets = info.find("data_offsets");
    if (dtype == info.end() || shape == info.end() || offsets == info.end())
      fail(where + "needs dtype, shape and data_offsets");
    if (!dtype->is_string()) fail(where + "dtype is not a string");
    Entry e;
    e.dtype = dtype->get<std::string>();
    const std::size_t itemsize = safetensors_dtype_size(e.dtype);
    if (itemsize == 0) fail(where + "unsupported dtype " + quote_excerpt(e.dtype));
    if (!shape->is_array()) fail(where + "shape is not an array");
    for (const auto& d : *shape) {
      const auto v = index(d);
      if (!v || *v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(where + "shape holds " + json_excerpt(d) + ", not a non-negative integer");
      e.shape.push_back(static_cast<std::int64_t>(*v));
    }
    if (!offsets->is_array() || offsets->size() != 2) fail(where + "data_offsets is not [begin, end]");
    const auto begin = index((*offsets)[0]), end = index((*offsets)[1]);
    if (!begin || !end || *begin > *end) fail(where + "data_offsets " + offsets->dump() + " is not [begin, end]");
    if (*end > data_.size())
      fail(where + "data_offsets " + offsets->dump() + " past the end of the data (" + std::to_string(data_.size()) +
           " bytes; truncated file?)");
    e.begin = static_cast<std::size_t>(*begin);
    e.end = static_cast<std::size_t>(*end);
    const std::optional<std::size_t> expected = byte_count(e.shape, itemsize);
    if (!expected || *expected != e.end - e.begin)
      fail(where + "shape " + shape_str(e.shape) + " of " + e.dtype + " needs " +
           (expected ? std::to_string(*expected) : std::string("too many")) + " bytes, data_offsets give " +
           std::to_string(e.end - e.begin));
    tensors_.emplace(name, std::move(e));
  }

  std::vector<std::pair<const std::string*, const Entry*>> by_offset;
  for (const auto& [name, e] : tensors_) by_offset.emplace_back(&name, &e);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second->begin, a.second->end) < std::pair(b.second->begin, b.second->end);
  });
  std::size_t expected_begin = 0;
  for (const auto& [name, e] : by_offset) {
    if (e->begin != expected_begin)
      fail("tensor '" + *name + "': data starts at " + std::to_string(e->begin) + ", expected " +
           std::to_string(expected_begin) + (e->begin < expected_begin ? " (overlaps the previous tensor)" : " (gap)"));
    expected_begin = e->end;
  }
  if (expected_begin != data_.size())
    fail(std::to_string(data_.size() - expected_begin) + " bytes after the last tensor's data (corrupt file?)");
  for (const auto& [name, e] : tensors_) names_.push_back(name);
}

TensorView SafetensorsFile::get(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw DataError(source_ + ": no tensor '" + name + "'");
  const Entry& e = it->second;
  return TensorView{name, e.dtype, e.shape, data_.subspan(e.begin, e.end - e.begin)};
}

}  // namespace core::io
