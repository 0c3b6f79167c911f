// printer.h: builds generated text from $var$ templates. A template that names a
// variable it was not given is a bug in idlc, so it throws rather than print garbage.
// The printer counts lines so emitters can point #line directives back at themselves.
#pragma once

#include <map>
#include <string>

namespace idlc {

class Printer {
  public:
    using Vars = std::map<std::string, std::string>;

    // Appends TEMPLATE with each $name$ replaced by VARS[name]; "$$" prints "$".
    void print(const std::string &tmpl, const Vars &vars = {});
    // Appends TEXT as it is.
    void raw(const std::string &text);

    const std::string &str() const { return out_; }
    // The number of the line the next character will be on (1-based).
    int nextLine() const { return line_; }

  private:
    std::string out_;
    int line_ = 1;
};

// Quotes S as a C string literal.
std::string cQuote(const std::string &s);

} // namespace idlc
