// libFuzzer harness: `warpsim llm --model config.json` (app/llm/model.h) on arbitrary bytes as a Hugging Face
// config.json, then the kernel plan of a decode and a prefill step of the model read (app/llm/plan.h), as the
// command builds it before simulating. Malformed input must end in an InputError naming the file and key;
// anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cstdint>

#include "app/llm/model.h"
#include "app/llm/plan.h"
#include "fuzz_input_file.h"
#include "sim/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static warpsim_fuzz::InputFile file(".json");
  try {
    const warpsim::llm::LlmModel model = warpsim::llm::read_model_file(file.write(data, size));
    warpsim::llm::Scenario decode;
    decode.batch = 8;
    decode.context = 4096;
    warpsim::llm::plan_text(model, decode, warpsim::llm::build_plan(model, decode));
    warpsim::llm::Scenario prefill;
    prefill.phase = "prefill";
    prefill.prompt = 512;
    prefill.tp = 2;
    warpsim::llm::build_plan(model, prefill);
  } catch (const warpsim::InputError&) {
  }
  return 0;
}
