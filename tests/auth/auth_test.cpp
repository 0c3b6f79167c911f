// auth_test.cpp: the key handshake's parts (runtime/proto/grp_auth.c, grp_keys.c): the
// bytes of AUTH_CHALLENGE, AUTH and AUTH_OK pinned by golden files, their decoders on
// bad input, the MACs and key id against values computed with the openssl command, key
// files (bad hex, short and long keys, too many keys, modes others may read), keygen,
// and both sides of the handshake over a socketpair: right key, wrong key, no key, a
// server without keys, rotation, a forged AUTH_OK and a replayed AUTH.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "proto_fixture.h"

extern "C" {
#include "grp_auth.h"
}

using proto_fixture::golden;
using proto_fixture::Pair;

namespace {

// A peer that closed makes a write fail, not the test process end.
const int kNoSigpipe = (signal(SIGPIPE, SIG_IGN), 0);

const uint64_t kId = 0x0102030405060708ull;

// The known-answer values: key 00..1f, server nonce 40..5f, client nonce 80..9f, role
// client (01), verifier gridrpcd (01); the MACs and id computed with `openssl dgst
// -sha256 [-mac HMAC -macopt hexkey:...]` over label | nonces | 01 01.
const char *kKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const char *kKeyId = "5da5700df5d822ed";
const char *kClientMac = "0a5ca732a4139aff95b1205ab640cea16c1a56a40eaf42487913a74336bbacb6";
const char *kServerMac = "3d66d0e81b74b48f054c9163d80f16ec8c796d365011b7c64dbec350bb990d27";

void fill(uint8_t *p, size_t n, uint8_t first) {
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(first + i);
}

std::string hexs(const uint8_t *p, size_t n) {
    std::string s;
    char t[3];
    for (size_t i = 0; i < n; i++) {
        snprintf(t, sizeof t, "%02x", p[i]);
        s += t;
    }
    return s;
}

grp_keyset keys_of(const std::string &text) {
    grp_keyset ks;
    gr_err e;
    if (grp_keyset_parse(text.data(), text.size(), "test", &ks, &e) != GRID_OK) ADD_FAILURE() << e.msg;
    return ks;
}

std::string key_hex(uint8_t first, size_t bytes) {
    std::string s;
    char t[3];
    for (size_t i = 0; i < bytes; i++) {
        snprintf(t, sizeof t, "%02x", (uint8_t)(first + i));
        s += t;
    }
    return s;
}

} // namespace

// ---------------------------------------------------------------- the cryptography

TEST(AuthCrypto, KeyIdAndMacsMatchOpenssl) {
    grp_keyset ks = keys_of(std::string(kKeyHex) + "\n");
    ASSERT_EQ(1u, ks.n);
    EXPECT_STREQ(kKeyId, ks.keys[0].id);
    uint8_t sn[32], cn[32], mac[32];
    fill(sn, 32, 0x40);
    fill(cn, 32, 0x80);
    gr_err e;
    ASSERT_EQ(GRID_OK, grp_auth_client_mac(&ks.keys[0], sn, cn, GRP_ROLE_CLIENT, GRP_PEER_GRIDRPCD, mac, &e));
    EXPECT_EQ(kClientMac, hexs(mac, 32));
    ASSERT_EQ(GRID_OK, grp_auth_server_mac(&ks.keys[0], cn, sn, GRP_ROLE_CLIENT, GRP_PEER_GRIDRPCD, mac, &e));
    EXPECT_EQ(kServerMac, hexs(mac, 32));
    // One bit of the key changes the proof (the MAC does depend on the key).
    grp_key k2 = ks.keys[0];
    k2.bytes[31] ^= 1;
    ASSERT_EQ(GRID_OK, grp_auth_client_mac(&k2, sn, cn, GRP_ROLE_CLIENT, GRP_PEER_GRIDRPCD, mac, &e));
    EXPECT_NE(kClientMac, hexs(mac, 32));
    // So do the role claimed and the kind of peer it is made for (issue 25, finding 4).
    ASSERT_EQ(GRID_OK, grp_auth_client_mac(&ks.keys[0], sn, cn, GRP_ROLE_SERVER, GRP_PEER_GRIDRPCD, mac, &e));
    EXPECT_NE(kClientMac, hexs(mac, 32));
    ASSERT_EQ(GRID_OK,
              grp_auth_client_mac(&ks.keys[0], sn, cn, GRP_ROLE_CLIENT, GRP_PEER_GRIDMETAD, mac, &e));
    EXPECT_NE(kClientMac, hexs(mac, 32));
}

TEST(AuthCrypto, RandomNoncesDiffer) {
    uint8_t a[32], b[32];
    gr_err e;
    ASSERT_EQ(GRID_OK, grp_auth_random(a, 32, &e));
    ASSERT_EQ(GRID_OK, grp_auth_random(b, 32, &e));
    EXPECT_NE(0, memcmp(a, b, 32));
}

// ---------------------------------------------------------------- messages

