// llm.c's tokenizer file (see llmc_tokenizer.hpp).
#include "text/llmc_tokenizer.hpp"

#include <array>
#include <cstring>
#include <fstream>

#include "common/errors.hpp"
#include "common/rundir.hpp"

namespace core::text {

namespace {
constexpr std::size_t kHeaderInts = 256;

void put_i32(std::string& out, std::int32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((static_cast<std::uint32_t>(v) >> (8 * i)) & 0xFF));
}
}  // namespace

void write_llmc_tokenizer(const std::filesystem::path& path, const Tokenizer& tok) {
  const auto eot = tok.eot_token();
  if (!eot)
    throw UsageError("llm.c's tokenizer file needs an end-of-text token, which the " + tok.spec() + " tokenizer lacks");
  const std::int32_t n = tok.vocab_size();
  std::string out;
  out.reserve(kHeaderInts * 4 + static_cast<std::size_t>(n) * 8);
  put_i32(out, kLlmcTokenizerMagic);
  put_i32(out, 2);
  put_i32(out, n);
  put_i32(out, *eot);
  out.append((kHeaderInts - 4) * 4, '\0');
  for (std::int32_t id = 0; id < n; ++id) {
    const std::string bytes = tok.decode(std::span<const std::int32_t>(&id, 1));
    if (bytes.empty() || bytes.size() > 255)
      throw UsageError("token " + std::to_string(id) + " of " + tok.spec() + " has " + std::to_string(bytes.size()) +
                       " bytes; llm.c's tokenizer file holds 1 to 255");
    out.push_back(static_cast<char>(bytes.size()));
    out += bytes;
  }
  write_file_atomic(path, out);
}

LlmcTokenizerFile read_llmc_tokenizer(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputMissingError("cannot open llm.c tokenizer file " + path.string());
  std::array<std::int32_t, kHeaderInts> header{};
  in.read(reinterpret_cast<char*>(header.data()), sizeof header);
  const auto bad = [&](const std::string& what) { return DataError(path.string() + ": " + what); };
  if (in.gcount() != static_cast<std::streamsize>(sizeof header)) throw bad("shorter than the 1024-byte header");
  if (header[0] != kLlmcTokenizerMagic) throw bad("magic " + std::to_string(header[0]) + ", expected 20240328");
  if (header[1] != 1 && header[1] != 2) throw bad("version " + std::to_string(header[1]) + ", expected 1 or 2");
  if (header[2] < 1 || header[2] > (1 << 24)) throw bad("token count " + std::to_string(header[2]) + " is out of range");
  LlmcTokenizerFile f;
  f.eot_token = header[1] == 1 ? 50256 : header[3];
  f.tokens.reserve(static_cast<std::size_t>(header[2]));
  for (std::int32_t id = 0; id < header[2]; ++id) {
    const int length = in.get();
    if (length == std::char_traits<char>::eof()) throw bad("the table ends at token " + std::to_string(id));
    if (length == 0) throw bad("token " + std::to_string(id) + " has length 0");
    std::string bytes(static_cast<std::size_t>(length), '\0');
    in.read(bytes.data(), length);
    if (in.gcount() != length) throw bad("the table ends inside token " + std::to_string(id));
    f.tokens.push_back(std::move(bytes));
  }
  return f;
}

}  // namespace core::text
