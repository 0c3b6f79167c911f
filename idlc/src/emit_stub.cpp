// emit_stub.cpp: model -> the server stub C source of a module. The stub holds each
// function's encoded descriptor and an invoke routine that turns the server's argument
// vector (gridrpc_stub.h) into a call of the inline body or the library function. The
// server unmarshals generically from the descriptor, so the stub has no wire code.
#include <cctype>

#include "emit.h"
#include "printer.h"

namespace idlc {

using model::Language;
using model::Mode;
using model::Param;
using model::Type;

std::string cElementType(const Param &p) {
    std::string t;
    switch (p.type) {
    case Type::Char: t = "char"; break;
    case Type::Short: t = "short"; break;
    case Type::Int: t = "int"; break;
    case Type::Long: t = "long"; break;
    case Type::LongLong: t = "long long"; break;
    case Type::Float: t = "float"; break;
    case Type::Double: t = "double"; break;
    case Type::SComplex: t = "scomplex"; break;
    case Type::DComplex: t = "dcomplex"; break;
    case Type::String:
    case Type::Filename: t = "char *"; break;
    case Type::Callback: t = "void"; break; // not an element type: see cbPointerType
    }
    return p.isUnsigned ? "unsigned " + t : t;
}

namespace {

// How a parameter reaches C code (inline bodies and Calls "C"): scalars IN by value,
// scalars the function writes and all arrays by pointer.
// A filename is always its path: the body reads or writes the file, not the pointer.
bool byValue(const Param &p) {
    return !p.isArray() && (p.mode == Mode::In || p.type == Type::Filename);
}

std::string joinType(const std::string &t, const std::string &suffix) {
    if (!t.empty() && t.back() == '*') return t + suffix;
    return t + " " + suffix;
}

std::string cParamType(const Param &p);

// A callback as the body sees it: a function taking its parameters as a body would
// (IN scalars by value, the rest by pointer) and returning GRID_OK or an error code.
// NAME: the declarator ("cb" for a parameter, "" for a type).
std::string cbPointerType(const Param &p, const std::string &name) {
    std::string params;
    for (size_t j = 0; j < p.cb.size(); ++j)
        params += (j ? ", " : "") + cParamType(p.cb[j]);
    return "int (*" + name + ")(" + (params.empty() ? "void" : params) + ")";
}

// The C type of the parameter as a body or C callee sees it.
std::string cParamType(const Param &p) {
    if (p.isCallback()) return cbPointerType(p, "");
    std::string t = cElementType(p);
    return byValue(p) ? t : joinType(t, "*");
}

// A declaration of parameter P named NAME.
std::string cParamDecl(const Param &p, const std::string &name) {
    if (p.isCallback()) return cbPointerType(p, name);
    return joinType(cParamType(p), name);
}

// The expression that extracts parameter I from the argument vector for C code.
std::string cArgExpr(const Param &p, size_t i, const std::string &sym) {
    if (p.isCallback()) return "grs_cb_" + sym + "_" + p.name;
    std::string t = cElementType(p);
    std::string slot = "args[" + std::to_string(i) + "]";
    if (byValue(p)) return "*(" + joinType(t, "*") + ")" + slot;
    return "(" + joinType(t, "*") + ")" + slot;
}

std::string fortranSymbol(const std::string &format, const std::string &name) {
    std::string upper;
    for (char c : name)
        upper += static_cast<char>(toupper(static_cast<unsigned char>(c)));
    std::string out;
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] == '%' && i + 1 < format.size() && format[i + 1] == 's') {
            out += name;
            ++i;
        } else if (format[i] == '%' && i + 1 < format.size() && format[i + 1] == 'l') {
            out += upper;
            ++i;
        } else {
            out += format[i];
        }
    }
    return out;
}

std::string hexBytes(const std::vector<uint8_t> &bytes) {
    std::string out;
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < bytes.size(); ++i) {
        out += (i % 12 == 0) ? "\n    " : " ";
        out += "0x";
        out += digits[bytes[i] >> 4];
        out += digits[bytes[i] & 15];
        out += ',';
    }
    return out;
}

void lineDirective(Printer &p, int line, const std::string &file) {
    p.print("#line $line$ $file$\n", {{"line", std::to_string(line)}, {"file", cQuote(file)}});
}

