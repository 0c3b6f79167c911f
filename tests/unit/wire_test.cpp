// wire_test.cpp: unit tests of the wire layer (runtime/wire): record-marked messages
// written by grw_writer and read by grw_reader over a socketpair. Round trips of every
// item type and of bulk words around the writer's 64 KiB buffer and 1 MiB staging
// chunk; the exact bytes of small messages (fragment header, 24-byte header, XDR
// padding); every reader error path; and every limit at its bound and one past it.
// The program is linked with -Wl,--wrap=malloc so a test can see the largest
// allocation the library asked for (a length must be checked before it is trusted).
#include "grp_proto.h"
#include "grw_wire.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

// ---- the largest malloc request from our code (the library is linked statically) ----

extern "C" void *__real_malloc(size_t n);
extern "C" void *__wrap_malloc(size_t n);
static std::atomic<size_t> g_largest_malloc{0};
extern "C" void *__wrap_malloc(size_t n) {
    size_t cur = g_largest_malloc.load();
    while (n > cur && !g_largest_malloc.compare_exchange_weak(cur, n)) {
    }
    return __real_malloc(n);
}

namespace {

using Bytes = std::vector<uint8_t>;

constexpr uint64_t kMiB = uint64_t{1} << 20;

// ---- sockets ----

struct Pair {
    int w = -1, r = -1; // writer end, reader end
    Pair() {
        int fd[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd) == 0) {
            w = fd[0];
            r = fd[1];
        }
    }
    ~Pair() {
        CloseW();
        CloseR();
    }
    void CloseW() {
        if (w >= 0) close(w);
        w = -1;
    }
    void CloseR() {
        if (r >= 0) close(r);
        r = -1;
    }
};

std::unique_ptr<grw_reader> Reader(int fd, uint64_t max_message = uint64_t{1} << 30) {
    auto r = std::make_unique<grw_reader>();
    grw_reader_init(r.get(), fd, max_message);
    return r;
}

std::unique_ptr<grw_writer> Writer(int fd) {
    auto w = std::make_unique<grw_writer>();
    grw_writer_init(w.get(), fd);
    return w;
}

// Sends every byte of B; stops quietly when the peer has gone (a reader that stopped
// early on an error: its test reports that).
void SendAll(int fd, const Bytes &b) {
    size_t done = 0;
    while (done < b.size()) {
        ssize_t k = send(fd, b.data() + done, b.size() - done, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return;
        done += static_cast<size_t>(k);
    }
}

// A thread feeding the writing end of P, which it shuts down when done. Joining closes the reading end first,
// so a writer blocked on a reader that stopped early (a failed test) gets EPIPE instead of hanging, and a
// failed ASSERT in the test body still joins.
class Background {
  public:
    Background(Pair &p, std::function<void()> fn)
        : p_(p), t_([this, fn] {
              fn();
              shutdown(p_.w, SHUT_WR); // a reader waiting for more sees the end
          }) {}
    ~Background() { Join(); }
    Background(const Background &) = delete;
    Background &operator=(const Background &) = delete;
    void Join() {
        if (t_.joinable()) {
            p_.CloseR();
            t_.join();
        }
    }

  private:
    Pair &p_;
    std::thread t_;
};

// Reads until the peer shuts its side down.
Bytes Drain(int fd) {
    Bytes out;
    uint8_t buf[65536];
    for (;;) {
        ssize_t k = recv(fd, buf, sizeof buf, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        out.insert(out.end(), buf, buf + k);
    }
    return out;
}

// Runs FN with a writer on one end of a socketpair (in a thread, so messages of any
// size fit) and returns every byte that came out of the other end.
Bytes Capture(const std::function<void(grw_writer *)> &fn) {
    Pair p;
    Background t(p, [&] {
        auto w = Writer(p.w);
        fn(w.get());
        shutdown(p.w, SHUT_WR);
    });
    Bytes out = Drain(p.r);
    t.Join();
    return out;
}

// ---- building raw bytes ----

void Put32(Bytes &b, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8)
        b.push_back(static_cast<uint8_t>(v >> s));
}
void Put64(Bytes &b, uint64_t v) {
    Put32(b, static_cast<uint32_t>(v >> 32));
    Put32(b, static_cast<uint32_t>(v));
}
Bytes Cat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const Bytes &p : parts)
        out.insert(out.end(), p.begin(), p.end());
    return out;
}
Bytes Header(uint32_t type = GRP_PING, uint64_t id = 7, uint32_t magic = GRW_MAGIC,
             uint32_t version = GRW_VERSION, uint32_t flags = 0) {
    Bytes b;
    Put32(b, magic);
    Put32(b, version);
    Put32(b, type);
    Put32(b, flags);
    Put64(b, id);
    return b;
}
Bytes Frag(const Bytes &body, bool last) {
    Bytes b;
    Put32(b, static_cast<uint32_t>(body.size()) | (last ? 0x80000000u : 0));
    b.insert(b.end(), body.begin(), body.end());
    return b;
}
Bytes Record(const Bytes &body) {
    return Frag(body, true);
}
Bytes U32(uint32_t v) {
    Bytes b;
    Put32(b, v);
    return b;
}
// An XDR opaque<>: length, bytes, then PAD (zero unless told) up to a multiple of 4.
Bytes Opaque(const std::string &s, uint8_t pad = 0) {
    Bytes b = U32(static_cast<uint32_t>(s.size()));
    b.insert(b.end(), s.begin(), s.end());
    while (b.size() % 4)
        b.push_back(pad);
    return b;
}

// ---- parsing raw bytes: one record ----

struct Rec {
    Bytes body;
    std::vector<uint32_t> frags; // fragment lengths, in order
    bool ok = false;             // ended with a last fragment inside the bytes
};

// Parses the record starting at *pos; the last-fragment bit must be set on exactly the
// final fragment (a fragment over 2^31 - 1 bytes would set it early).
Rec ParseRecord(const Bytes &raw, size_t *pos) {
    Rec r;
    for (;;) {
        if (*pos + 4 > raw.size()) return r;
        uint32_t v = static_cast<uint32_t>(raw[*pos]) << 24 | static_cast<uint32_t>(raw[*pos + 1]) << 16 |
                     static_cast<uint32_t>(raw[*pos + 2]) << 8 | raw[*pos + 3];
        *pos += 4;
        uint32_t len = v & 0x7fffffffu;
        if (*pos + len > raw.size()) return r;
        r.frags.push_back(len);
        r.body.insert(r.body.end(), raw.begin() + static_cast<long>(*pos),
                      raw.begin() + static_cast<long>(*pos + len));
        *pos += len;
        if (v & 0x80000000u) break;
    }
    r.ok = true;
    return r;
}

std::string Hex(const Bytes &b) {
    static const char d[] = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < b.size(); i++) {
        if (i) s += (i % 4 == 0) ? " | " : " ";
        s += d[b[i] >> 4];
        s += d[b[i] & 15];
    }
    return s;
}

