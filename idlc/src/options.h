// options.h: idlc's command line.
#pragma once

#include <string>
#include <vector>

#include "preprocess.h"

namespace idlc {

struct Options {
    std::vector<std::string> inputs;
    std::string outDir = ".";
    bool emitStub = true, emitDesc = true, emitHeader = true;
    bool checkOnly = false;
    bool dump = false;
    bool printLinkFlags = false;
    PreprocessOptions cpp;
};

enum class ParseResult { Run, Exit0, Usage };

// Parses ARGV into OPT. Prints --help / --version itself (Exit0) and usage errors to
// stderr (Usage).
ParseResult parseOptions(int argc, char **argv, Options &opt);

} // namespace idlc