TEST(AuthGolden, Messages) {
    grp_keyset ks = keys_of(kKeyHex);
    gr_err e;
    {
        Pair p;
        grp_auth_challenge ch;
        fill(ch.nonce, 32, 0x40);
        ch.verifier = GRP_PEER_GRIDRPCD;
        ASSERT_EQ(GRID_OK, grp_write_auth_challenge(p.w, kId, &ch, &e));
        golden("auth_challenge", p.raw());
    }
    {
        Pair p;
        grp_auth a;
        memcpy(a.key_id, ks.keys[0].id, sizeof a.key_id);
        a.role = GRP_ROLE_CLIENT;
        fill(a.client_nonce, 32, 0x80);
        uint8_t sn[32];
        fill(sn, 32, 0x40);
        ASSERT_EQ(GRID_OK, grp_auth_client_mac(&ks.keys[0], sn, a.client_nonce, GRP_ROLE_CLIENT,
                                               GRP_PEER_GRIDRPCD, a.client_mac, &e));
        ASSERT_EQ(GRID_OK, grp_write_auth(p.w, kId, &a, &e));
        golden("auth", p.raw());
    }
    {
        Pair p;
        uint8_t sn[32], cn[32], mac[32];
        fill(sn, 32, 0x40);
        fill(cn, 32, 0x80);
        ASSERT_EQ(GRID_OK,
                  grp_auth_server_mac(&ks.keys[0], cn, sn, GRP_ROLE_CLIENT, GRP_PEER_GRIDRPCD, mac, &e));
        ASSERT_EQ(GRID_OK, grp_write_auth_ok(p.w, kId, mac, &e));
        golden("auth_ok", p.raw());
    }
}

TEST(AuthCodec, RoundTrip) {
    gr_err e;
    Pair p;
    grp_auth a, b;
    snprintf(a.key_id, sizeof a.key_id, "%s", kKeyId);
    a.role = GRP_ROLE_SERVER;
    fill(a.client_nonce, 32, 1);
    fill(a.client_mac, 32, 100);
    ASSERT_EQ(GRID_OK, grp_write_auth(p.w, 9, &a, &e));
    p.header(GRP_AUTH, 9);
    ASSERT_EQ(GRID_OK, grp_read_auth(p.r, &b, &e)) << e.msg;
    EXPECT_STREQ(a.key_id, b.key_id);
    EXPECT_EQ(GRP_ROLE_SERVER, b.role);
    EXPECT_EQ(0, memcmp(a.client_nonce, b.client_nonce, 32));
    EXPECT_EQ(0, memcmp(a.client_mac, b.client_mac, 32));
    EXPECT_STREQ("AUTH_CHALLENGE", grp_type_name(GRP_AUTH_CHALLENGE));
    EXPECT_EQ(1, grp_known_type(GRP_AUTH_OK));
}

// Writes message TYPE with BODY (a function of the writer) and decodes it with READ.
static int decode(uint32_t type, const std::function<void(grw_writer *)> &body,
                  const std::function<int(grw_reader *, gr_err *)> &read, gr_err *e) {
    Pair p;
    gr_err we;
    grw_begin(p.w, type, 0, 1, &we);
    body(p.w);
    grw_finish(p.w, &we);
    grw_header h;
    if (grp_read_header(p.r, &h, e)) return e->code;
    return read(p.r, e);
}

TEST(AuthCodec, DecodersRefuseBadInput) {
    gr_err e;
    uint8_t z[40] = {0};
    auto challenge = [](grw_reader *r, gr_err *err) {
        grp_auth_challenge ch;
        return grp_read_auth_challenge(r, &ch, err);
    };
    auto auth = [](grw_reader *r, gr_err *err) {
        grp_auth a;
        return grp_read_auth(r, &a, err);
    };
    auto auth_ok = [](grw_reader *r, gr_err *err) {
        uint8_t m[32];
        return grp_read_auth_ok(r, m, err);
    };
    gr_err we;
    // A nonce one byte short, one long.
    auto ch = [&](uint32_t version, uint32_t nonce, uint32_t verifier, bool trailing) {
        return [&we, &z, version, nonce, verifier, trailing](grw_writer *w) {
            grw_write_u32(w, version, &we);
            grw_write_opaque(w, z, nonce, &we);
            grw_write_u32(w, verifier, &we);
            if (trailing) grw_write_u32(w, 0, &we);
        };
    };
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode(GRP_AUTH_CHALLENGE, ch(2, 31, 1, false), challenge, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "nonce of 31 bytes")) << e.msg;
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode(GRP_AUTH_CHALLENGE, ch(2, 33, 1, false), challenge, &e));
    // Trailing bytes; an unknown verifier; an unknown version.
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode(GRP_AUTH_CHALLENGE, ch(2, 32, 1, true), challenge, &e));
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode(GRP_AUTH_CHALLENGE, ch(2, 32, 3, false), challenge, &e));
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode(GRP_AUTH_CHALLENGE, ch(3, 32, 1, false), challenge, &e));
    EXPECT_EQ(GRID_OK, decode(GRP_AUTH_CHALLENGE, ch(2, 32, 2, false), challenge, &e)) << e.msg;
    // A challenge of version 1 (a server older than roles): a clear error saying to upgrade.
    EXPECT_EQ(GRID_ERR_CONFIG, decode(
                                   GRP_AUTH_CHALLENGE,
                                   [&](grw_writer *w) { grw_write_opaque(w, z, 32, &we); }, challenge, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "before roles (version 1)")) << e.msg;
    EXPECT_NE(nullptr, strstr(e.msg, "upgrade it")) << e.msg;
    // Key ids: uppercase, too short, too long.
    for (const char *id : {"5DA5700DF5D822ED", "5da5700df5d822e", "5da5700df5d822ed0"}) {
        EXPECT_NE(GRID_OK, decode(
                               GRP_AUTH,
                               [&](grw_writer *w) {
                                   grw_write_string(w, id, &we);
                                   grw_write_u32(w, 1, &we);
                                   grw_write_opaque(w, z, 32, &we);
                                   grw_write_opaque(w, z, 32, &we);
                               },
                               auth, &e))
            << id;
    }
    // A MAC of 16 bytes in AUTH, of 0 in AUTH_OK.
    EXPECT_EQ(GRID_ERR_PROTOCOL, decode(
                                     GRP_AUTH,
                                     [&](grw_writer *w) {
                                         grw_write_string(w, kKeyId, &we);
                                         grw_write_u32(w, 1, &we);
                                         grw_write_opaque(w, z, 32, &we);
                                         grw_write_opaque(w, z, 16, &we);
                                     },
                                     auth, &e));
    EXPECT_EQ(GRID_ERR_PROTOCOL,
              decode(
                  GRP_AUTH_OK, [&](grw_writer *w) { grw_write_opaque(w, z, 0, &we); }, auth_ok, &e));
    // A role that is not one of the three; an AUTH of version 1 (no role).
    auto auth_role = [&](int role) {
        return [&we, &z, role](grw_writer *w) {
            grw_write_string(w, kKeyId, &we);
            if (role >= 0) grw_write_u32(w, (uint32_t)role, &we);
            grw_write_opaque(w, z, 32, &we);
            grw_write_opaque(w, z, 32, &we);
        };
    };
    for (int role : {0, 3, 7, 8})
        EXPECT_EQ(GRID_ERR_PROTOCOL, decode(GRP_AUTH, auth_role(role), auth, &e)) << role;
    EXPECT_EQ(GRID_ERR_CONFIG, decode(GRP_AUTH, auth_role(-1), auth, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "the client speaks the key handshake of GridRPC before roles")) << e.msg;
    // And the well-formed ones pass (the checks above fail for the reason given).
    for (int role : {1, 2, 4})
        EXPECT_EQ(GRID_OK, decode(GRP_AUTH, auth_role(role), auth, &e)) << e.msg;
}