// A deterministic byte pattern where neighbouring bytes differ (so a missed swap shows).
Bytes Pattern(size_t n, uint32_t seed = 1) {
    Bytes b(n);
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = static_cast<uint8_t>(x >> 16);
    }
    return b;
}

// The big-endian form of N host-order words of WORD bytes, computed byte by byte
// with shifts (independent of grw_copy_swap), followed by zero padding to 4.
Bytes BigEndian(const Bytes &host, unsigned word) {
    Bytes out;
    size_t n = host.size() / word;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        switch (word) {
        case 1: v = host[i]; break;
        case 2: {
            uint16_t t;
            std::memcpy(&t, &host[i * 2], 2);
            v = t;
            break;
        }
        case 4: {
            uint32_t t;
            std::memcpy(&t, &host[i * 4], 4);
            v = t;
            break;
        }
        case 8: std::memcpy(&v, &host[i * 8], 8); break;
        }
        for (int s = static_cast<int>(word) * 8 - 8; s >= 0; s -= 8)
            out.push_back(static_cast<uint8_t>(v >> s));
    }
    while (out.size() % 4)
        out.push_back(0);
    return out;
}

// ---- exact bytes ----

TEST(WireBytes, TinyMessageIsExactlyTheXdrOfItsItems) {
    Bytes raw = Capture([](grw_writer *w) {
        gr_err e{};
        const uint16_t sh[3] = {0x0102, 0x0304, 0x0506};
        const uint8_t ch[1] = {0x7f};
        const uint32_t in[1] = {0x0a0b0c0d};
        const uint64_t hy[1] = {0x0102030405060708ull};
        EXPECT_EQ(grw_begin(w, GRP_CALL, 0, 0x0102030405060708ull, &e), GRID_OK);
        EXPECT_EQ(grw_write_u32(w, 0xdeadbeef, &e), GRID_OK);
        EXPECT_EQ(grw_write_i32(w, -2, &e), GRID_OK);
        EXPECT_EQ(grw_write_u64(w, 0x1122334455667788ull, &e), GRID_OK);
        EXPECT_EQ(grw_write_string(w, "abcde", &e), GRID_OK);
        EXPECT_EQ(grw_write_opaque(w, "\0\1\2", 3, &e), GRID_OK);
        EXPECT_EQ(grw_write_string(w, "", &e), GRID_OK);
        EXPECT_EQ(grw_write_opaque(w, nullptr, 0, &e), GRID_OK); // empty, no buffer
        EXPECT_EQ(grw_write_words(w, nullptr, 0, 4, &e), GRID_OK);
        EXPECT_EQ(grw_write_words(w, sh, 3, 2, &e), GRID_OK);
        EXPECT_EQ(grw_write_words(w, ch, 1, 1, &e), GRID_OK);
        EXPECT_EQ(grw_write_words(w, in, 1, 4, &e), GRID_OK);
        EXPECT_EQ(grw_write_words(w, hy, 1, 8, &e), GRID_OK);
        EXPECT_EQ(grw_finish(w, &e), GRID_OK);
    });
    const Bytes want = {
        0x80, 0x00, 0x00, 0x5c,                                                // last fragment, 92 bytes
        0x47, 0x52, 0x50, 0x43, 0x00, 0x00, 0x00, 0x01,                        // magic "GRPC", version 1
        0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00,                        // type CALL, flags 0
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,                        // request id
        0xde, 0xad, 0xbe, 0xef,                                                // u32
        0xff, 0xff, 0xff, 0xfe,                                                // i32 -2
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,                        // u64
        0x00, 0x00, 0x00, 0x05, 'a',  'b',  'c',  'd',  'e', 0x00, 0x00, 0x00, // string, 3 pad
        0x00, 0x00, 0x00, 0x03, 0x00, 0x01, 0x02, 0x00,                        // opaque, 1 pad
        0x00, 0x00, 0x00, 0x00,                                                // empty string
        0x00, 0x00, 0x00, 0x00,                                                // empty opaque
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x00, 0x00,                        // 3 shorts, 2 pad
        0x7f, 0x00, 0x00, 0x00,                                                // 1 char, 3 pad
        0x0a, 0x0b, 0x0c, 0x0d,                                                // 1 int
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,                        // 1 hyper
    };
    EXPECT_EQ(Hex(raw), Hex(want));
}

TEST(WireBytes, EmptyMessageIsOneLastFragmentHoldingTheHeader) {
    Bytes raw = Capture([](grw_writer *w) {
        gr_err e{};
        EXPECT_EQ(grw_begin(w, GRP_PONG, 0, ~0ull, &e), GRID_OK);
        EXPECT_EQ(grw_finish(w, &e), GRID_OK);
        EXPECT_EQ(grw_begin(w, GRP_PING, 0, 0, &e), GRID_OK); // the writer is reusable
        EXPECT_EQ(grw_finish(w, &e), GRID_OK);
    });
    EXPECT_EQ(Hex(raw), Hex(Cat({Record(Header(GRP_PONG, ~0ull)), Record(Header(GRP_PING, 0))})));
}

TEST(WireBytes, SendErrorIsCodeAndTruncatedMessage) {
    Pair p;
    gr_err e{};
    auto w = Writer(p.w);
    ASSERT_EQ(grp_write_error(w.get(), 42, GRID_ERR_LIMIT, "too big", &e), GRID_OK);
    std::string long_msg(5000, 'x');
    ASSERT_EQ(grp_write_error(w.get(), 43, GRID_ERR_PROTOCOL, long_msg.c_str(), &e), GRID_OK);
    shutdown(p.w, SHUT_WR);
    Bytes raw = Drain(p.r);
    Bytes want =
        Cat({Record(Cat({Header(GRP_ERROR, 42), U32(GRID_ERR_LIMIT), Opaque("too big")})),
             Record(Cat({Header(GRP_ERROR, 43), U32(GRID_ERR_PROTOCOL), Opaque(std::string(4095, 'x'))}))});
    EXPECT_EQ(raw == want, true) << Hex(Bytes(raw.begin(), raw.begin() + std::min<size_t>(raw.size(), 64)));
}

// The 64 KiB buffer: full to the byte is one fragment, one byte more is two.
TEST(WireBytes, BufferFullIsOneFragmentOneByteMoreIsTwo) {
    for (size_t extra : {0, 1}) {
        Bytes a = Pattern(32000, 1), b = Pattern(32000, 2), c = Pattern(65536 - 24 - 64000 + extra, 3);
        Bytes raw = Capture([&](grw_writer *w) {
            gr_err e{};
            grw_begin(w, GRP_CALL, 0, 1, &e);
            EXPECT_EQ(grw_write(w, a.data(), a.size(), &e), GRID_OK);
            EXPECT_EQ(grw_write(w, b.data(), b.size(), &e), GRID_OK);
            EXPECT_EQ(grw_write(w, c.data(), c.size(), &e), GRID_OK);
            EXPECT_EQ(grw_finish(w, &e), GRID_OK);
        });
        size_t pos = 0;
        Rec r = ParseRecord(raw, &pos);
        ASSERT_TRUE(r.ok);
        EXPECT_EQ(pos, raw.size());
        EXPECT_EQ(r.body == Cat({Header(GRP_CALL, 1), a, b, c}), true);
        if (extra == 0) {
            EXPECT_EQ(r.frags, (std::vector<uint32_t>{65536}));
        } else { // the buffer goes when the next item does not fit; the item starts the next one
            EXPECT_EQ(r.frags, (std::vector<uint32_t>{24 + 64000, static_cast<uint32_t>(c.size())}));
        }
    }
}

