#include "common/errors.hpp"

namespace core {

const char* exit_code_table() {
  return "Exit codes:\n"
         "   0  success (certifier: certified)\n"
         "   1  internal error\n"
         "   2  usage or configuration error\n"
         "   3  ran to the end, answer negative (not certified, verification failed)\n"
         "  65  malformed input data\n"
         "  66  input missing\n"
         "  74  I/O error\n"
         "  75  stopped by a signal after saving a checkpoint (resume possible)\n";
}

}  // namespace core
