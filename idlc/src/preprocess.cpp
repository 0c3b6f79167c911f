// preprocess.cpp: the cpp pass of idlc. Ninf-G runs IDL through cpp, so IDL files use
// #define and #include; but C blocks (Globals and inline bodies) hold directives meant
// for the C compiler of the stub, so those are hidden from cpp behind a marker and
// restored afterwards. cpp's line markers are turned into a per-line origin table so
// that every diagnostic names the user's file and line.
#include "preprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char **environ;

namespace idlc {

namespace {

const char kHashMarker[] = "__idlc_hash__";

bool readFile(const std::string &path, std::string &out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream ss;
    ss << in.rdbuf();
    out = ss.str();
    return !in.bad();
}

// Replaces '#' that starts a line inside a brace block by the marker. Top-level IDL
// has no braces except C blocks, so depth > 0 means "inside C". Strings, character
// literals and comments are skipped so their braces do not count.
std::string protectCBlocks(const std::string &s) {
    std::string out;
    out.reserve(s.size());
    int depth = 0;
    bool lineStart = true;
    for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
            size_t e = s.find('\n', i);
            if (e == std::string::npos) e = s.size();
            out.append(s, i, e - i);
            i = e - 1;
            continue;
        }
        if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
            size_t e = s.find("*/", i + 2);
            e = (e == std::string::npos) ? s.size() : e + 2;
            out.append(s, i, e - i);
            i = e - 1;
            continue;
        }
        if (c == '"' || (c == '\'' && depth > 0)) {
            size_t j = i + 1;
            while (j < s.size() && s[j] != c && s[j] != '\n')
                j += (s[j] == '\\') ? 2 : 1;
            if (j >= s.size()) j = s.size() - 1;
            out.append(s, i, j - i + 1);
            i = j;
            lineStart = false;
            continue;
        }
        if (c == '{') ++depth;
        if (c == '}' && depth > 0) --depth;
        if (c == '#' && lineStart && depth > 0) {
            out += kHashMarker;
            lineStart = false;
            continue;
        }
        out += c;
        if (c == '\n')
            lineStart = true;
        else if (c != ' ' && c != '\t')
            lineStart = false;
    }
    return out;
}

void restoreMarkers(std::string &s) {
    const size_t n = sizeof kHashMarker - 1;
    for (size_t p = s.find(kHashMarker); p != std::string::npos; p = s.find(kHashMarker, p + 1))
        s.replace(p, n, "#");
}

// Splits cpp output into text without line markers and the origin of each line.
void mapLines(const std::string &raw, const std::string &tmpName, const std::string &path, Source &out) {
    std::string file = path;
    int line = 1;
    size_t pos = 0;
    while (pos <= raw.size()) {
        size_t e = raw.find('\n', pos);
        bool last = (e == std::string::npos);
        if (last) e = raw.size();
        std::string ln = raw.substr(pos, e - pos);
        pos = e + 1;
        if (last && ln.empty()) break;
        if (ln.size() > 2 && ln[0] == '#' && ln[1] == ' ' && isdigit(static_cast<unsigned char>(ln[2]))) {
            char *endp = nullptr;
            long n = strtol(ln.c_str() + 2, &endp, 10);
            std::string name = file;
            const char *q = strchr(endp, '"');
            if (q) {
                const char *q2 = strrchr(q + 1, '"');
                if (q2 && q2 > q) name = std::string(q + 1, q2 - q - 1);
            }
            file = (name == tmpName) ? path : name;
            line = static_cast<int>(n);
            continue;
        }
        out.text += ln;
        out.text += '\n';
        out.origin.emplace_back(file, line);
        ++line;
        if (last) break;
    }
}

} // namespace

Loc Source::locate(int line, int col) const {
    Loc l;
    if (line >= 1 && static_cast<size_t>(line) <= origin.size()) {
        l.file = origin[line - 1].first;
        l.line = origin[line - 1].second;
    } else {
        l.file = path;
        l.line = line;
    }
    l.col = col + 1;
    return l;
}