// Below half the buffer a block is copied in; from half on it goes out with what is
// buffered as a fragment of its own.
TEST(WireBytes, LargeBlocksGoOutAsTheirOwnFragment) {
    for (size_t n : {32767, 32768, 65536, 65537, 3 * 65536 + 5}) {
        Bytes blk = Pattern(n, static_cast<uint32_t>(n));
        Bytes raw = Capture([&](grw_writer *w) {
            gr_err e{};
            grw_begin(w, GRP_CALL, 0, 1, &e);
            EXPECT_EQ(grw_write(w, blk.data(), blk.size(), &e), GRID_OK);
            EXPECT_EQ(grw_write_u32(w, 0x01020304, &e), GRID_OK);
            EXPECT_EQ(grw_finish(w, &e), GRID_OK);
        });
        size_t pos = 0;
        Rec r = ParseRecord(raw, &pos);
        ASSERT_TRUE(r.ok) << n;
        EXPECT_EQ(pos, raw.size());
        EXPECT_EQ(r.body == Cat({Header(GRP_CALL, 1), blk, U32(0x01020304)}), true) << n;
        if (n < 32768) {
            EXPECT_EQ(r.frags, (std::vector<uint32_t>{static_cast<uint32_t>(24 + n + 4)})) << n;
        } else {
            EXPECT_EQ(r.frags, (std::vector<uint32_t>{static_cast<uint32_t>(24 + n), 4})) << n;
        }
    }
}

// Bulk words: converted into the buffer below 32 KiB, staged in 1 MiB chunks above.
// Every byte must be the big-endian form; no fragment may exceed a chunk plus a buffer.
TEST(WireBytes, WordsAroundTheBufferAndTheChunkAreBigEndian) {
    for (unsigned word : {1u, 2u, 4u, 8u}) {
        const size_t cases[] = {0,
                                1,
                                3,
                                26000 / word, // after the 40000-byte prefix: just over the buffer
                                32768 / word - 1,
                                32768 / word,
                                32768 / word + 1,
                                65536 / word + 3,
                                kMiB / word - 1,
                                kMiB / word,
                                kMiB / word + 1,
                                3 * kMiB / word + 3};
        for (size_t n : cases) {
            // PREFIX bytes already buffered: 40000 leave no room for a 30000-byte array.
            for (size_t prefix : {0, 40000}) {
                Bytes host = Pattern(n * word, static_cast<uint32_t>(n + word));
                Bytes pre = Pattern(prefix, 5);
                Bytes raw = Capture([&](grw_writer *w) {
                    gr_err e{};
                    grw_begin(w, GRP_RESULT, 0, 9, &e);
                    EXPECT_EQ(grw_write(w, pre.data(), prefix / 2, &e), GRID_OK);
                    EXPECT_EQ(grw_write(w, pre.data() + prefix / 2, prefix / 2, &e), GRID_OK);
                    EXPECT_EQ(grw_write_u32(w, 0xa1a2a3a4, &e), GRID_OK);
                    EXPECT_EQ(grw_write_words(w, host.data(), n, word, &e), GRID_OK);
                    EXPECT_EQ(grw_write_u32(w, 0xb1b2b3b4, &e), GRID_OK);
                    EXPECT_EQ(grw_finish(w, &e), GRID_OK);
                });
                size_t pos = 0;
                Rec r = ParseRecord(raw, &pos);
                ASSERT_TRUE(r.ok) << "word " << word << " n " << n;
                EXPECT_EQ(pos, raw.size());
                Bytes want = Cat(
                    {Header(GRP_RESULT, 9), pre, U32(0xa1a2a3a4), BigEndian(host, word), U32(0xb1b2b3b4)});
                ASSERT_EQ(r.body.size(), want.size())
                    << "word " << word << " n " << n << " prefix " << prefix;
                EXPECT_TRUE(r.body == want) << "word " << word << " n " << n << " prefix " << prefix;
                // Arrays that need conversion go in chunks; char arrays are one block.
                // Below 32 KiB an array is converted into the buffer, which never
                // holds more than 64 KiB.
                for (uint32_t f : r.frags) {
                    if (n * word < 32768) {
                        EXPECT_LE(f, 65536u) << "word " << word << " n " << n << " prefix " << prefix;
                    } else if (word > 1) {
                        EXPECT_LE(f, kMiB + 65536) << "word " << word << " n " << n;
                    }
                }
            }
        }
    }
}

