// safetensors from bytes: header, offsets, every tensor read back (as float where the dtype allows).
#include <cstring>
#include <vector>

#include "fuzz_support.hpp"
#include "io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::byte> bytes(size);
  if (size) std::memcpy(bytes.data(), data, size);
  return fuzz::expect_clean([&] {
    const core::io::SafetensorsFile f(std::move(bytes), "fuzz.safetensors");
    for (const auto& name : f.names()) {
      const auto view = f.get(name);
      if (view.dtype == "F32" || view.dtype == "F16" || view.dtype == "BF16") core::io::to_f32(view);
    }
  });
}
