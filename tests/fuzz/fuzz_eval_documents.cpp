// Fuzzes the JSON-lines reader of `axonn memorization eval`, axonn::read_eval_documents
// (src/axonn/memorization/eval_documents.cpp), with a vocabulary of 300 ids and no tokenizer.
//
// Input: the bytes of a document file. A failure is anything but a clean result or an axonn::Error: a crash, a
// sanitizer report, another exception escaping, or an accepted document whose ids lie outside the vocabulary or
// whose repetitions are below -1.
#include "axonn/core/error.h"
#include "axonn/memorization/eval_documents.h"
#include "fuzz_files.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
    std::filesystem::path const path = fuzz::work_folder("eval-documents") / "documents.jsonl";
    fuzz::write_file(path, data, size);
    try {
        for (axonn::EvalDocument const& document : axonn::read_eval_documents(path, nullptr, 300)) {
            for (std::int32_t id : document.tokens) {
                if (id < 0 || id >= 300) {
                    std::fprintf(stderr, "fuzz_eval_documents: accepted token id %d\n", id);
                    std::abort();
                }
            }
            if (document.repetitions < -1) std::abort();
        }
    } catch (axonn::Error const&) {
        // A one-line refusal: what hostile input should get.
    }
    return 0;
}
