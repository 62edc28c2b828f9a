// Graph input: edge lists and Matrix Market (cleaning, comments, malformed lines with their line
// numbers), the binary CSR cache (hit, invalidation), labels, generators and relabelling
// (fingerprints of the first relabelling, sort_ids against std::sort).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <thread>

#include "common/errors.hpp"
#include "graph/generators.hpp"
#include "graph/graph_io.hpp"
#include "graph/sort_ids.hpp"
#include "test_support.hpp"

using namespace core::graph;
using core::test::TempDir;
using core::test::write_text;

namespace {

// The message of the DataError that f throws (empty when it does not throw one).
template <class F>
std::string data_error(F&& f) {
  try {
    f();
  } catch (const core::DataError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("edge lists are symmetrised, cleaned and compacted") {
  TempDir dir("graph-io");
  write_text(dir / "g.el", "# comment\n% also a comment\n\n10 20\n20 10\n10 10\n20 30 1.5\n30\t40\n10 20\n");
  CleanReport r;
  const Graph g = read_edge_list(dir / "g.el", &r);
  CHECK(g.n() == 4);
  CHECK(g.m() == 3);
  CHECK(r.input_edges == 6);
  CHECK(r.self_loops == 1);
  CHECK(r.duplicates == 2);
  CHECK(r.max_input_id == 40);
  CHECK(g.original_ids == std::vector<std::uint64_t>{10, 20, 30, 40});
  CHECK(g.has_edge(0, 1));
  CHECK(g.has_edge(1, 0));
  CHECK(g.has_edge(2, 3));
  CHECK_FALSE(g.has_edge(0, 2));
}

TEST_CASE("malformed edge lists name the file and line") {
  TempDir dir("graph-io-bad");
  write_text(dir / "a.el", "0 1\n1 2\n2 x\n");
  CHECK(data_error([&] { read_edge_list(dir / "a.el"); }).find("a.el:3:") != std::string::npos);
  write_text(dir / "b.el", "0 1\n# fine\n7\n");
  CHECK(data_error([&] { read_edge_list(dir / "b.el"); }).find("b.el:3:") != std::string::npos);
  write_text(dir / "c.el", "0 1\n-1 2\n");
  CHECK(data_error([&] { read_edge_list(dir / "c.el"); }).find("c.el:2:") != std::string::npos);
  write_text(dir / "d.el", "0 1 2 3\n");
  CHECK(data_error([&] { read_edge_list(dir / "d.el"); }).find("d.el:1:") != std::string::npos);
  write_text(dir / "e.el", "# nothing\n");
  CHECK(data_error([&] { read_edge_list(dir / "e.el"); }).find("no edges") != std::string::npos);
  CHECK_THROWS_AS(read_edge_list(dir / "missing.el"), core::InputMissingError);
}

TEST_CASE("Matrix Market files are read 1-based with their declared sizes") {
  TempDir dir("graph-mtx");
  write_text(dir / "g.mtx",
             "%%MatrixMarket matrix coordinate pattern symmetric\n% comment\n4 4 4\n1 2\n2 3\n3 1\n4 4\n");
  CleanReport r;
  const Graph g = read_matrix_market(dir / "g.mtx", &r);
  CHECK(g.n() == 3);  // vertex 4 only has a self-loop
  CHECK(g.m() == 3);
  CHECK(r.self_loops == 1);
  write_text(dir / "w.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 0.5\n2 3 -1e3\n");
  CHECK(read_matrix_market(dir / "w.mtx").m() == 2);
  write_text(dir / "bad1.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 9\n");
  CHECK(data_error([&] { read_matrix_market(dir / "bad1.mtx"); }).find("bad1.mtx:4:") != std::string::npos);
  write_text(dir / "bad2.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n2 3\n");
  CHECK(data_error([&] { read_matrix_market(dir / "bad2.mtx"); }).find("declares 3") != std::string::npos);
  write_text(dir / "bad3.mtx", "1 2\n");
  CHECK(data_error([&] { read_matrix_market(dir / "bad3.mtx"); }).find("bad3.mtx:1:") != std::string::npos);
  write_text(dir / "bad4.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n");
  CHECK(data_error([&] { read_matrix_market(dir / "bad4.mtx"); }).find("coordinate") != std::string::npos);
}

// The DataError message of f(), or "" when it throws none.
template <class F>
std::string cache_error(F&& f) {
  try {
    f();
  } catch (const core::DataError& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("the binary CSR cache is written once, reused, and rebuilt when the source changes") {
  TempDir dir("graph-cache");
  write_text(dir / "g.el", "0 1\n1 2\n2 0\n");
  const LoadOptions cache{(dir / "cache").string()};
  const LoadedGraph first = load_graph(dir / "g.el", cache);
  CHECK_FALSE(first.from_cache);
  CHECK(std::filesystem::exists(first.cache_path));
  const LoadedGraph second = load_graph(dir / "g.el", cache);
  CHECK(second.from_cache);
  CHECK(second.graph.adj.mapped());
  CHECK(second.graph.adj == first.graph.adj);
  CHECK(second.graph.offsets == first.graph.offsets);
  CHECK(second.graph.original_ids == first.graph.original_ids);
  CHECK(describe(second.report) == describe(first.report));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write_text(dir / "g.el", "0 1\n1 2\n2 0\n2 3\n");
  const LoadedGraph third = load_graph(dir / "g.el", cache);
  CHECK_FALSE(third.from_cache);
  CHECK(third.graph.m() == 4);
  CHECK_FALSE(load_graph(dir / "g.el", LoadOptions{"off"}).from_cache);
  // "auto" keeps caches in the user's cache folder, never beside the data (even a writable folder).
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old_xdg ? old_xdg : "";
  ::setenv("XDG_CACHE_HOME", (dir / "xdg").c_str(), 1);
  const LoadedGraph user = load_graph(dir / "g.el", LoadOptions{"auto"});
  CHECK(user.cache_path.parent_path() == dir / "xdg" / "toolkit" / "graphs");
  CHECK_FALSE(std::filesystem::exists(dir / "g.el.csr"));
  CHECK(load_graph(dir / "g.el", LoadOptions{"auto"}).from_cache);
  if (old_xdg) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1); else ::unsetenv("XDG_CACHE_HOME");
}

TEST_CASE("relabelled and generated graphs are cached and mapped: the same CSR as building them") {
  TempDir dir("graph-cache-relabel");
  write_text(dir / "g.el", "5 6\n6 7\n7 5\n7 8\n8 9\n9 5\n");
  LoadOptions o{(dir / "cache").string(), /*relabel=*/true};
  const Graph expect = relabel_by_degree(read_edge_list(dir / "g.el"));
  const LoadedGraph built = load_graph(dir / "g.el", o);
  CHECK(built.relabelled);
  CHECK_FALSE(built.from_cache);
  CHECK(built.cache_path.filename().string().ends_with(".deg.csr"));
  const LoadedGraph mapped = load_graph(dir / "g.el", o);
  CHECK(mapped.from_cache);
  CHECK(mapped.relabelled);
  for (const Graph* g : {&built.graph, &mapped.graph}) {
    CHECK(g->offsets == expect.offsets);
    CHECK(g->adj == expect.adj);
    CHECK(g->original_ids == expect.original_ids);
  }
  // The input-ordered cache is another file; the relabelled one given as the graph is mapped as it is.
  CHECK(load_graph(dir / "g.el", LoadOptions{o.cache}).cache_path != built.cache_path);
  const LoadedGraph direct = load_graph_input(built.cache_path.string(), 1, LoadOptions{"off", true});
  CHECK(direct.from_cache);
  CHECK(direct.graph.adj == expect.adj);
  // A renamed cache that holds the other ordering.
  std::filesystem::copy_file(load_graph(dir / "g.el", LoadOptions{o.cache}).cache_path, built.cache_path,
                             std::filesystem::copy_options::overwrite_existing);
  CHECK(cache_error([&] { load_graph(dir / "g.el", o); }).find("degree-relabelled") != std::string::npos);
  // Generators: cached only in a named folder, keyed by spec and seed.
  const Graph rmat = relabel_by_degree(generate_rmat({8, 4}, 3));
  const LoadedGraph gen = load_graph_input("rmat:8:4", 3, o);
  CHECK(gen.generated);
  CHECK_FALSE(gen.from_cache);
  const LoadedGraph again = load_graph_input("rmat:8:4", 3, o);
  CHECK(again.from_cache);
  CHECK(again.generated);
  CHECK(again.graph.adj == rmat.adj);
  CHECK(again.graph.offsets == rmat.offsets);
  CHECK_FALSE(load_graph_input("rmat:8:4", 4, o).from_cache);  // another seed
  CHECK(load_graph_input("rmat:8:4", 3, LoadOptions{"auto", true}).cache_path.empty());
}

TEST_CASE("check_structure accepts clean CSRs and names what a bad one breaks") {
  const Graph clean = build_graph({{0, 1}, {1, 2}, {2, 0}, {2, 3}});
  CHECK(check_structure(clean).empty());
  CHECK(check_structure(relabel_by_degree(clean)).empty());
  const auto broken = [&](auto edit) {
    Graph g = clean;
    edit(g);
    return check_structure(g);
  };
  // Lists of the triangle + tail: 0:{1,2} 1:{0,2} 2:{0,1,3} 3:{2}.
  CHECK(broken([](Graph& g) { g.adj[1] = 0; }).find("self-loop at vertex 0") != std::string::npos);
  CHECK(broken([](Graph& g) { std::swap(g.adj[0], g.adj[1]); }).find("not strictly ascending") != std::string::npos);
  CHECK(broken([](Graph& g) { g.adj[7] = 1; }).find("missing its reverse") != std::string::npos);   // 3 lists 1
  CHECK(broken([](Graph& g) { g.adj[6] = 9; }).find("out of range") != std::string::npos);
  CHECK(broken([](Graph& g) { g.offsets[2] = 8; }).find("offsets decrease") != std::string::npos);
  CHECK(broken([](Graph& g) { g.original_ids = std::vector<std::uint64_t>(g.original_ids.begin(), g.original_ids.end() - 1); })
            .find("original id") != std::string::npos);
}

TEST_CASE("relabelling by degree: degrees non-increasing, ties in id order, the same edges, sorted lists") {
  const Graph g = generate_rmat({10, 8}, 4);
  const Graph h = relabel_by_degree(g);
  for (int threads : {1, 2, 3}) {  // the lists are built in parallel: the same graph on any thread count
    const Graph t = relabel_by_degree(g, threads);
    CHECK(t.adj == h.adj);
    CHECK(t.offsets == h.offsets);
    CHECK(t.original_ids == h.original_ids);
  }
  REQUIRE(check_structure(h).empty());  // lists strictly ascending and symmetric
  REQUIRE(h.n() == g.n());
  REQUIRE(h.m() == g.m());
  std::vector<Vertex> old_of(h.n());  // h's vertex i is g's vertex with the same original id
  std::map<std::uint64_t, Vertex> by_id;
  for (Vertex v = 0; v < g.n(); ++v) by_id[g.original_ids[v]] = v;
  for (Vertex i = 0; i < h.n(); ++i) old_of[i] = by_id.at(h.original_ids[i]);
  for (Vertex i = 0; i + 1 < h.n(); ++i) {
    CHECK(h.degree(i) >= h.degree(i + 1));
    if (h.degree(i) == h.degree(i + 1)) CHECK(old_of[i] < old_of[i + 1]);
  }
  for (Vertex i = 0; i < h.n(); ++i)
    for (Vertex j : h.neighbors(i)) CHECK(g.has_edge(old_of[i], old_of[j]));
}

TEST_CASE("vertex labels follow original ids through relabelling") {
  TempDir dir("graph-labels");
  write_text(dir / "g.el", "5 6\n6 7\n7 5\n7 8\n");
  write_text(dir / "g.labels", "# one per line\n0\n0\n0\n0\n0\n1\n2\n3\n4\n");
  Graph g = read_edge_list(dir / "g.el");
  read_vertex_labels(dir / "g.labels", g);
  const Graph h = relabel_by_degree(g);
  for (Vertex v = 0; v < h.n(); ++v) CHECK(h.labels[v] == static_cast<int>(h.original_ids[v]) - 4);
  CHECK(h.degree(0) == 3);  // vertex 7 has the largest degree
  CHECK(h.original_ids[0] == 7);
  write_text(dir / "short.labels", "0\n1\n");
  CHECK_THROWS_AS(read_vertex_labels(dir / "short.labels", g), core::DataError);
  // Labels of ids the graph lacks are ignored: a huge id allocated a table up to it (bad_alloc, exit 1).
  write_text(dir / "huge.labels", "5 1\n6 2\n7 3\n8 4\n99999999999 9\n18446744073709551615 9\n");
  Graph k = read_edge_list(dir / "g.el");
  read_vertex_labels(dir / "huge.labels", k);
  for (Vertex v = 0; v < k.n(); ++v) CHECK(k.labels[v] == static_cast<int>(k.original_ids[v]) - 4);
  try {
    read_vertex_labels(dir / "absent.labels", k);
    FAIL("expected InputMissingError");
  } catch (const core::InputMissingError& e) {
    CHECK(std::string(e.what()).find("vertex label file") != std::string::npos);  // not "graph input"
  }
}

TEST_CASE("R-MAT builds the CSR of its edge stream without an edge list: the same graph as build_graph") {
  // Two generation passes, in-place sorting, deduplication and compaction against build_graph of the
  // materialised edges; any thread count gives the same graph and report.
  for (const auto& [scale, factor] : {std::pair{4, 3.0}, std::pair{9, 8.0}, std::pair{11, 16.0}}) {
    CAPTURE(scale);
    CleanReport want;
    const Graph expect = build_graph(rmat_edges({scale, factor}, 7), &want);
    REQUIRE(want.duplicates > 0);
    REQUIRE(want.self_loops > 0);
    for (int threads : {1, 2, 3}) {
      RmatParams p{scale, factor};
      p.threads = threads;
      CleanReport got;
      const Graph g = generate_rmat(p, 7, &got);
      CHECK(g.offsets == expect.offsets);
      CHECK(g.adj == expect.adj);
      CHECK(g.original_ids == expect.original_ids);
      CHECK(describe(got) == describe(want));
      CHECK(g.adj.capacity() == g.adj.size());  // the duplicates' slots are given back
    }
  }
}

namespace {

// A fingerprint of the whole CSR (offsets, lists, original ids): FNV-1a over their values.
std::uint64_t csr_fingerprint(const Graph& g) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto add = [&](std::uint64_t x) {
    for (int byte = 0; byte < 8; ++byte) h = (h ^ ((x >> (8 * byte)) & 0xff)) * 0x100000001b3ULL;
  };
  for (const auto x : g.offsets) add(x);
  for (const auto x : g.adj) add(x);
  for (const auto x : g.original_ids) add(x);
  return h;
}

}  // namespace

TEST_CASE("R-MAT graphs are those of the first generator (fingerprints), on any thread count and buffer size") {
  struct Case {
    int scale;
    double factor;
    std::uint64_t fingerprint;  // of the graph the two-pass generator (before bucketing) built, seed 11
  };
  for (const Case& c : {Case{6, 4, 13812175480921921931ULL}, Case{10, 16, 3358259991332844687ULL},
                       Case{13, 16, 14828613168956844436ULL}}) {
    CAPTURE(c.scale);
    // round_entries: the automatic buffer (one round here), and small ones (many rounds of a few buckets).
    for (const std::uint64_t round_entries : {0ULL, 1000ULL, 40000ULL})
      for (int threads : {1, 2}) {
        CAPTURE(round_entries);
        CAPTURE(threads);
        RmatParams p{c.scale, c.factor};
        p.threads = threads;
        p.round_entries = round_entries;
        const Graph g = generate_rmat(p, 11);
        CHECK(csr_fingerprint(g) == c.fingerprint);
      }
  }
}

TEST_CASE("relabelled graphs are those of the first relabelling (fingerprints), on any thread count") {
  // The counting sort by degree, the new offsets and the radix-sorted lists give the graph the first
  // relabelling (a stable sort of the vertices, then std::sort of each renamed list) gave: its fingerprints.
  struct Case {
    int scale;
    double factor;
    std::uint64_t fingerprint;  // of relabel_by_degree(generate_rmat({scale, factor}, 11)) before the counting sort
  };
  for (const Case& c : {Case{6, 4, 9392190591134814868ULL}, Case{10, 16, 12978042121667198506ULL},
                       Case{13, 16, 2978826311596516565ULL}, Case{16, 16, 9253528080769064218ULL}}) {
    CAPTURE(c.scale);
    const Graph g = generate_rmat({c.scale, c.factor}, 11);
    for (int threads : {1, 2, 3}) {
      CAPTURE(threads);
      CHECK(csr_fingerprint(relabel_by_degree(g, threads)) == c.fingerprint);
    }
  }
  // Few distinct degrees, many ties (in id order), isolated-free lists of one or two entries; labels follow.
  Graph k = generate_gnp(3000, 0.002, 4);
  k.labels.resize(k.n());
  for (Vertex v = 0; v < k.n(); ++v) k.labels[v] = static_cast<std::int32_t>(k.original_ids[v] % 7);
  for (int threads : {1, 2, 3}) {
    const Graph h = relabel_by_degree(k, threads);
    CHECK(csr_fingerprint(h) == 2424082989931063151ULL);
    for (Vertex v = 0; v < h.n(); ++v) CHECK(h.labels[v] == static_cast<std::int32_t>(h.original_ids[v] % 7));
  }
}

TEST_CASE("sort_ids sorts like std::sort: short and long lists, repeated ids, every digit count") {
  std::mt19937_64 rng(5);
  std::vector<Vertex> scratch;
  for (const int bits : {1, 7, 8, 9, 16, 17, 24, 32})
    for (const std::size_t length : {0, 1, 63, 64, 65, 300, 5000, 70000}) {
      CAPTURE(bits);
      CAPTURE(length);
      const std::uint64_t bound = std::uint64_t{1} << bits;
      std::vector<Vertex> list(length);
      // Ids in [0, 2^bits), half of the lists from a narrow range (repeats; high digits all equal).
      const std::uint64_t range = length % 2 == 0 ? bound : std::min<std::uint64_t>(bound, 50);
      for (Vertex& x : list) x = static_cast<Vertex>(bound - 1 - rng() % range);
      std::vector<Vertex> expect = list;
      std::sort(expect.begin(), expect.end());
      sort_ids(list.data(), list.data() + list.size(), bits, scratch);
      CHECK(list == expect);
    }
  CHECK(id_bits(0) == 1);
  CHECK(id_bits(1) == 1);
  CHECK(id_bits(2) == 1);
  CHECK(id_bits(3) == 2);
  CHECK(id_bits(std::uint64_t{1} << 24) == 24);
  CHECK(id_bits((std::uint64_t{1} << 24) + 1) == 25);
}

TEST_CASE("generators are seeded and clean") {
  const Graph a = generate_rmat({10, 8}, 42), b = generate_rmat({10, 8}, 42), c = generate_rmat({10, 8}, 43);
  CHECK(a.adj == b.adj);
  CHECK(a.adj != c.adj);
  CHECK(a.n() <= 1024);
  CHECK(a.m() > 4000);
  for (Vertex v = 0; v < a.n(); ++v) CHECK(std::is_sorted(a.neighbors(v).begin(), a.neighbors(v).end()));
  // R-MAT is skewed: the top vertex has far more than the mean degree.
  CHECK(a.max_degree() > 10 * (2 * a.m() / a.n()));
  const Graph g = generate_gnp(2000, 0.01, 5);
  const double expect = 0.01 * 2000 * 1999 / 2;
  CHECK(std::abs(static_cast<double>(g.m()) - expect) < 5 * std::sqrt(expect));
  CHECK(generate_from_spec("rmat:8:4", 1)->m() > 0);
  CHECK_FALSE(generate_from_spec("file.el", 1).has_value());
  CHECK_THROWS_AS(generate_from_spec("rmat:x", 1), core::UsageError);
}

TEST_CASE("generator specs: counts are integers, parameters finite, tiny p no garbage") {
  // Each of these was accepted: scale 8.7 ran as 8, n = -5 wrapped to 2^64 - 5 (bad_alloc after a
  // minute), 2.5 became 2, an infinite edge factor gave an empty graph.
  for (const char* spec : {"rmat:8.7", "rmat:-3", "rmat:8:inf", "rmat:8:nan", "rmat:2:0.1", "gnp:-5:0.5",
                           "gnp:2.5:0.5", "gnp:1e30:0.5", "gnp:5000000000:0.5", "gnp::0.5"}) {
    CAPTURE(spec);
    CHECK_THROWS_AS(generate_from_spec(spec, 1), core::UsageError);
  }
  // At p = 1e-300 the geometric gap overflowed int64: a complete graph with ids near 2^63 came out.
  CHECK_THROWS_AS(generate_from_spec("gnp:10:1e-300", 1), core::UsageError);  // no edges
  // The smallest p that still gives edges keeps ids in range.
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    CleanReport r;
    try {
      generate_gnp(100, 1e-4, seed, &r);
    } catch (const core::UsageError&) {
      continue;  // no edge drawn
    }
    CHECK(r.max_input_id < 100);
  }
  CHECK(generate_from_spec("gnp:10:1", 1)->m() == 45);
  // A graph that cannot fit in memory is refused before generation (gnp:1e8:0.9 ran out of memory
  // after a minute, exit 1): 4.5e15 and 1.1e12 edges need petabytes and terabytes.
  for (const char* spec : {"gnp:100000000:0.9", "rmat:40:1"}) {
    CAPTURE(spec);
    CHECK_THROWS_WITH_AS(generate_from_spec(spec, 1), doctest::Contains("GB available"), core::UsageError);
  }
}

TEST_CASE("a Matrix Market file is known by its header whatever its name; a huge declared size is no crash") {
  TempDir dir("graph-mm-name");
  // Read as an edge list, the header is a '%' comment and the size line '4 5 3' the edge 4-5.
  const char* mm = "%%MatrixMarket matrix coordinate pattern general\n4 5 3\n2 1\n3 1\n3 2\n";
  for (const char* name : {"g.txt", "g.MTX", "g"}) {
    CAPTURE(name);
    write_text(dir / name, mm);
    CHECK(format_of(dir / name) == GraphFormat::matrix_market);
    const LoadedGraph g = load_graph(dir / name, LoadOptions{"off"});
    CHECK(g.graph.n() == 3);
    CHECK(g.graph.m() == 3);
  }
  write_text(dir / "plain.el", "% konect-style comment\n0 1\n");
  CHECK(format_of(dir / "plain.el") == GraphFormat::edge_list);
  // The declared entry count was reserved up front: bad_alloc (exit 1) instead of a data error.
  write_text(dir / "huge.mtx", "%%MatrixMarket matrix coordinate pattern general\n99999999999 99999999999 99999999999\n1 2\n");
  CHECK_THROWS_AS(read_matrix_market(dir / "huge.mtx"), core::DataError);
}

TEST_CASE("a damaged CSR cache is an error naming it, never trusted; another version is rebuilt") {
  TempDir dir("graph-cache-damage");
  write_text(dir / "g.el", "0 1\n1 2\n2 0\n2 3\n3 4\n");
  const LoadOptions cache{(dir / "cache").string()};
  const LoadedGraph first = load_graph(dir / "g.el", cache);
  const std::string good = core::test::read_text(first.cache_path);
  const std::string name = first.cache_path.string();
  const auto damaged = [&](std::size_t at, std::string bytes) {
    std::string d = good;
    d.replace(at, bytes.size(), bytes);
    write_text(first.cache_path, d);
    return cache_error([&] { load_graph(dir / "g.el", cache); });
  };
  // An adjacency entry past n (the matcher would index out of range; the adjacency is last).
  CHECK(damaged(good.size() - sizeof(Vertex), std::string(sizeof(Vertex), '\xff')).find(name) != std::string::npos);
  // A vertex count of ~2^64 in the header (was a resize to it: bad_alloc).
  CHECK(damaged(80, std::string(8, '\x7f')).find("impossible counts") != std::string::npos);
  // Any single flipped bit past the source's stamp (it turned a triangle count of 13 into 12).
  for (std::size_t at = 32; at < good.size(); at += 7) {
    std::string d = good;
    d[at] = static_cast<char>(d[at] ^ (1 << (at % 8)));
    write_text(first.cache_path, d);
    CAPTURE(at);
    CHECK(cache_error([&] { load_graph(dir / "g.el", cache); }).find(name) != std::string::npos);
  }
  CHECK(damaged(8, "\x01").find("checksum mismatch") != std::string::npos);  // the relabelled flag
  // Truncated (and the same file given as the graph itself).
  write_text(first.cache_path, good.substr(0, good.size() - 3));
  CHECK(cache_error([&] { load_graph(dir / "g.el", cache); }).find("truncated") != std::string::npos);
  CHECK(cache_error([&] { map_csr_cache(first.cache_path); }).find("truncated") != std::string::npos);
  write_text(first.cache_path, good.substr(0, 40));
  CHECK(cache_error([&] { load_graph(dir / "g.el", cache); }).find("shorter than its header") != std::string::npos);
  // Not a cache at all, where one is expected.
  write_text(first.cache_path, "0 1\n1 2\n");
  CHECK(cache_error([&] { load_graph(dir / "g.el", cache); }).find("not a graph cache") != std::string::npos);
  // A cache of another format version (the previous one had no flags) is rebuilt; given as the graph, an error.
  std::string old = good;
  old[7] = '2';
  write_text(first.cache_path, old);
  CHECK(cache_error([&] { map_csr_cache(first.cache_path); }).find("another format version") != std::string::npos);
  CHECK_FALSE(load_graph(dir / "g.el", cache).from_cache);
  CHECK(load_graph(dir / "g.el", cache).from_cache);  // rewritten whole
  CHECK(core::test::read_text(first.cache_path) == good);
}
