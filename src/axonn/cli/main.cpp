// The `axonn` command: one binary, one subcommand per job. Every error the user can cause ends here as one
// line on stderr and a non-zero exit status: 2 for a bad command line, 1 for anything else (bad data, files,
// shapes), 70 for an internal error that is this program's fault.
#include "axonn/cli/commands.h"
#include "axonn/cli/config_file.h"
#include "axonn/core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>

#include <algorithm>
#include <exception>

namespace {

// MPI is initialised for every command, so that the same binary runs alone or under mpirun/srun.
class MpiSession {
public:
    MpiSession(int& argc, char**& argv) {
        int provided = 0;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    }
    ~MpiSession() { MPI_Finalize(); }
    MpiSession(MpiSession const&) = delete;
    MpiSession& operator=(MpiSession const&) = delete;
};

// Under mpirun every rank checks the same options and data and fails the same way: rank 0 alone prints, so the
// user reads one line, and every rank exits with the same status.
bool first_rank() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank == 0;
}

int run(int argc, char** argv) {
    CLI::App app{"axonn: train GPT-style language models with 4D hybrid parallelism (AxoNN's algorithm) in C++",
                 "axonn"};
    app.footer("Run `axonn COMMAND --help` for a command's options. Docs: README.md, docs/ARCHITECTURE.md.");
    app.require_subcommand(1);
    // A later value of an option replaces an earlier one: how the command line overrides a config file.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    axonn::add_train_command(app);
    axonn::add_prepare_command(app);
    axonn::add_corpus_command(app);
    axonn::add_bench_command(app);
    axonn::add_parity_command(app);
    axonn::add_plan_command(app);
    axonn::add_calibrate_command(app);
    std::vector<std::string> arguments(argv, argv + argc);
    std::vector<std::string> command_names;
    for (CLI::App const* command : app.get_subcommands([](CLI::App const*) { return true; })) {
        command_names.push_back(command->get_name());
    }
    bool const known = arguments.size() > 1 &&
                       std::find(command_names.begin(), command_names.end(), arguments[1]) != command_names.end();
    if (!known && (arguments.size() < 2 || arguments[1].rfind('-', 0) != 0)) {
        if (first_rank()) fmt::print(stderr, "axonn: error: {}: choose one of {} (see `axonn --help`)\n",
                   arguments.size() < 2 ? "a subcommand is required" : "unknown command '" + arguments[1] + "'",
                   fmt::join(command_names, ", "));
        return 2;
    }
    try {
        arguments = axonn::expand_config_files(app, std::move(arguments));
    } catch (axonn::Error const& e) {
        if (first_rank()) fmt::print(stderr, "axonn: error: {}\n", e.what());
        return 2;
    }
    // CLI11 takes the arguments after the program name, last first.
    std::vector<std::string> reversed(arguments.rbegin(), arguments.rend() - 1);
    try {
        app.parse(reversed);
    } catch (CLI::CallForHelp const& e) {
        return app.exit(e);
    } catch (CLI::CallForAllHelp const& e) {
        return app.exit(e);
    } catch (CLI::ParseError const& e) {
        if (first_rank()) fmt::print(stderr, "axonn: error: {} (see `axonn --help`)\n", e.what());
        return 2;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    MpiSession mpi(argc, argv);
    try {
        return run(argc, argv);
    } catch (axonn::Error const& e) {
        if (first_rank()) fmt::print(stderr, "axonn: error: {}\n", e.what());
        return 1;
    } catch (std::exception const& e) {
        if (first_rank()) fmt::print(stderr, "axonn: internal error: {}\n", e.what());
        return 70;
    }
}