// ---------------------------------------------------------------- key files

static int parse(const std::string &text, grp_keyset *ks, gr_err *e) {
    return grp_keyset_parse(text.data(), text.size(), "keys.txt", ks, e);
}

TEST(AuthKeys, ParsesCommentsBlankLinesAndTwoKeys) {
    grp_keyset ks;
    gr_err e;
    std::string text =
        "# the deployment's keys\n\n  " + key_hex(0, 32) + "  # new\r\n\t" + key_hex(0x20, 16) + "\n";
    ASSERT_EQ(GRID_OK, parse(text, &ks, &e)) << e.msg;
    ASSERT_EQ(2u, ks.n);
    EXPECT_EQ(32u, ks.keys[0].len);
    EXPECT_STREQ(kKeyId, ks.keys[0].id);
    EXPECT_EQ(16u, ks.keys[1].len);
    EXPECT_EQ(0x2f, ks.keys[1].bytes[15]);
    // Uppercase hex is the same key.
    std::string up = key_hex(0, 32);
    for (auto &c : up)
        c = (char)toupper((unsigned char)c);
    ASSERT_EQ(GRID_OK, parse(up, &ks, &e));
    EXPECT_STREQ(kKeyId, ks.keys[0].id);
}

TEST(AuthKeys, RefusesBadKeys) {
    grp_keyset ks;
    gr_err e;
    EXPECT_EQ(GRID_ERR_CONFIG, parse("# first\n" + key_hex(0, 31) + "zz\n", &ks, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "keys.txt line 2: 'z'")) << e.msg;
    EXPECT_NE(nullptr, strstr(e.msg, "not a hex digit")) << e.msg;
    EXPECT_EQ(0u, ks.n);
    EXPECT_EQ(GRID_ERR_CONFIG, parse(key_hex(0, 32) + "a", &ks, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "odd number")) << e.msg;
    // 16 bytes is the shortest key, 64 the longest.
    EXPECT_EQ(GRID_ERR_CONFIG, parse(key_hex(0, 15), &ks, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "a key of 15 bytes; a key has 16 to 64 bytes")) << e.msg;
    EXPECT_EQ(GRID_OK, parse(key_hex(0, 16), &ks, &e)) << e.msg;
    EXPECT_EQ(GRID_OK, parse(key_hex(0, 64), &ks, &e)) << e.msg;
    EXPECT_EQ(GRID_ERR_CONFIG, parse(key_hex(0, 65), &ks, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "a key of 65 bytes")) << e.msg;
    // Eight keys, not nine.
    std::string eight;
    for (int i = 0; i < 8; i++)
        eight += key_hex((uint8_t)i, 16) + "\n";
    EXPECT_EQ(GRID_OK, parse(eight, &ks, &e)) << e.msg;
    EXPECT_EQ(8u, ks.n);
    EXPECT_EQ(GRID_ERR_CONFIG, parse(eight + key_hex(9, 16), &ks, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "line 9: more than 8 keys")) << e.msg;
    // Nothing but comments.
    EXPECT_EQ(GRID_ERR_CONFIG, parse("# nothing\n\n", &ks, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "holds no key")) << e.msg;
}

struct TempDir {
    std::string path;
    TempDir() {
        char t[] = "/tmp/auth-test.XXXXXX";
        path = mkdtemp(t);
    }
    ~TempDir() {
        std::string cmd = "rm -rf '" + path + "'";
        if (system(cmd.c_str()) != 0) fprintf(stderr, "cannot remove %s\n", path.c_str());
    }
    std::string write(const char *name, const std::string &text, mode_t mode) {
        std::string p = path + "/" + name;
        FILE *f = fopen(p.c_str(), "w");
        fputs(text.c_str(), f);
        fclose(f);
        chmod(p.c_str(), mode);
        return p;
    }
};

