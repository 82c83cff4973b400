// A scratch folder for one test, removed with everything in it when the test ends. Its name carries the test's
// name and the process id, so tests running at the same time (ctest -j, mpirun) never share one.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace axonn::testing {

class TempDir {
public:
    // label: the folder's name stem; by default the running test's suite and name.
    explicit TempDir(std::string label = current_test_label()) {
        std::string name = "axonn_" + label + "_" + std::to_string(::getpid());
        for (char& c : name) {
            if (c == '/') c = '_';
        }
        path_ = std::filesystem::temp_directory_path() / name;
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDir() { std::filesystem::remove_all(path_); }
    TempDir(TempDir const&) = delete;
    TempDir& operator=(TempDir const&) = delete;

    std::filesystem::path const& path() const { return path_; }
    std::filesystem::path operator/(std::string const& name) const { return path_ / name; }

private:
    static std::string current_test_label() {
        auto const* test = ::testing::UnitTest::GetInstance()->current_test_info();
        return test ? std::string(test->test_suite_name()) + "_" + test->name() : "suite";
    }

    std::filesystem::path path_;
};

}  // namespace axonn::testing
