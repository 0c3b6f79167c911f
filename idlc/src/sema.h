// sema.h: checks an IDL syntax tree and builds the immutable model from it.
#pragma once

#include <optional>

#include "ast.h"
#include "model.h"

namespace idlc {

// Returns the model, or nothing when DIAG received errors. Reports every problem it
// finds, not only the first.
std::optional<model::Module> analyze(const ast::File &file, Diag &diag);

// True when NAME is a C (C11) or C++ keyword, or a name the C library reserves in a
// way that breaks generated code.
bool isReservedName(const std::string &name);

} // namespace idlc
