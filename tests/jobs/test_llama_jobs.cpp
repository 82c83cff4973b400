// A Llama through every command of its life, as whole jobs under mpirun (llama-tiny, 8 query and 2 key/value heads,
// on the shared byte data):
//   - trained on data=1,z=1,y=4,x=1, where each key/value head is replicated on two Y ranks, with a checkpoint at
//     step 3; resumed from it on the same grid, the losses, gradient norms and final checkpoint are bitwise those
//     of the run that was never interrupted; resumed serially and on data=1,z=2,y=1,x=2, each loss is within 1e-4
//     relative of that run's (every grid against serial over 20 steps, test_llama_grids.cpp);
//   - exported to Hugging Face's layout (`axonn export`), --init-from the export equals --init-from the checkpoint
//     bit for bit, and so does --init-from the checkpoint that `axonn import` makes of the export;
//   - `axonn generate` continues a prompt from the checkpoint on one rank, from the export on one rank, and from
//     the checkpoint on a grid of 4: greedy decoding gives the same tokens;
//   - killed during the rename and the pruning of a save (and gpt2-micro alike), it resumes from the newest complete
//     checkpoint bit for bit.
#include "jobs/job.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>


namespace axonn::testing {
// Named, not anonymous: the suite compiles in batches of files (tests/CMakeLists.txt), one namespace apart.
namespace test_llama_jobs {

namespace fs = std::filesystem;

class LlamaJob : public JobTest {
protected:
    static std::string train_llama(std::string const& extra) {
        return axonn() + " train --model llama-tiny --tokenizer byte --data " + (dir_ / "data").string() +
               " --sample-tokens 0 --steps 6 --eval-every 100 --eval-batches 1 " + extra;
    }
};

// A Llama config's special-token ids (Llama 3.1 Instruct's list of end tokens) survive a fine-tuning run and its
// resume into the export: the resumed run saved its checkpoints with the --model preset's config, which has none,
// and the export lost them.
TEST_F(LlamaJob, SpecialTokenIdsSurviveFineTuningAndItsResume) {
    fs::path const base = dir_ / "ids_base", hf = dir_ / "ids_hf", tuned = dir_ / "ids_tuned";
    ASSERT_EQ(mpirun("-np 1 " + train_llama("--steps 1 --ckpt-dir " + base.string())).exit_status, 0);
    ASSERT_EQ(std::system((axonn() + " export " + base.string() + " " + hf.string() + " > /dev/null").c_str()), 0);
    nlohmann::json config = nlohmann::json::parse(file_bytes(hf / "config.json"));
    config["bos_token_id"] = 0;
    config["eos_token_id"] = {256, 255};
    write_file(hf / "config.json", config.dump(2));
    std::string const tune = train_llama("--steps 2 --ckpt-every 1 --init-from " + hf.string() + " --ckpt-dir " +
                                         tuned.string());
    ASSERT_EQ(mpirun("-np 1 " + tune).exit_status, 0);
    fs::remove_all(tuned / "step_00000002");
    JobResult const resumed =
        mpirun("-np 1 " + train_llama("--steps 2 --ckpt-every 1 --ckpt-dir " + tuned.string() + " --resume latest"));
    ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
    fs::path const out = dir_ / "ids_out";
    ASSERT_EQ(std::system((axonn() + " export " + tuned.string() + " " + out.string() + " > /dev/null").c_str()), 0);
    nlohmann::json const exported = nlohmann::json::parse(file_bytes(out / "config.json"));
    EXPECT_EQ(exported.value("bos_token_id", nlohmann::json()), 0) << exported.dump();
    EXPECT_EQ(exported.value("eos_token_id", nlohmann::json()), nlohmann::json({256, 255})) << exported.dump();
}

TEST_F(LlamaJob, TrainResumeExportImportAndGenerate) {
    fs::path const whole = dir_ / "whole";
    JobResult const trained = mpirun("-np 4 " + train_llama("--grid data=1,z=1,y=4,x=1 --ckpt-every 3 --ckpt-dir " +
                                                            whole.string() + " --metrics " +
                                                            (dir_ / "whole.jsonl").string()));
    ASSERT_EQ(trained.exit_status, 0) << trained.stderr_text;
    EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("llama-tiny (llama)"), std::string::npos);
    std::map<int, std::string> const unmoved = step_results(dir_ / "whole.jsonl");
    ASSERT_EQ(unmoved.size(), 6u);

