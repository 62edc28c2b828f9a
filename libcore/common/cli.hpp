// The command-line factory every tool uses (CLI11). It gives each tool the common flags of the
// conventions (--config, overrides, --out, --seed, --device, -v/-q, --progress, --print-config,
// --dry-run, --threads, --version, --help with the exit code table), resolves the typed options of the
// chosen subcommand, prepares the run directory and maps exceptions to exit codes.
//
//   int main(int argc, char** argv) {
//     core::App app("tls-fit", "Total least-squares line fitting with certificates");
//     app.command<FitOptions>("fit", "Fit a line", run_fit, /*is_default=*/true)
//         .flag("--input", "input", "CSV file of x,y points");
//     return app.main(argc, argv);
//   }
//
// A command function receives the RunContext and its options and returns an exit code. It
// writes its one stdout JSON object with ctx.emit_result(). `--seed` and `--device` set the
// option keys `seed` and `device`; a command without such a key rejects the flag.
#pragma once
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/progress.hpp"
#include "common/rundir.hpp"

namespace CLI {
class App;
}

namespace core {

struct RunContext {
  std::string tool;
  std::string command;
  std::vector<std::string> argv;
  ProgressMode progress = ProgressMode::automatic;
  int verbosity = 0;  // -1 quiet, 0 info, 1 debug, 2 trace
  bool dry_run = false;
  int threads = 1;  // CPU threads of this command (threads.hpp: resolved from `threads`, already applied)
  int rank = 0, world_size = 1;  // from App::use_ranks; only rank 0 writes the run directory and stdout
  YAML::Node resolved_config;
  // Null for commands that do not write a run directory (or under --dry-run).
  std::shared_ptr<RunDir> rundir;

  // Prints the command's single JSON result on stdout (compact, one line) and keeps a copy in
  // the run directory as result.json. Call at most once.
  void emit_result(const nlohmann::json& result);
  bool result_emitted() const { return result_emitted_; }

 private:
  bool result_emitted_ = false;
};

class Command {
 public:
  // Binds a tool-specific flag to a config key: `--input F` is the override `input=F`.
  Command& flag(const std::string& flag_name, const std::string& key, const std::string& help);
  // Binds a boolean switch to a config key: `--verify` is the override `verify=true`.
  Command& switch_flag(const std::string& flag_name, const std::string& key, const std::string& help);
  // Binds the command's first positional word that is not an override (has no '=' and no leading
  // '~') to a config key: `unpack FILE` is the override `key=FILE`.
  Command& positional(const std::string& key, const std::string& help);
  // Commands that only read (e.g. `plan`, `sdp`) can skip the run directory.
  Command& without_rundir();
  // A run directory only when --out is given (e.g. `eval`: a result on stdout, or a recorded run).
  Command& rundir_with_out();
  // Commands that poll core::stop_requested() and then end with ExitCode::interrupted: SIGTERM and
  // SIGUSR1 ask them to stop (signals.hpp). Every other command keeps the signals' default action.
  Command& stops_at_signal();
  CLI::App* cli() { return cli_; }

 private:
  friend class App;
  struct Binding {
    std::string flag, key;
    std::string value;     // filled by CLI11 for value flags
    bool is_switch = false;
    bool switched = false;  // filled by CLI11 for switches
  };
  std::string name_;
  CLI::App* cli_ = nullptr;
  std::function<YAML::Node()> defaults_;
  std::function<YAML::Node(const ConfigTree&)> resolve_;  // typed read + canonical re-write
  std::function<int(RunContext&, const ConfigTree&)> run_;
  bool rundir_ = true;
  bool rundir_with_out_ = false;
  bool stops_at_signal_ = false;
  std::string positional_key_;
  std::vector<std::unique_ptr<Binding>> bindings_;
  std::vector<std::string> overrides_;  // positional key=value
};

class App {
 public:
  App(std::string tool, std::string description);
  ~App();

  template <class Options>
  Command& command(const std::string& name, const std::string& description,
                   std::function<int(RunContext&, const Options&)> fn, bool is_default = false) {
    Command& c = add_command(name, description, is_default);
    c.defaults_ = [] { return options_to_yaml(Options{}); };
    c.resolve_ = [](const ConfigTree& tree) { return options_to_yaml(options_from_tree<Options>(tree)); };
    c.run_ = [fn](RunContext& ctx, const ConfigTree& tree) {
      const Options opts = options_from_tree<Options>(tree);
      return fn(ctx, opts);
    };
    return c;
  }

  // For distributed tools: how to find this process's rank and the world size (e.g. from
  // core::comm::discover_ranks). Called once after parsing; ranks other than 0 get no run
  // directory and print no result.
  // `abort_job(code)`, when given, ends the whole job (every rank) with that exit code; it is called when a
  // command fails with an error on any rank of several, so that the others stop within seconds instead of
  // waiting out the communicator timeout (e.g. core::comm::abort_job: MPI_Abort).
  void use_ranks(std::function<std::pair<int, int>()> discover, std::function<void(int)> abort_job = {}) {
    discover_ranks_ = std::move(discover);
    abort_job_ = std::move(abort_job);
  }

  // Parses, resolves, runs; returns the process exit code. Never throws.
  int main(int argc, char** argv);

  struct Common;  // values of the common flags

 private:
  Command& add_command(const std::string& name, const std::string& description, bool is_default);
  int run_command(Command& cmd, RunContext& ctx);
  void check_default_command_overrides(const std::vector<std::string>& words) const;
  int end_job(const RunContext& ctx, int code) const;  // a failed rank ends the job (abort_job_), else returns code
  std::string tool_;
  std::unique_ptr<CLI::App> cli_;
  std::unique_ptr<Common> common_;
  std::vector<std::unique_ptr<Command>> commands_;
  Command* default_command_ = nullptr;
  std::function<std::pair<int, int>()> discover_ranks_;
  std::function<void(int)> abort_job_;
};

// Version string with git sha and build flags (what --version prints and manifests record).
std::string version_string();
nlohmann::json build_info();

}  // namespace core
