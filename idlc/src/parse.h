// parse.h: runs the ANTLR lexer and parser over preprocessed IDL text and builds the
// syntax tree, reporting syntax errors with their original file:line:col.
#pragma once

#include <optional>

#include "ast.h"
#include "preprocess.h"

namespace idlc {

// Parses SRC. Returns nothing when there were syntax errors (all reported to DIAG).
std::optional<ast::File> parseIdl(const Source &src, Diag &diag);

} // namespace idlc
