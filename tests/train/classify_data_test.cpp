// Classification data and its length-padded batches (nxm-compress's tasks, ltd-pretrain finetune): TSV reading
// (header, trailing spaces, bad lines named by file:line), [CLS] encoding and truncation, the padded length
// against a brute-force longest, length order, gathered rows against the set's, and the padding counts against
// their closed form.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/rng.hpp"
#include "test_support.hpp"
#include "text/tokenizer.hpp"
#include "train/classify_batches.hpp"
#include "train/classify_data.hpp"

using namespace core::train;

TEST_CASE("read_tsv: GLUE header skipped, trailing spaces dropped, bad lines named by file and line") {
  core::test::TempDir tmp("classify_tsv");
  core::test::write_text(tmp / "ok.tsv", "sentence\tlabel\nfine film \t1\r\n\nflat\t0\n");
  const auto ex = read_tsv(tmp / "ok.tsv", 2);
  REQUIRE(ex.size() == 2);
  CHECK(ex[0].text == "fine film");
  CHECK(ex[0].label == 1);
  CHECK(ex[1].text == "flat");
  CHECK(ex[1].label == 0);
  core::test::write_text(tmp / "bare.tsv", "good\t1\n");  // no header
  CHECK(read_tsv(tmp / "bare.tsv", 2).size() == 1);
  const auto fails = [&](const std::string& text, const std::string& where) {
    core::test::write_text(tmp / "bad.tsv", text);
    try {
      read_tsv(tmp / "bad.tsv", 2);
    } catch (const core::DataError& e) {
      return std::string(e.what()).find("bad.tsv:" + where) != std::string::npos;
    }
    return false;
  };
  CHECK(fails("sentence\tlabel\nfine\t1\nbroken\tx\n", "3"));
  CHECK(fails("sentence\tlabel\nno tab\n", "2"));
  CHECK(fails("a\t2\n", "1"));  // outside [0, 2)
  core::test::write_text(tmp / "empty.tsv", "sentence\tlabel\n");
  CHECK_THROWS_AS(read_tsv(tmp / "empty.tsv", 2), core::DataError);
  CHECK_THROWS_AS(read_tsv(tmp / "none.tsv", 2), core::InputMissingError);
}

TEST_CASE("encode_examples: [CLS] + bytes cut to max_seq_len, the set padded to its longest") {
  const core::text::ByteTokenizer tok;
  const auto set = encode_examples({{"abc", 1}, {"a", 0}, {"abcdefghij", 1}}, tok, 257, 6);
  CHECK(set.T == 6);
  CHECK(set.lengths == std::vector<std::int32_t>{4, 2, 6});
  CHECK(set.labels == std::vector<std::int32_t>{1, 0, 1});
  CHECK(std::vector<std::int32_t>(set.tokens.begin(), set.tokens.begin() + 6) ==
        std::vector<std::int32_t>{257, 'a', 'b', 'c', 0, 0});
  CHECK(std::vector<std::uint8_t>(set.mask.begin() + 6, set.mask.begin() + 12) ==
        std::vector<std::uint8_t>{1, 1, 0, 0, 0, 0});
  CHECK(std::vector<std::int32_t>(set.tokens.begin() + 12, set.tokens.end()) ==
        std::vector<std::int32_t>{257, 'a', 'b', 'c', 'd', 'e'});
}

TEST_CASE("length-padded batches: padded length, length order, gathered rows and padding counts") {
  // 40 examples of lengths 1..40 in a random order, padded to 40 in the set.
  core::Rng rng(3);
  std::vector<std::int32_t> lengths(40);
  std::iota(lengths.begin(), lengths.end(), 1);
  for (std::size_t i = lengths.size(); i > 1; --i) std::swap(lengths[i - 1], lengths[rng.below(i)]);
  EncodedSet set;
  set.T = 40;
  for (int i = 0; i < 40; ++i) {
    for (int t = 0; t < 40; ++t) {
      set.tokens.push_back(t < lengths[i] ? 1000 * i + t : 0);
      set.mask.push_back(t < lengths[i] ? 1 : 0);
    }
    set.lengths.push_back(lengths[i]);
    set.labels.push_back(i % 3);
  }
  const std::vector<int> order = length_order(set);
  for (int k = 0; k < 40; ++k) CHECK(set.lengths[order[k]] == k + 1);

  PaddingCount count;
  std::int64_t examples = 0, padded = 0;
  BatchRows rows;
  for (const std::vector<int>& idx : {std::vector<int>{0, 1, 2}, {order[0], order[1]}, {order[38], order[39]},
                                     {order[8], order[2]}, {5}}) {
    int longest = 0;
    for (const int i : idx) longest = std::max(longest, lengths[i]);
    const int T = padded_length(set, idx);
    CHECK(T == std::min(40, (longest + 7) / 8 * 8));  // rounded up to 8, never past the set's T
    CHECK(T % 8 == 0);
    CHECK(T >= longest);
    const Batch batch = rows.gather(set, idx, T);
    REQUIRE(batch.B == int(idx.size()));
    REQUIRE(batch.T == T);
    for (int b = 0; b < batch.B; ++b) {
      CHECK(batch.labels[b] == set.labels[idx[b]]);
      for (int t = 0; t < T; ++t) {
        CHECK(batch.tokens[b * T + t] == set.tokens[idx[b] * 40 + t]);
        CHECK(batch.attention_mask[b * T + t] == (t < lengths[idx[b]] ? 1 : 0));
      }
    }
    count.add(set, idx, T);
    for (const int i : idx) examples += lengths[i];
    padded += std::int64_t(idx.size()) * T;
  }
  CHECK(count.example_tokens == examples);
  CHECK(count.batch_tokens == padded);
  const auto j = count.to_json();
  CHECK(j["padding_share"].get<double>() == doctest::Approx(1.0 - double(examples) / double(padded)));
  const PaddingCount back = PaddingCount::from_json(j);
  CHECK(back.example_tokens == examples);
  CHECK(back.batch_tokens == padded);
  CHECK(PaddingCount::from_json(nlohmann::json::object()).batch_tokens == 0);
  CHECK(PaddingCount{}.to_json()["padding_share"] == 0.0);
}