bool preprocess(const std::string &path, const PreprocessOptions &opt, Source &out, Diag &diag) {
    out = Source{};
    out.path = path;
    std::string text;
    if (!readFile(path, text)) {
        diag.fatal("cannot read '" + path + "': " + strerror(errno));
        return false;
    }
    if (!opt.run) {
        out.text = text;
        int n = 1;
        for (char c : text)
            if (c == '\n') ++n;
        for (int i = 1; i <= n; ++i)
            out.origin.emplace_back(path, i);
        return true;
    }

    const char *tmpdir = getenv("TMPDIR");
    std::string base = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/idlc-XXXXXX";
    std::string inName = base + ".idl";
    std::string errName = base + ".err";
    std::vector<char> t1(inName.begin(), inName.end()), t2(errName.begin(), errName.end());
    t1.push_back('\0');
    t2.push_back('\0');
    int inFd = mkstemps(t1.data(), 4);
    int errFd = inFd >= 0 ? mkstemps(t2.data(), 4) : -1;
    if (inFd < 0 || errFd < 0) {
        diag.fatal(std::string("cannot create a temporary file for the preprocessor: ") + strerror(errno) +
                   " (set TMPDIR, or use --no-cpp)");
        if (inFd >= 0) {
            close(inFd);
            unlink(t1.data());
        }
        return false;
    }
    inName = t1.data();
    errName = t2.data();
    std::string prot = protectCBlocks(text);
    bool ok = write(inFd, prot.data(), prot.size()) == static_cast<ssize_t>(prot.size());
    close(inFd);

    std::string dir = ".";
    size_t slash = path.rfind('/');
    if (slash != std::string::npos) dir = path.substr(0, slash == 0 ? 1 : slash);
    // -std=c11 keeps cpp from predefining unix and linux, which are fine IDL names.
    std::vector<std::string> argv = {opt.cpp, "-x", "c", "-std=c11", "-iquote", dir};
    for (const auto &a : opt.args)
        argv.push_back(a);
    argv.push_back(inName);
    std::vector<char *> cargv;
    for (auto &a : argv)
        cargv.push_back(a.data());
    cargv.push_back(nullptr);

    int pipeFd[2];
    std::string raw;
    int status = -1;
    if (ok && pipe(pipeFd) == 0) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, pipeFd[1], 1);
        posix_spawn_file_actions_adddup2(&fa, errFd, 2);
        posix_spawn_file_actions_addclose(&fa, pipeFd[0]);
        pid_t pid;
        int rc = posix_spawnp(&pid, opt.cpp.c_str(), &fa, nullptr, cargv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        close(pipeFd[1]);
        if (rc == 0) {
            char buf[65536];
            ssize_t n;
            while ((n = read(pipeFd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
                if (n > 0) raw.append(buf, static_cast<size_t>(n));
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
        } else {
            diag.fatal("cannot run the C preprocessor '" + opt.cpp + "': " + strerror(rc) +
                       " (install cpp, pass --cpp=PROGRAM, or use --no-cpp)");
        }
        close(pipeFd[0]);
    }
    close(errFd);
    std::string errText;
    readFile(errName, errText);
    unlink(inName.c_str());
    unlink(errName.c_str());
    if (status != 0) {
        std::istringstream es(errText);
        std::string ln;
        while (std::getline(es, ln)) {
            for (size_t p = ln.find(inName); p != std::string::npos; p = ln.find(inName, p))
                ln.replace(p, inName.size(), path);
            if (!ln.empty()) diag.fatal("cpp: " + ln);
        }
        if (status != -1) diag.fatal("the C preprocessor failed on '" + path + "'");
        return false;
    }
    restoreMarkers(raw);
    mapLines(raw, inName, path, out);
    return true;
}

} // namespace idlc
