// output.cpp: atomic, change-only writes of generated files.
#include "output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace idlc {

bool writeIfChanged(const std::string &path, const std::string &content, Diag &diag) {
    {
        std::ifstream in(path, std::ios::binary);
        if (in) {
            std::ostringstream ss;
            ss << in.rdbuf();
            if (ss.str() == content) return true;
        }
    }
    std::string tmp = path + ".tmp" + std::to_string(getpid());
    FILE *f = fopen(tmp.c_str(), "wb");
    if (!f) {
        diag.fatal("cannot write '" + path + "': " + strerror(errno));
        return false;
    }
    bool ok = fwrite(content.data(), 1, content.size(), f) == content.size();
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        unlink(tmp.c_str());
        diag.fatal("cannot write '" + path + "': " + strerror(saved) + " (is the disk full?)");
        return false;
    }
    if (rename(tmp.c_str(), path.c_str()) != 0) {
        saved = errno;
        unlink(tmp.c_str());
        diag.fatal("cannot write '" + path + "': " + strerror(saved));
        return false;
    }
    return true;
}

} // namespace idlc
