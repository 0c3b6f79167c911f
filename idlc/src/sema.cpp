// sema.cpp: the checks of idlc and the construction of the model. Each check reports
// and carries on, so that one run lists every mistake; messages say what is wrong and
// what to write instead.
#include "sema.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include "grd_desc.h"

namespace idlc {

using namespace model;

namespace {

const std::set<std::string> &reservedWords() {
    static const std::set<std::string> words = {
        // C11
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
        "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
        "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
        "volatile", "while", "_Alignas", "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary",
        "_Noreturn", "_Static_assert", "_Thread_local",
        // C++ (stubs may be compiled as C++)
        "alignas", "alignof", "and", "and_eq", "asm", "bitand", "bitor", "bool", "catch", "class", "compl",
        "constexpr", "const_cast", "decltype", "delete", "dynamic_cast", "explicit", "export", "false",
        "friend", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or",
        "or_eq", "private", "protected", "public", "reinterpret_cast", "static_assert", "static_cast",
        "template", "this", "thread_local", "throw", "true", "try", "typeid", "typename", "using", "virtual",
        "wchar_t", "xor", "xor_eq",
        // names the generated code itself uses
        "scomplex", "dcomplex"};
    return words;
}

bool typeFromWord(const std::string &w, Type &t) {
    static const std::map<std::string, Type> m = {
        {"char", Type::Char},     {"short", Type::Short},       {"int", Type::Int},
        {"long", Type::Long},     {"longlong", Type::LongLong}, {"float", Type::Float},
        {"double", Type::Double}, {"scomplex", Type::SComplex}, {"dcomplex", Type::DComplex},
        {"string", Type::String}, {"filename", Type::Filename}};
    auto it = m.find(w);
    if (it == m.end()) return false;
    t = it->second;
    return true;
}

Mode modeFromWord(const std::string &w) {
    if (w == "mode_in" || w == "IN") return Mode::In;
    if (w == "mode_out" || w == "OUT") return Mode::Out;
    if (w == "mode_inout" || w == "INOUT") return Mode::InOut;
    return Mode::Work;
}

const char *modeName(Mode m) {
    switch (m) {
    case Mode::In: return "IN";
    case Mode::Out: return "OUT";
    case Mode::InOut: return "INOUT";
    case Mode::Work: return "WORK";
    }
    return "?";
}

bool isIntegerType(Type t) {
    return t == Type::Char || t == Type::Short || t == Type::Int || t == Type::Long || t == Type::LongLong;
}

// A number, which travels by value: not a string, a filename or a callback.
bool isNumericType(Type t) {
    return t != Type::String && t != Type::Filename && t != Type::Callback;
}

std::string lower(std::string s) {
    for (auto &c : s)
        c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
    return s;
}

const char *const kTypeList =
    "char, short, int, long, longlong, float, double, scomplex, dcomplex, string, filename";

const std::vector<std::string> &typeWords() {
    static const std::vector<std::string> w = {"char",     "short",  "int",     "long",
                                               "longlong", "float",  "double",  "scomplex",
                                               "dcomplex", "string", "filename"};
    return w;
}

const std::vector<std::string> &modeWords() {
    static const std::vector<std::string> w = {"IN",      "OUT",      "INOUT",      "WORK",
                                               "mode_in", "mode_out", "mode_inout", "mode_work"};
    return w;
}

// The optimal string alignment distance of A and B, ignoring case: edits, counting a
// swap of two neighbours as one, since "flaot" is one slip of the fingers, not two.
size_t editDistance(const std::string &a, const std::string &b) {
    std::string x = lower(a), y = lower(b);
    std::vector<std::vector<size_t>> d(x.size() + 1, std::vector<size_t>(y.size() + 1));
    for (size_t i = 0; i <= x.size(); ++i)
        d[i][0] = i;
    for (size_t j = 0; j <= y.size(); ++j)
        d[0][j] = j;
    for (size_t i = 1; i <= x.size(); ++i)
        for (size_t j = 1; j <= y.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (x[i - 1] != y[j - 1])});
            if (i > 1 && j > 1 && x[i - 1] == y[j - 2] && x[i - 2] == y[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[x.size()][y.size()];
}

// The candidate WORD is most likely a slip for, or "" when none is close enough to be
// worth suggesting: a wrong guess misleads more than a list of what is valid. Case
// aside, a word within one edit (two from five letters on) is a typo. With
// ABBREVIATIONS (types and modes, a small fixed set) also a known word that begins it
// ("integer", "INPUT") and a word it abbreviates ("dbl" for double, three edits away).
std::string closest(const std::string &word, const std::vector<std::string> &candidates, bool abbreviations) {
    std::string best;
    if (abbreviations)
        for (const auto &c : candidates)
            if (c.size() >= 2 && word.size() > c.size() && word.compare(0, c.size(), c) == 0 &&
                c.size() > best.size())
                best = c;
    if (!best.empty()) return best;
    size_t bestDistance = word.size() <= 4 ? 1 : 2;
    if (bestDistance >= word.size()) bestDistance = word.size() - 1;
    for (const auto &c : candidates) {
        size_t dist = editDistance(word, c);
        if (dist <= bestDistance && (best.empty() || dist < editDistance(word, best))) best = c;
    }
    if (!best.empty() || !abbreviations || word.size() < 2) return best;
    std::string w = lower(word);
    for (const auto &c : candidates) {
        std::string lc = lower(c);
        if (lc[0] != w[0]) continue;
        size_t k = 0;
        for (size_t i = 0; i < lc.size() && k < w.size(); ++i)
            if (lc[i] == w[k]) ++k;
        if (k == w.size() && (best.empty() || c.size() < best.size())) best = c;
    }
    return best;
}

class Analyzer {
  public:
    explicit Analyzer(Diag &diag) : diag_(diag) {}

    std::optional<Module> run(const ast::File &file) {
        Module mod;
        mod.source = file.path;
        moduleName(file, mod);
        fileOptions(file, mod);
        for (const auto &g : file.globals) {
            Globals mg;
            mg.text = g.text.substr(1, g.text.size() - 2);
            mg.loc = g.loc;
            mg.loc.col += 1;
            mod.globals.push_back(std::move(mg));
        }
        std::map<std::string, Loc> seen;
        for (const auto &f : file.functions) {
            auto it = seen.find(f.name);
            if (it != seen.end()) {
                diag_.error(f.loc, "function '" + f.name + "' is defined twice (first at line " +
                                       std::to_string(it->second.line) + "): rename one of them");
                continue;
            }
            seen.emplace(f.name, f.loc);
            if (isReservedName(f.name)) {
                diag_.error(f.loc, "'" + f.name +
                                       "' is a C keyword and cannot name a function: choose another name");
            }
            mod.functions.push_back(function(f));
        }
        std::map<std::string, Loc> classSeen;
        for (const auto &c : file.classes) {
            if (seen.count(c.name)) {
                diag_.error(c.loc, "DefClass '" + c.name +
                                       "' has the name of a function of this module: rename one");
                continue;
            }
            auto it = classSeen.find(c.name);
            if (it != classSeen.end()) {
                diag_.error(c.loc, "class '" + c.name + "' is defined twice (first at line " +
                                       std::to_string(it->second.line) + "): rename one of them");
                continue;
            }
            classSeen.emplace(c.name, c.loc);
            klass(c, mod);
        }
        if (diag_.errors() > 0) return std::nullopt;
        return mod;
    }

  private:
    void moduleName(const ast::File &file, Module &mod) {
        if (!file.modules.empty()) {
            mod.name = file.modules[0].name;
            mod.declared = true;
            if (isReservedName(mod.name))
                diag_.error(file.modules[0].loc,
                            "'" + mod.name + "' is a C keyword and cannot name a module");
            for (size_t i = 1; i < file.modules.size(); ++i)
                diag_.error(file.modules[i].loc, "a second Module line ('" + file.modules[i].name +
                                                     "'): one IDL file defines one module");
            return;
        }
        // No Module line: name the module after the file, as a C identifier.
        std::string base = file.path;
        size_t slash = base.rfind('/');
        if (slash != std::string::npos) base = base.substr(slash + 1);
        size_t dot = base.find('.');
        if (dot != std::string::npos) base = base.substr(0, dot);
        std::string id;
        for (char c : base)
            id += (isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
        if (id.empty() || isdigit(static_cast<unsigned char>(id[0]))) id = "m_" + id;
        mod.name = id;
    }

    void fileOptions(const ast::File &file, Module &mod) {
        std::map<std::string, Loc> once;
        for (const auto &o : file.options) {
            if (o.key == "CompileOptions") {
                mod.compileOptions.push_back(o.value);
            } else if (o.key == "Library") {
                mod.libraries.push_back(o.value);
            } else {
                auto it = once.find(o.key);
                if (it != once.end()) {
                    diag_.error(o.loc, o.key + " is given twice (first at line " +
                                           std::to_string(it->second.line) + "): keep one");
                    continue;
                }
                once.emplace(o.key, o.loc);
                if (o.key == "FortranFormat") {
                    if (o.value.find("%s") == std::string::npos && o.value.find("%l") == std::string::npos)
                        diag_.error(o.loc,
                                    "FortranFormat \"" + o.value +
                                        "\" has neither %s (the name) nor %l (the name in upper case)");
                    mod.fortranFormat = o.value;
                } else if (o.key == "Compiler") {
                    mod.compiler = o.value;
                } else if (o.key == "Linker") {
                    mod.linker = o.value;
                }
            }
        }
    }

    // A DefClass: its state's member names, then each method as a function of the class.
    void klass(const ast::Class &c, Module &mod) {
        if (isReservedName(c.name))
            diag_.error(c.loc,
                        "'" + c.name + "' is a C keyword and cannot name a class: choose another name");
        for (const auto &l : c.extraStates)
            diag_.error(l, "a second DefState in class " + c.name +
                               ": one class has one state block, merge them");
        Class mc;
        mc.name = c.name;
        mc.loc = c.loc;
        mc.description = c.description;
        if (c.hasState) {
            mc.stateText = c.stateText.substr(1, c.stateText.size() - 2);
            mc.stateLoc = c.stateLoc;
            mc.stateLoc.col += 1;
            stateMembers(c, mc);
        }
        // Class-wide options are every method's defaults.
        Function defaults;
        for (const auto &o : c.options) {
            if (o.key == "Required") {
                defaults.required.push_back(o.value);
            } else if (o.key == "Language") {
                if (!language(o.value, defaults.language))
                    diag_.error(o.loc,
                                "unknown Language \"" + o.value + "\": write \"C\", \"C++\" or \"FORTRAN\"");
            } else if (o.key == "Shrink" || o.key == "Retry") {
                std::string v = lower(o.value);
                if (v != "yes" && v != "no")
                    diag_.error(o.loc, o.key + " takes \"yes\" or \"no\", not \"" + o.value + "\"");
                if (o.key == "Shrink") defaults.shrink = v == "yes";
                if (o.key == "Retry") defaults.noRetry = v == "no";
            } else if (o.key == "Backend") {
                diag_.error(o.loc, "Backend \"" + o.value +
                                       "\" is not supported yet: remove the Backend line to run " + c.name +
                                       "'s objects on one server");
            } else if (o.key == "Timeout") {
                diag_.error(o.loc, "Timeout cannot limit " + c.name +
                                       "'s methods: methods run in the server's own process, where a call "
                                       "cannot be stopped; remove it");
            } else {
                diag_.error(o.loc,
                            o.key + " describes one method's cost: put it after that DefMethod of " + c.name);
            }
        }
        std::map<std::string, Loc> seen;
        for (const auto &m : c.methods) {
            auto it = seen.find(m.name);
            if (it != seen.end()) {
                diag_.error(m.loc, "method '" + m.name + "' of class " + c.name +
                                       " is defined twice (first at line " + std::to_string(it->second.line) +
                                       "): rename one of them");
                continue;
            }
            seen.emplace(m.name, m.loc);
            if (isReservedName(m.name))
                diag_.error(m.loc,
                            "'" + m.name + "' is a C keyword and cannot name a method: choose another name");
            // _initialize and _finalize run by themselves when an object is made and
            // destroyed: nobody could pass them arguments.
            if ((m.name == "_initialize" || m.name == "_finalize") && !m.params.empty())
                diag_.error(m.loc, c.name + "." + m.name + " runs by itself when an object is " +
                                       (m.name == "_initialize" ? "created" : "destroyed") +
                                       ", so it takes no parameters: write " + m.name + "(void)");
            // The argument vector's entry after the last parameter carries the state.
            if (m.params.size() >= 64)
                diag_.error(m.loc, "method " + c.name + "." + m.name + " has " +
                                       std::to_string(m.params.size()) +
                                       " parameters; a method takes at most 63");
            Function fn = function(m, &defaults, c.name);
            for (const auto &p : fn.params)
                for (const auto &mem : mc.members)
                    if (p.name == mem && fn.inlineBody)
                        diag_.error(p.loc, "parameter '" + p.name + "' of " + c.name + "." + m.name +
                                               " has the name of a DefState member: rename one of them");
            mod.functions.push_back(std::move(fn));
        }
        mod.classes.push_back(std::move(mc));
    }

    // The names DefState declares. Each declaration ends with ';' and may declare
    // several names (int a, *b, c[4];); a name is the last identifier of its declarator
    // outside brackets (or inside '(*name)' for pointers to functions and arrays).
    void stateMembers(const ast::Class &c, Class &mc) {
        const std::string &t = mc.stateText;
        std::vector<std::string> toks; // identifiers and single punctuation characters
        for (size_t i = 0; i < t.size();) {
            char ch = t[i];
            if (ch == '/' && i + 1 < t.size() && t[i + 1] == '*') {
                size_t e = t.find("*/", i + 2);
                i = e == std::string::npos ? t.size() : e + 2;
            } else if (ch == '/' && i + 1 < t.size() && t[i + 1] == '/') {
                size_t e = t.find('\n', i);
                i = e == std::string::npos ? t.size() : e;
            } else if (ch == '#') {
                toks.push_back("#");
                size_t e = t.find('\n', i);
                i = e == std::string::npos ? t.size() : e;
            } else if (isalpha(static_cast<unsigned char>(ch)) || ch == '_') {
                size_t e = i;
                while (e < t.size() && (isalnum(static_cast<unsigned char>(t[e])) || t[e] == '_'))
                    ++e;
                toks.push_back(t.substr(i, e - i));
                i = e;
            } else if (isspace(static_cast<unsigned char>(ch)) || isdigit(static_cast<unsigned char>(ch))) {
                ++i;
            } else {
                toks.push_back(std::string(1, ch));
                ++i;
            }
        }
        static const std::set<std::string> typeWords = {
            "char",   "short", "int",  "long", "float",    "double", "signed", "unsigned", "const",
            "struct", "union", "enum", "void", "volatile", "_Bool",  "static", "extern"};
        std::vector<std::string> decl;
        auto finish = [&](bool first) {
            // DECL is one declarator (the first of a declaration still has its type).
            int depth = 0;
            std::string name, inParen;
            bool starParen = false;
            for (size_t k = 0; k < decl.size(); ++k) {
                const std::string &w = decl[k];
                if (w == "=" && depth == 0) {
                    diag_.error(mc.stateLoc,
                                "DefState member '" + name + "' of class " + c.name +
                                    " has an initializer: every object's state starts zeroed; set it "
                                    "in _initialize");
                    return;
                }
                if (w == "[" || w == "{") {
                    if (depth == 0 && w == "[") break;
                    ++depth;
                } else if (w == "]" || w == "}") {
                    --depth;
                } else if (w == "(") {
                    if (depth == 0 && k + 1 < decl.size() && decl[k + 1] == "*") starParen = true;
                    ++depth;
                } else if (w == ")") {
                    --depth;
                } else if (isalpha(static_cast<unsigned char>(w[0])) || w[0] == '_') {
                    if (depth == 0 && !typeWords.count(w)) name = w;
                    if (depth == 1 && starParen && inParen.empty()) inParen = w;
                }
            }
            if (starParen && !inParen.empty()) name = inParen;
            if (name.empty()) {
                if (first && decl.size() > 0)
                    diag_.error(mc.stateLoc,
                                "a DefState declaration of class " + c.name +
                                    " names no member: write C declarations such as 'int count;'");
                return;
            }
            for (const auto &m : mc.members)
                if (m == name) {
                    diag_.error(mc.stateLoc,
                                "DefState of class " + c.name + " declares '" + name + "' twice");
                    return;
                }
            mc.members.push_back(name);
        };
        int depth = 0;
        bool first = true;
        for (const auto &w : toks) {
            if (w == "#") {
                diag_.error(mc.stateLoc,
                            "DefState of class " + c.name +
                                " holds a preprocessor line: put #include and #define in Globals");
                return;
            }
            if (w == "(" || w == "[" || w == "{") ++depth;
            if (w == ")" || w == "]" || w == "}") --depth;
            if (depth == 0 && (w == ";" || w == ",")) {
                finish(first);
                decl.clear();
                first = w == ";";
                if (!first) {
                    // Keep nothing of the type for the next declarator: its name is what
                    // follows the comma.
                }
                continue;
            }
            decl.push_back(w);
        }
        if (!decl.empty())
            diag_.error(mc.stateLoc, "the last DefState declaration of class " + c.name + " has no ';'");
    }

    // A Define, or with DEFAULTS (the class-wide options) a DefMethod of class CLS.
    Function function(const ast::Function &f, const Function *defaults = nullptr,
                      const std::string &cls = "") {
        Function fn;
        fn.cls = cls;
        if (defaults) {
            fn.required = defaults->required;
            fn.language = defaults->language;
            fn.shrink = defaults->shrink;
            fn.noRetry = defaults->noRetry;
        }
        fn.name = f.name;
        fn.loc = f.loc;
        fn.description = f.description;
        std::map<std::string, int> index;
        for (const auto &p : f.params) {
            Param mp = p.callback ? callbackParam(f, p) : param(f, p);
            if (index.count(p.name)) {
                diag_.error(p.loc,
                            "parameter '" + p.name + "' of " + f.name + " is declared twice: rename one");
            } else {
                index.emplace(p.name, static_cast<int>(fn.params.size()));
            }
            fn.params.push_back(std::move(mp));
        }
        // Dimensions and cost may name parameters declared later, so resolve them now.
        for (size_t i = 0; i < f.params.size(); ++i) {
            const auto &p = f.params[i];
            if (p.callback) {
                callbackDims(p, fn, index, fn.params[i]);
                continue;
            }
            resolveDims(p, fn, index, fn.params[i], nullptr);
        }
        options(f, fn, index, defaults != nullptr);
        body(f, fn, index);
        return fn;
    }

    // The dimensions of P (written as AP): each expression over the function's scalars,
    // and for a callback's parameter (CB set) over the callback's own scalars too.
    void resolveDims(const ast::Param &ap, const Function &fn, const std::map<std::string, int> &index,
                     Param &p, const Param *cb) {
        // 'OUT string s[]' is one string the body stores through s (Ninf-G): param()
        // made it the out scalar '*s'.
        if (p.pointer && !ap.star) return;
        for (size_t d = 0; d < ap.dims.size(); ++d) {
            const auto &ad = ap.dims[d];
            if (ad.empty && emptyMeansOneInElement(ap, p)) {
                Dim one;
                one.size.value = 1;
                p.dims.push_back(std::move(one));
                continue;
            }
            if (ad.empty) {
                emptyDimension(ap, p, d);
                continue;
            }
            std::string what = "dimension " + std::to_string(d + 1) + " of '" + ap.name + "'";
            if (cb) what += " (callback '" + cb->name + "')";
            Dim dim;
            dim.size = expr(*ad.size, fn, index, what, cb);
            if (ad.start) dim.start = expr(*ad.start, fn, index, what, cb);
            if (ad.end) dim.end = expr(*ad.end, fn, index, what, cb);
            if (ad.step) dim.step = expr(*ad.step, fn, index, what, cb);
            p.dims.push_back(std::move(dim));
        }
    }

    // A callback parameter 'name(params)' (Ninf IDL): the client passes a function, the
    // body calls it during the call. Its parameters are ordinary IN, OUT or INOUT ones.
    Param callbackParam(const ast::Function &f, const ast::Param &p) {
        Param mp;
        mp.name = p.name;
        mp.loc = p.loc;
        mp.type = Type::Callback;
        mp.mode = Mode::In;
        if (isReservedName(p.name))
            diag_.error(p.loc, "'" + p.name +
                                   "' is reserved in C (a keyword or a type of the generated code) and "
                                   "cannot name a callback: choose another name");
        if (p.cbParams.size() > 32)
            diag_.error(p.loc, "callback '" + p.name + "' has " + std::to_string(p.cbParams.size()) +
                                   " parameters; at most 32 are supported");
        std::map<std::string, Loc> seen;
        for (const auto &q : p.cbParams) {
            if (q.callback) {
                diag_.error(q.loc, "callback '" + p.name + "' takes a callback '" + q.name +
                                       "': a callback's parameters are data (IN, OUT, INOUT), not functions");
                mp.cb.emplace_back();
                continue;
            }
            auto it = seen.find(q.name);
            if (it != seen.end())
                diag_.error(q.loc, "parameter '" + q.name + "' of callback '" + p.name +
                                       "' is declared twice: rename one");
            seen.emplace(q.name, q.loc);
            Param cq = param(f, q);
            if (cq.mode == Mode::Work)
                diag_.error(q.loc, "parameter '" + q.name + "' of callback '" + p.name +
                                       "' is WORK: a callback's parameters are IN, OUT or INOUT");
            mp.cb.push_back(std::move(cq));
        }
        return mp;
    }

    void callbackDims(const ast::Param &p, const Function &fn, const std::map<std::string, int> &index,
                      Param &mp) {
        for (size_t j = 0; j < p.cbParams.size() && j < mp.cb.size(); ++j)
            if (!p.cbParams[j].callback) resolveDims(p.cbParams[j], fn, index, mp.cb[j], &mp);
    }

    // An empty dimension '[]' has a meaning only on a lone dimension of an OUT or
    // INOUT string (one string, as '*s'); anywhere else its size cannot be known, and the
    // message says what to write for the likely intent.
    static bool emptyMeansOneString(const ast::Param &p, const Param &mp) {
        return p.dims.size() == 1 && p.dims[0].empty && !p.star && mp.type == Type::String &&
               (mp.mode == Mode::Out || mp.mode == Mode::InOut);
    }

    // The manual's samples write one numeric value as 'OUT double result[]' (Ninf-G
    // programs must compile unchanged): a lone '[]' on an OUT or INOUT number is the out
    // scalar '*result', the same descriptor, body and caller.
    static bool emptyMeansOneOutValue(const ast::Param &p, const Param &mp) {
        return p.dims.size() == 1 && p.dims[0].empty && !p.star && isNumericType(mp.type) &&
               (mp.mode == Mode::Out || mp.mode == Mode::InOut);
    }

    // 'IN double x[]' is one element too, but an array of one ('x[1]'), not the IN
    // scalar: a body that indexes x[0] and a caller that passes an address (as both do
    // for what is written as an array) keep working.
    static bool emptyMeansOneInElement(const ast::Param &p, const Param &mp) {
        return p.dims.size() == 1 && p.dims[0].empty && !p.star && isNumericType(mp.type) &&
               mp.mode == Mode::In;
    }

    void emptyDimension(const ast::Param &p, const Param &mp, size_t d) {
        const Loc &at = p.dims[d].loc;
        const std::string &n = p.name;
        if (mp.type == Type::String && p.dims.size() == 1 && mp.mode == Mode::In) {
            diag_.error(at, "'" + n + "[]' on an IN string has no size: write 'IN string " + n +
                                "' for one string or '" + n + "[n]' for n strings");
        } else if (mp.type == Type::Filename && p.dims.size() == 1) {
            diag_.error(at, "'" + n + "[]' on a filename has no size: write 'filename " + n +
                                "' for one file or '" + n + "[n]' for n files");
        } else if (mp.type == Type::String && p.dims.size() == 1) {
            diag_.error(at, "'" + n + "[]' on a " + modeName(mp.mode) + " string has no size: write '" + n +
                                "[n]' for n strings");
        } else if (mp.type == Type::String) {
            diag_.error(at, "array '" + n + "' has an empty dimension '[]' (dimension " +
                                std::to_string(d + 1) + " of " + std::to_string(p.dims.size()) +
                                "): give every size, as in " + n +
                                "[n]; only a lone '[]' on an OUT or INOUT "
                                "string has a meaning (one string)");
        } else if (p.dims.size() == 1) {
            // WORK: scratch space the server allocates, so it needs a size.
            diag_.error(at, "'" + n + "[]' on a WORK array has no size: write '" + n + "[n]' for n elements");
        } else {
            diag_.error(at, "array '" + n + "' has an empty dimension '[]': give its size, as in " + n +
                                "[n] (only a lone '[]' has a meaning: one element, or one OUT or INOUT "
                                "string)");
        }
    }

    // W, a word of parameter P that is neither a mode nor a type: a misspelt one, named
    // as the mode or the type it most likely stands for. Returns true when reported as
    // the mode. HAS_MODE and HAS_TYPE: P has a valid one; LAST: W comes just before the
    // name.
    bool unknownWord(const ast::Function &f, const ast::Param &p, const ast::Word &w, bool hasMode,
                     bool hasType, bool last) {
        std::string of = " for parameter '" + p.name + "' of " + f.name;
        if (hasMode && hasType) {
            // 'IN int n x': more likely a parameter whose ',' is missing than a typo.
            diag_.error(w.loc, "'" + w.text + "' before parameter '" + p.name + "' of " + f.name +
                                   " is neither a mode nor a type" +
                                   (last ? ": is a ',' missing after it?" : ": remove it"));
            return false;
        }
        std::string asMode = closest(w.text, modeWords(), true);
        std::string asType = closest(w.text, typeWords(), true);
        bool isMode;
        if (asMode.empty() != asType.empty())
            isMode = !asMode.empty();
        else if (hasMode != hasType)
            isMode = hasType; // both or neither are close: it is the one that is missing
        else
            isMode = !asMode.empty() && editDistance(w.text, asMode) <= editDistance(w.text, asType);
        const std::string &guess = isMode ? asMode : asType;
        std::string m = std::string("unknown ") + (isMode ? "mode" : "type") + " '" + w.text + "'" + of;
        if (!guess.empty())
            m += ": did you mean '" + guess + "'?";
        else if (isMode)
            m += ": write IN, OUT, INOUT or WORK (or mode_in, mode_out, mode_inout, mode_work)";
        else
            m += std::string(": write one of ") + kTypeList;
        diag_.error(w.loc, m);
        return isMode;
    }

    Param param(const ast::Function &f, const ast::Param &p) {
        Param mp;
        mp.name = p.name;
        mp.loc = p.loc;
        mp.pointer = p.star;
        if (isReservedName(p.name))
            diag_.error(p.loc, "'" + p.name +
                                   "' is reserved in C (a keyword or a type of the generated code) and "
                                   "cannot name a parameter: choose another name");
        const ast::Word *mode = nullptr;
        std::vector<const ast::Word *> types, unknown;
        size_t modeAt = 0, firstTypeAt = 0, lastTypeAt = 0;
        for (size_t wi = 0; wi < p.words.size(); ++wi) {
            const ast::Word &w = p.words[wi];
            if (w.kind == ast::Word::Type) {
                if (types.empty()) firstTypeAt = wi;
                lastTypeAt = wi;
            }
            if (w.kind == ast::Word::Unknown) {
                unknown.push_back(&w);
                continue;
            }
            if (w.kind == ast::Word::Mode) {
                if (!mode) modeAt = wi;
                if (mode) {
                    diag_.error(w.loc, "parameter '" + p.name + "' has two modes ('" + mode->text +
                                           "' and '" + w.text + "'): keep one");
                    continue;
                }
                mode = &w;
            } else {
                types.push_back(&w);
            }
        }
        // A misspelt word stands for the mode or type the parameter lacks: report it, not
        // the lack as well.
        bool typoMode = false, typoType = false;
        for (const ast::Word *u : unknown) {
            if (unknownWord(f, p, *u, mode != nullptr, !types.empty(), u == &p.words.back()))
                typoMode = true;
            else
                typoType = true;
        }
        if (mode) {
            mp.mode = modeFromWord(mode->text);
        } else if (!typoMode) {
            diag_.error(
                p.loc,
                "parameter '" + p.name + "' of " + f.name +
                    " has no mode: write IN, OUT, INOUT or WORK (or mode_in, mode_out, ...) before its type");
        }
        // The legacy Ninf form "long mode_in int n" puts a type before the mode: the
        // type after the mode is the parameter's.
        if (types.size() == 2 && mode && types[0]->text == "long" && !types[0]->isUnsigned &&
            firstTypeAt < modeAt && lastTypeAt > modeAt)
            types.erase(types.begin());
        if (types.empty()) {
            if (!typoType)
                diag_.error(p.loc, "parameter '" + p.name + "' of " + f.name + " has no type: write one of " +
                                       kTypeList);
        } else if (types.size() > 1) {
            diag_.error(types[1]->loc, "parameter '" + p.name + "' has two types ('" + types[0]->text +
                                           "' and '" + types[1]->text + "'): keep one");
        } else {
            typeFromWord(types[0]->text, mp.type);
            mp.isUnsigned = types[0]->isUnsigned;
            if (mp.isUnsigned && !isIntegerType(mp.type))
                diag_.error(types[0]->loc,
                            "'unsigned' applies to integer types only, not to " + types[0]->text);
        }
        if (mode && (emptyMeansOneString(p, mp) || emptyMeansOneOutValue(p, mp))) mp.pointer = true;
        if (mode && p.star && mp.mode == Mode::In && isNumericType(mp.type) && p.dims.empty()) {
            // Ninf-G accepts 'IN int *x' (written in callbacks' parameters, mostly) as the
            // IN scalar 'IN int x': the value travels, and the descriptor, the body and
            // the caller treat it exactly as 'IN int x'.
            mp.pointer = false;
        } else if (mode && p.star && mp.mode != Mode::Out && mp.mode != Mode::InOut) {
            diag_.error(p.loc, "'*" + p.name + "' marks a scalar the function writes, but '" + p.name +
                                   "' is " + modeName(mp.mode) + ": drop the '*' or make it OUT");
        }
        if (p.star && !p.dims.empty())
            diag_.error(p.loc, "'*" + p.name + "' is an out scalar and cannot have dimensions: drop the '*'");
        if (mode && mp.mode == Mode::Work && p.dims.empty())
            diag_.error(p.loc,
                        "WORK parameter '" + p.name + "' must be an array (scratch space on the server)");
        if (p.dims.size() > 8)
            diag_.error(p.loc, "array '" + p.name + "' has " + std::to_string(p.dims.size()) +
                                   " dimensions; at most 8 are supported");
        return mp;
    }

    // CB: the callback whose parameter's dimension E is; its own scalars come first.
    Expr expr(const ast::Expr &e, const Function &fn, const std::map<std::string, int> &index,
              const std::string &what, const Param *cb = nullptr) {
        Expr out;
        if (cb && e.kind == ast::Expr::Name) {
            for (size_t j = 0; j < cb->cb.size(); ++j) {
                const Param &q = cb->cb[j];
                if (q.name != e.text) continue;
                out.op = Expr::CbParam;
                out.param = static_cast<int>(j);
                if (q.mode == Mode::Out)
                    diag_.error(e.loc, what + " uses '" + e.text +
                                           "', an OUT parameter of the callback: sizes must be known before "
                                           "the callback runs, so make it IN or INOUT");
                else if (q.isArray())
                    diag_.error(e.loc, what + " uses '" + e.text + "', an array: use a scalar parameter");
                else if (!isIntegerType(q.type))
                    diag_.error(e.loc, what + " uses '" + e.text +
                                           "', which is not an integer: sizes must be char, short, int, long "
                                           "or longlong");
                return out;
            }
        }
        switch (e.kind) {
        case ast::Expr::Int: {
            errno = 0;
            char *end = nullptr;
            long long v = strtoll(e.text.c_str(), &end, 10);
            if (errno == ERANGE || *end)
                diag_.error(e.loc, "the number " + e.text + " in " + what + " does not fit in 64 bits");
            out.op = Expr::Const;
            out.value = v;
            return out;
        }
        case ast::Expr::Name: {
            out.op = Expr::Param;
            auto it = index.find(e.text);
            if (it == index.end()) {
                diag_.error(e.loc, what + " uses '" + e.text + "', which is not a parameter of " +
                                       (cb ? "callback '" + cb->name + "' or of " : std::string()) + fn.name);
                return out;
            }
            const Param &p = fn.params[it->second];
            out.param = it->second;
            if (p.mode == Mode::Out || p.mode == Mode::Work) {
                diag_.error(e.loc,
                            what + " uses '" + e.text + "', an " + modeName(p.mode) +
                                " parameter: sizes must be known before the call, so make it IN or INOUT");
            } else if (p.isArray()) {
                diag_.error(e.loc, what + " uses '" + e.text + "', an array: use a scalar parameter");
            } else if (p.isCallback()) {
                diag_.error(e.loc, what + " uses '" + e.text + "', a callback: use a scalar parameter");
            } else if (!isIntegerType(p.type)) {
                diag_.error(
                    e.loc,
                    what + " uses '" + e.text +
                        "', which is not an integer: sizes must be char, short, int, long or longlong");
            }
            return out;
        }
        case ast::Expr::Unary:
            out.op = e.op == "!" ? Expr::Not : Expr::Neg;
            out.args.push_back(expr(*e.kids[0], fn, index, what, cb));
            return out;
        case ast::Expr::Cond:
            out.op = Expr::Cond;
            for (const auto &k : e.kids)
                out.args.push_back(expr(*k, fn, index, what, cb));
            return out;
        case ast::Expr::Call:
            if ((e.op != "min" && e.op != "max") || e.kids.size() != 2) {
                diag_.error(e.loc, "unknown function '" + e.op + "' with " + std::to_string(e.kids.size()) +
                                       " argument(s) in " + what +
                                       ": only min(a, b) and max(a, b) are available");
                out.op = Expr::Const;
                return out;
            }
            out.op = e.op == "min" ? Expr::Min : Expr::Max;
            for (const auto &k : e.kids)
                out.args.push_back(expr(*k, fn, index, what, cb));
            return out;
        case ast::Expr::Binary: {
            static const std::map<std::string, Expr::Op> ops = {
                {"+", Expr::Add}, {"-", Expr::Sub}, {"*", Expr::Mul},  {"/", Expr::Div}, {"%", Expr::Mod},
                {"^", Expr::Pow}, {"<", Expr::Lt},  {"<=", Expr::Le},  {">", Expr::Gt},  {">=", Expr::Ge},
                {"==", Expr::Eq}, {"!=", Expr::Ne}, {"&&", Expr::And}, {"||", Expr::Or}};
            out.op = ops.at(e.op);
            for (const auto &k : e.kids)
                out.args.push_back(expr(*k, fn, index, what, cb));
            return out;
        }
        }
        return out;
    }

    // Timeout's value in seconds: "30", "90s", "5m", "2h", "1d" (a whole number, then an
    // optional unit); 0 when it is not one, or is out of range.
    static uint32_t timeoutSeconds(const std::string &v) {
        size_t i = 0;
        uint64_t n = 0;
        while (i < v.size() && v[i] >= '0' && v[i] <= '9' && n <= GRD_MAX_TIMEOUT)
            n = n * 10 + static_cast<uint64_t>(v[i++] - '0');
        if (i == 0) return 0;
        while (i < v.size() && v[i] == ' ')
            ++i;
        static const std::map<std::string, uint64_t> units = {
            {"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
        auto u = units.find(v.substr(i));
        if (u == units.end() || n > GRD_MAX_TIMEOUT / u->second) return 0;
        return static_cast<uint32_t>(n * u->second);
    }

    void options(const ast::Function &f, Function &fn, const std::map<std::string, int> &index, bool method) {
        const ast::Option *cost = nullptr, *lang = nullptr, *timeout = nullptr;
        for (const auto &o : f.options) {
            if (o.key == "Timeout") {
                // The server ends a call that runs longer, as with its --call-timeout, which
                // this replaces for the function; only a call in an executor process can be
                // ended, and methods run in gridrpcd's own.
                if (method) {
                    diag_.error(o.loc,
                                "Timeout cannot limit method " + f.name +
                                    ": methods run in the server's own process, where a call cannot be "
                                    "stopped; remove it");
                    continue;
                }
                if (timeout) {
                    diag_.error(o.loc, "Timeout is given twice for " + f.name + ": keep one");
                    continue;
                }
                timeout = &o;
                fn.timeout = timeoutSeconds(o.value);
                if (fn.timeout == 0)
                    diag_.error(o.loc, "Timeout takes the seconds a call of " + f.name +
                                           " may run on the server: a whole number from 1 to " +
                                           std::to_string(GRD_MAX_TIMEOUT) +
                                           ", as Timeout 30 or Timeout \"5m\" (units s, "
                                           "m, h, d), not \"" +
                                           o.value + "\"");
            } else if (o.key == "Required") {
                fn.required.push_back(o.value);
            } else if (o.key == "CalcOrder" || o.key == "Complexity") {
                if (cost) {
                    diag_.error(o.loc, "a second cost (" + o.key + ") for " + f.name +
                                           ": CalcOrder and Complexity "
                                           "are synonyms, keep one");
                    continue;
                }
                cost = &o;
                fn.cost = expr(*o.expr, fn, index, "the cost of " + f.name);
            } else if (o.key == "Backend") {
                std::string b = lower(o.value);
                if (b == "mpi" || b == "blacs")
                    diag_.error(o.loc, "Backend \"" + o.value +
                                           "\" is not supported yet: remove the Backend line "
                                           "to run " +
                                           f.name + " as an ordinary function on one server");
                else
                    diag_.error(o.loc, "unknown Backend \"" + o.value +
                                           "\": Ninf-G knows \"MPI\" and \"BLACS\", "
                                           "and neither is supported yet");
            } else if (o.key == "Shrink") {
                std::string v = lower(o.value);
                if (v == "yes")
                    fn.shrink = true;
                else if (v != "no")
                    diag_.error(o.loc, "Shrink takes \"yes\" or \"no\", not \"" + o.value + "\"");
            } else if (o.key == "Retry") {
                // "no": the function has side effects (or is costly) enough that a client
                // must not run it again on another server after a failure.
                std::string v = lower(o.value);
                if (v == "no")
                    fn.noRetry = true;
                else if (v != "yes")
                    diag_.error(o.loc, "Retry takes \"yes\" (the default: a call whose server fails may run "
                                       "again on another server) or \"no\", not \"" +
                                           o.value + "\"");
            } else if (o.key == "Language") {
                if (lang) {
                    diag_.error(o.loc, "Language is given twice for " + f.name + ": keep one");
                    continue;
                }
                lang = &o;
                if (!language(o.value, fn.language))
                    diag_.error(o.loc,
                                "unknown Language \"" + o.value + "\": write \"C\", \"C++\" or \"FORTRAN\"");
            }
        }
    }

    static bool language(const std::string &v, Language &out) {
        std::string l = lower(v);
        if (l == "c")
            out = Language::C;
        else if (l == "c++")
            out = Language::Cxx;
        else if (l == "fortran")
            out = Language::Fortran;
        else
            return false;
        return true;
    }

    void body(const ast::Function &f, Function &fn, const std::map<std::string, int> &index) {
        if (f.inlineBody) {
            fn.inlineBody = true;
            fn.bodyText = f.bodyText;
            fn.bodyLoc = f.bodyLoc;
            if (fn.language == Language::Fortran)
                diag_.error(f.bodyLoc, "an inline body is C, but " + f.name +
                                           " says Language \"FORTRAN\": use "
                                           "Calls \"Fortran\" name(...) to call Fortran code");
            return;
        }
        if (!language(f.callsLanguage, fn.callsLanguage)) {
            diag_.error(f.callsLanguageLoc,
                        "Calls \"" + f.callsLanguage + "\": write Calls \"C\" or Calls \"Fortran\"");
        }
        if (fn.callsLanguage == Language::Fortran) fn.language = Language::Fortran;
        if (fn.callsLanguage == Language::Fortran)
            for (const auto &p : fn.params)
                if (p.isCallback())
                    diag_.error(p.loc, "callback '" + p.name +
                                           "' cannot be passed to Fortran (Calls \"Fortran\"): "
                                           "use an inline body or Calls \"C\"");
        fn.callsTarget = f.callsTarget;
        if (isReservedName(f.callsTarget))
            diag_.error(f.callsTargetLoc, "'" + f.callsTarget + "' is a C keyword and cannot be called");
        bool unresolved = false;
        for (const auto &a : f.callsArgs) {
            CallArg ca;
            if (a.star) {
                diag_.error(a.loc, "write the parameter name alone in Calls (not '*" + a.text +
                                       "'): out scalars are passed as pointers already");
            }
            if (a.isInt) {
                errno = 0;
                char *end = nullptr;
                ca.literal = strtoll(a.text.c_str(), &end, 10);
                if (errno == ERANGE || *end)
                    diag_.error(a.loc, "the number " + a.text + " does not fit in 64 bits");
            } else {
                auto it = index.find(a.text);
                if (it == index.end()) {
                    std::vector<std::string> names;
                    for (const auto &p : fn.params)
                        names.push_back(p.name);
                    std::string guess = closest(a.text, names, false);
                    diag_.error(a.loc, "Calls passes '" + a.text + "', which is not a parameter of " +
                                           f.name + (guess.empty() ? "" : ": did you mean '" + guess + "'?"));
                    unresolved = true;
                } else {
                    ca.param = it->second;
                }
            }
            fn.callsArgs.push_back(ca);
        }
        // With a name unresolved, what is left unpassed is likely that name misspelt:
        // its error says enough.
        if (!unresolved) unpassed(f, fn);
    }

    // The parameters of FN (a Calls body) its arguments leave out. The stub declares
    // the callee from the arguments, so nothing else would notice: an OUT or INOUT one
    // is never written (the client gets zeros, or garbage where the library reads an
    // argument it was not given), an error; an IN array, string, filename or callback
    // is sent or passed on every call for nothing, a warning. IN scalars are often only sizes, and
    // WORK arrays scratch space the server allocates: neither is worth a word.
    void unpassed(const ast::Function &f, const Function &fn) {
        std::vector<bool> passed(fn.params.size(), false);
        for (const auto &a : fn.callsArgs)
            if (a.param >= 0) passed[static_cast<size_t>(a.param)] = true;
        std::string who = fn.cls.empty() ? fn.name : fn.cls + "." + fn.name;
        // The arguments with the missing OUT and INOUT ones added, each after the last
        // argument that names a parameter declared before it (else before the first
        // that names one declared after it, else at the end): the Define's order where
        // the arguments follow it, and a plausible place where they do not.
        std::vector<std::string> fixed;
        std::vector<int> order; // the parameter each of FIXED names, -1 for a literal
        for (size_t k = 0; k < f.callsArgs.size(); ++k) {
            fixed.push_back(f.callsArgs[k].text);
            order.push_back(fn.callsArgs[k].param);
        }
        std::vector<size_t> missing;
        for (size_t i = 0; i < fn.params.size(); ++i) {
            if (passed[i] || !fn.params[i].writes()) continue;
            missing.push_back(i);
            int pi = static_cast<int>(i);
            size_t at = fixed.size();
            bool after = false;
            for (size_t k = 0; k < order.size(); ++k)
                if (order[k] >= 0 && order[k] < pi) {
                    at = k + 1;
                    after = true;
                }
            if (!after)
                for (size_t k = 0; k < order.size(); ++k)
                    if (order[k] > pi) {
                        at = k;
                        break;
                    }
            fixed.insert(fixed.begin() + static_cast<long>(at), fn.params[i].name);
            order.insert(order.begin() + static_cast<long>(at), pi);
        }
        std::string call = "Calls \"" + f.callsLanguage + "\" " + fn.callsTarget + "(";
        for (size_t k = 0; k < fixed.size(); ++k)
            call += (k ? ", " : "") + fixed[k];
        call += ")";
        for (size_t i : missing) {
            const Param &p = fn.params[i];
            diag_.error(f.callsLoc, who + ": " + modeName(p.mode) + " parameter '" + p.name +
                                        "' is not passed to " + fn.callsTarget +
                                        ", so nothing could ever write it: add it to the Calls arguments (" +
                                        call + ")");
        }
        for (size_t i = 0; i < fn.params.size(); ++i) {
            const Param &p = fn.params[i];
            if (passed[i] || p.mode != Mode::In) continue;
            if (p.isCallback())
                diag_.warning(f.callsLoc, who + ": callback '" + p.name + "' is not passed to " +
                                              fn.callsTarget +
                                              ", so the client's function is never called: pass it, or "
                                              "remove it from the parameters");
            else if (p.isArray() || p.isString())
                diag_.warning(f.callsLoc, who + ": IN " +
                                              (p.isArray()                ? "array"
                                               : p.type == Type::Filename ? "filename"
                                                                          : "string") +
                                              " '" + p.name + "' is not passed to " + fn.callsTarget +
                                              ", so every call sends it for nothing: pass it, or remove it "
                                              "from the parameters");
        }
    }

    Diag &diag_;
};

} // namespace

bool isReservedName(const std::string &name) {
    return reservedWords().count(name) > 0;
}

std::optional<Module> analyze(const ast::File &file, Diag &diag) {
    Analyzer a(diag);
    return a.run(file);
}

} // namespace idlc
