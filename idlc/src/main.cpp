// main.cpp: idlc, the GridRPC IDL compiler. Pipeline per file: cpp -> ANTLR parse ->
// syntax tree -> checks -> immutable model -> emitters (stub, descriptors, client
// header). Errors from every stage are collected; a file with errors writes nothing.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "emit.h"
#include "grd_desc.h"
#include "options.h"
#include "output.h"
#include "parse.h"
#include "sema.h"

namespace {

std::string baseName(const std::string &path) {
    std::string b = path;
    size_t slash = b.rfind('/');
    if (slash != std::string::npos) b = b.substr(slash + 1);
    size_t dot = b.rfind('.');
    if (dot != std::string::npos && dot > 0) b = b.substr(0, dot);
    return b;
}

// Compiles one file; returns false if it had errors.
bool compileFile(const std::string &path, const idlc::Options &opt) {
    idlc::Diag diag;
    auto flush = [&diag]() {
        for (const auto &l : diag.lines())
            fprintf(stderr, "%s\n", l.c_str());
    };
    idlc::Source src;
    if (!idlc::preprocess(path, opt.cpp, src, diag)) {
        flush();
        return false;
    }
    auto tree = idlc::parseIdl(src, diag);
    std::optional<idlc::model::Module> mod;
    if (tree) mod = idlc::analyze(*tree, diag);
    std::vector<std::vector<uint8_t>> descs;
    if (mod && !idlc::encodeDescriptors(*mod, descs, diag)) mod.reset();
    if (!mod || diag.errors() > 0) {
        flush();
        if (diag.errors() > 0)
            fprintf(stderr, "%s: %d error%s; nothing written\n", path.c_str(), diag.errors(),
                    diag.errors() == 1 ? "" : "s");
        return false;
    }
    if (opt.dump) {
        for (const auto &d : descs) {
            grd_desc *gd = nullptr;
            grd_error err{};
            if (grd_decode(d.data(), d.size(), &gd, &err) == GRD_OK) {
                char *text = grd_dump(gd);
                if (text) fputs(text, stdout);
                free(text);
                grd_free(gd);
            }
        }
    }
    if (opt.printLinkFlags) {
        // Library entries first, then each function's Required, without repeats.
        std::vector<std::string> flags;
        auto add = [&flags](const std::string &f) {
            if (!f.empty() && std::find(flags.begin(), flags.end(), f) == flags.end()) flags.push_back(f);
        };
        for (const auto &l : mod->libraries)
            add(l);
        for (const auto &f : mod->functions)
            for (const auto &r : f.required)
                add(r);
        std::string line;
        for (const auto &f : flags)
            line += (line.empty() ? "" : " ") + f;
        printf("%s\n", line.c_str());
    }
    if (!opt.checkOnly) {
        std::string base = baseName(path);
        std::string dir = opt.outDir.empty() ? "." : opt.outDir;
        if (opt.emitStub) {
            std::string name = base + "_stub.c";
            idlc::writeIfChanged(dir + "/" + name, idlc::emitStub(*mod, descs, name), diag);
        }
        if (opt.emitDesc) {
            auto bundle = idlc::emitDescriptorBundle(descs);
            idlc::writeIfChanged(dir + "/" + base + ".gdesc", std::string(bundle.begin(), bundle.end()),
                                 diag);
        }
        if (opt.emitHeader) {
            std::string name = base + "_client.h";
            idlc::writeIfChanged(dir + "/" + name, idlc::emitClientHeader(*mod, name), diag);
        }
    }
    flush();
    return diag.errors() == 0;
}

} // namespace

int main(int argc, char **argv) {
    idlc::Options opt;
    switch (idlc::parseOptions(argc, argv, opt)) {
    case idlc::ParseResult::Exit0: return 0;
    case idlc::ParseResult::Usage: return 2;
    case idlc::ParseResult::Run: break;
    }
    bool ok = true;
    for (const auto &in : opt.inputs)
        ok = compileFile(in, opt) && ok;
    return ok ? 0 : 1;
}
