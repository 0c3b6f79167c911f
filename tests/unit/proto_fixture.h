// proto_fixture.h: what the protocol-layer tests share: a socketpair carrying one
// message at a time, and golden files of the bytes on the wire (tests/golden-msg/;
// GRIDRPC_UPDATE_GOLDEN=1 rewrites them).
#ifndef PROTO_FIXTURE_H
#define PROTO_FIXTURE_H

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
#include "grp_proto.h"
}

namespace proto_fixture {

// A connected pair: messages written on w arrive on r. The socket buffers are large
// enough for every message here, so one thread writes then reads.
struct Pair {
    int fd[2] = {-1, -1};
    grw_writer *w = static_cast<grw_writer *>(malloc(sizeof(grw_writer)));
    grw_reader *r = static_cast<grw_reader *>(malloc(sizeof(grw_reader)));
    explicit Pair(uint64_t max_message = GRP_DEFAULT_MAX_MESSAGE) {
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) != 0) abort();
        int big = 4 << 20;
        setsockopt(fd[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
        setsockopt(fd[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
        grw_writer_init(w, fd[0]);
        grw_reader_init(r, fd[1], max_message);
        // Every read is bounded: a decoder waiting for bytes that never come fails.
        r->deadline_ns = gr_now_ns() + 5000000000LL;
    }
    ~Pair() {
        close(fd[0]);
        close(fd[1]);
        free(w);
        free(r);
    }
    // Reads the next header and checks its type and id.
    void header(uint32_t type, uint64_t id) {
        grw_header h;
        gr_err e;
        ASSERT_EQ(GRID_OK, grp_read_header(r, &h, &e)) << e.msg;
        EXPECT_EQ(type, h.type);
        EXPECT_EQ(id, h.request_id);
    }
    // Everything written so far, as the peer would receive it.
    std::vector<uint8_t> raw() {
        shutdown(fd[0], SHUT_WR);
        std::vector<uint8_t> out;
        uint8_t b[65536];
        ssize_t n;
        while ((n = read(fd[1], b, sizeof b)) > 0)
            out.insert(out.end(), b, b + n);
        return out;
    }
};

inline std::string hex(const std::vector<uint8_t> &b) {
    std::string s;
    char t[4];
    for (size_t i = 0; i < b.size(); i++) {
        snprintf(t, sizeof t, "%02x", b[i]);
        s += t;
        s += (i % 16 == 15) ? "\n" : " ";
    }
    if (!s.empty() && s.back() == ' ') s.back() = '\n';
    return s;
}

inline void golden(const char *name, const std::vector<uint8_t> &bytes) {
    const char *top = getenv("top_srcdir");
    ASSERT_NE(nullptr, top) << "run through make check";
    std::string path = std::string(top) + "/tests/golden-msg/" + name + ".hex";
    std::string now = hex(bytes);
    if (getenv("GRIDRPC_UPDATE_GOLDEN")) {
        std::ofstream(path) << now;
        return;
    }
    std::ifstream f(path);
    ASSERT_TRUE(f.good()) << path << " is missing (GRIDRPC_UPDATE_GOLDEN=1 writes it)";
    std::stringstream want;
    want << f.rdbuf();
    EXPECT_EQ(want.str(), now) << name << ": the bytes on the wire changed (" << path << ")";
}

} // namespace proto_fixture

#endif /* PROTO_FIXTURE_H */
