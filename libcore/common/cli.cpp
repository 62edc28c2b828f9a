// The shared command-line factory (see cli.hpp): common flags, config resolution, run directory,
// and the one place where exceptions become exit codes.
#include "common/cli.hpp"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <tuple>

#include "common/build_info.hpp"
#include "common/log.hpp"
#include "common/signals.hpp"
#include "common/threads.hpp"

namespace core {

struct App::Common {
  std::vector<std::string> configs;
  std::vector<std::string> sets;
  std::string out;
  std::string seed;
  std::string device;
  std::string threads;
  int verbose = 0;
  int quiet = 0;
  std::string progress = "auto";
  bool print_config = false;
  bool dry_run = false;
};

void RunContext::emit_result(const nlohmann::json& result) {
  if (result_emitted_) throw Error(ExitCode::internal, "a command emitted its result twice");
  result_emitted_ = true;
  if (rank != 0) return;
  // Strings from the command line or the file system need not be UTF-8: invalid bytes become U+FFFD
  // rather than failing the run after its work is done.
  constexpr auto replace = nlohmann::json::error_handler_t::replace;
  std::cout << result.dump(-1, ' ', false, replace) << std::endl;
  if (rundir) write_file_atomic(rundir->path() / "result.json", result.dump(2, ' ', false, replace) + "\n");
}

Command& Command::flag(const std::string& flag_name, const std::string& key, const std::string& help) {
  auto b = std::make_unique<Binding>();
  b->flag = flag_name;
  b->key = key;
  cli_->add_option(flag_name, b->value, help + " (config key '" + key + "')");
  bindings_.push_back(std::move(b));
  return *this;
}

Command& Command::switch_flag(const std::string& flag_name, const std::string& key, const std::string& help) {
  auto b = std::make_unique<Binding>();
  b->flag = flag_name;
  b->key = key;
  b->is_switch = true;
  cli_->add_flag(flag_name, b->switched, help + " (config key '" + key + "')");
  bindings_.push_back(std::move(b));
  return *this;
}

Command& Command::positional(const std::string& key, const std::string& help) {
  positional_key_ = key;
  cli_->description(cli_->get_description() + "; positional argument: " + help + " (config key '" + key + "')");
  return *this;
}

Command& Command::without_rundir() {
  rundir_ = false;
  // Not listed by --help (an explicit --out is still refused with a message below).
  if (CLI::Option* out = cli_->get_option_no_throw("--out")) out->group("");
  return *this;
}

Command& Command::rundir_with_out() {
  rundir_ = false;
  rundir_with_out_ = true;
  return *this;
}

Command& Command::stops_at_signal() {
  stops_at_signal_ = true;
  return *this;
}

static void add_common_options(CLI::App* app, App::Common& c, bool with_positionals) {
  // One file per --config, so that `--config FILE key=value` leaves key=value to the overrides.
  app->add_option("--config", c.configs, "YAML config file (repeatable; later files win)")->allow_extra_args(false);
  app->add_option("--set", c.sets, "Config override key=value, +key=value (add) or ~key (delete)");
  if (with_positionals) app->add_option("overrides", c.sets, "Config overrides key=value, +key=value, ~key");
  app->add_option("--out", c.out, "Run directory (default runs/<tool>/<UTC time>-<id>)");
  app->add_option("--seed", c.seed, "Random seed (config key 'seed')");
  app->add_option("--device", c.device, "cpu or cuda (config key 'device')");
  app->add_option("--threads", c.threads, "CPU threads; 0: OMP_NUM_THREADS when set, else all cores (config key 'threads')");
  app->add_flag("-v,--verbose", c.verbose, "More log output (repeat for trace)");
  app->add_flag("-q,--quiet", c.quiet, "Only warnings and errors on stderr");
  app->add_option("--progress", c.progress, "Progress display: auto, always or never");
  app->add_flag("--print-config", c.print_config, "Print the resolved config as YAML and exit");
  app->add_flag("--dry-run", c.dry_run, "Validate the config (keys, types, ranges), then exit without reading inputs or running");
  app->footer(exit_code_table());
}

App::App(std::string tool, std::string description)
    : tool_(std::move(tool)), cli_(std::make_unique<CLI::App>(std::move(description), tool_)),
      common_(std::make_unique<Common>()) {
  cli_->set_version_flag("--version", version_string());
  cli_->require_subcommand(0, 1);
  add_common_options(cli_.get(), *common_, true);  // `tool key=value` runs the default command
}

App::~App() = default;

Command& App::add_command(const std::string& name, const std::string& description, bool is_default) {
  auto cmd = std::make_unique<Command>();
  cmd->name_ = name;
  cmd->cli_ = cli_->add_subcommand(name, description);
  add_common_options(cmd->cli_, *common_, true);
  commands_.push_back(std::move(cmd));
  if (is_default) default_command_ = commands_.back().get();
  return *commands_.back();
}

static std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

static std::string host_name() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

static std::string quote_arg(const std::string& a) {
  if (!a.empty() && a.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;#~") == std::string::npos) return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Applies a common flag (--seed/--device) to the command's key of the same name.
static void set_common_key(ConfigTree& tree, const std::string& key, const std::string& value,
                           const std::string& command) {
  if (value.empty()) return;
  if (!tree.has_key(key)) throw UsageError("--" + key + " does not apply to '" + command + "' (it has no '" + key + "' key)");
  tree.set_existing(key, YAML::Node(value), "--" + key);
}

// The `threads` key of every command (threads.hpp): the value asked for, from the tree.
static int requested_threads(const ConfigTree& tree) {
  try {
    return tree.root()["threads"].as<int>();
  } catch (const YAML::Exception&) {
    throw UsageError("threads (" + tree.source_of("threads") + "): expected an integer >= 0 (0: all cores, or OMP_NUM_THREADS)");
  }
}

int App::run_command(Command& cmd, RunContext& ctx) {
  Common& c = *common_;
  // Every command has a top-level `threads` key: the command's own (which then receives the resolved count), or
  // one the App adds and keeps to itself.
  YAML::Node defaults = cmd.defaults_();
  const bool own_threads_key = static_cast<const YAML::Node&>(defaults)["threads"].IsDefined();
  if (!own_threads_key) defaults["threads"] = 0;
  ConfigTree tree(defaults);
  for (const auto& f : c.configs) tree.merge_file(f);
  std::string positional_value;
  for (const auto& o : c.sets) {
    if (!cmd.positional_key_.empty() && positional_value.empty() && o.find('=') == std::string::npos &&
        !o.starts_with("~")) {
      positional_value = o;
      continue;
    }
    tree.apply_override(o);
  }
  if (!positional_value.empty()) tree.set_existing(cmd.positional_key_, YAML::Node(positional_value), "positional argument");
  for (const auto& b : cmd.bindings_) {
    if (b->is_switch) {
      if (b->switched) tree.set_existing(b->key, YAML::Node(true), b->flag);
    } else if (cmd.cli_->count(b->flag) > 0) {
      tree.set_existing(b->key, YAML::Node(b->value), b->flag);
    }
  }
  const bool writes_rundir = cmd.rundir_ || (cmd.rundir_with_out_ && !c.out.empty());
  if (!writes_rundir && !c.out.empty())
    throw UsageError("--out does not apply to '" + cmd.name_ + "' (it writes no run directory)");
  set_common_key(tree, "seed", c.seed, cmd.name_);
  set_common_key(tree, "device", c.device, cmd.name_);
  set_common_key(tree, "threads", c.threads, cmd.name_);

  const bool threads_given = tree.has_key("threads");  // `~threads` takes it back to 0
  const int threads_asked = threads_given ? requested_threads(tree) : 0;
  const ThreadChoice threads = resolve_threads(threads_asked);
  if (own_threads_key && threads_given) tree.set_existing("threads", YAML::Node(threads.count), tree.source_of("threads"));
  else if (own_threads_key) tree.apply_override("+threads=" + std::to_string(threads.count));
  else if (threads_given) tree.apply_override("~threads");
  ctx.resolved_config = cmd.resolve_(tree);  // validates every key, type and range
  ctx.resolved_config["threads"] = threads_asked;  // the request (0 stays 0: the count is in the manifest)
  if (c.print_config) {
    if (ctx.rank != 0) return static_cast<int>(ExitCode::ok);
    std::cout << yaml_to_string(ctx.resolved_config);
    return static_cast<int>(ExitCode::ok);
  }
  if (c.dry_run) {
    log::info("dry run: config of '{} {}' is valid; nothing was run", tool_, cmd.name_);
    return static_cast<int>(ExitCode::ok);
  }

  set_thread_count(threads.count);
  ctx.threads = threads.count;
  log::info("threads: {} ({})", threads.count, threads.source);
  const auto started = std::chrono::steady_clock::now();
  if (writes_rundir && ctx.rank == 0) {
    check_run_dir_reuse(c.out, tool_, cmd.name_);
    ctx.rundir = std::make_shared<RunDir>(tool_, c.out);
    write_file_atomic(ctx.rundir->path() / "config.resolved.yaml", yaml_to_string(ctx.resolved_config));
    std::string line;
    for (const auto& a : ctx.argv) line += (line.empty() ? "" : " ") + quote_arg(a);
    write_file_atomic(ctx.rundir->path() / "command.txt", line + "\n");
    nlohmann::json m = build_info();
    m["tool"] = tool_;
    m["command"] = cmd.name_;
    m["host"] = host_name();
    m["ranks"] = ctx.world_size;
    m["threads"] = threads.count;
    if (ctx.resolved_config["seed"]) m["seed"] = ctx.resolved_config["seed"].as<std::string>();
    m["start"] = utc_now();
    m["status"] = "running";
    ctx.rundir->write_manifest(m);
    log::info("run directory: {}", ctx.rundir->path().string());
  }

  // Records how the run ended in the manifest (also when the command throws).
  auto finish = [&](int rc, const std::string& error) {
    if (!ctx.rundir) return;
    auto& m = ctx.rundir->manifest();
    m["end"] = utc_now();
    m["elapsed_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    m["exit_code"] = rc;
    m["status"] = error.empty() ? "finished" : "failed";
    if (!error.empty()) m["error"] = error;
    ctx.rundir->write_manifest(m);
  };
  int rc = static_cast<int>(ExitCode::internal);
  try {
    rc = cmd.run_(ctx, tree);
  } catch (const Error& e) {
    finish(static_cast<int>(e.code()), e.what());
    throw;
  } catch (const std::exception& e) {
    finish(static_cast<int>(ExitCode::internal), e.what());
    throw;
  }
  finish(rc, "");
  return rc;
}

// Without a command, a positional word that is not an override was most likely meant as a command.
void App::check_default_command_overrides(const std::vector<std::string>& words) const {
  for (const auto& w : words) {
    if (w.find('=') != std::string::npos || w.starts_with("~")) continue;
    std::string names;
    for (const auto& cmd : commands_) names += (names.empty() ? "" : ", ") + cmd->name_;
    throw UsageError("'" + w + "' is neither a command (" + names + ") nor an override key=value");
  }
}

int App::main(int argc, char** argv) {
  RunContext ctx;
  ctx.tool = tool_;
  ctx.argv.assign(argv, argv + argc);
  try {
    try {
      cli_->parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return cli_->exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return cli_->exit(e);
    } catch (const CLI::CallForVersion& e) {
      return cli_->exit(e);
    } catch (const CLI::ParseError& e) {
      std::cerr << tool_ << ": " << e.what() << "\nRun '" << tool_ << " --help' for usage.\n";
      return static_cast<int>(ExitCode::usage);
    }
    Common& c = *common_;
    ctx.verbosity = c.quiet > 0 ? -1 : std::min(c.verbose, 2);
    ctx.progress = parse_progress_mode(c.progress);
    ctx.dry_run = c.dry_run;
    setup_logging(ctx.verbosity);
    set_progress_mode(ctx.progress);
    if (discover_ranks_) std::tie(ctx.rank, ctx.world_size) = discover_ranks_();

    Command* chosen = nullptr;
    for (auto& cmd : commands_)
      if (cmd->cli_->parsed()) chosen = cmd.get();
    if (!chosen) check_default_command_overrides(c.sets);
    if (!chosen) chosen = default_command_;
    if (!chosen) {
      std::cerr << cli_->help();
      return static_cast<int>(ExitCode::usage);
    }
    if (chosen->stops_at_signal_) install_stop_signals();
    ctx.command = chosen->name_;
    return run_command(*chosen, ctx);
  } catch (const Error& e) {
    setup_logging(ctx.verbosity);
    log::error("{}", e.what());
    return end_job(ctx, static_cast<int>(e.code()));
  } catch (const std::exception& e) {
    setup_logging(ctx.verbosity);
    log::error("internal error: {}", e.what());
    return end_job(ctx, static_cast<int>(ExitCode::internal));
  }
}

int App::end_job(const RunContext& ctx, int code) const {
  if (ctx.world_size > 1 && abort_job_) {
    log::error("rank {} of {} failed (exit {}): ending every rank of the job", ctx.rank, ctx.world_size, code);
    abort_job_(code);
  }
  return code;
}

std::string version_string() {
  const auto info = build_info();
  return info["tool_version"].get<std::string>() + " (git " + info["git_sha"].get<std::string>() + ", " +
         info["build_type"].get<std::string>() + ", " + info["compiler"].get<std::string>() +
         ", cuda " + info["cuda"].get<std::string>() + ", mpi " + info["mpi"].get<std::string>() + ")";
}

nlohmann::json build_info() {
  return {{"tool_version", TOOLKIT_VERSION},  {"git_sha", build_git_sha()},
          {"build_type", TOOLKIT_BUILD_TYPE}, {"compiler", TOOLKIT_COMPILER},
          {"cxx_flags", TOOLKIT_CXX_FLAGS},   {"cuda", TOOLKIT_CUDA_INFO},
          {"mpi", TOOLKIT_MPI_INFO}};
}

}  // namespace core
