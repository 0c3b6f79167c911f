// idl_fuzz.cpp: fuzz target for idlc's front end and emitters: the ANTLR lexer and
// parser, the syntax tree builder (parse.cpp), the checks that build the model
// (sema.cpp), the descriptor encoder and the stub and client-header emitters, all in
// memory (no preprocessor run, no file written: the input is the text idlc --no-cpp
// reads). Whatever idlc accepts must encode descriptors the runtime decodes, validates
// and re-encodes to the same bytes; an emitter template that goes wrong throws, which
// ends the run (a finding). Errors must be reported, and only then is nothing accepted.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "emit.h"
#include "grd_desc.h"
#include "parse.h"
#include "sema.h"

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#include "IdlLexer.h"
#include "IdlParser.h"
#include "antlr4-runtime.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

// Large inputs only make the parser slow, not more interesting.
constexpr size_t kMaxInput = 8192;

void check(bool cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "idl_fuzz: invariant broken: %s\n", what);
        abort();
    }
}

// A descriptor idlc encoded, as the server and the client will read it.
void checkDescriptor(const std::vector<uint8_t> &d, const std::string &function) {
    grd_desc *gd = nullptr;
    grd_error err{};
    if (grd_decode(d.data(), d.size(), &gd, &err) != GRD_OK) {
        fprintf(stderr, "idl_fuzz: %s: %s\n", function.c_str(), err.msg);
        check(false, "idlc's descriptor decodes");
    }
    check(grd_validate(gd, &err) == GRD_OK, "idlc's descriptor validates");
    check(function == gd->name, "the descriptor is the function's");
    uint8_t *enc = nullptr;
    size_t n = 0;
    check(grd_encode(gd, &enc, &n, &err) == GRD_OK, "idlc's descriptor re-encodes");
    check(n == d.size() && memcmp(enc, d.data(), n) == 0, "idlc's encoding is canonical");
    free(enc);
    char *text = grd_dump(gd);
    check(text != nullptr, "idlc's descriptor dumps");
    free(text);
    grd_free(gd);
}

// ANTLR keeps what it learns of the grammar (its prediction DFA and context cache) in
// statics shared by every parser, which is what makes one idlc run fast; under a fuzzer
// each new input adds to them without end (800 MB after 2,000 inputs), so they are
// emptied now and then, through a parser of an empty text. Results do not depend on it.
void forgetPredictions() {
    antlr4::ANTLRInputStream input("");
    idlc_gen::IdlLexer lexer(&input);
    antlr4::CommonTokenStream tokens(&lexer);
    idlc_gen::IdlParser parser(&tokens);
    auto *sim = parser.getInterpreter<antlr4::atn::ParserATNSimulator>();
    sim->clearDFA();
    sim->getSharedContextCache().clear();
    auto *lex = lexer.getInterpreter<antlr4::atn::LexerATNSimulator>();
    lex->clearDFA();
    lex->getSharedContextCache().clear();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static unsigned runs;
    if (++runs % 500 == 0) forgetPredictions();
    if (size > kMaxInput) return 0;
    idlc::Source src;
    src.path = "fuzz.idl";
    src.text.assign(reinterpret_cast<const char *>(data), size);
    int lines = 1;
    for (size_t i = 0; i < size; i++)
        if (data[i] == '\n') ++lines;
    for (int i = 1; i <= lines; ++i)
        src.origin.emplace_back(src.path, i);

    idlc::Diag diag;
    auto tree = idlc::parseIdl(src, diag);
    check(tree.has_value() || diag.errors() > 0, "a refused parse reports an error");
    if (!tree) return 0;
    auto mod = idlc::analyze(*tree, diag);
    check(mod.has_value() == (diag.errors() == 0), "a model exactly when there are no errors");
    if (!mod) return 0;
    std::vector<std::vector<uint8_t>> descs;
    if (!idlc::encodeDescriptors(*mod, descs, diag)) {
        check(diag.errors() > 0, "a refused encoding reports an error");
        return 0;
    }
    check(descs.size() == mod->functions.size(), "one descriptor per function");
    for (size_t i = 0; i < descs.size(); i++)
        checkDescriptor(descs[i], mod->functions[i].name);

    auto bundle = idlc::emitDescriptorBundle(descs);
    uint32_t n = 0;
    size_t *offs = nullptr, *lens = nullptr;
    grd_error err{};
    check(grd_bundle_split(bundle.data(), bundle.size(), &n, &offs, &lens, &err) == GRD_OK &&
              n == descs.size(),
          "the bundle splits into the descriptors");
    free(offs);
    free(lens);
    std::string stub = idlc::emitStub(*mod, descs, "fuzz_stub.c");
    std::string header = idlc::emitClientHeader(*mod, "fuzz_client.h");
    check(!stub.empty() && !header.empty(), "the emitters write something");
    for (const auto &l : diag.lines())
        check(!l.empty(), "diagnostics are lines");
    return 0;
}
