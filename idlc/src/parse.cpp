// parse.cpp: ANTLR parse tree -> idlc syntax tree. Syntax errors are reworded for
// people (the raw ANTLR messages name token types) and carry original locations.
#include "parse.h"

#include "cblock.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

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

namespace idlc {

namespace {

using P = idlc_gen::IdlParser;

// Rewords ANTLR's syntax errors and sends them to Diag with the original location.
class ErrorListener : public antlr4::BaseErrorListener {
  public:
    ErrorListener(const Source &src, Diag &diag, const CBlockScanner &blocks)
        : src_(src), diag_(diag), blocks_(blocks) {}

    void syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *offending, size_t line, size_t col,
                     const std::string &msg, std::exception_ptr) override {
        ++count;
        Loc loc = src_.locate(static_cast<int>(line), static_cast<int>(col));
        std::string text;
        if (offending) {
            if (offending->getType() == antlr4::Token::EOF)
                text = "end of file";
            else
                text = "'" + shorten(offending->getText()) + "'";
            if (offending->getType() == idlc_gen::IdlLexer::ERROR_CHAR) {
                std::string t = offending->getText();
                if (t == "{") {
                    diag_.error(loc, unclosedBlock(offending->getStartIndex()));
                    return;
                }
                if (t == "\"") {
                    diag_.error(loc, "unterminated string: close it with '\"' on the same line");
                    return;
                }
                diag_.error(loc, "unexpected character " + text + " in IDL");
                return;
            }
        }
        std::string expected;
        if (auto *parser = dynamic_cast<antlr4::Parser *>(recognizer)) {
            try {
                auto set = parser->getExpectedTokens();
                if (set.size() > 0 && set.size() <= 6) expected = set.toString(parser->getVocabulary());
            } catch (...) {
            }
        }
        std::string m;
        if (offending && expected == "ID" && isalpha(static_cast<unsigned char>(offending->getText()[0]))) {
            m = text + " is a word of the IDL (a type, mode or keyword) and cannot be used as a name here";
        } else if (msg.rfind("missing ", 0) == 0) {
            m = "syntax error: " + msg.substr(0, msg.find(" at ")) + " before " + text;
        } else if (offending) {
            m = "syntax error: unexpected " + text;
            if (!expected.empty()) m += ", expected " + readable(expected);
        } else {
            m = "syntax error: " + msg;
        }
        diag_.error(loc, m);
    }

    int count = 0;

  private:
    using Why = CBlockScanner::Why;

    // Why the C block opening at index OPEN does not close. A string or comment that
    // runs on hides every '}' after it, so that is what to point at.
    std::string unclosedBlock(size_t open) const {
        std::string m = "this '{' has no matching '}'";
        const CBlockScanner::End *e = blocks_.known(open);
        if (!e || e->why == Why::NoClosingBrace || e->why == Why::Closed)
            return m + ": close the Globals or inline body";
        Loc at = src_.locate(static_cast<int>(e->line), static_cast<int>(e->column));
        std::string where =
            "line " + std::to_string(at.line) + (at.file != src_.path ? " of " + at.file : "");
        if (e->why == Why::OpenString)
            return m + ": the string on " + where + " in it does not end on its line (close it with '\"')";
        if (e->why == Why::OpenChar)
            return m + ": the character literal on " + where +
                   " in it does not end on its line (close it with \"'\")";
        return m + ": the comment on " + where + " in it never ends (close it with '*/')";
    }

