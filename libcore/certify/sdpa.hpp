// SDPA sparse format (.dat-s) reader and writer, for exchanging SDPs with external solvers (csdp,
// SDPA, SDPT3, ...). A file holds, in the SDPA/CSDP convention,
//   max <F_0, X>  s.t.  <F_i, X> = c_i (i = 1..m),  X >= 0,
// laid out as: comment lines starting with '"' or '*'; m; the number of blocks; the block sizes
// (a negative size is a diagonal block); the m values c_i; then one line "matno block i j value"
// per entry (matno 0 is F_0; indices 1-based; i <= j or j <= i). Punctuation ,(){} in the header
// counts as blank, and text after the expected numbers of the m and block-count lines is ignored
// (as in "3 = mDIM").
// Our SdpProblem is the minimisation min <C,X> s.t. <A_i,X> = b_i, so reading sets C = -F_0,
// A_i = F_i, b = c, and writing does the reverse: the file's objective values (what csdp prints)
// are the negatives of ours (see sdpa_objective()).
#pragma once
#include <filesystem>
#include <istream>
#include <string>
#include <vector>

#include "certify/sdp_problem.hpp"

namespace core::certify {

// Throws InputMissingError when the file cannot be opened, DataError "FILE:LINE: what" for bad
// content (and for an SDP that fails SdpProblem::validate()).
SdpProblem read_sdpa(const std::filesystem::path& path);
// Same, from a stream; `name` is used in messages.
SdpProblem parse_sdpa(std::istream& in, const std::string& name);

// Writes the problem (entries merged per position, zeros dropped, 17 significant digits) through a
// temporary file renamed into place. Throws IoError when writing fails.
void write_sdpa(const std::filesystem::path& path, const SdpProblem& problem,
                const std::string& comment = "");
std::string format_sdpa(const SdpProblem& problem, const std::string& comment = "");

// A solution in CSDP's solution-file format (what `csdp F.dat-s F.sol` writes): y in the file's convention
// (the negative of ours) on the first line, then "1 block i j value" for Z and "2 block i j value" for X,
// upper-triangle nonzeros, 1-based, 17 significant digits.
std::string format_sdpa_solution(const std::vector<BlockSpec>& blocks, const Eigen::VectorXd& y, const BlockValues& X,
                                 const BlockValues& Z);

// An objective value of our minimisation in the file's max convention, and back.
inline double sdpa_objective(double our_objective) { return -our_objective; }

}  // namespace core::certify