// A block over 1 GiB is split: fragments never reach 2^31, where the length would run
// into the last-fragment bit. The block is mapped zero pages, so it costs no memory.
TEST(WireBytes, BlocksOverOneGiBAreSplitIntoFragments) {
    const size_t n = (size_t{1} << 30) + 5;
    void *m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    uint8_t *blk = static_cast<uint8_t *>(m);
    blk[0] = 0x11;
    blk[n - 1] = 0x22;
    Pair p;
    Background t(p, [&] {
        auto w = Writer(p.w);
        gr_err e{};
        grw_begin(w.get(), GRP_CALL, 0, 1, &e);
        EXPECT_EQ(grw_write(w.get(), blk, n, &e), GRID_OK) << e.msg;
        EXPECT_EQ(grw_finish(w.get(), &e), GRID_OK);
        shutdown(p.w, SHUT_WR);
    });
    // Parse the stream without keeping it: fragment lengths, the body's first and last
    // block bytes.
    std::vector<uint32_t> frags;
    std::vector<bool> last;
    uint64_t body = 0;
    uint8_t first = 0, final_byte = 0;
    std::vector<uint8_t> buf(kMiB);
    uint8_t hdr[4];
    size_t hdr_have = 0;
    uint64_t frag_left = 0;
    for (;;) {
        ssize_t k = recv(p.r, buf.data(), buf.size(), 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        for (size_t i = 0; i < static_cast<size_t>(k);) {
            if (frag_left == 0 && hdr_have < 4) {
                hdr[hdr_have++] = buf[i++];
                if (hdr_have == 4) {
                    uint32_t v = static_cast<uint32_t>(hdr[0]) << 24 | hdr[1] << 16 | hdr[2] << 8 | hdr[3];
                    frags.push_back(v & 0x7fffffffu);
                    last.push_back((v & 0x80000000u) != 0);
                    frag_left = v & 0x7fffffffu;
                    hdr_have = frag_left ? 4 : 0;
                }
                continue;
            }
            size_t take = std::min<uint64_t>(frag_left, static_cast<size_t>(k) - i);
            if (body <= 24 && body + take > 24) first = buf[i + (24 - body)];
            if (body + take == 24 + n) final_byte = buf[i + take - 1];
            body += take;
            frag_left -= take;
            i += take;
            if (frag_left == 0) hdr_have = 0;
        }
    }
    t.Join();
    munmap(m, n);
    EXPECT_EQ(body, 24 + n);
    EXPECT_EQ(frags, (std::vector<uint32_t>{(1u << 30) + 24, 5, 0}));
    EXPECT_EQ(last, (std::vector<bool>{false, false, true}));
    EXPECT_EQ(first, 0x11);
    EXPECT_EQ(final_byte, 0x22);
}

// ---- round trips ----

TEST(RoundTrip, ScalarsStringsOpaquesAndHeaders) {
    const uint32_t u32s[] = {0, 1, 0x7fffffff, 0x80000000u, 0xffffffffu, 0x01020304};
    const uint64_t u64s[] = {
        0, 1, 0xffffffffull, 0x100000000ull, 0x8000000000000000ull, ~0ull, 0x0102030405060708ull};
    const int32_t i32s[] = {0, -1, INT32_MIN, INT32_MAX, -2};
    const std::string strs[] = {"", "a", "ab", "abc", "abcd", "abcde", "abcdefgh", std::string(70000, 's')};
    const std::string opqs[] = {std::string("\0", 1), std::string("a\0b", 3), std::string("\xff\0\0\0\1", 5)};
    Pair p;
    Background t(p, [&] {
        auto w = Writer(p.w);
        gr_err e{};
        EXPECT_EQ(grw_begin(w.get(), GRP_LIST_OK, 0, 0xfedcba9876543210ull, &e), GRID_OK);
        for (uint32_t v : u32s)
            grw_write_u32(w.get(), v, &e);
        for (uint64_t v : u64s)
            grw_write_u64(w.get(), v, &e);
        for (int32_t v : i32s)
            grw_write_i32(w.get(), v, &e);
        for (const auto &s : strs)
            EXPECT_EQ(grw_write_string(w.get(), s.c_str(), &e), GRID_OK);
        for (const auto &s : opqs)
            EXPECT_EQ(grw_write_opaque(w.get(), s.data(), static_cast<uint32_t>(s.size()), &e), GRID_OK);
        EXPECT_EQ(grw_finish(w.get(), &e), GRID_OK);
        EXPECT_EQ(grw_begin(w.get(), GRP_HELLO, 0, 1, &e), GRID_OK);
        EXPECT_EQ(grw_finish(w.get(), &e), GRID_OK);
        shutdown(p.w, SHUT_WR);
    });
    auto r = Reader(p.r);
    gr_err e{};
    grw_header h{};
    ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK) << e.msg;
    EXPECT_EQ(h.magic, GRW_MAGIC);
    EXPECT_EQ(h.version, GRW_VERSION);
    EXPECT_EQ(h.type, static_cast<uint32_t>(GRP_LIST_OK));
    EXPECT_EQ(h.flags, 0u);
    EXPECT_EQ(h.request_id, 0xfedcba9876543210ull);
    for (uint32_t v : u32s) {
        uint32_t got = 0;
        ASSERT_EQ(grw_read_u32(r.get(), &got, &e), GRID_OK);
        EXPECT_EQ(got, v);
    }
    for (uint64_t v : u64s) {
        uint64_t got = 0;
        ASSERT_EQ(grw_read_u64(r.get(), &got, &e), GRID_OK);
        EXPECT_EQ(got, v);
    }
    for (int32_t v : i32s) {
        uint32_t got = 0;
        ASSERT_EQ(grw_read_u32(r.get(), &got, &e), GRID_OK);
        EXPECT_EQ(static_cast<int32_t>(got), v);
    }
    for (const auto &s : strs) {
        char *got = nullptr;
        ASSERT_EQ(grw_read_string(r.get(), 70000, &got, &e), GRID_OK) << e.msg;
        EXPECT_EQ(std::string(got), s);
        std::free(got);
    }
    for (const auto &s : opqs) {
        uint8_t *got = nullptr;
        uint32_t len = 99;
        ASSERT_EQ(grw_read_opaque(r.get(), 100, &got, &len, &e), GRID_OK) << e.msg;
        EXPECT_EQ(std::string(reinterpret_cast<char *>(got), len), s);
        EXPECT_EQ(got[len], 0); // NUL-terminated
        std::free(got);
    }
    EXPECT_EQ(grw_end(r.get(), &e), GRID_OK) << e.msg;
    ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK) << e.msg;
    EXPECT_EQ(h.type, static_cast<uint32_t>(GRP_HELLO));
    EXPECT_EQ(h.request_id, 1u);
    EXPECT_EQ(grw_end(r.get(), &e), GRID_OK);
    // Then the peer closed cleanly between messages: CONN_LOST without a message.
    EXPECT_EQ(grw_read_header(r.get(), &h, &e), GRID_ERR_CONN_LOST);
    EXPECT_STREQ(e.msg, "");
    t.Join();
}

TEST(RoundTrip, WordsOfEverySizeAroundEveryBound) {
    for (unsigned word : {1u, 2u, 4u, 8u}) {
        const size_t cases[] = {0,
                                1,
                                3,
                                16383,
                                16384,
                                16385,
                                65536 / word,
                                kMiB / word - 1,
                                kMiB / word,
                                kMiB / word + 1,
                                3 * kMiB / word + 3};
        for (size_t n : cases) {
            Bytes host = Pattern(n * word, static_cast<uint32_t>(7 * n + word));
            Pair p;
            Background t(p, [&] {
                auto w = Writer(p.w);
                gr_err e{};
                grw_begin(w.get(), GRP_CALL, 0, n, &e);
                EXPECT_EQ(grw_write_words(w.get(), host.data(), n, word, &e), GRID_OK);
                EXPECT_EQ(grw_write_u32(w.get(), 0x5e17e1u, &e), GRID_OK);
                EXPECT_EQ(grw_finish(w.get(), &e), GRID_OK);
            });
            auto r = Reader(p.r);
            gr_err e{};
            grw_header h{};
            Bytes got(n * word + 1, 0xee);
            uint32_t sentinel = 0;
            EXPECT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
            EXPECT_EQ(grw_read_words(r.get(), got.data(), n, word, &e), GRID_OK) << e.msg;
            EXPECT_EQ(grw_read_u32(r.get(), &sentinel, &e), GRID_OK);
            EXPECT_EQ(grw_end(r.get(), &e), GRID_OK) << e.msg;
            t.Join();
            EXPECT_EQ(sentinel, 0x5e17e1u) << "word " << word << " n " << n;
            EXPECT_EQ(got.back(), 0xee) << "wrote past the array";
            got.pop_back();
            EXPECT_TRUE(got == host) << "word " << word << " n " << n;
        }
    }
}

