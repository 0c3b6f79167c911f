// options.cpp: idlc's command line: --help text, --version, and option parsing
// (getopt_long).
#include "options.h"

#include <getopt.h>

#include <cstdio>
#include <string>

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

// Long-only options, after the range of characters a short option can be.
enum : int { kEmit = 256, kCheck, kDump, kPrintLinkFlags, kNoCpp, kCpp };

const struct option kLongOptions[] = {
    {"output", required_argument, nullptr, 'o'},
    {"emit", required_argument, nullptr, kEmit},
    {"check", no_argument, nullptr, kCheck},
    {"dump", no_argument, nullptr, kDump},
    {"print-link-flags", no_argument, nullptr, kPrintLinkFlags},
    {"no-cpp", no_argument, nullptr, kNoCpp},
    {"cpp", required_argument, nullptr, kCpp},
    {"help", no_argument, nullptr, 'h'},
    {"version", no_argument, nullptr, 'V'},
    {nullptr, 0, nullptr, 0},
};

// "--name" (or "-c") of the option whose value is VAL, for messages.
std::string optionName(int val) {
    for (const struct option *o = kLongOptions; o->name; ++o)
        if (o->val == val && val >= 256) return std::string("--") + o->name;
    return std::string("-") + static_cast<char>(val);
}

ParseResult usage(const std::string &msg) {
    fprintf(stderr, "idlc: %s (see idlc --help)\n", msg.c_str());
    return ParseResult::Usage;
}

// What getopt_long refused (OPT: its optopt; ARG: the word it stopped at), said the way
// a person typed it: an unknown short option, a value given to a flag, or an unknown
// or ambiguous long name.
ParseResult badOption(const std::string &arg, int opt) {
    bool withValue = arg.compare(0, 2, "--") == 0 && arg.find('=') != std::string::npos;
    if (opt > 0 && opt < 256 && !withValue) return usage(std::string("unknown option '-") + char(opt) + "'");
    std::string name = arg.substr(0, arg.find('='));
    if (opt && withValue) return usage(name + " takes no value");
    std::string matches;
    int n = 0;
    for (const struct option *o = kLongOptions; o->name; ++o)
        if (name.size() > 2 && std::string(o->name).compare(0, name.size() - 2, name, 2) == 0)
            matches += (n++ ? ", --" : "--") + std::string(o->name);
    if (n > 1) return usage("option '" + name + "' is ambiguous: " + matches);
    return usage("unknown option '" + name + "'");
}

// --emit LIST: which outputs to write.
bool parseEmit(const std::string &value, Options &opt) {
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
            fprintf(stderr, "idlc: --emit: unknown output '%s': use stub, desc or header\n", w.c_str());
            return false;
        }
        pos = e + 1;
    }
    return true;
}

} // namespace

ParseResult parseOptions(int argc, char **argv, Options &opt) {
    opt.cpp.cpp = IDLC_DEFAULT_CPP;
    // '-': files come back in order as option 1, wherever they are among the options
    // (and whatever POSIXLY_CORRECT says); ':': a missing value is reported here.
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "-:hVo:I:D:U:", kLongOptions, nullptr)) != -1) {
        switch (c) {
        case 1: opt.inputs.push_back(optarg); break;
        case 'h': fputs(kHelp, stdout); return ParseResult::Exit0;
        case 'V': printf("idlc (GridRPC) %s\n", PACKAGE_VERSION); return ParseResult::Exit0;
        case 'o': opt.outDir = optarg; break;
        case 'I':
        case 'D':
        case 'U': opt.cpp.args.push_back(std::string("-") + static_cast<char>(c) + optarg); break;
        case kEmit:
            if (!parseEmit(optarg, opt)) return ParseResult::Usage;
            break;
        case kCheck: opt.checkOnly = true; break;
        case kDump: opt.dump = true; break;
        case kPrintLinkFlags:
            opt.printLinkFlags = true;
            opt.checkOnly = true;
            break;
        case kNoCpp: opt.cpp.run = false; break;
        case kCpp: opt.cpp.cpp = optarg; break;
        case ':': {
            // As typed: "-o" or "--output" (getopt's optopt is 'o' for both).
            std::string word = argv[optind - 1];
            return usage((word.compare(0, 2, "--") == 0 ? word : optionName(optopt)) + " needs a value");
        }
        default: return badOption(argv[optind - 1], optopt);
        }
    }
    // After "--" every word is a file.
    for (int i = optind; i < argc; ++i)
        opt.inputs.push_back(argv[i]);
    if (opt.inputs.empty()) {
        fprintf(stderr, "idlc: no IDL file given (usage: idlc [OPTIONS] FILE.idl...; see idlc --help)\n");
        return ParseResult::Usage;
    }
    return ParseResult::Run;
}

} // namespace idlc
