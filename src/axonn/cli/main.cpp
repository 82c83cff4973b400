// The `axonn` command: one binary, one subcommand per job. Every error ends here as one line on stderr and a
// non-zero exit status: 2 for a bad command line (an unknown flag, a bad value), 1 for anything else the user or
// the machine can cause (bad data, files, a full disk), 70 for an internal error that is this program's fault.
// Under mpirun a failure on any rank ends the whole job (comm/job_errors.h says how). A training run stopped by
// SIGTERM, SIGUSR1 or a first Ctrl-C or hang-up saves a checkpoint and exits with 75 (train/stop_signals.h).
#include "axonn/cli/argument_values.h"
#include "axonn/cli/commands.h"
#include "axonn/cli/config_file.h"
#include "axonn/cli/subcommands.h"
#include "axonn/comm/job_errors.h"
#include "axonn/comm/mpi_session.h"
#include "axonn/comm/same_on_every_rank.h"
#include "axonn/core/address_space.h"
#include "axonn/core/error.h"
#include "axonn/core/file_io.h"
#include "axonn/core/standard_streams.h"
#include "axonn/train/stop_signals.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <system_error>

namespace {

// CLI11's words for a value it could not convert, said plainly: a whole number written in decimal (the only form
// require_checked_values lets through to an integer option) fails only by its size. (It lets through only decimal
// numbers to an option of real numbers, which strtod reads whatever their size, and the options of words name
// their choices themselves; anything else keeps CLI11's words.)
std::string conversion_error_text(CLI::ConversionError const& error) {
    std::string const text = error.what();
    constexpr std::string_view prefix = "Could not convert: ";
    std::size_t const equals = text.find(" = ");
    if (!text.starts_with(prefix) || equals == std::string::npos) return text;
    std::string const option = text.substr(prefix.size(), equals - prefix.size()), value = text.substr(equals + 3);
    std::string_view number = value;
    bool const negative = number.starts_with('-');
    if (negative || number.starts_with('+')) number.remove_prefix(1);
    if (!number.empty() && number.find_first_not_of("0123456789") == std::string_view::npos) {
        return fmt::format("{} {} is too {} a number for it: give a {} one", option, value,
                           negative ? "small" : "large", negative ? "larger" : "smaller");
    }
    return text;
}

// The options a command does not take, named in the order given (CLI11 lists the words it did not expect in the
// order it read them: the command line's last first, values among them, "0 --sample-tokens 1 --steps").
std::string extras_error_text(CLI::App const& app, std::vector<std::string> const& arguments,
                              CLI::ExtrasError const& error) {
    axonn::NamedCommand const named = axonn::named_command(app, arguments);
    std::vector<std::string> unknown;
    for (std::size_t i = named.first_argument; named.command != nullptr && i < arguments.size(); ++i) {
        std::string const name = arguments[i].substr(0, arguments[i].find('='));
        if (name.starts_with("--") && named.command->get_option_no_throw(name) == nullptr) unknown.push_back(name);
    }
    if (unknown.empty()) return fmt::format("{} (see `axonn {} --help`)", error.what(), named.name);
    return fmt::format("`axonn {}` does not take {}: see `axonn {} --help`", named.name, fmt::join(unknown, ", "),
                       named.name);
}

std::vector<std::string> command_names(CLI::App const& app) {
    std::vector<std::string> names;
    for (CLI::App const* command : app.get_subcommands([](CLI::App const*) { return true; })) {
        names.push_back(command->get_name());
    }
    return names;
}

// The first argument must name a command (or ask for help); CLI11 would only say that one is required.
void check_command_named(std::vector<std::string> const& arguments, std::vector<std::string> const& names) {
    if (arguments.size() < 2) {
        throw axonn::UsageError(fmt::format("a subcommand is required: choose one of {} (see `axonn --help`)",
                                            fmt::join(names, ", ")));
    }
    std::string const& first = arguments[1];
    if (first == "--help" || first == "-h" || std::find(names.begin(), names.end(), first) != names.end()) return;
    if (first.rfind('-', 0) == 0) {
        throw axonn::UsageError(fmt::format("unknown option '{}': the first argument names a command, one of {} (see "
                                            "`axonn --help`)", first, fmt::join(names, ", ")));
    }
    throw axonn::UsageError(fmt::format("unknown command '{}': choose one of {} (see `axonn --help`)", first,
                                        fmt::join(names, ", ")));
}

// A command of subcommands (`corpus`, `memorization`) takes its options after the subcommand's name. Before it,
// they were read as the group's: a config file's keys were called unknown and an option CLI11 passed on was lost,
// with messages that named the group's help, which lists no options.
void check_subcommand_named(CLI::App const& app, std::vector<std::string> const& arguments) {
    axonn::NamedCommand const named = axonn::named_command(app, arguments);
    if (named.command == nullptr || named.command->get_subcommands([](CLI::App const*) { return true; }).empty() ||
        named.first_argument >= arguments.size()) {
        return;
    }
    std::string const& next = arguments[named.first_argument];
    if (!next.starts_with('-') || next == "--help" || next == "-h" || next == "--help-all") return;
    throw axonn::UsageError(fmt::format("`axonn {0}` takes a subcommand before any option, as in `axonn {0} {1} {2}`: "
                                        "`axonn {0} --help` lists its subcommands",
                                        named.name, command_names(*named.command).front(), next));
}

// Every rank of a job runs the same command, config files read: ranks given others built other models, grids or
// data, and hung in each other's collectives or crashed. `arguments` as expanded (its program name left out).
void require_one_command_line(std::vector<std::string> const& arguments) {
    int mpi_started = 0;
    MPI_Initialized(&mpi_started);
    if (!mpi_started) return;  // the help, read without MPI (asks_for_help): no other ranks
    std::string joined;
    for (std::size_t i = 1; i < arguments.size(); ++i) joined += arguments[i] + '\0';
    if (auto const rank = axonn::first_rank_differing_from_rank_zero(joined)) {
        throw axonn::UsageError(fmt::format("rank {} was given other arguments than rank 0 (options, or values in "
                                            "its --config files): every rank of a job takes the same command line; "
                                            "check the mpirun or srun command",
                                            *rank));
    }
}

// What the command printed is its result (a plan, a JSON record): an output that could not take it all is a
// failure, not success.
axonn::Error output_error(std::string const& reason) {
    return axonn::Error(fmt::format("cannot write the output: {}: check where standard output goes", reason));
}

// Why a write to standard output failed earlier in the command, where the final flush did not (errno is long
// since another call's: a full disk was reported as "No such file or directory"): asked of the output again, with
// one byte that ends the line it cut.
std::string earlier_output_problem() {
    if (::write(STDOUT_FILENO, "\n", 1) < 0) return std::strerror(errno);
    return "part of it was lost";
}

// Standard output took all the command printed (its result, or the help), or the command fails.
void require_output_written() {
    std::cout.flush();  // CLI11 prints the help through std::cout
    if (std::fflush(stdout) != 0) throw output_error(std::strerror(errno));
    if (std::ferror(stdout) || !std::cout) throw output_error(earlier_output_problem());
}

int run(int argc, char** argv) {
    CLI::App app{"axonn: train GPT-style language models with 4D hybrid parallelism (AxoNN's algorithm) in C++",
                 "axonn"};
    app.footer("Run `axonn COMMAND --help` for a command's options. Docs: README.md, docs/ARCHITECTURE.md.\n"
               "Exit status: 0 success, 1 an error in data, files or the run, 2 a bad command line, 70 a bug,\n"
               "75 a training run stopped by SIGTERM, SIGUSR1, Ctrl-C or SIGHUP after saving its checkpoint\n"
               "(resume it; `mpirun` itself exits 1 when it is sent SIGTERM or Ctrl-C, 75 on SIGUSR1:\n"
               "docs/CLUSTERS.md).");
    app.require_subcommand(1);
    // A later value of an option replaces an earlier one: how the command line overrides a config file.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    axonn::add_train_command(app);
    axonn::add_prepare_command(app);
    axonn::add_corpus_command(app);
    axonn::add_bench_command(app);
    axonn::add_parity_command(app);
    axonn::add_plan_command(app);
    axonn::add_tune_command(app);
    axonn::add_calibrate_command(app);
    axonn::add_export_command(app);
    axonn::add_memorization_command(app);
    axonn::add_import_command(app);
    axonn::add_generate_command(app);
    axonn::add_tokenize_command(app);
    axonn::add_config_options(app);
    std::vector<std::string> arguments(argv, argv + argc);
    check_command_named(arguments, command_names(app));
    check_subcommand_named(app, arguments);
    arguments = axonn::as_usage_errors([&] { return axonn::expand_config_files(app, std::move(arguments)); });
    axonn::require_checked_values(app, arguments);
    arguments = axonn::empty_values_apart(std::move(arguments));
    require_one_command_line(arguments);
    // CLI11 takes the arguments after the program name, last first.
    std::vector<std::string> reversed(arguments.rbegin(), arguments.rend() - 1);
    try {
        app.parse(reversed);
    } catch (CLI::CallForHelp const& e) {
        int const status = app.exit(e);
        require_output_written();  // `axonn --help > /dev/full` exited 0
        return status;
    } catch (CLI::CallForAllHelp const& e) {
        int const status = app.exit(e);
        require_output_written();
        return status;
    } catch (CLI::ConversionError const& e) {
        throw axonn::UsageError(fmt::format("{} (see `axonn {} --help`)", conversion_error_text(e),
                                            axonn::named_command(app, arguments).name));
    } catch (CLI::ExtrasError const& e) {
        throw axonn::UsageError(extras_error_text(app, arguments, e));
    } catch (CLI::ParseError const& e) {
        throw axonn::UsageError(
            fmt::format("{} (see `axonn {} --help`)", e.what(), axonn::named_command(app, arguments).name));
    } catch (std::system_error const& e) {
        // fmt reports a write that failed mid-command (an output longer than the stream's buffer) as a
        // system_error; where it was standard output's, it is the failure checked below.
        if (std::ferror(stdout)) throw output_error(e.code().message());
        throw;
    }
    require_output_written();
    return 0;
}

// Whether the command line asks for help (-h, --help or --help-all before any `--`), which needs no MPI.
bool asks_for_help(int argc, char** argv) {
    for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
        for (char const* flag : {"-h", "--help", "--help-all"}) {
            if (std::strcmp(argv[i], flag) == 0) return true;
        }
    }
    return false;
}

