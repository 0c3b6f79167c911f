// ast.h: the syntax tree of one IDL file, as written (nothing resolved or checked).
// parse.cpp builds it from the ANTLR parse tree; sema.cpp checks it and builds the
// model. Keeping it apart from the parse tree lets sema ignore ANTLR entirely.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "diag.h"

namespace idlc::ast {

struct Expr {
    enum Kind { Int, Name, Unary, Binary, Cond, Call } kind = Int;
    std::string op;   // operator text ("+", "?:", "-" unary) or function name for Call
    std::string text; // the literal's digits or the name
    std::vector<std::unique_ptr<Expr>> kids;
    Loc loc;
};
using ExprPtr = std::unique_ptr<Expr>;

// One word before the declarator: a mode, a type, or a name that is neither (a typo
// sema reports, "IN dbl x").
struct Word {
    enum Kind { Mode, Type, Unknown } kind = Type;
    std::string text; // "mode_in", "IN", "double", ...
    bool isUnsigned = false;
    Loc loc;
};

struct Dim {
    bool empty = false; // written "[]"
    ExprPtr size, start, end, step;
    Loc loc;
};

struct Param {
    std::vector<Word> words;
    bool star = false;
    std::string name;
    std::vector<Dim> dims;
    Loc loc;
    // A callback 'name(params)': its own parameters (words, star and dims stay empty).
    bool callback = false;
    bool cbVoid = false; // written 'name(void)'
    std::vector<Param> cbParams;
};

struct CallArg {
    bool star = false;
    bool isInt = false;
    std::string text;
    Loc loc;
};

struct Option {
    std::string key;   // "Required", "CalcOrder", "Complexity", "Backend", "Shrink", "Retry", "Timeout",
                       // "Language"
    std::string value; // string value (unescaped) when the option takes one
    ExprPtr expr;      // CalcOrder / Complexity
    Loc loc;
};

struct Function {
    std::string name;
    Loc loc;
    bool hasDescription = false;
    std::string description;
    bool voidParams = false;
    std::vector<Param> params;
    std::vector<Option> options;
    bool inlineBody = false;
    std::string bodyText; // inline body including its braces
    Loc bodyLoc;
    Loc callsLoc; // the word Calls
    std::string callsLanguage;
    Loc callsLanguageLoc;
    std::string callsTarget;
    Loc callsTargetLoc;
    std::vector<CallArg> callsArgs;
};

// DefClass: a remote object's class (Ninf-G). Its methods are functions whose bodies
// also see the object's state.
struct Class {
    std::string name;
    Loc loc;
    bool hasDescription = false;
    std::string description;
    std::vector<Option> options; // class-wide: apply to every method
    bool hasState = false;
    std::string stateText; // DefState's C block, including braces
    Loc stateLoc;
    std::vector<Loc> extraStates; // further DefState blocks (an error)
    std::vector<Function> methods;
};

struct ModuleDecl {
    std::string name;
    Loc loc;
};

struct FileOption {
    std::string key; // CompileOptions, Library, FortranFormat, Compiler, Linker
    std::string value;
    Loc loc;
};

struct Globals {
    std::string text; // including braces
    Loc loc;
};

struct File {
    std::string path;
    std::vector<ModuleDecl> modules;
    std::vector<FileOption> options;
    std::vector<Globals> globals;
    std::vector<Function> functions;
    std::vector<Class> classes;
};

} // namespace idlc::ast
