// .npy arrays from bytes.
#include <cstring>
#include <vector>

#include "fuzz_support.hpp"
#include "io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::byte> bytes(size);
  if (size) std::memcpy(bytes.data(), data, size);
  return fuzz::expect_clean([&] { core::io::parse_npy(bytes, "fuzz.npy"); });
}
