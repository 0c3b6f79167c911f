// diag.cpp: formatting of idlc's diagnostics (the format editors and make understand).
#include "diag.h"

#include <algorithm>
#include <tuple>

namespace idlc {

void Diag::add(const Loc &loc, const char *kind, const std::string &message) {
    std::string s;
    if (!loc.file.empty()) {
        s = loc.file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": ";
    } else {
        s = "idlc: ";
    }
    s += kind;
    s += ": ";
    s += message;
    entries_.push_back({loc, s});
}

std::vector<std::string> Diag::lines() const {
    // Files keep the order in which they were first reported; lines sort within each.
    std::vector<std::string> files;
    auto rank = [&files](const std::string &f) {
        auto it = std::find(files.begin(), files.end(), f);
        if (it != files.end()) return static_cast<size_t>(it - files.begin());
        files.push_back(f);
        return files.size() - 1;
    };
    std::vector<std::pair<std::tuple<size_t, int, int>, std::string>> sorted;
    for (const auto &e : entries_)
        sorted.push_back({{rank(e.loc.file), e.loc.line, e.loc.col}, e.text});
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<std::string> out;
    for (const auto &e : sorted)
        out.push_back(e.second);
    return out;
}

void Diag::error(const Loc &loc, const std::string &message) {
    ++errors_;
    add(loc, "error", message);
}

void Diag::warning(const Loc &loc, const std::string &message) {
    add(loc, "warning", message);
}

void Diag::fatal(const std::string &message) {
    ++errors_;
    add(Loc{}, "error", message);
}

} // namespace idlc