// The C function a body calls for callback P: it packs its arguments into the layout of
// the argument vector and hands them to the server (gridrpc_stub_callback). The
// server's handle is per thread, set by invoke for the length of the call; a server
// that gave none (an entry without a call) gets GRIDRPC_STUB_CALLBACK_OUTSIDE, not a crash.
void emitCallback(Printer &pr, const std::string &sym, const Param &p) {
    std::string params, slots;
    for (size_t j = 0; j < p.cb.size(); ++j) {
        const Param &q = p.cb[j];
        std::string n = "a" + std::to_string(j);
        params += (j ? ", " : "") + cParamDecl(q, n);
        slots += (j ? ", " : "") + std::string("(void *)") + (byValue(q) ? "&" + n : n);
    }
    Printer::Vars v = {{"sym", sym},
                       {"cb", p.name},
                       {"params", params.empty() ? "void" : params},
                       {"n", std::to_string(p.cb.empty() ? 1 : p.cb.size())},
                       {"slots", slots.empty() ? "0" : slots}};
    pr.print("/* callback $cb$ */\n"
             "static __thread const gridrpc_stub_callback *grs_cbx_$sym$_$cb$;\n"
             "static int grs_cb_$sym$_$cb$($params$)\n{\n"
             "    void *a[$n$] = {$slots$};\n"
             "    const gridrpc_stub_callback *cb = grs_cbx_$sym$_$cb$;\n"
             "    return cb && cb->call ? cb->call(cb, a) : GRIDRPC_STUB_CALLBACK_OUTSIDE;\n}\n\n",
             v);
}

// The C symbol part of function F: module_function, or module_Class__method.
std::string symbol(const model::Module &mod, const model::Function &f) {
    return f.cls.empty() ? mod.name + "_" + f.name : mod.name + "_" + f.cls + "__" + f.name;
}

void emitFunction(Printer &pr, const model::Module &mod, const model::Function &f,
                  const std::vector<uint8_t> &desc, const std::string &outName) {
    const std::string sym = symbol(mod, f);
    const model::Class *cls = nullptr;
    for (const auto &c : mod.classes)
        if (c.name == f.cls) cls = &c;
    Printer::Vars v = {{"sym", sym},
                       {"name", f.name},
                       {"qname", mod.qualified(f)},
                       {"size", std::to_string(desc.size())},
                       {"bytes", hexBytes(desc)}};
    pr.print("\n/* ---- $qname$ ---- */\n\n", v);
    pr.print("static const unsigned char grs_desc_$sym$[$size$] = {$bytes$\n};\n\n", v);
    bool callbacks = false;
    for (const auto &p : f.params)
        if (p.isCallback()) {
            if (!callbacks)
                pr.print("#ifndef GRIDRPC_STUB_CALLBACKS\n#error \"$qname$ takes callbacks: this "
                         "gridrpc_stub.h predates them\"\n#endif\n\n",
                         v);
            callbacks = true;
            emitCallback(pr, sym, p);
        }

    std::string call;
    if (f.inlineBody) {
        std::string decls;
        for (size_t i = 0; i < f.params.size(); ++i) {
            if (i) decls += ", ";
            decls += cParamDecl(f.params[i], f.params[i].name);
        }
        if (cls) {
            // A method's body sees the object's state members by name.
            v["st"] = mod.name + "_" + cls->name;
            decls = "struct grs_state_" + v["st"] + " *grs_self" + (decls.empty() ? "" : ", " + decls);
            for (const auto &m : cls->members)
                pr.print("#define $m$ (grs_self->$m$)\n", {{"m", m}});
        }
        v["decls"] = decls.empty() ? "void" : decls;
        pr.print("static void grs_body_$sym$($decls$)\n", v);
        lineDirective(pr, f.bodyLoc.line, f.bodyLoc.file);
        pr.raw(f.bodyText);
        pr.raw("\n");
        lineDirective(pr, pr.nextLine() + 1, outName);
        if (cls)
            for (const auto &m : cls->members)
                pr.print("#undef $m$\n", {{"m", m}});
        pr.raw("\n");
        std::string args;
        for (size_t i = 0; i < f.params.size(); ++i) {
            if (i) args += ",\n        ";
            args += cArgExpr(f.params[i], i, sym);
        }
        if (cls)
            args = "(struct grs_state_" + mod.name + "_" + cls->name + " *)args[" +
                   std::to_string(f.params.size()) + "]" + (args.empty() ? "" : ",\n        " + args);
        call = "grs_body_" + sym + "(" + (args.empty() ? "" : "\n        " + args) + ")";
    } else {
        // The callee is declared under a name of our own bound to the library symbol,
        // so the declaration cannot clash with a header's prototype of the same function
        // (const-qualified pointers, another return type) or with libc names.
        bool fortran = f.callsLanguage == Language::Fortran;
        std::string types, args, hidden, hiddenTypes;
        for (size_t k = 0; k < f.callsArgs.size(); ++k) {
            const auto &a = f.callsArgs[k];
            std::string t, e;
            if (a.param < 0) {
                t = fortran ? "int *" : "int";
                e = fortran ? "&(int){" + std::to_string(a.literal) + "}" : std::to_string(a.literal);
            } else {
                const Param &p = f.params[a.param];
                if (fortran && p.isString()) {
                    // Fortran CHARACTER arguments: the address, plus a hidden length at the end.
                    t = "char *";
                    e = "*(char **)args[" + std::to_string(a.param) + "]";
                    hiddenTypes += ", size_t";
                    hidden += ",\n        strlen(*(char **)args[" + std::to_string(a.param) + "])";
                } else if (fortran) {
                    t = joinType(cElementType(p), "*");
                    e = "(" + t + ")args[" + std::to_string(a.param) + "]";
                } else {
                    t = cParamType(p);
                    e = cArgExpr(p, static_cast<size_t>(a.param), sym);
                }
            }
            if (k) {
                types += ", ";
                args += ",\n        ";
            }
            types += t;
            args += e;
        }
        types += hiddenTypes;
        args += hidden;
        if (types.empty()) types = "void";
        v["types"] = types;
        v["target"] = fortran ? fortranSymbol(mod.fortranFormat, f.callsTarget) : f.callsTarget;
        v["lang"] = fortran ? "Fortran" : "C";
        pr.print("/* Calls \"$lang$\" $target$ */\n", v);
        pr.print("extern void grs_callee_$sym$($types$) __asm__(\"$target$\");\n\n", v);
        call = "grs_callee_" + sym + "(" + (args.empty() ? "" : "\n        " + args) + ")";
    }
    v["call"] = call;
    pr.print("static void grs_invoke_$sym$(void **args)\n{\n", v);
    if (f.params.empty() && !(cls && f.inlineBody)) pr.print("    (void)args;\n");
    for (size_t i = 0; i < f.params.size(); ++i)
        if (f.params[i].isCallback())
            pr.print("    grs_cbx_$sym$_$cb$ = (const gridrpc_stub_callback *)args[$i$];\n",
                     {{"sym", sym}, {"cb", f.params[i].name}, {"i", std::to_string(i)}});
    pr.print("    $call$;\n", v);
    // After the call the body's callbacks answer GRIDRPC_STUB_CALLBACK_OUTSIDE.
    for (const auto &p : f.params)
        if (p.isCallback()) pr.print("    grs_cbx_$sym$_$cb$ = NULL;\n", {{"sym", sym}, {"cb", p.name}});
    pr.print("}\n");
}

} // namespace