TEST(AuthKeys, LoadRefusesModesOthersMayUse) {
    TempDir d;
    grp_keyset ks;
    gr_err e;
    std::string k = key_hex(0, 32) + "\n";
    std::string p = d.write("k644", k, 0644);
    EXPECT_EQ(GRID_ERR_CONFIG, grp_keyset_load(p.c_str(), &ks, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "has mode 0644")) << e.msg;
    EXPECT_NE(nullptr, strstr(e.msg, ("run 'chmod 600 " + p + "'").c_str())) << e.msg;
    p = d.write("k602", k, 0602);
    EXPECT_EQ(GRID_ERR_CONFIG, grp_keyset_load(p.c_str(), &ks, &e)) << "writable by others";
    p = d.write("k660", k, 0660);
    EXPECT_EQ(GRID_ERR_CONFIG, grp_keyset_load(p.c_str(), &ks, &e)) << "group-writable";
    EXPECT_NE(nullptr, strstr(e.msg, "the group may write")) << e.msg;
    p = d.write("k640", k, 0640);
    EXPECT_EQ(GRID_OK, grp_keyset_load(p.c_str(), &ks, &e)) << e.msg;
    p = d.write("k600", k, 0600);
    ASSERT_EQ(GRID_OK, grp_keyset_load(p.c_str(), &ks, &e)) << e.msg;
    EXPECT_STREQ(kKeyId, ks.keys[0].id);
    EXPECT_EQ(GRID_ERR_CONFIG, grp_keyset_load((d.path + "/none").c_str(), &ks, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "cannot read the key file")) << e.msg;
}

TEST(AuthKeys, KeygenWrites0600AndNeverReplaces) {
    TempDir d;
    mode_t old = umask(0);
    std::string p = d.path + "/new.key", q = d.path + "/other.key";
    gr_err e;
    ASSERT_EQ(GRID_OK, grp_keygen(p.c_str(), 0, &e)) << e.msg;
    umask(old);
    struct stat st;
    ASSERT_EQ(0, stat(p.c_str(), &st));
    EXPECT_EQ(0600u, st.st_mode & 07777);
    EXPECT_EQ(65, st.st_size); // 64 hex digits and a newline
    grp_keyset a, b;
    ASSERT_EQ(GRID_OK, grp_keyset_load(p.c_str(), &a, &e)) << e.msg;
    EXPECT_EQ(32u, a.keys[0].len);
    EXPECT_EQ(GRID_ERR_IO, grp_keygen(p.c_str(), 0, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "never replaced")) << e.msg;
    ASSERT_EQ(GRID_OK, grp_keygen(q.c_str(), GRP_ROLE_SERVER, &e));
    ASSERT_EQ(GRID_OK, grp_keyset_load(q.c_str(), &b, &e));
    EXPECT_NE(0, memcmp(a.keys[0].bytes, b.keys[0].bytes, 32)) << "two keys from keygen are equal";
    EXPECT_EQ(0, a.keys[0].tagged);
    EXPECT_EQ(GRP_ROLES_ALL, a.keys[0].roles);
    EXPECT_EQ(1, b.keys[0].tagged);
    EXPECT_EQ(GRP_ROLE_SERVER, b.keys[0].roles);
}

// ---------------------------------------------------------------- the handshake

namespace {

// A socketpair with a client end and a server end, each with its reader and writer.
struct Link {
    int fd[2];
    grw_reader *r[2];
    grw_writer *w[2];
    Link() {
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) != 0) abort();
        for (int i = 0; i < 2; i++) {
            r[i] = static_cast<grw_reader *>(malloc(sizeof(grw_reader)));
            w[i] = static_cast<grw_writer *>(malloc(sizeof(grw_writer)));
            grw_reader_init(r[i], fd[i], 1 << 20);
            grw_writer_init(w[i], fd[i]);
            r[i]->deadline_ns = w[i]->deadline_ns = gr_now_ns() + 5000000000LL;
        }
    }
    ~Link() {
        for (int i = 0; i < 2; i++) {
            close(fd[i]);
            free(r[i]);
            free(w[i]);
        }
    }
};

struct Served {
    int rc = -1;
    gr_err e;
    char key_id[GRP_AUTH_KEY_ID_HEX + 1] = "";
    uint32_t role = 0;
};

// The server's side as gridrpcd runs it: HELLO, the handshake when KS has keys (an
// ERROR and a close when it fails), HELLO_OK.
void serve(Link *l, const grp_keyset *ks, Served *out) {
    grw_header h;
    grp_hello m;
    gr_clearerr(&out->e);
    out->rc = grp_read_header(l->r[1], &h, &out->e);
    if (!out->rc) out->rc = grp_read_hello(l->r[1], &m, &out->e);
    if (!out->rc && ks && ks->n)
        out->rc = grp_auth_serve(l->r[1], l->w[1], h.request_id, ks, GRP_PEER_GRIDRPCD, out->key_id,
                                 &out->role, &out->e);
    gr_err we;
    if (out->rc) {
        grp_write_error(l->w[1], h.request_id, out->rc, out->e.msg, &we);
        shutdown(l->fd[1], SHUT_WR);
        return;
    }
    grp_hello_ok ok = {};
    snprintf(ok.server, sizeof ok.server, "test");
    ok.version = GRW_VERSION;
    grp_limits_default(&ok.limits);
    grp_write_hello_ok(l->w[1], h.request_id, &ok, &we);
}

