// The warpsim command line: run, synth, describe, config. Returns the process exit status: 0 success,
// 2 bad input (one message naming the file, key or option), 3 simulation stopped making progress,
// 70 internal error.
#pragma once

namespace warpsim {
int warpsim_main(int argc, char** argv);
}