TEST(RoundTrip, CopySwapAndSwapInPlace) {
    const uint8_t src[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    struct {
        unsigned word;
        uint8_t want[16];
    } cases[] = {
        {1, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
        {2, {2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15}},
        {4, {4, 3, 2, 1, 8, 7, 6, 5, 12, 11, 10, 9, 16, 15, 14, 13}},
        {8, {8, 7, 6, 5, 4, 3, 2, 1, 16, 15, 14, 13, 12, 11, 10, 9}},
    };
    for (auto &c : cases) {
        uint8_t out[16];
        grw_copy_swap(out, src, 16 / c.word, c.word);
        EXPECT_EQ(std::memcmp(out, c.want, 16), 0) << c.word;
        uint8_t in_place[16];
        std::memcpy(in_place, src, 16);
        grw_swap_words(in_place, 16 / c.word, c.word); // this host is little-endian
        EXPECT_EQ(std::memcmp(in_place, c.want, 16), 0) << c.word;
    }
}

TEST(RoundTrip, NamesAndDefaults) {
    const char *names[] = {"?",     "HELLO",  "HELLO_OK", "GET_DESCRIPTOR", "DESCRIPTOR", "CALL",   "RESULT",
                           "ERROR", "CANCEL", "PING",     "PONG",           "LIST",       "LIST_OK"};
    for (uint32_t t = 0; t <= 12; t++)
        EXPECT_STREQ(grp_type_name(t), names[t]);
    EXPECT_STREQ(grp_type_name(13), "PROBE");
    EXPECT_STREQ(grp_type_name(14), "PROBE_OK");
    EXPECT_STREQ(grp_type_name(15), "AUTH_CHALLENGE");
    EXPECT_STREQ(grp_type_name(16), "AUTH");
    EXPECT_STREQ(grp_type_name(17), "AUTH_OK");
    EXPECT_STREQ(grp_type_name(18), "?");
    EXPECT_STREQ(grp_type_name(19), "?");
    EXPECT_STREQ(grp_type_name(20), "REGISTER");
    EXPECT_STREQ(grp_type_name(28), "SERVERS_OK");
    EXPECT_STREQ(grp_type_name(29), "UNREGISTER");
    EXPECT_STREQ(grp_type_name(30), "UNREGISTER_OK");
    EXPECT_STREQ(grp_type_name(31), "CRASHED");
    EXPECT_STREQ(grp_type_name(34), "HOLDS_OK");
    EXPECT_STREQ(grp_type_name(35), "?");
    EXPECT_STREQ(grp_type_name(50), "SUBMIT");
    EXPECT_STREQ(grp_type_name(59), "JOB_INFO_OK");
    EXPECT_STREQ(grp_type_name(69), "?");
    EXPECT_STREQ(grp_type_name(60), "OBJ_CREATE");
    EXPECT_STREQ(grp_type_name(64), "OBJ_DESTROYED");
    EXPECT_STREQ(grp_type_name(65), "?");
    EXPECT_STREQ(grp_type_name(79), "?");
    EXPECT_STREQ(grp_type_name(80), "JOB_CANCEL");
    EXPECT_STREQ(grp_type_name(81), "?");
    EXPECT_STREQ(grp_type_name(0xffffffffu), "?");
    grw_limits l;
    grp_limits_default(&l);
    EXPECT_EQ(l.max_message, uint64_t{1} << 30);
    EXPECT_EQ(l.max_array, uint64_t{1} << 30);
    EXPECT_EQ(l.max_head, 64u << 20);
}

// ---- reader errors ----

// Sends RAW (small) then closes the writing end, and reads the header.
int ReadHeaderOf(const Bytes &raw, gr_err *e, grw_header *h = nullptr) {
    Pair p;
    SendAll(p.w, raw);
    p.CloseW();
    auto r = Reader(p.r);
    grw_header hh{};
    return grw_read_header(r.get(), h ? h : &hh, e);
}

TEST(ReaderErrors, WrongMagicVersionOrFlagsIsProtocol) {
    gr_err e{};
    grw_header h{};
    EXPECT_EQ(ReadHeaderOf(Record(Header()), &e, &h), GRID_OK) << e.msg;
    EXPECT_EQ(h.request_id, 7u);
    EXPECT_EQ(ReadHeaderOf(Record(Header(GRP_PING, 7, 0x47525044)), &e), GRID_ERR_PROTOCOL);
    EXPECT_NE(std::string(e.msg).find("magic 0x47525044"), std::string::npos) << e.msg;
    EXPECT_EQ(ReadHeaderOf(Record(Header(GRP_PING, 7, 0x43505247)), &e), GRID_ERR_PROTOCOL); // byte-swapped
    for (uint32_t v : {0u, 2u, 0x01000000u}) {
        EXPECT_EQ(ReadHeaderOf(Record(Header(GRP_PING, 7, GRW_MAGIC, v)), &e), GRID_ERR_PROTOCOL) << v;
        EXPECT_NE(std::string(e.msg).find("version"), std::string::npos) << e.msg;
    }
    for (uint32_t f : {1u, 0x80000000u}) {
        EXPECT_EQ(ReadHeaderOf(Record(Header(GRP_PING, 7, GRW_MAGIC, GRW_VERSION, f)), &e), GRID_ERR_PROTOCOL)
            << f;
        EXPECT_NE(std::string(e.msg).find("flags"), std::string::npos) << e.msg;
    }
}

TEST(ReaderErrors, PeerClosedCleanlyBetweenMessagesSaysNothing) {
    gr_err e{};
    EXPECT_EQ(ReadHeaderOf(Bytes{}, &e), GRID_ERR_CONN_LOST);
    EXPECT_STREQ(e.msg, "");
}

TEST(ReaderErrors, PeerClosedMidMessageIsConnLost) {
    gr_err e{};
    Bytes hdr = Header();
    // Inside the fragment header, inside the message header.
    EXPECT_EQ(ReadHeaderOf(Bytes{0x80, 0x00}, &e), GRID_ERR_CONN_LOST);
    EXPECT_STRNE(e.msg, "");
    Bytes partial = Frag(hdr, true);
    partial.resize(4 + 10);
    EXPECT_EQ(ReadHeaderOf(partial, &e), GRID_ERR_CONN_LOST);
    EXPECT_STRNE(e.msg, "");
    // Inside the body, and between two fragments of the body.
    for (int between : {0, 1}) {
        Pair p;
        Bytes raw =
            between ? Cat({Frag(Cat({hdr, U32(1)}), false)}) : Cat({Frag(Cat({hdr, U32(1), U32(2)}), true)});
        if (!between) raw.resize(raw.size() - 2);
        SendAll(p.w, raw);
        p.CloseW();
        auto r = Reader(p.r);
        grw_header h{};
        uint32_t v = 0;
        ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
        ASSERT_EQ(grw_read_u32(r.get(), &v, &e), GRID_OK);
        EXPECT_EQ(v, 1u);
        EXPECT_EQ(grw_read_u32(r.get(), &v, &e), GRID_ERR_CONN_LOST) << between;
        EXPECT_STRNE(e.msg, "");
    }
}

TEST(ReaderErrors, DeadlinePassesIsTimeout) {
    Pair p;
    auto r = Reader(p.r);
    gr_err e{};
    grw_header h{};
    long long t0 = gr_now_ns();
    r->deadline_ns = t0 + 50 * 1000000LL;
    EXPECT_EQ(grw_read_header(r.get(), &h, &e), GRID_ERR_TIMEOUT);
    long long waited = gr_now_ns() - t0;
    EXPECT_GE(waited, 45 * 1000000LL);
    EXPECT_LT(waited, 5000 * 1000000LL);
    // Mid-message: the header came, the body does not.
    SendAll(p.w, Frag(Header(), false));
    r->deadline_ns = gr_now_ns() + 30 * 1000000LL;
    ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK) << e.msg;
    uint32_t v;
    EXPECT_EQ(grw_read_u32(r.get(), &v, &e), GRID_ERR_TIMEOUT);
    // A deadline already past still times out rather than blocking.
    r->deadline_ns = gr_now_ns() - 1;
    EXPECT_EQ(grw_read_u32(r.get(), &v, &e), GRID_ERR_TIMEOUT);
}

TEST(ReaderErrors, TrailingBytesAreProtocolErrorsAtEnd) {
    Bytes hdr = Header();
    struct {
        const char *what;
        Bytes raw;
        int want;
    } cases[] = {
        {"exact", Record(hdr), GRID_OK},
        {"4 bytes left in the fragment", Record(Cat({hdr, U32(1)})), GRID_ERR_PROTOCOL},
        {"1 byte left", Record(Cat({hdr, Bytes{0}})), GRID_ERR_PROTOCOL},
        {"bytes in a later fragment", Cat({Frag(hdr, false), Frag(U32(1), true)}), GRID_ERR_PROTOCOL},
        {"empty fragments then the end", Cat({Frag(hdr, false), Frag({}, false), Frag({}, true)}), GRID_OK},
    };
    for (auto &c : cases) {
        Pair p;
        SendAll(p.w, c.raw);
        auto r = Reader(p.r);
        gr_err e{};
        grw_header h{};
        ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK) << c.what;
        EXPECT_EQ(grw_end(r.get(), &e), c.want) << c.what << ": " << e.msg;
    }
}

