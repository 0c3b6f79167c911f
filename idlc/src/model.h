// model.h: the checked, resolved model of one IDL module. sema.cpp builds it; every
// emitter reads only this (never the AST or the parse tree), and nothing changes it
// after sema returns, so emitters cannot disagree about what the IDL meant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diag.h"

namespace idlc::model {

// Numbering is grd_type's, grd_mode's and grd_lang's (runtime/desc/grd_desc.h): the
// descriptor emitter casts these to descriptor codes, and static_asserts there each value.
enum class Type {
    Char = 1,
    Short,
    Int,
    Long,
    LongLong,
    Float,
    Double,
    SComplex,
    DComplex,
    String,
    Filename,
    Callback // a client callback function; its parameters are Param::cb
};
enum class Mode { In = 1, Out, InOut, Work };
enum class Language { C = 1, Cxx = 2, Fortran = 3 };

// An integer expression over the function's scalar in-parameters.
struct Expr {
    enum Op {
        Const,
        Param,
        Add,
        Sub,
        Mul,
        Div,
        Mod,
        Pow,
        Neg,
        Lt,
        Le,
        Gt,
        Ge,
        Eq,
        Ne,
        And,
        Or,
        Not,
        Cond,
        Min,
        Max,
        CbParam // in a callback parameter's dimension: the callback's own scalar 'param'
    };
    Op op = Const;
    int64_t value = 0; // Const
    int param = -1;    // Param: index into Function::params; CbParam: into the callback's Param::cb
    std::vector<Expr> args;
};

struct Dim {
    Expr size;
    std::optional<Expr> start, end, step;
};

struct Param {
    std::string name;
    Type type = Type::Int;
    bool isUnsigned = false;
    Mode mode = Mode::In;
    bool pointer = false; // declared *x
    std::vector<Dim> dims;
    Loc loc;
    std::vector<Param> cb; // Type::Callback: the callback's parameters (ordinary ones)

    bool isCallback() const { return type == Type::Callback; }
    bool isArray() const { return !dims.empty(); }
    bool isString() const { return type == Type::String || type == Type::Filename; }
    bool writes() const { return mode == Mode::Out || mode == Mode::InOut; }
};

struct CallArg {
    int param = -1; // parameter index, or -1 for an integer literal
    int64_t literal = 0;
};

struct Function {
    std::string name;
    std::string cls; // a DefMethod: its class (Module::classes); "" for a Define
    Loc loc;
    std::string description;
    std::vector<Param> params;
    std::optional<Expr> cost;
    std::vector<std::string> required;
    Language language = Language::C;
    bool shrink = false;
    bool noRetry = false; // Retry "no": a failed call is never re-executed elsewhere
    uint32_t timeout = 0; // Timeout: seconds a call may run on the server; 0: the server's limit
    // The body: inline C text, or a call of a library function.
    bool inlineBody = false;
    std::string bodyText; // with braces
    Loc bodyLoc;
    Language callsLanguage = Language::C;
    std::string callsTarget;
    std::vector<CallArg> callsArgs;
};

struct Globals {
    std::string text; // without the outer braces
    Loc loc;          // of the first character after the opening brace
};

// A DefClass (Ninf-G remote objects): each object holds its own copy of the state, a
// struct of the DefState members, which every method body sees by name. Its methods
// are in Module::functions with cls set, after the module's plain functions.
struct Class {
    std::string name;
    Loc loc;
    std::string description;
    std::string stateText;            // DefState without the outer braces ("" when none)
    Loc stateLoc;                     // of the first character after the opening brace
    std::vector<std::string> members; // the names DefState declares, in order
};

struct Module {
    std::string name;      // from Module, or the file's base name
    bool declared = false; // a Module line was present
    std::string source;    // the IDL file as named on the command line
    std::vector<std::string> compileOptions, libraries;
    std::string fortranFormat = "%s_";
    std::string compiler, linker;
    std::vector<Globals> globals;
    std::vector<Function> functions;
    std::vector<Class> classes;

    // "module/function" when a Module line was present, else "function".
    std::string qualified(const Function &f) const {
        std::string n = f.cls.empty() ? f.name : f.cls + "." + f.name;
        return declared ? name + "/" + n : n;
    }
};

} // namespace idlc::model
