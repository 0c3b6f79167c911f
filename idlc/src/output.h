// output.h: writing idlc's outputs safely.
#pragma once

#include <string>

#include "diag.h"

namespace idlc {

// Writes CONTENT to PATH unless PATH already holds exactly that (so make does not
// rebuild), through a temporary file and rename so a reader never sees half a file.
// Reports failures (full disk, missing directory) to DIAG and returns false.
bool writeIfChanged(const std::string &path, const std::string &content, Diag &diag);

} // namespace idlc
