// Helpers shared by the core::io tests: raw byte files, and checking an exception's type and text.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace io_test {

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Whether f threw an E, and the message (or what was thrown instead).
struct Thrown {
  bool as_expected = false;
  std::string message;
};
template <class E, class F>
Thrown thrown(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return {true, e.what()};
  } catch (const std::exception& e) {
    return {false, std::string("wrong exception type: ") + e.what()};
  }
  return {false, "no exception"};
}

// Names of the entries of a folder (to check that no temporary or partial file was left behind).
inline std::vector<std::string> listing(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

// A python3 that can import numpy, or "" (then the cross-checks are skipped).
inline std::string python_with_numpy() {
  for (const char* py : {"/usr/bin/python3", "python3"}) {
    const std::string cmd = std::string(py) + " -c 'import numpy' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return "";
}

}  // namespace io_test

// Checks that `stmt` throws Type with a message containing `text`; prints the message otherwise.
#define CHECK_THROWS_CONTAINING(Type, text, ...)                                    \
  do {                                                                              \
    const io_test::Thrown t_ = io_test::thrown<Type>([&] { __VA_ARGS__; });        \
    INFO("message: ", t_.message);                                                  \
    CHECK(t_.as_expected);                                                          \
    CHECK(t_.message.find(text) != std::string::npos);                              \
  } while (0)