TEST(ReaderErrors, MessageShorterThanItsContentsIsProtocol) {
    Pair p;
    SendAll(p.w, Cat({Record(Cat({Header(), Bytes{1, 2}})), Record(Header())}));
    auto r = Reader(p.r);
    gr_err e{};
    grw_header h{};
    uint32_t v;
    ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
    EXPECT_EQ(grw_read_u32(r.get(), &v, &e), GRID_ERR_PROTOCOL);
    EXPECT_NE(std::string(e.msg).find("shorter"), std::string::npos) << e.msg;
}

TEST(ReaderErrors, StringWithNulIsProtocolOpaqueIsNot) {
    for (int as_string : {1, 0}) {
        Pair p;
        SendAll(p.w, Record(Cat({Header(), Opaque(std::string("a\0b", 3))})));
        auto r = Reader(p.r);
        gr_err e{};
        grw_header h{};
        ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
        if (as_string) {
            char *s = reinterpret_cast<char *>(1);
            EXPECT_EQ(grw_read_string(r.get(), 100, &s, &e), GRID_ERR_PROTOCOL);
            EXPECT_EQ(s, nullptr);
        } else {
            uint8_t *o = nullptr;
            uint32_t len = 0;
            EXPECT_EQ(grw_read_opaque(r.get(), 100, &o, &len, &e), GRID_OK);
            EXPECT_EQ(len, 3u);
            std::free(o);
            EXPECT_EQ(grw_end(r.get(), &e), GRID_OK);
        }
    }
}

TEST(ReaderErrors, NonZeroPaddingIsProtocol) {
    // Strings and opaques of 1, 2 and 3 bytes, each padding byte set in turn.
    for (size_t len = 1; len <= 3; len++) {
        for (size_t bad = 0; bad < 4 - len; bad++) {
            for (int as_string : {0, 1}) {
                Bytes item = Opaque(std::string(len, 'z'));
                item[4 + len + bad] = 0x01;
                Pair p;
                SendAll(p.w, Record(Cat({Header(), item})));
                auto r = Reader(p.r);
                gr_err e{};
                grw_header h{};
                ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
                int rc;
                if (as_string) {
                    char *s = nullptr;
                    rc = grw_read_string(r.get(), 100, &s, &e);
                    std::free(s);
                } else {
                    uint8_t *o = nullptr;
                    uint32_t n = 0;
                    rc = grw_read_opaque(r.get(), 100, &o, &n, &e);
                    std::free(o);
                }
                EXPECT_EQ(rc, GRID_ERR_PROTOCOL) << "len " << len << " bad " << bad;
                EXPECT_NE(std::string(e.msg).find("padding"), std::string::npos) << e.msg;
            }
        }
    }
    // Bulk words: 1 to 3 chars, 1 short.
    struct {
        unsigned word;
        size_t n;
    } words[] = {{1, 1}, {1, 2}, {1, 3}, {2, 1}, {2, 3}};
    for (auto &c : words) {
        size_t bytes = c.n * c.word;
        for (size_t bad = bytes; bad < 4 * ((bytes + 3) / 4); bad++) {
            Bytes body(4 * ((bytes + 3) / 4), 0x33);
            for (size_t i = bytes; i < body.size(); i++)
                body[i] = i == bad ? 0x80 : 0;
            Pair p;
            SendAll(p.w, Record(Cat({Header(), body})));
            auto r = Reader(p.r);
            gr_err e{};
            grw_header h{};
            uint8_t dst[8];
            ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
            EXPECT_EQ(grw_read_words(r.get(), dst, c.n, c.word, &e), GRID_ERR_PROTOCOL)
                << "word " << c.word << " n " << c.n << " bad " << bad;
        }
    }
}

TEST(ReaderErrors, HasBufferedTellsWhatIsAlreadyHere) {
    Pair p;
    SendAll(p.w, Cat({Record(Cat({Header(), U32(5)})), Record(Header())}));
    auto r = Reader(p.r);
    gr_err e{};
    grw_header h{};
    uint32_t v;
    EXPECT_EQ(grw_has_buffered(r.get()), 0);
    ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
    EXPECT_NE(grw_has_buffered(r.get()), 0);
    ASSERT_EQ(grw_read_u32(r.get(), &v, &e), GRID_OK);
    ASSERT_EQ(grw_end(r.get(), &e), GRID_OK);
    EXPECT_NE(grw_has_buffered(r.get()), 0); // the second message
    ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
    ASSERT_EQ(grw_end(r.get(), &e), GRID_OK);
    EXPECT_EQ(grw_has_buffered(r.get()), 0);
}

