// `warpsim llm`: one inference step of an LLM on one GPU (app/llm/plan.h, app/llm/llm_run.h).
#pragma once

namespace warpsim {
// argv[0] is "llm". Returns the exit status; throws InputError for bad input, as the other commands.
int cmd_llm(int argc, char** argv);
}  // namespace warpsim
