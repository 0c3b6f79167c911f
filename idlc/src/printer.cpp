// printer.cpp: the $var$ template printer of idlc's emitters.
#include "printer.h"

#include <cstdio>
#include <stdexcept>

namespace idlc {

void Printer::raw(const std::string &text) {
    out_ += text;
    for (char c : text)
        if (c == '\n') ++line_;
}

void Printer::print(const std::string &tmpl, const Vars &vars) {
    std::string s;
    for (size_t i = 0; i < tmpl.size(); ++i) {
        if (tmpl[i] != '$') {
            s += tmpl[i];
            continue;
        }
        size_t e = tmpl.find('$', i + 1);
        if (e == std::string::npos) throw std::logic_error("unterminated $ in template: " + tmpl);
        std::string name = tmpl.substr(i + 1, e - i - 1);
        if (name.empty()) {
            s += '$';
        } else {
            auto it = vars.find(name);
            if (it == vars.end()) throw std::logic_error("template variable $" + name + "$ not given");
            s += it->second;
        }
        i = e;
    }
    raw(s);
}

std::string cQuote(const std::string &s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                char buf[8];
                snprintf(buf, sizeof buf, "\\%03o", c);
                out += buf;
            } else {
                out += static_cast<char>(c);
            }
        }
    }
    return out + "\"";
}

} // namespace idlc
