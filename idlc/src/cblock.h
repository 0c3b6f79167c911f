// cblock.h: finds where a C block of IDL (Globals, DefState, an inline body) ends, for
// idlc's lexer. ANTLR once matched the block with a recursive lexer rule, but its
// simulator kept every way of reading "/*", quotes and braces alive at once, so a text
// with many unclosed '{' took minutes (a 53 KB one, 497 s). This scanner reads C the
// way a C compiler does, each character once, and remembers each brace it has seen, so
// the lexer never rescans a block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace idlc {

class CBlockScanner {
  public:
    // What at(i) returns past the end of the text.
    static constexpr uint32_t kEnd = UINT32_MAX;

    enum class Why { Closed, NoClosingBrace, OpenString, OpenChar, OpenComment };

    // How a block ends. For a block that does not close, where the string, character
    // literal or comment that runs past its line (or the text) begins.
    struct End {
        Why why = Why::Closed;
        size_t next = 0; // closed: the index after its '}'
        size_t line = 0, column = 0;
    };

    // The end of the block whose '{' is at index OPEN, on line LINE at COLUMN (as the
    // lexer counts them: lines from 1, columns from 0). AT(i) is the code point at
    // index i, or kEnd.
    template <class At> const End &end(size_t open, size_t line, size_t column, At at);

    // What end() found for the '{' at OPEN, or nullptr if it never scanned it.
    const End *known(size_t open) const {
        auto it = known_.find(open);
        return it == known_.end() ? nullptr : &it->second;
    }

  private:
    std::unordered_map<size_t, End> known_;
};

template <class At>
const CBlockScanner::End &CBlockScanner::end(size_t open, size_t line, size_t column, At at) {
    if (const End *e = known(open)) return *e;
    // The '{' still open, innermost last: a block closes at its '}', and a failure to
    // close is the failure of every block around it.
    std::vector<size_t> opens{open};
    size_t i = open + 1;
    column++;
    auto step = [&](uint32_t c) {
        i++;
        if (c == '\n') {
            line++;
            column = 0;
        } else {
            column++;
        }
    };
    // Past a string or character literal: false when it does not end on its line (a
    // backslash-newline continues it, as in C).
    auto literal = [&](uint32_t quote) {
        step(quote);
        for (uint32_t d; (d = at(i)) != kEnd && d != '\n' && d != '\r';) {
            step(d);
            if (d == quote) return true;
            if (d == '\\' && at(i) != kEnd) step(at(i));
        }
        return false;
    };
    // Past a comment: false when it never ends.
    auto comment = [&]() {
        step('/');
        step('*');
        for (uint32_t d; (d = at(i)) != kEnd;) {
            step(d);
            if (d == '*' && at(i) == '/') {
                step('/');
                return true;
            }
        }
        return false;
    };
    End failed{Why::NoClosingBrace, 0, 0, 0};
    while (!opens.empty()) {
        uint32_t c = at(i);
        if (c == kEnd) break;
        if (c == '{') {
            opens.push_back(i);
            step(c);
        } else if (c == '}') {
            step(c);
            known_[opens.back()] = End{Why::Closed, i, 0, 0};
            opens.pop_back();
        } else if (c == '"' || c == '\'') {
            End culprit{c == '"' ? Why::OpenString : Why::OpenChar, 0, line, column};
            if (!literal(c)) {
                failed = culprit;
                break;
            }
        } else if (c == '/' && at(i + 1) == '*') {
            End culprit{Why::OpenComment, 0, line, column};
            if (!comment()) {
                failed = culprit;
                break;
            }
        } else if (c == '/' && at(i + 1) == '/') {
            for (uint32_t d; (d = at(i)) != kEnd && d != '\n' && d != '\r';)
                step(d);
        } else {
            step(c);
        }
    }
    for (size_t o : opens)
        known_[o] = failed;
    return known_[open];
}

} // namespace idlc