// Whether the command line runs `train`, the one command that saves and stops on a stop signal: its first
// word that is not an option.
bool runs_training(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        if (argv[i][0] != '-') return std::strcmp(argv[i], "train") == 0;
    }
    return false;
}

// The help where the process limits leave too little for MPI's start-up (file descriptors, address space): the
// command line read (config files included) and the help printed, with no MPI; an error in the command line is
// reported as run()'s would be.
int help_without_mpi(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (axonn::UsageError const& e) {
        axonn::write_stderr_line(fmt::format("axonn: error: {}", e.what()));
        return 2;
    } catch (std::exception const& e) {
        axonn::write_stderr_line(fmt::format("axonn: error: {}", e.what()));
        return 1;
    }
}

}  // namespace

int main(int argc, char** argv) {
    axonn::reserve_standard_streams();  // before anything opens a file that would take a closed one's place
    if (axonn::standard_output_closed()) {
        axonn::write_stderr_line("axonn: error: standard output is closed (>&-): what the command prints would be "
                                 "lost; redirect it to a file, or to /dev/null to discard it");
        return 1;
    }
    // A file that outgrows `ulimit -f` must fail its write (and be reported) rather than kill the process.
    std::signal(SIGXFSZ, SIG_IGN);
    try {
        // Before the signal thread, which could not start under a low `ulimit -v` (the launcher, `axonn`, holds
        // the stop signals pending until then).
        axonn::require_enough_address_space();
    } catch (axonn::Error const& e) {
        if (asks_for_help(argc, argv)) return help_without_mpi(argc, argv);
        axonn::write_stderr_line(fmt::format("axonn: error: {}", e.what()));
        return 1;
    }
    try {
        // First: before MPI and OpenMP start threads that would compute, and so that a signal during a run's
        // set-up is held for its first step boundary, not lost.
        axonn::receive_stop_signals_on_own_thread(runs_training(argc, argv));
    } catch (std::exception const& e) {
        axonn::write_stderr_line(fmt::format("axonn: error: {}: the system is out of threads or memory", e.what()));
        return 1;
    }
    try {
        axonn::require_enough_file_descriptors();  // before MPI, whose start-up crashed without them
    } catch (axonn::Error const& e) {
        if (asks_for_help(argc, argv)) return help_without_mpi(argc, argv);
        axonn::write_stderr_line(fmt::format("axonn: error: {}", e.what()));
        return 1;
    }
    axonn::MpiSession const mpi(argc, argv);
    axonn::JobErrors errors;
    try {
        return run(argc, argv);
    } catch (axonn::StoppedBySignal const& e) {  // every rank, after the checkpoint: not an error
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0) fmt::print(stderr, "axonn: {}\n", e.what());
        return axonn::stopped_exit_status;
    } catch (axonn::UsageError const& e) {
        return errors.end_job("error", e.what(), 2);
    } catch (axonn::Error const& e) {
        return errors.end_job("error", e.what(), 1);
    } catch (axonn::InternalError const& e) {
        return errors.end_job("internal error", e.what(), 70);
    } catch (std::bad_alloc const&) {
        return errors.end_job("error", "out of memory: choose a smaller model, batch or sequence, or more ranks", 1);
    } catch (std::system_error const& e) {  // a file or stream the system refused: the environment, not a bug
        return errors.end_job("error", e.what(), 1);
    } catch (std::exception const& e) {
        return errors.end_job("internal error", e.what(), 70);
    }
}
