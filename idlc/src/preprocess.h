// preprocess.h: runs the C preprocessor over an IDL file, as Ninf-G does, and maps
// every line of its output back to the file and line it came from.
#pragma once

#include <string>
#include <vector>

#include "diag.h"

namespace idlc {

struct Source {
    std::string path; // as named on the command line
    std::string text; // what the parser reads
    // origin[i] is the file and line of text line i + 1.
    std::vector<std::pair<std::string, int>> origin;

    // Maps a line and column of TEXT to the original file.
    Loc locate(int line, int col) const;
};

struct PreprocessOptions {
    bool run = true;               // false: read the file as it is
    std::string cpp;               // the preprocessor program
    std::vector<std::string> args; // -I and -D options passed on
};

// Reads and preprocesses PATH. Returns false (with errors in DIAG) when the file cannot
// be read or the preprocessor fails. Directives inside C blocks (Globals and inline
// bodies, such as #include <string.h>) are kept for the C compiler, not expanded here.
bool preprocess(const std::string &path, const PreprocessOptions &opt, Source &out, Diag &diag);

} // namespace idlc