    static std::string shorten(const std::string &s) {
        std::string t = s.substr(0, s.find('\n'));
        if (t.size() > 30) t = t.substr(0, 27) + "...";
        return t;
    }
    // "{';', ','}" -> "';' or ','"; token names read as words.
    static std::string readable(std::string s) {
        if (s.size() > 1 && s.front() == '{' && s.back() == '}') s = s.substr(1, s.size() - 2);
        std::string out;
        size_t pos = 0;
        std::vector<std::string> items;
        while (pos <= s.size()) {
            size_t e = s.find(", ", pos);
            if (e == std::string::npos) e = s.size();
            std::string it = s.substr(pos, e - pos);
            if (it == "ID")
                it = "a name";
            else if (it == "INT")
                it = "a number";
            else if (it == "STRING")
                it = "a string";
            else if (it == "CBLOCK")
                it = "a { C block }";
            else if (it == "CLASS_OPEN")
                it = "'{'";
            else if (it == "CLASS_CLOSE")
                it = "'}'";
            else if (it == "DEFCLASS")
                it = "'DefClass'";
            else if (it == "MODE")
                it = "a mode (IN, OUT, INOUT, WORK)";
            else if (it == "<EOF>")
                it = "end of file";
            else if (it == "STAR")
                it = "'*'";
            else if (it == "VOID")
                it = "'void'";
            items.push_back(it);
            pos = e + 2;
        }
        for (size_t i = 0; i < items.size(); ++i) {
            if (i > 0) out += (i + 1 == items.size()) ? " or " : ", ";
            out += items[i];
        }
        return out;
    }
    const Source &src_;
    Diag &diag_;
    const CBlockScanner &blocks_;
};

class Builder {
  public:
    explicit Builder(const Source &src) : src_(src) {}

    ast::File file(P::FileContext *ctx) {
        ast::File f;
        f.path = src_.path;
        for (auto *d : ctx->decl()) {
            if (auto *m = dynamic_cast<P::ModuleDeclContext *>(d)) {
                f.modules.push_back({m->name()->getText(), loc(m->name()->getStart())});
            } else if (auto *o = dynamic_cast<P::OptionDeclContext *>(d)) {
                f.options.push_back(
                    {o->optionKey()->getText(), unquote(o->STRING()->getText()), loc(o->getStart())});
            } else if (auto *g = dynamic_cast<P::GlobalsDeclContext *>(d)) {
                f.globals.push_back({g->CBLOCK()->getText(), loc(g->CBLOCK()->getSymbol())});
            } else if (auto *def = dynamic_cast<P::DefineDeclContext *>(d)) {
                f.functions.push_back(function(def->name(), def->description(), def->paramList(),
                                               def->defOption(), def->body()));
            } else if (auto *cd = dynamic_cast<P::ClassDeclContext *>(d)) {
                f.classes.push_back(klass(cd));
            }
        }
        return f;
    }

  private:
    Loc loc(antlr4::Token *t) const {
        return src_.locate(static_cast<int>(t->getLine()), static_cast<int>(t->getCharPositionInLine()));
    }

    // Removes the quotes of a string literal and resolves C escapes.
    static std::string unquote(const std::string &s) {
        std::string out;
        for (size_t i = 1; i + 1 < s.size(); ++i) {
            char c = s[i];
            if (c == '\\' && i + 2 < s.size()) {
                char n = s[++i];
                switch (n) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                default: out += n; break;
                }
            } else {
                out += c;
            }
        }
        return out;
    }

    ast::Class klass(P::ClassDeclContext *d) {
        ast::Class c;
        c.name = d->name()->getText();
        c.loc = loc(d->name()->getStart());
        if (auto *desc = d->description()) {
            c.hasDescription = true;
            for (auto *piece : desc->STRING())
                c.description += unquote(piece->getText());
        }
        for (auto *o : d->defOption())
            c.options.push_back(option(o));
        for (auto *item : d->classItem()) {
            if (auto *st = dynamic_cast<P::StateItemContext *>(item)) {
                if (c.hasState) {
                    c.extraStates.push_back(loc(st->getStart()));
                    continue;
                }
                c.hasState = true;
                c.stateText = st->CBLOCK()->getText();
                c.stateLoc = loc(st->CBLOCK()->getSymbol());
            } else if (auto *m = dynamic_cast<P::MethodItemContext *>(item)) {
                c.methods.push_back(
                    function(m->name(), m->description(), m->paramList(), m->defOption(), m->body()));
            }
        }
        return c;
    }