struct Result {
    int rc, refused;
    gr_err e;
    Served s;
};

Result handshake(const grp_keyset *client, const grp_keyset *server, uint32_t role = GRP_ROLE_CLIENT) {
    Link l;
    Result res;
    std::thread t(serve, &l, server, &res.s);
    grp_hello m = {};
    snprintf(m.client, sizeof m.client, "auth-test");
    m.min_version = m.max_version = GRW_VERSION;
    grp_hello_ok ok;
    res.rc = grp_auth_hello_as(l.r[0], l.w[0], 7, &m, client, role, GRP_PEER_GRIDRPCD, "set GRIDRPC_KEY_FILE",
                               &ok, &res.refused, &res.e);
    shutdown(l.fd[0], SHUT_RDWR);
    t.join();
    return res;
}

} // namespace

TEST(AuthHandshake, RightKey) {
    grp_keyset k = keys_of(key_hex(0, 32));
    Result r = handshake(&k, &k);
    EXPECT_EQ(GRID_OK, r.rc) << r.e.msg;
    EXPECT_EQ(GRID_OK, r.s.rc) << r.s.e.msg;
    EXPECT_STREQ(kKeyId, r.s.key_id);
}

TEST(AuthHandshake, WrongKeyIsRefusedWithTheServersMessage) {
    grp_keyset a = keys_of(key_hex(0, 32)), b = keys_of(key_hex(1, 32));
    Result r = handshake(&b, &a);
    EXPECT_EQ(GRID_ERR_AUTH, r.rc);
    EXPECT_EQ(1, r.refused);
    EXPECT_NE(nullptr, strstr(r.e.msg, "is not in this server's key file")) << r.e.msg;
    EXPECT_NE(nullptr, strstr(r.e.msg, b.keys[0].id)) << r.e.msg;
}

TEST(AuthHandshake, NoKeyIsRefusedSayingHowToGiveOne) {
    grp_keyset a = keys_of(key_hex(0, 32));
    Result r = handshake(nullptr, &a);
    EXPECT_EQ(GRID_ERR_AUTH, r.rc);
    EXPECT_NE(nullptr, strstr(r.e.msg, "the server requires a key")) << r.e.msg;
    EXPECT_NE(nullptr, strstr(r.e.msg, "set GRIDRPC_KEY_FILE")) << r.e.msg;
    EXPECT_NE(GRID_OK, r.s.rc) << "the server let in a client without a key";
}

TEST(AuthHandshake, ClientWithKeyRefusesServerWithout) {
    grp_keyset a = keys_of(key_hex(0, 32));
    Result r = handshake(&a, nullptr);
    EXPECT_EQ(GRID_ERR_AUTH, r.rc);
    EXPECT_NE(nullptr, strstr(r.e.msg, "the server did not prove it holds the key")) << r.e.msg;
    // Without keys on either side the handshake is HELLO and HELLO_OK as before.
    r = handshake(nullptr, nullptr);
    EXPECT_EQ(GRID_OK, r.rc) << r.e.msg;
}

TEST(AuthHandshake, RotationAcceptsBothKeys) {
    grp_keyset both = keys_of(key_hex(0, 32) + "\n" + key_hex(0x55, 32) + "\n");
    grp_keyset oldk = keys_of(key_hex(0, 32)), newk = keys_of(key_hex(0x55, 32));
    Result r = handshake(&oldk, &both);
    EXPECT_EQ(GRID_OK, r.rc) << r.e.msg;
    r = handshake(&newk, &both);
    EXPECT_EQ(GRID_OK, r.rc) << r.e.msg;
    EXPECT_STREQ(newk.keys[0].id, r.s.key_id);
    // A client with both uses the first; a server with the new one only refuses the old.
    r = handshake(&both, &newk);
    EXPECT_EQ(GRID_ERR_AUTH, r.rc);
}

TEST(AuthHandshake, ForgedAuthOkIsRefused) {
    grp_keyset k = keys_of(key_hex(0, 32));
    Link l;
    std::thread t([&] {
        // A peer that challenges without the key: it cannot compute the server's proof.
        grw_header h;
        grp_hello m;
        gr_err e;
        uint8_t mac[32] = {0};
        grp_auth_challenge n = {{1}, GRP_PEER_GRIDRPCD};
        grp_auth a;
        if (grp_read_header(l.r[1], &h, &e) || grp_read_hello(l.r[1], &m, &e)) return;
        grp_write_auth_challenge(l.w[1], h.request_id, &n, &e);
        if (grp_read_header(l.r[1], &h, &e) || grp_read_auth(l.r[1], &a, &e)) return;
        grp_write_auth_ok(l.w[1], h.request_id, mac, &e);
    });
    grp_hello m = {};
    m.min_version = m.max_version = GRW_VERSION;
    grp_hello_ok ok;
    gr_err e;
    int refused;
    EXPECT_EQ(GRID_ERR_AUTH, grp_auth_hello(l.r[0], l.w[0], 1, &m, &k, "", &ok, &refused, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "its AUTH_OK is wrong")) << e.msg;
    t.join();
}

