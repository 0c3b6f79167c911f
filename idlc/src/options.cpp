// options.cpp: idlc's command line: --help text, --version, and option parsing.
#include "options.h"

#include <cstdio>
#include <cstring>

#include "config.h"

namespace idlc {

namespace {

const char kHelp[] = "Usage: idlc [OPTIONS] FILE.idl...\n"
                     "Compile Ninf / Ninf-G IDL into what GridRPC needs to serve the functions it defines.\n"
                     "\n"
                     "For each FILE.idl it writes, into the output directory:\n"
                     "  FILE_stub.c     the server stub: compile it with the function's code into a module\n"
                     "  FILE.gdesc      the interface descriptors (read them with gridrpc-desc)\n"
                     "  FILE_client.h   typed C wrappers over grid_call (optional for clients)\n"
                     "Nothing is written for a file with errors; files whose content is unchanged are left\n"
                     "untouched so make does not rebuild them.\n"
                     "\n"
                     "Options:\n"
                     "  -o, --output DIR   write into DIR (default: the current directory)\n"
                     "      --emit LIST    write only these, comma separated: stub, desc, header\n"
                     "      --check        check the IDL and report errors; write nothing\n"
                     "      --dump         print each function's descriptor in readable form\n"
                     "      --print-link-flags\n"
                     "                     print what the module links with (Library and Required\n"
                     "                     entries, one line) and write nothing\n"
                     "      --no-cpp       do not run the C preprocessor over the IDL first\n"
                     "      --cpp PROGRAM  the C preprocessor to run (default: " IDLC_DEFAULT_CPP ")\n"
                     "  -I DIR, -D NAME[=VALUE], -U NAME\n"
                     "                     passed to the C preprocessor\n"
                     "  -h, --help         show this help and exit\n"
                     "  -V, --version      show the version and exit\n"
                     "\n"
                     "Exit status: 0 on success, 1 if an IDL file has errors, 2 on a usage error.\n"
                     "The IDL is described in docs/idl.md.\n";

bool takeValue(int argc, char **argv, int &i, const char *longName, const char *shortName,
               std::string &value) {
    const char *a = argv[i];
    size_t ln = strlen(longName);
    if (strncmp(a, longName, ln) == 0 && a[ln] == '=') {
        value = a + ln + 1;
        return true;
    }
    if (strcmp(a, longName) == 0 || (shortName && strcmp(a, shortName) == 0)) {
        if (i + 1 >= argc) {
            fprintf(stderr, "idlc: %s needs a value (see idlc --help)\n", a);
            value = "\x01";
            return true;
        }
        value = argv[++i];
        return true;
    }
    if (shortName && strncmp(a, shortName, strlen(shortName)) == 0 && a[strlen(shortName)] != '\0') {
        value = a + strlen(shortName);
        return true;
    }
    return false;
}

} // namespace

ParseResult parseOptions(int argc, char **argv, Options &opt) {
    opt.cpp.cpp = IDLC_DEFAULT_CPP;
    bool endOfOptions = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i], value;
        if (endOfOptions || a.empty() || a[0] != '-' || a == "-") {
            opt.inputs.push_back(a);
            continue;
        }
        if (a == "--") {
            endOfOptions = true;
        } else if (a == "-h" || a == "--help") {
            fputs(kHelp, stdout);
            return ParseResult::Exit0;
        } else if (a == "-V" || a == "--version") {
            printf("idlc (GridRPC) %s\n", PACKAGE_VERSION);
            return ParseResult::Exit0;
        } else if (a == "--no-cpp") {
            opt.cpp.run = false;
        } else if (a == "--check") {
            opt.checkOnly = true;
        } else if (a == "--print-link-flags") {
            opt.printLinkFlags = true;
            opt.checkOnly = true;
        } else if (a == "--dump") {
            opt.dump = true;
        } else if (takeValue(argc, argv, i, "--output", "-o", value)) {
            if (value == "\x01") return ParseResult::Usage;
            opt.outDir = value;
        } else if (takeValue(argc, argv, i, "--cpp", nullptr, value)) {
            if (value == "\x01") return ParseResult::Usage;
            opt.cpp.cpp = value;
        } else if (takeValue(argc, argv, i, "--emit", nullptr, value)) {
            if (value == "\x01") return ParseResult::Usage;
            opt.emitStub = opt.emitDesc = opt.emitHeader = false;
            size_t pos = 0;
            while (pos <= value.size()) {
                size_t e = value.find(',', pos);
                if (e == std::string::npos) e = value.size();
                std::string w = value.substr(pos, e - pos);
                if (w == "stub")
                    opt.emitStub = true;
                else if (w == "desc")
                    opt.emitDesc = true;
                else if (w == "header")
                    opt.emitHeader = true;
                else {
                    fprintf(stderr, "idlc: --emit: unknown output '%s': use stub, desc or header\n",
                            w.c_str());
                    return ParseResult::Usage;
                }
                pos = e + 1;
            }
        } else if (a.size() >= 2 && (a[1] == 'I' || a[1] == 'D' || a[1] == 'U')) {
            std::string flag = a.substr(0, 2);
            if (a.size() == 2) {
                if (i + 1 >= argc) {
                    fprintf(stderr, "idlc: %s needs a value (see idlc --help)\n", a.c_str());
                    return ParseResult::Usage;
                }
                opt.cpp.args.push_back(flag + argv[++i]);
            } else {
                opt.cpp.args.push_back(a);
            }
        } else {
            fprintf(stderr, "idlc: unknown option '%s' (see idlc --help)\n", a.c_str());
            return ParseResult::Usage;
        }
    }
    if (opt.inputs.empty()) {
        fprintf(stderr, "idlc: no IDL file given (usage: idlc [OPTIONS] FILE.idl...; see idlc --help)\n");
        return ParseResult::Usage;
    }
    return ParseResult::Run;
}

} // namespace idlc