    ast::Option option(P::DefOptionContext *o) {
        ast::Option opt;
        opt.loc = loc(o->getStart());
        opt.key = o->getStart()->getText();
        if (auto *c = dynamic_cast<P::CostOptContext *>(o)) {
            opt.expr = expr(c->expr());
        } else if (auto *r = dynamic_cast<P::RequiredOptContext *>(o)) {
            opt.value = unquote(r->STRING()->getText());
        } else if (auto *b = dynamic_cast<P::BackendOptContext *>(o)) {
            opt.value = unquote(b->STRING()->getText());
        } else if (auto *s = dynamic_cast<P::ShrinkOptContext *>(o)) {
            opt.value = unquote(s->STRING()->getText());
        } else if (auto *rt = dynamic_cast<P::RetryOptContext *>(o)) {
            opt.value = unquote(rt->STRING()->getText());
        } else if (auto *to = dynamic_cast<P::TimeoutOptContext *>(o)) {
            // A bare number is seconds; a string may carry a unit ("90s", "5m").
            opt.value = to->INT() ? to->INT()->getText() : unquote(to->STRING()->getText());
        } else if (auto *l = dynamic_cast<P::LanguageOptContext *>(o)) {
            opt.value = unquote(l->STRING()->getText());
        }
        return opt;
    }

    ast::Function function(P::NameContext *nm, P::DescriptionContext *description, P::ParamListContext *pl,
                           const std::vector<P::DefOptionContext *> &defOptions, P::BodyContext *bodyCtx) {
        ast::Function fn;
        fn.name = nm->getText();
        fn.loc = loc(nm->getStart());
        if (auto *desc = description) {
            fn.hasDescription = true;
            for (auto *piece : desc->STRING())
                fn.description += unquote(piece->getText());
        }
        if (pl) {
            fn.voidParams = pl->VOID() != nullptr;
            for (auto *p : pl->param())
                fn.params.push_back(param(p));
        }
        for (auto *o : defOptions)
            fn.options.push_back(option(o));
        if (auto *ib = dynamic_cast<P::InlineBodyContext *>(bodyCtx)) {
            fn.inlineBody = true;
            fn.bodyText = ib->CBLOCK()->getText();
            fn.bodyLoc = loc(ib->CBLOCK()->getSymbol());
        } else if (auto *cb = dynamic_cast<P::CallsBodyContext *>(bodyCtx)) {
            fn.callsLoc = loc(cb->getStart());
            fn.callsLanguage = unquote(cb->STRING()->getText());
            fn.callsLanguageLoc = loc(cb->STRING()->getSymbol());
            fn.callsTarget = cb->name()->getText();
            fn.callsTargetLoc = loc(cb->name()->getStart());
            for (auto *a : cb->callArg()) {
                ast::CallArg arg;
                arg.loc = loc(a->getStart());
                arg.star = a->STAR() != nullptr;
                if (a->INT()) {
                    arg.isInt = true;
                    arg.text = a->INT()->getText();
                } else {
                    arg.text = a->name()->getText();
                }
                fn.callsArgs.push_back(std::move(arg));
            }
        }
        return fn;
    }

    ast::Param param(P::ParamContext *p) {
        ast::Param out;
        out.loc = loc(p->getStart());
        if (!p->declarator()) {
            // A callback: 'name(IN double c[n], ...)'.
            out.callback = true;
            out.name = p->name()->getText();
            out.loc = loc(p->name()->getStart());
            if (auto *pl = p->paramList()) {
                out.cbVoid = pl->VOID() != nullptr;
                for (auto *q : pl->param())
                    out.cbParams.push_back(param(q));
            }
            return out;
        }
        // In source order: sema reads the legacy form 'long mode_in int n' by position.
        for (auto *child : p->children) {
            ast::Word word;
            if (auto *m = dynamic_cast<P::ModeWordContext *>(child)) {
                word.kind = ast::Word::Mode;
                word.text = m->MODE()->getText();
            } else if (auto *t = dynamic_cast<P::TypeWordAltContext *>(child)) {
                word.kind = ast::Word::Type;
                word.text = t->typeWord()->typeName()->getText();
                word.isUnsigned = t->typeWord()->getStart()->getText() == "unsigned";
            } else if (auto *u = dynamic_cast<P::UnknownWordContext *>(child)) {
                word.kind = ast::Word::Unknown;
                word.text = u->getText();
            } else {
                continue;
            }
            word.loc = loc(dynamic_cast<antlr4::ParserRuleContext *>(child)->getStart());
            out.words.push_back(std::move(word));
        }
        auto *decl = p->declarator();
        out.star = decl->STAR() != nullptr;
        out.name = decl->name()->getText();
        out.loc = loc(decl->name()->getStart());
        for (auto *dc : decl->dimension()) {
            ast::Dim dim;
            dim.loc = loc(dc->getStart());
            if (auto *s = dynamic_cast<P::SizedDimContext *>(dc)) {
                dim.size = expr(s->size);
                if (s->start) dim.start = expr(s->start);
                if (s->end) dim.end = expr(s->end);
                if (s->step) dim.step = expr(s->step);
            } else {
                dim.empty = true;
            }
            out.dims.push_back(std::move(dim));
        }
        return out;
    }