TEST(AuthHandshake, ReplayedAuthIsRefused) {
    grp_keyset k = keys_of(key_hex(0, 32));
    // Session 1: a real client; the server side records the AUTH it received.
    grp_auth recorded;
    {
        Link l;
        std::thread t([&] {
            grw_header h;
            grp_hello m;
            gr_err e;
            grp_auth_challenge n;
            n.verifier = GRP_PEER_GRIDRPCD;
            grp_auth_random(n.nonce, 32, &e);
            if (grp_read_header(l.r[1], &h, &e) || grp_read_hello(l.r[1], &m, &e)) return;
            grp_write_auth_challenge(l.w[1], h.request_id, &n, &e);
            if (grp_read_header(l.r[1], &h, &e) || grp_read_auth(l.r[1], &recorded, &e)) return;
            shutdown(l.fd[1], SHUT_RDWR);
        });
        grp_hello m = {};
        m.min_version = m.max_version = GRW_VERSION;
        grp_hello_ok ok;
        gr_err e;
        grp_auth_hello(l.r[0], l.w[0], 1, &m, &k, "", &ok, nullptr, &e);
        t.join();
    }
    // Session 2: the recorded AUTH sent to a real server's side.
    Link l;
    Served s;
    std::thread t([&] {
        grw_header h;
        gr_err e;
        grp_hello m;
        if (grp_read_header(l.r[1], &h, &e) || grp_read_hello(l.r[1], &m, &e)) return;
        s.rc = grp_auth_serve(l.r[1], l.w[1], h.request_id, &k, GRP_PEER_GRIDRPCD, s.key_id, &s.role, &s.e);
    });
    gr_err e;
    grp_hello m = {};
    m.min_version = m.max_version = GRW_VERSION;
    ASSERT_EQ(GRID_OK, grp_write_hello(l.w[0], 1, &m, &e));
    grw_header h;
    grp_auth_challenge n;
    ASSERT_EQ(GRID_OK, grp_read_header(l.r[0], &h, &e));
    ASSERT_EQ((uint32_t)GRP_AUTH_CHALLENGE, h.type);
    ASSERT_EQ(GRID_OK, grp_read_auth_challenge(l.r[0], &n, &e));
    ASSERT_EQ(GRID_OK, grp_write_auth(l.w[0], 1, &recorded, &e));
    t.join();
    EXPECT_EQ(GRID_ERR_AUTH, s.rc);
    EXPECT_NE(nullptr, strstr(s.e.msg, "the proof for key")) << s.e.msg;
    EXPECT_STREQ(k.keys[0].id, s.key_id);
}

// ---------------------------------------------------------------- roles (issue 25)

TEST(AuthKeys, RoleTags) {
    grp_keyset ks;
    gr_err e;
    std::string text = "client " + key_hex(0, 32) + "\nserver\t" + key_hex(1, 32) + "  # s\nadmin " +
                       key_hex(2, 32) + "\n" + key_hex(3, 32) + "\n";
    ASSERT_EQ(GRID_OK, parse(text, &ks, &e)) << e.msg;
    ASSERT_EQ(4u, ks.n);
    EXPECT_EQ(GRP_ROLE_CLIENT, ks.keys[0].roles);
    EXPECT_EQ(GRP_ROLE_SERVER, ks.keys[1].roles);
    EXPECT_EQ(GRP_ROLES_ALL, ks.keys[2].roles);
    EXPECT_EQ(1, ks.keys[2].tagged);
    EXPECT_EQ(GRP_ROLES_ALL, ks.keys[3].roles);
    EXPECT_EQ(0, ks.keys[3].tagged);
    EXPECT_EQ(1u, grp_keyset_untagged(&ks));
    EXPECT_STREQ(kKeyId, ks.keys[0].id) << "the tag is not part of the key";
    EXPECT_EQ(&ks.keys[1], grp_keyset_pick(&ks, GRP_ROLE_SERVER));
    EXPECT_EQ(&ks.keys[2], grp_keyset_pick(&ks, GRP_ROLE_ADMIN));
    EXPECT_EQ(GRID_ERR_CONFIG, parse("root " + key_hex(0, 32), &ks, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "'root' is not a role")) << e.msg;
}

TEST(AuthRoles, ClientKeyCannotClaimServer) {
    grp_keyset server = keys_of("client " + key_hex(0, 32) + "\nserver " + key_hex(1, 32) + "\n");
    grp_keyset client = keys_of("client " + key_hex(0, 32) + "\n");
    // Its own side refuses before anything is sent: no key of its file may act as a server.
    Result r = handshake(&client, &server, GRP_ROLE_SERVER);
    EXPECT_EQ(GRID_ERR_CONFIG, r.rc);
    EXPECT_NE(nullptr, strstr(r.e.msg, "may act as a server")) << r.e.msg;
    // A client claiming the server role with a client key (a hand-made AUTH) is refused
    // by the verifier, whose file says what the key is.
    grp_keyset lying = client;
    lying.keys[0].roles = GRP_ROLES_ALL;
    r = handshake(&lying, &server, GRP_ROLE_SERVER);
    EXPECT_EQ(GRID_ERR_AUTH, r.rc);
    EXPECT_NE(nullptr, strstr(r.e.msg, "may not act as a server")) << r.e.msg;
    EXPECT_EQ(0u, r.s.role);
    // The right role passes and the verifier learns it.
    r = handshake(&client, &server, GRP_ROLE_CLIENT);
    EXPECT_EQ(GRID_OK, r.rc) << r.e.msg;
    EXPECT_EQ(GRP_ROLE_CLIENT, r.s.role);
    grp_keyset skey = keys_of("server " + key_hex(1, 32) + "\n");
    r = handshake(&skey, &server, GRP_ROLE_SERVER);
    EXPECT_EQ(GRID_OK, r.rc) << r.e.msg;
    EXPECT_EQ(GRP_ROLE_SERVER, r.s.role);
}

