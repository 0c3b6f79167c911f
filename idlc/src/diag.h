// diag.h: the error reporter of idlc. Every stage reports through it and keeps going,
// so one run shows every problem it can find; nothing is written when it has errors.
#pragma once

#include <string>
#include <vector>

namespace idlc {

// A place in an IDL source file (after mapping preprocessor output back to it).
struct Loc {
    std::string file;
    int line = 0;
    int col = 0;
};

class Diag {
  public:
    // Reports an error "file:line:col: error: message".
    void error(const Loc &loc, const std::string &message);
    // Reports a warning "file:line:col: warning: message"; warnings do not stop output.
    void warning(const Loc &loc, const std::string &message);
    // Reports an error with no location ("idlc: error: message").
    void fatal(const std::string &message);

    int errors() const { return errors_; }
    // Everything reported so far, one diagnostic a line, in source order (checks run
    // in passes, so report order is not source order).
    std::vector<std::string> lines() const;

  private:
    struct Entry {
        Loc loc;
        std::string text;
    };
    void add(const Loc &loc, const char *kind, const std::string &message);
    int errors_ = 0;
    std::vector<Entry> entries_;
};

} // namespace idlc