    ast::ExprPtr expr(P::ExprContext *e) {
        auto out = std::make_unique<ast::Expr>();
        if (!e) {
            out->kind = ast::Expr::Int;
            out->text = "0";
            return out;
        }
        out->loc = loc(e->getStart());
        if (auto *p = dynamic_cast<P::ParenExprContext *>(e)) return expr(p->expr());
        if (auto *i = dynamic_cast<P::IntExprContext *>(e)) {
            out->kind = ast::Expr::Int;
            out->text = i->INT()->getText();
        } else if (auto *n = dynamic_cast<P::NameExprContext *>(e)) {
            out->kind = ast::Expr::Name;
            out->text = n->name()->getText();
        } else if (auto *f = dynamic_cast<P::FuncExprContext *>(e)) {
            out->kind = ast::Expr::Call;
            out->op = f->name()->getText();
            for (auto *a : f->expr())
                out->kids.push_back(expr(a));
        } else if (auto *u = dynamic_cast<P::UnaryExprContext *>(e)) {
            if (u->op->getText() == "+") return expr(u->expr());
            out->kind = ast::Expr::Unary;
            out->op = u->op->getText();
            out->kids.push_back(expr(u->expr()));
        } else if (auto *c = dynamic_cast<P::CondExprContext *>(e)) {
            out->kind = ast::Expr::Cond;
            out->op = "?:";
            for (auto *a : c->expr())
                out->kids.push_back(expr(a));
        } else if (e->children.size() == 3) {
            out->kind = ast::Expr::Binary;
            out->op = e->children[1]->getText();
            out->loc = loc(dynamic_cast<antlr4::tree::TerminalNode *>(e->children[1])
                               ? dynamic_cast<antlr4::tree::TerminalNode *>(e->children[1])->getSymbol()
                               : e->getStart());
            out->kids.push_back(expr(dynamic_cast<P::ExprContext *>(e->children[0])));
            out->kids.push_back(expr(dynamic_cast<P::ExprContext *>(e->children[2])));
        }
        return out;
    }

    const Source &src_;
};

} // namespace

namespace {

// The offset of the first byte of TEXT that is not UTF-8 (RFC 3629: no overlong
// forms, no surrogates, nothing past U+10FFFF), or npos when all of it is.
size_t firstNonUtf8(const std::string &text) {
    const auto *p = reinterpret_cast<const unsigned char *>(text.data());
    size_t n = text.size();
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        size_t len = c < 0x80                 ? 1
                     : c >= 0xc2 && c <= 0xdf ? 2
                     : c >= 0xe0 && c <= 0xef ? 3
                     : c >= 0xf0 && c <= 0xf4 ? 4
                                              : 0;
        if (len == 0 || i + len > n) return i;
        if (len > 1) {
            unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
            unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
            if (p[i + 1] < lo || p[i + 1] > hi) return i;
            for (size_t k = 2; k < len; k++)
                if ((p[i + k] & 0xc0) != 0x80) return i;
        }
        i += len;
    }
    return std::string::npos;
}