// ---- limits ----

// One message: the header, then a field of LEN bytes claimed (and present), read with MAX.
int ReadField(uint32_t len, uint32_t max, bool as_string, uint64_t max_message = uint64_t{1} << 30) {
    Pair p;
    Bytes raw = Record(Cat({Header(), Opaque(std::string(len, 'q'))}));
    Background t(p, [&] { SendAll(p.w, raw); });
    auto r = Reader(p.r, max_message);
    gr_err e{};
    grw_header h{};
    int rc = grw_read_header(r.get(), &h, &e);
    if (rc == GRID_OK) {
        if (as_string) {
            char *s = nullptr;
            rc = grw_read_string(r.get(), max, &s, &e);
            if (rc == GRID_OK) {
                EXPECT_EQ(std::strlen(s), len);
            }
            std::free(s);
        } else {
            uint8_t *o = nullptr;
            uint32_t n = 0;
            rc = grw_read_opaque(r.get(), max, &o, &n, &e);
            if (rc == GRID_OK) {
                EXPECT_EQ(n, len);
            }
            std::free(o);
        }
    }
    if (rc == GRID_OK) rc = grw_end(r.get(), &e);
    t.Join();
    return rc;
}

TEST(Limits, FieldAtItsMaxIsReadOnePastIsLimit) {
    for (bool as_string : {false, true}) {
        for (uint32_t max : {0u, 1u, 10u, 255u, 70000u}) {
            EXPECT_EQ(ReadField(max, max, as_string), GRID_OK) << max;
            EXPECT_EQ(ReadField(max + 1, max, as_string), GRID_ERR_LIMIT) << max;
        }
    }
}

// A claimed length is checked against what the message may still hold before a buffer
// is allocated for it: a peer cannot make us allocate 4 GiB with a 32-byte message.
TEST(Limits, FieldLengthIsCheckedAgainstTheMessageBeforeAllocating) {
    for (uint32_t claim : {100000u, 0x7fffffffu, 0xffffffffu}) {
        for (bool as_string : {false, true}) {
            Pair p;
            SendAll(p.w, Record(Cat({Header(), U32(claim), Bytes(64, 'x')})));
            auto r = Reader(p.r, 4096);
            gr_err e{};
            grw_header h{};
            ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
            g_largest_malloc = 0;
            int rc;
            if (as_string) {
                char *s = nullptr;
                rc = grw_read_string(r.get(), 0xffffffffu, &s, &e);
                std::free(s);
            } else {
                uint8_t *o = nullptr;
                uint32_t n = 0;
                rc = grw_read_opaque(r.get(), 0xffffffffu, &o, &n, &e);
                std::free(o);
            }
            size_t largest = g_largest_malloc;
            EXPECT_EQ(rc, GRID_ERR_LIMIT) << claim;
            EXPECT_LT(largest, size_t{4096}) << "allocated for a claimed " << claim << " bytes";
        }
    }
}

// The record is 4 (fragment header) + 24 + 4 bytes; fragment headers count.
TEST(Limits, MessageAtTheLimitIsReadOnePastIsLimit) {
    Bytes raw = Record(Cat({Header(), U32(0xabcdef01)}));
    ASSERT_EQ(raw.size(), 32u);
    for (uint64_t max : {32, 31, 28, 27}) {
        Pair p;
        SendAll(p.w, raw);
        auto r = Reader(p.r, max);
        gr_err e{};
        grw_header h{};
        int rc = grw_read_header(r.get(), &h, &e);
        if (max < 28) {
            EXPECT_EQ(rc, GRID_ERR_LIMIT) << max;
            continue;
        }
        ASSERT_EQ(rc, GRID_OK) << max;
        uint32_t v = 0;
        rc = grw_read_u32(r.get(), &v, &e);
        if (max == 32) {
            EXPECT_EQ(rc, GRID_OK);
            EXPECT_EQ(v, 0xabcdef01u);
            EXPECT_EQ(grw_end(r.get(), &e), GRID_OK);
        } else {
            EXPECT_EQ(rc, GRID_ERR_LIMIT) << max;
            EXPECT_NE(std::string(e.msg).find("limit"), std::string::npos) << e.msg;
        }
    }
    // A field and its padding: 4 + 24 + 4 + 5 + 3 = 40 bytes.
    EXPECT_EQ(ReadField(5, 100, false, 40), GRID_OK);
    EXPECT_EQ(ReadField(5, 100, false, 39), GRID_ERR_LIMIT);
    EXPECT_EQ(ReadField(5, 100, false, 36), GRID_ERR_LIMIT);
    EXPECT_EQ(ReadField(5, 100, true, 36), GRID_ERR_LIMIT);
    // Bulk words count the same way.
    for (uint64_t max : {4 + 24 + 4096, 4 + 24 + 4095}) {
        Pair p;
        SendAll(p.w, Record(Cat({Header(), Bytes(4096, 1)})));
        auto r = Reader(p.r, max);
        gr_err e{};
        grw_header h{};
        std::vector<uint64_t> dst(512);
        ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
        EXPECT_EQ(grw_read_words(r.get(), dst.data(), 512, 8, &e),
                  max == 4 + 24 + 4096 ? GRID_OK : GRID_ERR_LIMIT);
    }
}

// Empty fragments cost their 4-byte headers: a peer cannot keep a reader looping.
TEST(Limits, ManyEmptyFragmentsCountAgainstTheLimit) {
    const size_t k = 1000;
    Bytes raw = Frag(Header(), false);
    for (size_t i = 0; i < k; i++)
        raw = Cat({raw, Frag({}, false)});
    raw = Cat({raw, Frag(U32(77), true)});
    const uint64_t total = raw.size(); // 4 + 24 + 4 * k + 4 + 4
    for (uint64_t max : {total, total - 1, total - 4, total - 5}) {
        for (int skip : {0, 1}) {
            Pair p;
            Background t(p, [&] { SendAll(p.w, raw); });
            auto r = Reader(p.r, max);
            gr_err e{};
            grw_header h{};
            ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
            uint32_t v = 0;
            int rc = skip ? grw_skip(r.get(), &e) : grw_read_u32(r.get(), &v, &e);
            t.Join();
            EXPECT_EQ(rc, max == total ? GRID_OK : GRID_ERR_LIMIT) << "max " << max << " skip " << skip;
            if (max == total && !skip) {
                EXPECT_EQ(v, 77u);
            }
        }
    }
    // An endless stream of empty fragments ends at the limit (here 1 MiB: 262144 of them).
    Pair p;
    std::atomic<bool> stop{false};
    Background t(p, [&] {
        Bytes empties;
        for (int i = 0; i < 4096; i++)
            empties = Cat({empties, Frag({}, false)});
        SendAll(p.w, Frag(Header(), false));
        for (int i = 0; i < 100 && !stop; i++) // 400 K fragments at most
            if (send(p.w, empties.data(), empties.size(), MSG_NOSIGNAL) < 0) break;
    });
    auto r = Reader(p.r, kMiB);
    gr_err e{};
    grw_header h{};
    ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
    EXPECT_EQ(grw_end(r.get(), &e), GRID_ERR_LIMIT);
    stop = true;
    t.Join();
}

