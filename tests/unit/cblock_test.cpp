// cblock_test.cpp: unit tests of idlc's C-block scanner (idlc/src/cblock.h): where a
// block ends, what hides a '}' (strings, character literals, comments) and what does
// not, why an unclosed block does not close and where, and that every brace it passed
// is remembered so the lexer never scans a block twice.
#include "cblock.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using idlc::CBlockScanner;
using Why = CBlockScanner::Why;

// The scanner over TEXT, counting the characters it reads.
struct Scan {
    explicit Scan(std::string t) : text(std::move(t)) {}
    const CBlockScanner::End &end(size_t open, size_t line = 1, size_t column = 0) {
        return scanner.end(open, line, column, [this](size_t i) {
            reads++;
            return i < text.size() ? static_cast<uint32_t>(static_cast<unsigned char>(text[i]))
                                   : CBlockScanner::kEnd;
        });
    }
    std::string text;
    CBlockScanner scanner;
    size_t reads = 0;
};

// The text a closed block at OPEN spans.
std::string block(Scan &s, size_t open) {
    const auto &e = s.end(open);
    EXPECT_EQ(e.why, Why::Closed) << s.text;
    return s.text.substr(open, e.next - open);
}

TEST(CBlock, EndsAtTheMatchingBrace) {
    Scan s("{ a; { b; } c; } d; }");
    EXPECT_EQ(block(s, 0), "{ a; { b; } c; }");
}

// TEXT is one block, from its first '{' to its last '}'.
void expectWhole(const std::string &text) {
    Scan s(text);
    EXPECT_EQ(block(s, 0), text);
}

TEST(CBlock, BracesInStringsCharactersAndCommentsDoNotCount) {
    expectWhole(R"({ "}" '}' '{' /* } { */ // }
  "\"}" '\'' x / y; })");
}

TEST(CBlock, ABackslashNewlineContinuesAString) {
    expectWhole("{ \"a\\\n}\" }");
}

TEST(CBlock, ALineCommentEndsAtTheLine) {
    expectWhole("{ // }\n}");
    expectWhole("{ // }\r}");
}

TEST(CBlock, ASlashAloneIsCode) {
    expectWhole("{ a / b /}");
}

TEST(CBlock, UnclosedAtTheEnd) {
    Scan s("{ a; { b; }\n");
    EXPECT_EQ(s.end(0).why, Why::NoClosingBrace);
}

// The block opening TEXT, its '{' at LINE and COLUMN, does not close for WHY, and the
// culprit begins at WANT_LINE, WANT_COLUMN.
void expectOpen(const std::string &text, size_t line, size_t column, Why why, size_t want_line,
                size_t want_column) {
    Scan s(text);
    const auto &e = s.end(0, line, column);
    EXPECT_EQ(e.why, why) << text;
    EXPECT_EQ(e.line, want_line) << text;
    EXPECT_EQ(e.column, want_column) << text;
}

TEST(CBlock, AnOpenCommentIsNamedWithItsPlace) {
    // "/*" always opens a comment, as in C: its '}' is comment text.
    expectOpen("{\n  x;\n  /* left open }\n", 3, 8, Why::OpenComment, 5, 2);
}

TEST(CBlock, AStringEndsOnItsLine) {
    expectOpen("{ x = \"abc;\n }", 1, 4, Why::OpenString, 1, 10);
}

TEST(CBlock, ACharacterLiteralEndsOnItsLine) {
    expectOpen("{\n\tc = '}';\n\td = 'x;\r\n}", 1, 0, Why::OpenChar, 3, 5);
}

TEST(CBlock, PlacesCountFromTheBracesOwn) {
    // The lexer's line and column of the '{' are where the count starts.
    expectOpen("{ 'ab", 7, 3, Why::OpenChar, 7, 5);
}

TEST(CBlock, AFailureIsEveryOpenBlocksButNotTheClosedOnes) {
    Scan s("{ { } { \"x\n { } }"); // the '{' at 2 closes; the one at 12 is past the failure
    EXPECT_EQ(s.end(0).why, Why::OpenString);
    ASSERT_NE(s.scanner.known(2), nullptr);
    EXPECT_EQ(s.scanner.known(2)->why, Why::Closed);
    EXPECT_EQ(s.scanner.known(2)->next, 5u);
    ASSERT_NE(s.scanner.known(6), nullptr);
    EXPECT_EQ(s.scanner.known(6)->why, Why::OpenString);
    EXPECT_EQ(s.scanner.known(6)->line, 1u);
    EXPECT_EQ(s.scanner.known(6)->column, 8u);
    EXPECT_EQ(s.scanner.known(12), nullptr) << "past the failure nothing was scanned";
}

TEST(CBlock, InnerBlocksAreRememberedNotRescanned) {
    std::string t = "{";
    for (int i = 0; i < 1000; i++)
        t += " { /* x */";
    Scan s(t);
    EXPECT_EQ(s.end(0).why, Why::NoClosingBrace);
    size_t first = s.reads;
    EXPECT_LT(first, 3 * t.size()) << "one pass";
    // The lexer asks again at each inner '{' after the outer one failed.
    for (size_t i = 1; i < t.size(); i++) {
        if (t[i] == '{') {
            EXPECT_EQ(s.end(i).why, Why::NoClosingBrace);
        }
    }
    EXPECT_EQ(s.reads, first) << "every inner brace answered from what the first scan saw";
}

} // namespace