// ANTLR's parser, the tree builder and sema all recurse on expressions: each open
// bracket and each operator is a level. 100,000 of them overflowed idlc's stack (a
// crash), and thousands of unclosed '(' made ANTLR's error recovery quadratic. Real IDL
// uses a handful; these bounds are far above that and far below the stack's.
constexpr int kMaxBracketDepth = 256;
constexpr int kMaxOperators = 1000;

// Refuses a declaration whose brackets nest deeper than kMaxBracketDepth or that holds
// more than kMaxOperators operators, before the parser sees it. Reports the first.
bool expressionsWithinBounds(antlr4::CommonTokenStream &tokens, const Source &src, Diag &diag) {
    static const std::set<std::string> operators = {"-",  "!", "+",  "^",  "*",  "/",  "%",  "<",
                                                    "<=", ">", ">=", "==", "!=", "&&", "||", "?"};
    int depth = 0, ops = 0;
    for (antlr4::Token *t : tokens.getTokens()) {
        size_t type = t->getType();
        std::string text = t->getText();
        // A declaration ends (or a class member's body begins): the parser returns.
        if (text == ";" || text == "Define" || text == "DefMethod" || type == idlc_gen::IdlLexer::CBLOCK ||
            type == idlc_gen::IdlLexer::CLASS_OPEN || type == idlc_gen::IdlLexer::CLASS_CLOSE) {
            depth = ops = 0;
            continue;
        }
        auto at = [&] {
            return src.locate(static_cast<int>(t->getLine()), static_cast<int>(t->getCharPositionInLine()));
        };
        if (text == "(" || text == "[") {
            if (++depth > kMaxBracketDepth) {
                diag.error(at(), "brackets nested more than " + std::to_string(kMaxBracketDepth) +
                                     " deep: idlc takes at most " + std::to_string(kMaxBracketDepth) +
                                     " '(' and '[' open at once");
                return false;
            }
        } else if (text == ")" || text == "]") {
            if (depth > 0) depth--;
        } else if (operators.count(text) && ++ops > kMaxOperators) {
            diag.error(at(), "more than " + std::to_string(kMaxOperators) +
                                 " operators in one declaration: idlc takes at most " +
                                 std::to_string(kMaxOperators) + " (compute it in the function instead)");
            return false;
        }
    }
    return true;
}

} // namespace

std::optional<ast::File> parseIdl(const Source &src, Diag &diag) {
    // ANTLR decodes its input as UTF-8 and throws on anything else: a Latin-1 comment
    // would end idlc with an uncaught exception rather than an error with its place.
    size_t bad = firstNonUtf8(src.text);
    if (bad != std::string::npos) {
        size_t nl = bad == 0 ? std::string::npos : src.text.rfind('\n', bad - 1);
        int line = 1 + static_cast<int>(
                           std::count(src.text.begin(), src.text.begin() + static_cast<long>(bad), '\n'));
        int col = static_cast<int>(nl == std::string::npos ? bad : bad - nl - 1);
        char byte[8];
        snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(src.text[bad]));
        diag.error(src.locate(line, col),
                   std::string("byte ") + byte +
                       " is not UTF-8: idlc reads IDL files as UTF-8 (convert the file, "
                       "e.g. iconv -f latin1 -t utf-8)");
        return std::nullopt;
    }
    antlr4::ANTLRInputStream input(src.text);
    idlc_gen::IdlLexer lexer(&input);
    ErrorListener listener(src, diag, lexer.cblocks);
    lexer.removeErrorListeners();
    lexer.addErrorListener(&listener);
    antlr4::CommonTokenStream tokens(&lexer);
    tokens.fill();
    if (!expressionsWithinBounds(tokens, src, diag)) return std::nullopt;
    idlc_gen::IdlParser parser(&tokens);
    parser.removeErrorListeners();
    parser.addErrorListener(&listener);
    P::FileContext *tree = parser.file();
    if (listener.count > 0) return std::nullopt;
    Builder b(src);
    return b.file(tree);
}

} // namespace idlc