std::string emitStub(const model::Module &mod, const std::vector<std::vector<uint8_t>> &descs,
                     const std::string &outName) {
    Printer pr;
    Printer::Vars v = {{"src", mod.source}, {"mod", mod.name}, {"n", std::to_string(mod.functions.size())}};
    pr.print("/* $src$ -> server stub of module $mod$.\n"
             " * Generated by idlc: DO NOT EDIT. Change $src$ and run idlc again. */\n",
             v);
    std::string req;
    for (const auto &f : mod.functions)
        for (const auto &r : f.required)
            if (req.find(" " + r + " ") == std::string::npos) req += " " + r + " ";
    for (const auto &l : mod.libraries)
        req += " " + l + " ";
    if (!req.empty()) {
        std::string list;
        size_t pos = 0;
        while ((pos = req.find_first_not_of(' ', pos)) != std::string::npos) {
            size_t e = req.find(' ', pos);
            list += (list.empty() ? "" : " ") + req.substr(pos, e - pos);
            pos = e;
        }
        pr.print("/* Links with: $list$ */\n", {{"list", list}});
    }
    pr.print(
        "\n"
        "/* Inline bodies rely on these, as they did under Ninf-G. */\n"
        "#include <assert.h>\n"
        "#include <stdio.h>\n"
        "#include <stdlib.h>\n"
        "#include <string.h>\n"
        "#include <unistd.h>\n"
        "\n"
        "#include <gridrpc_stub.h>\n"
        "\n"
        "#if !defined(GRIDRPC_STUB_ABI) || GRIDRPC_STUB_ABI != 1\n"
        "#error \"this stub was generated for stub ABI 1: run the idlc of your GridRPC installation again\"\n"
        "#endif\n"
        "\n"
        "/* Bodies need not use every parameter. */\n"
        "#if defined(__GNUC__)\n"
        "#pragma GCC diagnostic ignored \"-Wunused-parameter\"\n"
        "#endif\n");
    for (const auto &g : mod.globals) {
        pr.print("\n/* Globals */\n");
        lineDirective(pr, g.loc.line, g.loc.file);
        pr.raw(g.text);
        pr.raw("\n");
        lineDirective(pr, pr.nextLine() + 1, outName);
    }
    for (const auto &c : mod.classes) {
        // One object's state. A member keeps a class without DefState a valid struct.
        pr.print("\n/* ---- class $c$: the state of one object ---- */\n\nstruct grs_state_$st$ {\n"
                 "    char grs_unused_;\n",
                 {{"c", c.name}, {"st", mod.name + "_" + c.name}});
        if (!c.stateText.empty()) {
            lineDirective(pr, c.stateLoc.line, c.stateLoc.file);
            pr.raw(c.stateText);
            pr.raw("\n");
            lineDirective(pr, pr.nextLine() + 1, outName);
        }
        pr.print("};\n");
    }
    for (size_t i = 0; i < mod.functions.size(); ++i)
        emitFunction(pr, mod, mod.functions[i], descs[i], outName);

    size_t nplain = 0;
    for (const auto &f : mod.functions)
        if (f.cls.empty()) ++nplain;
    v["n"] = std::to_string(nplain);
    if (!mod.classes.empty()) {
        pr.print("\n/* ---- classes: each method's invoke finds the object's state after its last argument "
                 "---- */\n");
        std::string ctable;
        for (const auto &c : mod.classes) {
            std::string st = mod.name + "_" + c.name;
            unsigned n = 0;
            pr.print("\nstatic const gridrpc_stub_function grs_methods_$st$[] = {\n", {{"st", st}});
            for (const auto &f : mod.functions) {
                if (f.cls != c.name) continue;
                pr.print("    {\"$name$\", grs_desc_$sym$, sizeof grs_desc_$sym$, grs_invoke_$sym$},\n",
                         {{"name", f.name}, {"sym", symbol(mod, f)}});
                ++n;
            }
            if (n == 0) pr.print("    {NULL, NULL, 0, NULL},\n");
            pr.print("};\n");
            ctable += "    {\"" + c.name + "\", sizeof(struct grs_state_" + st + "), " + std::to_string(n) +
                      ", grs_methods_" + st + "},\n";
        }
        pr.print("\nstatic const gridrpc_stub_class grs_classes_$mod$[] = {\n", v);
        pr.raw(ctable);
        pr.print("};\n");
    }

    pr.print("\n/* ---- module table ---- */\n\n");
    if (!mod.classes.empty()) {
        v["fns"] = nplain ? "grs_functions_" + mod.name : "NULL";
        v["nc"] = std::to_string(mod.classes.size());
        v["srcq"] = cQuote(mod.source);
        if (nplain) {
            pr.print("static const gridrpc_stub_function grs_functions_$mod$[$n$] = {\n", v);
            for (const auto &f : mod.functions)
                if (f.cls.empty())
                    pr.print("    {\"$name$\", grs_desc_$sym$, sizeof grs_desc_$sym$, grs_invoke_$sym$},\n",
                             {{"name", f.name}, {"sym", symbol(mod, f)}});
            pr.print("};\n\n");
        }
        pr.print("#if !defined(GRIDRPC_STUB_ABI_CLASSES)\n"
                 "#error \"this module defines classes (DefClass): build it against a gridrpc_stub.h that "
                 "has them\"\n"
                 "#endif\n"
                 "const gridrpc_stub_module_classes gridrpc_classes_$mod$ = {\n"
                 "    {GRIDRPC_STUB_ABI_CLASSES, \"$mod$\", $srcq$, $n$, $fns$}, $nc$, grs_classes_$mod$};\n"
                 "#define gridrpc_module_$mod$ (gridrpc_classes_$mod$.base)\n",
                 v);
    } else if (mod.functions.empty()) {
        pr.print("const gridrpc_stub_module gridrpc_module_$mod$ = {GRIDRPC_STUB_ABI, \"$mod$\", $srcq$, 0, "
                 "NULL};\n",
                 {{"mod", mod.name}, {"srcq", cQuote(mod.source)}});
    } else {
        pr.print("static const gridrpc_stub_function grs_functions_$mod$[$n$] = {\n", v);
        for (const auto &f : mod.functions) {
            std::string sym = mod.name + "_" + f.name;
            pr.print("    {\"$name$\", grs_desc_$sym$, sizeof grs_desc_$sym$, grs_invoke_$sym$},\n",
                     {{"name", f.name}, {"sym", sym}});
        }
        pr.print("};\n\n");
        pr.print(
            "const gridrpc_stub_module gridrpc_module_$mod$ = {\n"
            "    GRIDRPC_STUB_ABI, \"$mod$\", $srcq$, $n$, grs_functions_$mod$};\n",
            {{"mod", mod.name}, {"srcq", cQuote(mod.source)}, {"n", std::to_string(mod.functions.size())}});
    }
    pr.print("\n#ifndef GRIDRPC_STUB_NO_ENTRY\n"
             "const gridrpc_stub_module *gridrpc_stub_entry(void);\n"
             "const gridrpc_stub_module *gridrpc_stub_entry(void) { return &gridrpc_module_$mod$; }\n"
             "#endif\n",
             {{"mod", mod.name}});
    return pr.str();
}

} // namespace idlc
