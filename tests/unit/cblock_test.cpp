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

TEST(CBlock, BracesInStringsCharactersAndCommentsDoNotCount) {
    Scan s(R"({ "}" '}' '{' /* } { */ // }
  "\"}" '\'' x / y; })");
    EXPECT_EQ(block(s, 0), s.text);
}

TEST(CBlock, ABackslashNewlineContinuesAString) {
    Scan s("{ \"a\\\n}\" }");
    EXPECT_EQ(block(s, 0), s.text);
}

TEST(CBlock, ALineCommentEndsAtTheLine) {
    Scan s("{ // }\n}");
    EXPECT_EQ(block(s, 0), s.text);
    Scan r("{ // }\r}");
    EXPECT_EQ(block(r, 0), r.text);
}

TEST(CBlock, ASlashAloneIsCode) {
    Scan s("{ a / b /}");
    EXPECT_EQ(block(s, 0), s.text);
}

TEST(CBlock, UnclosedAtTheEnd) {
    Scan s("{ a; { b; }\n");
    EXPECT_EQ(s.end(0).why, Why::NoClosingBrace);
}

TEST(CBlock, AnOpenCommentIsNamedWithItsPlace) {
    // "/*" always opens a comment, as in C: its '}' is comment text.
    Scan s("{\n  x;\n  /* left open }\n");
    const auto &e = s.end(0, 3, 8);
    EXPECT_EQ(e.why, Why::OpenComment);
    EXPECT_EQ(e.line, 5u);
    EXPECT_EQ(e.column, 2u);
}

TEST(CBlock, AStringEndsOnItsLine) {
    Scan s("{ x = \"abc;\n }");
    const auto &e = s.end(0, 1, 4);
    EXPECT_EQ(e.why, Why::OpenString);
    EXPECT_EQ(e.line, 1u);
    EXPECT_EQ(e.column, 10u);
}

TEST(CBlock, ACharacterLiteralEndsOnItsLine) {
    Scan s("{\n\tc = '}';\n\td = 'x;\r\n}");
    const auto &e = s.end(0);
    EXPECT_EQ(e.why, Why::OpenChar);
    EXPECT_EQ(e.line, 3u);
    EXPECT_EQ(e.column, 5u);
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

TEST(CBlock, PlacesCountFromTheBracesOwn) {
    // The lexer's line and column of the '{' are where the count starts.
    Scan s("{ 'ab");
    const auto &e = s.end(0, 7, 3);
    EXPECT_EQ(e.why, Why::OpenChar);
    EXPECT_EQ(e.line, 7u);
    EXPECT_EQ(e.column, 5u);
}

} // namespace