// Finding 4: a client that holds only K2 relays gridmetad's challenge (gridmetad takes
// only K1) to a server that holds K1 and K2, as if the server were copying data to it,
// and relays the server's answer back. The server's proof names the kind of peer it is
// made for (gridrpcd) and the role, so the relayed AUTH fails at gridmetad; and the
// server, shown gridmetad's challenge as it is, refuses to prove anything.
TEST(AuthRoles, RelayedProofFailsAtTheMetaserver) {
    grp_keyset meta = keys_of("server " + key_hex(1, 32) + "\n");                               // K1
    grp_keyset srv = keys_of("server " + key_hex(1, 32) + "\nclient " + key_hex(2, 32) + "\n"); // K1, K2
    for (int rewrite = 0; rewrite < 2; rewrite++) {
        Link to_meta, to_srv;
        Served ms;
        std::thread metad([&] {
            grw_header h;
            grp_hello m;
            gr_clearerr(&ms.e);
            if (grp_read_header(to_meta.r[1], &h, &ms.e) || grp_read_hello(to_meta.r[1], &m, &ms.e)) return;
            ms.rc = grp_auth_serve(to_meta.r[1], to_meta.w[1], h.request_id, &meta, GRP_PEER_GRIDMETAD,
                                   ms.key_id, &ms.role, &ms.e);
        });
        // The server's DATA_COPY side: it proves its server key to what it takes for a gridrpcd.
        int srv_rc = -1;
        gr_err srv_e;
        std::thread copier([&] {
            grp_hello m = {};
            m.min_version = m.max_version = GRW_VERSION;
            grp_hello_ok ok;
            srv_rc = grp_auth_hello_as(to_srv.r[0], to_srv.w[0], 1, &m, &srv, GRP_ROLE_SERVER,
                                       GRP_PEER_GRIDRPCD, "", &ok, nullptr, &srv_e);
            shutdown(to_srv.fd[0], SHUT_RDWR);
        });
        // The relaying client.
        gr_err e;
        grp_hello hm = {};
        hm.min_version = hm.max_version = GRW_VERSION;
        ASSERT_EQ(GRID_OK, grp_write_hello(to_meta.w[0], 1, &hm, &e));
        grw_header h;
        grp_auth_challenge ch;
        ASSERT_EQ(GRID_OK, grp_read_header(to_meta.r[0], &h, &e));
        ASSERT_EQ(GRID_OK, grp_read_auth_challenge(to_meta.r[0], &ch, &e)) << e.msg;
        EXPECT_EQ(GRP_PEER_GRIDMETAD, ch.verifier);
        grp_hello got;
        ASSERT_EQ(GRID_OK, grp_read_header(to_srv.r[1], &h, &e));
        ASSERT_EQ(GRID_OK, grp_read_hello(to_srv.r[1], &got, &e));
        if (rewrite) ch.verifier = GRP_PEER_GRIDRPCD; // pretend to be a gridrpcd
        ASSERT_EQ(GRID_OK, grp_write_auth_challenge(to_srv.w[1], h.request_id, &ch, &e));
        grp_auth a;
        bool proved = grp_read_header(to_srv.r[1], &h, &e) == GRID_OK && h.type == GRP_AUTH &&
                      grp_read_auth(to_srv.r[1], &a, &e) == GRID_OK;
        shutdown(to_srv.fd[1], SHUT_RDWR); // no AUTH_OK for the server: it gives up at once
        copier.join();
        if (!rewrite) {
            // The server saw it was a metaserver's challenge: no proof left it.
            EXPECT_FALSE(proved);
            EXPECT_EQ(GRID_ERR_CONFIG, srv_rc);
            EXPECT_NE(nullptr,
                      strstr(srv_e.msg, "is a metaserver (gridmetad) where a server (gridrpcd) was expected"))
                << srv_e.msg;
            shutdown(to_meta.fd[0], SHUT_RDWR);
            metad.join();
            EXPECT_NE(GRID_OK, ms.rc);
            continue;
        }
        ASSERT_TRUE(proved) << e.msg;
        EXPECT_STREQ(meta.keys[0].id, a.key_id);
        ASSERT_EQ(GRID_OK, grp_write_auth(to_meta.w[0], 1, &a, &e));
        metad.join();
        EXPECT_EQ(GRID_ERR_AUTH, ms.rc) << "gridmetad accepted a proof made for a gridrpcd";
        EXPECT_NE(nullptr, strstr(ms.e.msg, "the proof for key")) << ms.e.msg;
        EXPECT_EQ(0u, ms.role);
    }
}

// ---------------------------------------------------------------- where a client's key comes from

extern "C" {
#include "gox.h"
#include "grc_client.h"
}

