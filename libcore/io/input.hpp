// Opening and reading input files with the conventions' errors: InputMissingError when a file does
// not exist or cannot be opened, IoError when reading an opened file fails.
#pragma once
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace core::io {

// Opens `path` for binary reading; throws InputMissingError naming the file and the reason.
std::ifstream open_input(const std::filesystem::path& path);

// The whole file's bytes; throws InputMissingError / IoError.
std::vector<std::byte> read_file_bytes(const std::filesystem::path& path);

// `text` quoted for an error message, cut to a readable length, control bytes shown as \xNN.
std::string quote_excerpt(std::string_view text);

}  // namespace core::io
