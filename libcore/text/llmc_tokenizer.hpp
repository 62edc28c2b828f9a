// llm.c's tokenizer file (gpt2_tokenizer.bin, written by llm.c's train_gpt2.py write_tokenizer and read by
// llmc/tokenizer.h to print samples): a header of 256 little-endian int32 (magic 20240328, version 2, the
// number of tokens, the end-of-text token id; the rest 0), then for every token id in order its byte length
// as one uint8 (1..255) and its bytes.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "text/tokenizer.hpp"

namespace core::text {

constexpr std::int32_t kLlmcTokenizerMagic = 20240328;

struct LlmcTokenizerFile {
  std::int32_t eot_token = 0;
  std::vector<std::string> tokens;  // bytes of each id
};

// Writes `tok`'s table (atomically). UsageError when the tokenizer has no end-of-text token (llm.c starts
// generation from it) or a token is empty or longer than 255 bytes; IoError when the file cannot be written.
void write_llmc_tokenizer(const std::filesystem::path& path, const Tokenizer& tok);

// Reads a version 2 file (or version 1, whose end-of-text token is GPT-2's 50256); DataError naming the file
// for a wrong magic or version, a zero length or a truncated table; InputMissingError when absent.
LlmcTokenizerFile read_llmc_tokenizer(const std::filesystem::path& path);

}  // namespace core::text