class ClientKeys : public ::testing::Test {
  protected:
    TempDir d_;
    std::string k1_, k2_, open_;
    void SetUp() override {
        for (const char *v : {"GRIDRPC_SERVER", "GRIDRPC_CONFIG", "GRIDRPC_TOKEN", "GRIDRPC_KEY_FILE"})
            unsetenv(v);
        setenv("HOME", "/nonexistent", 1);
        k1_ = d_.write("k1", key_hex(0, 32) + "\n", 0600);
        k2_ = d_.write("k2", key_hex(0x55, 32) + "\n", 0600);
        open_ = d_.write("open", key_hex(0, 32) + "\n", 0644);
        grc_config_reset();
    }
    void TearDown() override {
        unsetenv("GRIDRPC_CONFIG");
        unsetenv("GRIDRPC_KEY_FILE");
        grc_config_reset();
    }
    // The client's settings with configuration file TEXT; grc_config_get's code.
    int load(const std::string &text) {
        std::string conf = d_.write("client.conf", text, 0600);
        setenv("GRIDRPC_CONFIG", conf.c_str(), 1);
        grc_config_reset();
        gr_clearerr(&e_);
        return grc_config_get(&cfg_, &e_);
    }
    std::string first_id() { return cfg_.keys.n ? cfg_.keys.keys[0].id : ""; }
    grc_config cfg_;
    gr_err e_;
};

TEST_F(ClientKeys, FileEnvironmentAndApi) {
    grp_keyset ks1, ks2;
    gr_err e;
    ASSERT_EQ(GRID_OK, grp_keyset_load(k1_.c_str(), &ks1, &e));
    ASSERT_EQ(GRID_OK, grp_keyset_load(k2_.c_str(), &ks2, &e));
    ASSERT_EQ(GRID_OK, load("")) << e_.msg;
    EXPECT_EQ(0u, cfg_.keys.n) << "no key unless one is configured";
    ASSERT_EQ(GRID_OK, load("key_file " + k1_ + "\n")) << e_.msg;
    EXPECT_EQ(ks1.keys[0].id, first_id());
    setenv("GRIDRPC_KEY_FILE", k2_.c_str(), 1);
    ASSERT_EQ(GRID_OK, load("key_file " + k1_ + "\n")) << e_.msg;
    EXPECT_EQ(ks2.keys[0].id, first_id()) << "GRIDRPC_KEY_FILE wins over the file";
    // grid_set_key_file_np wins over both; "" is no key; NULL the configured one again.
    ASSERT_EQ(GRID_OK, grid_set_key_file_np(k1_.c_str())) << grid_last_error();
    ASSERT_EQ(GRID_OK, grc_config_get(&cfg_, &e_));
    EXPECT_EQ(ks1.keys[0].id, first_id());
    ASSERT_EQ(GRID_OK, grid_set_key_file_np(""));
    ASSERT_EQ(GRID_OK, grc_config_get(&cfg_, &e_));
    EXPECT_EQ(0u, cfg_.keys.n);
    EXPECT_EQ(GRID_ERR_CONFIG, grid_set_key_file_np(open_.c_str()));
    EXPECT_NE(nullptr, strstr(grid_last_error(), "chmod 600")) << grid_last_error();
    ASSERT_EQ(GRID_OK, grc_config_get(&cfg_, &e_));
    EXPECT_EQ(0u, cfg_.keys.n) << "a refused file leaves the setting as it was";
    ASSERT_EQ(GRID_OK, grid_set_key_file_np(NULL));
    ASSERT_EQ(GRID_OK, grc_config_get(&cfg_, &e_));
    EXPECT_EQ(ks2.keys[0].id, first_id());
}

TEST_F(ClientKeys, BadKeyFilesAreConfigErrors) {
    setenv("GRIDRPC_KEY_FILE", open_.c_str(), 1);
    ASSERT_EQ(GRID_ERR_CONFIG, load(""));
    EXPECT_NE(nullptr, strstr(e_.msg, "GRIDRPC_KEY_FILE: the key file")) << e_.msg;
    EXPECT_NE(nullptr, strstr(e_.msg, "has mode 0644")) << e_.msg;
    unsetenv("GRIDRPC_KEY_FILE");
    ASSERT_EQ(GRID_ERR_CONFIG, load("# keys\nkey_file " + open_ + "\n"));
    EXPECT_NE(nullptr, strstr(e_.msg, "client.conf:2: cannot use 'key_file ")) << e_.msg;
}

TEST_F(ClientKeys, NinfgConfigurationFile) {
    grp_keyset ks1;
    gr_err e;
    ASSERT_EQ(GRID_OK, grp_keyset_load(k1_.c_str(), &ks1, &e));
    ASSERT_EQ(GRID_OK, load("")) << e_.msg;
    gox_config g{};
    g.call_timeout = g.connect_timeout = -1;
    char msg[1024] = "";
    std::string conf = d_.write("ng.conf", "server 127.0.0.1:7000\nkey_file " + k1_ + "\n", 0600);
    ASSERT_EQ(GRPC_NO_ERROR, gox_config_read(conf.c_str(), &g, msg, sizeof msg)) << msg;
    ASSERT_EQ(GRID_OK, grc_config_get(&cfg_, &e_));
    EXPECT_EQ(ks1.keys[0].id, first_id()) << "the file's key reaches the core";
    gox_config_free(&g);
    ASSERT_EQ(GRID_OK, grc_config_get(&cfg_, &e_));
    EXPECT_EQ(0u, cfg_.keys.n) << "and leaves with the file";
    gox_config g2{};
    g2.call_timeout = g2.connect_timeout = -1;
    conf = d_.write("ng2.conf", "# keys\nkey_file " + open_ + "\n", 0600);
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, gox_config_read(conf.c_str(), &g2, msg, sizeof msg));
    EXPECT_NE(nullptr, strstr(msg, "ng2.conf:2: key_file: ")) << msg;
    EXPECT_NE(nullptr, strstr(msg, "chmod 600")) << msg;
    gox_config_free(&g2);
}