    for (std::string const grid : {"data=1,z=1,y=4,x=1", "data=1,z=1,y=1,x=1", "data=1,z=2,y=1,x=2"}) {
        SCOPED_TRACE(grid);
        fs::path const moved = dir_ / "moved";
        testing::fresh_ckpt_dir(whole / "step_00000003", moved, dir_ / "moved.jsonl");
        int const ranks = grid == std::string("data=1,z=1,y=1,x=1") ? 1 : 4;
        JobResult const resumed = mpirun("-np " + std::to_string(ranks) + " " +
                                         train_llama("--grid " + grid + " --ckpt-dir " + moved.string() +
                                                     " --resume latest --metrics " + (dir_ / "moved.jsonl").string()));
        ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
        std::map<int, std::string> const results = step_results(dir_ / "moved.jsonl");
        ASSERT_EQ(results.size(), 3u);
        if (grid == std::string("data=1,z=1,y=4,x=1")) {
            for (auto const& [step, text] : results) EXPECT_EQ(text, unmoved.at(step)) << "step " << step;
            expect_same_checkpoint_data(whole / "step_00000006", moved / "step_00000006");
            continue;
        }
        for (auto const& [step, text] : results) {
            double const loss = std::stod(text), expected = std::stod(unmoved.at(step));
            EXPECT_LT(std::abs(loss - expected) / expected, 1e-4) << "step " << step;
        }
    }

    fs::path const hf = dir_ / "hf";
    ASSERT_EQ(std::system((axonn() + " export " + whole.string() + " " + hf.string() + " > /dev/null").c_str()), 0);
    EXPECT_NE(file_bytes(hf / "config.json").find("LlamaForCausalLM"), std::string::npos);
    ASSERT_EQ(std::system((axonn() + " import " + hf.string() + " --out " + (dir_ / "imported").string() +
                           " > /dev/null").c_str()), 0);
    for (auto const& [source, name] : {std::pair{whole, "from_ckpt"}, std::pair{hf, "from_hf"},
                                       std::pair{dir_ / "imported", "from_import"}}) {
        JobResult const run = mpirun("-np 1 " + train_llama("--init-from " + source.string() + " --metrics " +
                                                            (dir_ / name).string() + ".jsonl"));
        ASSERT_EQ(run.exit_status, 0) << run.stderr_text;
    }
    std::map<int, std::string> const from_checkpoint = step_results(dir_ / "from_ckpt.jsonl");
    EXPECT_EQ(step_results(dir_ / "from_hf.jsonl"), from_checkpoint);
    EXPECT_EQ(step_results(dir_ / "from_import.jsonl"), from_checkpoint);

