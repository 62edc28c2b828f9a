// Build identity recorded in --version and manifests. The macros come from CMake; the git sha is
// regenerated at every build (cmake/GenerateGitSha.cmake), so it follows new commits.
#pragma once
#include <string>

namespace core {
std::string build_git_sha();
}