TEST(Limits, WordCountsThatOverflowAreRefused) {
    Pair p;
    auto w = Writer(p.w);
    auto r = Reader(p.r);
    gr_err e{};
    uint8_t dummy[8] = {0};
    const size_t huge = SIZE_MAX / 4 + 1; // * 4 and * 8 overflow
    ASSERT_EQ(grw_begin(w.get(), GRP_CALL, 0, 1, &e), GRID_OK);
    EXPECT_EQ(grw_write_words(w.get(), dummy, huge, 4, &e), GRID_ERR_LIMIT);
    EXPECT_EQ(grw_write_words(w.get(), dummy, huge, 8, &e), GRID_ERR_LIMIT);
    SendAll(p.w, Record(Cat({Header(), Bytes(8, 0)})));
    grw_header h{};
    ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
    EXPECT_EQ(grw_read_words(r.get(), dummy, huge, 4, &e), GRID_ERR_LIMIT);
    EXPECT_EQ(grw_read_words(r.get(), dummy, huge, 8, &e), GRID_ERR_LIMIT);
    // Nothing was consumed: the 8 bytes are still there.
    EXPECT_EQ(grw_read_words(r.get(), dummy, 1, 8, &e), GRID_OK);
    EXPECT_EQ(grw_end(r.get(), &e), GRID_OK);
}

// ---- skip ----

TEST(Skip, DiscardsTheRestOfAMessageAcrossFragments) {
    Bytes big = Pattern(200000);
    Bytes raw = Cat({Frag(Cat({Header(GRP_CALL, 1), U32(9), Bytes(100, 1)}), false), Frag({}, false),
                     Frag(big, false), Frag(Bytes(7, 2), true), Record(Cat({Header(GRP_PING, 2), U32(3)}))});
    Pair p;
    Background t(p, [&] { SendAll(p.w, raw); });
    auto r = Reader(p.r);
    gr_err e{};
    grw_header h{};
    uint32_t v = 0;
    ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
    ASSERT_EQ(grw_read_u32(r.get(), &v, &e), GRID_OK);
    EXPECT_EQ(grw_skip(r.get(), &e), GRID_OK) << e.msg;
    ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK) << e.msg; // in sync again
    EXPECT_EQ(h.type, static_cast<uint32_t>(GRP_PING));
    EXPECT_EQ(h.request_id, 2u);
    // Skipping when nothing is left.
    ASSERT_EQ(grw_read_u32(r.get(), &v, &e), GRID_OK);
    EXPECT_EQ(v, 3u);
    EXPECT_EQ(grw_skip(r.get(), &e), GRID_OK);
    t.Join();
}

TEST(Skip, AMessageOverTheLimitCannotBeSkipped) {
    const uint64_t total = 4 + 24 + 4 + 5000;
    for (uint64_t max : {total, total - 1}) {
        Pair p;
        SendAll(p.w, Cat({Frag(Header(), false), Frag(Bytes(5000, 3), true)}));
        auto r = Reader(p.r, max);
        gr_err e{};
        grw_header h{};
        ASSERT_EQ(grw_read_header(r.get(), &h, &e), GRID_OK);
        EXPECT_EQ(grw_skip(r.get(), &e), max == total ? GRID_OK : GRID_ERR_LIMIT) << max;
    }
}

// ---- writer errors ----

TEST(WriterErrors, APeerThatDoesNotReadTimesOut) {
    Pair p;
    auto w = Writer(p.w);
    gr_err e{};
    Bytes big(16 * kMiB, 1);
    ASSERT_EQ(grw_begin(w.get(), GRP_CALL, 0, 1, &e), GRID_OK);
    long long t0 = gr_now_ns();
    w->deadline_ns = t0 + 50 * 1000000LL;
    EXPECT_EQ(grw_write(w.get(), big.data(), big.size(), &e), GRID_ERR_TIMEOUT);
    EXPECT_LT(gr_now_ns() - t0, 5000 * 1000000LL);
}

TEST(WriterErrors, APeerThatClosedIsConnLostWithoutSigpipe) {
    Pair p;
    p.CloseR();
    auto w = Writer(p.w);
    gr_err e{};
    ASSERT_EQ(grw_begin(w.get(), GRP_CALL, 0, 1, &e), GRID_OK);
    EXPECT_EQ(grw_finish(w.get(), &e), GRID_ERR_CONN_LOST);
    EXPECT_STRNE(e.msg, "");
    Bytes big(100000, 1);
    ASSERT_EQ(grw_begin(w.get(), GRP_CALL, 0, 1, &e), GRID_OK);
    EXPECT_EQ(grw_write(w.get(), big.data(), big.size(), &e), GRID_ERR_CONN_LOST);
    EXPECT_EQ(grp_write_error(w.get(), 1, GRID_ERR_LIMIT, "x", &e), GRID_ERR_CONN_LOST);
}

// ---- grw_connect, and socket errors ----

TEST(Socket, ConnectOnLoopbackTunesTheSocketAndRefusalIsConnect) {
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(ls, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    ASSERT_EQ(listen(ls, 1), 0);
    ASSERT_EQ(getsockname(ls, reinterpret_cast<sockaddr *>(&a), &alen), 0);
    int port = ntohs(a.sin_port);
    gr_err e{};
    int fd = grw_connect("127.0.0.1", port, 5.0, &e);
    ASSERT_GE(fd, 0) << e.msg;
    int v = 0;
    socklen_t vl = sizeof v;
    EXPECT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &vl), 0);
    EXPECT_NE(v, 0) << "TCP_NODELAY";
    EXPECT_EQ(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &vl), 0);
    EXPECT_NE(v, 0) << "SO_KEEPALIVE";
    EXPECT_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0) << "left non-blocking";
    close(fd);
    close(ls); // nobody listens on PORT now
    EXPECT_EQ(grw_connect("127.0.0.1", port, 5.0, &e), -1);
    EXPECT_EQ(e.code, GRID_ERR_CONNECT);
    EXPECT_NE(std::string(e.msg).find("127.0.0.1:" + std::to_string(port)), std::string::npos) << e.msg;
}

TEST(Socket, ReadingABadDescriptorIsConnLost) {
    auto r = Reader(-1);
    gr_err e{};
    grw_header h{};
    EXPECT_EQ(grw_read_header(r.get(), &h, &e), GRID_ERR_CONN_LOST);
    EXPECT_STRNE(e.msg, ""); // not the clean close between messages
    r->deadline_ns = gr_now_ns() + 1000000000LL;
    EXPECT_EQ(grw_read_header(r.get(), &h, &e), GRID_ERR_CONN_LOST);
    EXPECT_STRNE(e.msg, "");
}

} // namespace