    std::string const generate = " generate --tokenizer byte --prompt abc --max-new-tokens 12 --greedy --json ";
    nlohmann::json outputs = nlohmann::json::array();
    for (std::string const& launch : {"-np 1 " + axonn() + generate + "--model-dir " + whole.string(),
                                     "-np 1 " + axonn() + generate + "--model-dir " + hf.string(),
                                     "-np 4 " + axonn() + generate + "--model-dir " + whole.string() +
                                         " --grid data=1,z=1,y=4,x=1"}) {
        JobResult const run = mpirun(launch);
        ASSERT_EQ(run.exit_status, 0) << launch << "\n" << run.stderr_text;
        outputs.push_back(nlohmann::json::parse(file_bytes(dir_ / "stdout.txt"))[0]["tokens"]);
    }
    EXPECT_EQ(outputs[0].size(), 12u);
    EXPECT_EQ(outputs[1], outputs[0]) << "from the export";
    EXPECT_EQ(outputs[2], outputs[0]) << "on a grid of 4";
}

// A kill in the two windows a timed kill almost never hits, for each family, on data=1,z=1,y=2,x=2, with a save
// every 2 steps and --keep 1 (support/kill_at_file_operation.cpp, loaded into the ranks):
//   - rank 0 killed right after renaming step_00000004 into place, before marking it complete: step_00000002 is the
//     newest complete checkpoint;
//   - rank 0 killed while pruning step_00000002 after step_00000004 is complete, the folder renamed aside (to
//     step_00000002.pruned) and its completion marker removed, its files not: step_00000004 is the newest complete
//     checkpoint, and the resumed run's first pruning removes the leftover.
// Each time the half-done folder is not taken for a checkpoint, `--resume latest` takes the newest complete one, and
// the finished run's losses, gradient norms and final checkpoint are bitwise those of a run never killed.
TEST_F(LlamaJob, KillsDuringTheRenameAndThePruningOfASaveLeaveTheNewestCompleteCheckpoint) {
    std::string const options = "--grid data=1,z=1,y=2,x=2 --steps 6 --ckpt-every 2 --keep 1 --gemm-tuning off "
                                "--eval-every 100 --eval-batches 1 ";
    struct Kill {
        char const* at;
        char const* half_done;   // the folder left without its completion marker
        char const* survivor;    // the newest complete checkpoint
    };
    for (auto const& [family, command] : {std::pair{"llama", train_llama(options)}, std::pair{"gpt2", train(options)}}) {
        SCOPED_TRACE(family);
        fs::path const reference = dir_ / (std::string(family) + "_calm");
        JobResult const calm = mpirun("-np 4 " + command + "--ckpt-dir " + reference.string() + " --metrics " +
                                      reference.string() + ".jsonl");
        ASSERT_EQ(calm.exit_status, 0) << calm.stderr_text;
        std::map<int, std::string> const expected = step_results(reference.string() + ".jsonl");
        ASSERT_EQ(expected.size(), 6u);
        for (Kill const& kill : {Kill{"rename:step_00000004", "step_00000004", "step_00000002"},
                                 Kill{"remove:step_00000002.pruned/COMPLETE", "step_00000002.pruned",
                                      "step_00000004"}}) {
            SCOPED_TRACE(kill.at);
            fs::path const ckpt = dir_ / (std::string(family) + "_killed_" + kill.half_done);
            std::string const run = command + "--ckpt-dir " + ckpt.string() + " --metrics " + ckpt.string() + ".jsonl";
            JobResult const killed = mpirun(killed_at_file_operation(kill.at) + "-np 4 " + run);
            ASSERT_NE(killed.exit_status, 0) << "the job was not killed at " << kill.at;
            EXPECT_TRUE(fs::exists(ckpt / kill.half_done)) << "killed before " << kill.at;
            EXPECT_FALSE(fs::exists(ckpt / kill.half_done / "COMPLETE")) << "killed after the marker";
            EXPECT_TRUE(fs::exists(ckpt / kill.survivor / "COMPLETE"));
            JobResult const resumed = mpirun("-np 4 " + run + " --resume latest");
            ASSERT_EQ(resumed.exit_status, 0) << resumed.stderr_text;
            EXPECT_NE(file_bytes(dir_ / "stdout.txt").find("resuming from " + (ckpt / kill.survivor).string()),
                      std::string::npos)
                << file_bytes(dir_ / "stdout.txt");
            EXPECT_EQ(step_results(ckpt.string() + ".jsonl"), expected);
            EXPECT_FALSE(fs::exists(ckpt / kill.half_done)) << "a leftover the pruning did not remove";
            expect_same_checkpoint_data(reference / "step_00000006", ckpt / "step_00000006");
        }
    }
}

}  // namespace test_llama_jobs
}  // namespace axonn::testing
