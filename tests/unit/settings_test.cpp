// settings_test.cpp: the one settings grammar (runtime/common/gr_settings.c) and the
// readers that use it: every accepted and refused form of a duration, a size, a port,
// host:port and yes/no, with the bounds at and one past; then the client's
// configuration (GRIDRPC_CONFIG) and the Ninf-G reader (gox_config_read), where "2m"
// must come out as 120 seconds and a bad value must name its file, line and forms.
#include "gr_settings.h"
#include "grc_client.h"
#include "gox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>

namespace {

// ---------------------------------------------------------------- durations

double Duration(const char *s) {
    double v = -1;
    char err[256] = "";
    EXPECT_EQ(0, gr_parse_duration(s, &v, err, sizeof err)) << s << ": " << err;
    return v;
}

std::string DurationError(const char *s) {
    double v = -7;
    char err[256] = "";
    EXPECT_EQ(-1, gr_parse_duration(s, &v, err, sizeof err)) << s;
    EXPECT_EQ(-7, v) << s << ": the output is untouched on failure";
    return err;
}

TEST(Duration, BareSeconds) {
    EXPECT_EQ(30.0, Duration("30"));
    EXPECT_EQ(0.0, Duration("0"));
    EXPECT_EQ(0.5, Duration("0.5"));
    EXPECT_EQ(0.5, Duration(".5"));
    EXPECT_EQ(5.0, Duration("5."));
    EXPECT_EQ(0.25, Duration("0.25"));
    EXPECT_EQ(1.5, Duration("1.5"));
    EXPECT_EQ(7.0, Duration("007"));
}

TEST(Duration, Units) {
    EXPECT_EQ(0.25, Duration("250ms"));
    EXPECT_EQ(0.0005, Duration("0.5ms"));
    EXPECT_EQ(30.0, Duration("30s"));
    EXPECT_EQ(120.0, Duration("2m"));
    EXPECT_EQ(120.0, Duration("2min"));
    EXPECT_EQ(90.0, Duration("1.5m"));
    EXPECT_EQ(3600.0, Duration("1h"));
    EXPECT_EQ(5400.0, Duration("1.5h"));
    EXPECT_EQ(86400.0, Duration("1d"));
    // Ninf-G files spell units out; they keep working.
    EXPECT_EQ(10.0, Duration("10 seconds"));
    EXPECT_EQ(1.0, Duration("1 second"));
    EXPECT_EQ(10.0, Duration("10sec"));
    EXPECT_EQ(600.0, Duration("10 minutes"));
    EXPECT_EQ(60.0, Duration("1 minute"));
    EXPECT_EQ(7200.0, Duration("2 hours"));
    EXPECT_EQ(3600.0, Duration("1 hour"));
    EXPECT_EQ(172800.0, Duration("2 days"));
    EXPECT_EQ(86400.0, Duration("1 day"));
    // A blank or a tab may separate number and unit; the unit's case does not matter.
    EXPECT_EQ(30.0, Duration("30 s"));
    EXPECT_EQ(120.0, Duration("2\tm"));
    EXPECT_EQ(120.0, Duration("2M"));
    EXPECT_EQ(0.25, Duration("250MS"));
    EXPECT_EQ(3600.0, Duration("1H"));
}

TEST(Duration, Bounds) {
    EXPECT_EQ(GR_DURATION_MAX, Duration("1000000000"));
    EXPECT_EQ(GR_DURATION_MAX, Duration("1000000000000ms"));
    EXPECT_NE(std::string::npos, DurationError("1000000000.5").find("too long"));
    EXPECT_NE(std::string::npos, DurationError("1000000001").find("too long"));
    EXPECT_EQ(999999960.0, Duration("16666666m"));
    EXPECT_NE(std::string::npos, DurationError("16666667m").find("too long"));
    EXPECT_NE(std::string::npos, DurationError("11575d").find("too long"));
    // Digits enough to overflow a double are refused, not taken as infinity.
    std::string huge(400, '9');
    EXPECT_NE(std::string::npos, DurationError(huge.c_str()).find("too long"));
}

TEST(Duration, Refused) {
    for (const char *bad :
         {"",     " ",   "5x",    "-1",  "-0",  "+5",  "s",        "ms",  ".",         "1.2.3",
          "1e3",  "1E3", "0x10",  "inf", "nan", "INF", "infinity", " 5",  "5 ",        "5s ",
          "5 s ", "5ss", "5 m s", "5,5", "2mn", "1w",  "5sec5",    "5\n", "5 minutesx"}) {
        std::string err = DurationError(bad);
        EXPECT_NE(std::string::npos, err.find(std::string("'") + bad + "' is not a duration"))
            << bad << ": " << err;
    }
}

TEST(Duration, MessageListsTheForms) {
    std::string err = DurationError("5x");
    EXPECT_EQ("'5x' is not a duration: write seconds (30, 0.5) or a number and a unit: ms, s, m, h or d "
              "(250ms, 30s, 2m, 1h)",
              err);
    double v = 0;
    EXPECT_EQ(-1, gr_parse_duration(nullptr, &v, nullptr, 0)); // no value, no message buffer
}

// ---------------------------------------------------------------- sizes

uint64_t Size(const char *s) {
    uint64_t v = 7;
    char err[256] = "";
    EXPECT_EQ(0, gr_parse_size(s, &v, err, sizeof err)) << s << ": " << err;
    return v;
}

std::string SizeError(const char *s) {
    uint64_t v = 7;
    char err[256] = "";
    EXPECT_EQ(-1, gr_parse_size(s, &v, err, sizeof err)) << s;
    EXPECT_EQ(7u, v) << s;
    return err;
}

TEST(Size, Forms) {
    EXPECT_EQ(0u, Size("0"));
    EXPECT_EQ(4096u, Size("4096"));
    EXPECT_EQ(4096u, Size("4096B"));
    EXPECT_EQ(4096u, Size("4096 b"));
    EXPECT_EQ(65536u, Size("64K"));
    EXPECT_EQ(65536u, Size("64k"));
    EXPECT_EQ(65536u, Size("64KB"));
    EXPECT_EQ(65536u, Size("64kib"));
    EXPECT_EQ(65536u, Size("64 KiB"));
    EXPECT_EQ(16u << 20, Size("16M"));
    EXPECT_EQ(16u << 20, Size("16MiB"));
    EXPECT_EQ(16u << 20, Size("16mb"));
    EXPECT_EQ(1u << 30, Size("1G"));
    EXPECT_EQ(1u << 30, Size("1 GiB"));
    EXPECT_EQ(uint64_t(3) << 40, Size("3T"));
    EXPECT_EQ(uint64_t(3) << 40, Size("3TiB"));
}

TEST(Size, Bounds) {
    EXPECT_EQ(UINT64_MAX, Size("18446744073709551615"));
    EXPECT_NE(std::string::npos, SizeError("18446744073709551616").find("too large"));
    EXPECT_NE(std::string::npos, SizeError("99999999999999999999999").find("too large"));
    EXPECT_EQ(uint64_t(16777215) << 40, Size("16777215T"));
    EXPECT_NE(std::string::npos, SizeError("16777216T").find("too large")); // 2^64
    EXPECT_EQ(uint64_t(17179869183) << 30, Size("17179869183G"));
    EXPECT_NE(std::string::npos, SizeError("17179869184G").find("too large"));
    EXPECT_EQ(uint64_t(17592186044415) << 20, Size("17592186044415M"));
    EXPECT_NE(std::string::npos, SizeError("17592186044416M").find("too large"));
    EXPECT_EQ(uint64_t(18014398509481983) << 10, Size("18014398509481983K"));
    EXPECT_NE(std::string::npos, SizeError("18014398509481984K").find("too large"));
}

TEST(Size, Refused) {
    for (const char *bad : {"", "K", "-1", "+1", "1.5G", "12Q", "1 ", " 1", "1KK", "1iB", "1Ki", "0x10",
                            "1e3", "1 K B", "1P", "64K ", "inf"}) {
        std::string err = SizeError(bad);
        EXPECT_NE(std::string::npos, err.find(std::string("'") + bad + "' is not a size: write bytes"))
            << bad << ": " << err;
    }
}

// ---------------------------------------------------------------- ports, host:port

TEST(Port, Bounds) {
    int p = -1;
    char err[256];
    EXPECT_EQ(0, gr_parse_port("1", 0, &p, err, sizeof err));
    EXPECT_EQ(1, p);
    EXPECT_EQ(0, gr_parse_port("65535", 0, &p, err, sizeof err));
    EXPECT_EQ(65535, p);
    p = -1;
    EXPECT_EQ(-1, gr_parse_port("65536", 0, &p, err, sizeof err));
    EXPECT_EQ(-1, p);
    EXPECT_STREQ("'65536' is not a TCP port: write a number from 1 to 65535", err);
    EXPECT_EQ(-1, gr_parse_port("0", 0, &p, err, sizeof err));
    EXPECT_STREQ("'0' is not a TCP port: write a number from 1 to 65535", err);
    EXPECT_EQ(0, gr_parse_port("0", GR_PORT_ZERO, &p, err, sizeof err));
    EXPECT_EQ(0, p);
    EXPECT_EQ(-1, gr_parse_port("65536", GR_PORT_ZERO, &p, err, sizeof err));
    EXPECT_STREQ("'65536' is not a TCP port: write a number from 0 to 65535 (0: any free port)", err);
    for (const char *bad : {"", "-1", "+80", "http", "80x", "8 0", " 80", "18446744073709551617", "0x50"})
        EXPECT_EQ(-1, gr_parse_port(bad, GR_PORT_ZERO, &p, err, sizeof err)) << bad;
}

struct HostPort {
    int rc;
    std::string host, err;
    int port;
};

HostPort ParseHostPort(const char *s, unsigned flags = 0, size_t hostsize = 256) {
    char host[256] = "untouched", err[256] = "";
    int port = -1;
    HostPort r;
    r.rc = gr_parse_hostport(s, flags, host, hostsize, &port, err, sizeof err);
    r.host = host;
    r.port = port;
    r.err = err;
    return r;
}

TEST(HostPort, Accepted) {
    struct {
        const char *in, *host;
        int port;
    } good[] = {{"example.org:7000", "example.org", 7000},
                {"127.0.0.1:1", "127.0.0.1", 1},
                {"h:65535", "h", 65535},
                {"[::1]:7000", "::1", 7000},
                {"[fe80::1%eth0]:80", "fe80::1%eth0", 80},
                {"[2001:db8::7]:65535", "2001:db8::7", 65535}};
    for (auto &g : good) {
        HostPort r = ParseHostPort(g.in);
        EXPECT_EQ(0, r.rc) << g.in << ": " << r.err;
        EXPECT_EQ(g.host, r.host) << g.in;
        EXPECT_EQ(g.port, r.port) << g.in;
    }
}

TEST(HostPort, Refused) {
    for (const char *bad : {"", "host", "host:", ":7000", "host:0", "host:65536", "host:http", "host:70 00",
                            "[::1]", "[::1]:", "[::1]7000", "[]:7000", "[::1:7000", "::1]:7000", "a b:7000",
                            "[a]b]:7000", "[[::1]]:7000", "host:7000x"}) {
        HostPort r = ParseHostPort(bad);
        EXPECT_EQ(-1, r.rc) << bad;
        EXPECT_EQ("untouched", r.host) << bad;
        EXPECT_EQ(-1, r.port) << bad;
        EXPECT_NE(std::string::npos, r.err.find(std::string("'") + bad + "' is not HOST:PORT: ")) << r.err;
    }
    // The two splitters this replaces took "::1:7000" as host "::1"; it is ambiguous.
    HostPort v6 = ParseHostPort("::1:7000");
    EXPECT_EQ(-1, v6.rc);
    EXPECT_NE(std::string::npos, v6.err.find("an IPv6 address goes in brackets ([::1]:7000)")) << v6.err;
    HostPort big = ParseHostPort("h:65536");
    EXPECT_EQ("'h:65536' is not HOST:PORT: '65536' is not a TCP port: write a number from 1 to 65535",
              big.err);
    HostPort none = ParseHostPort("h");
    EXPECT_NE(std::string::npos, none.err.find("the port is missing")) << none.err;
}

TEST(HostPort, Flags) {
    HostPort any = ParseHostPort("127.0.0.1:0", GR_PORT_ZERO);
    EXPECT_EQ(0, any.rc) << any.err;
    EXPECT_EQ(0, any.port);
    HostPort bare = ParseHostPort("example.org", GR_PORT_OPTIONAL);
    EXPECT_EQ(0, bare.rc) << bare.err;
    EXPECT_EQ("example.org", bare.host);
    EXPECT_EQ(0, bare.port);
    HostPort v6 = ParseHostPort("[::1]", GR_PORT_OPTIONAL);
    EXPECT_EQ(0, v6.rc) << v6.err;
    EXPECT_EQ("::1", v6.host);
    HostPort withPort = ParseHostPort("[::1]:9", GR_PORT_OPTIONAL);
    EXPECT_EQ(9, withPort.port);
    EXPECT_EQ(-1, ParseHostPort("::1", GR_PORT_OPTIONAL).rc);
    EXPECT_EQ(-1, ParseHostPort("h:0", GR_PORT_OPTIONAL).rc);
}

TEST(HostPort, HostSize) {
    // A host of HOSTSIZE-1 bytes fits with its terminator; one more does not.
    EXPECT_EQ(0, ParseHostPort("abcd:1", 0, 5).rc);
    HostPort r = ParseHostPort("abcde:1", 0, 5);
    EXPECT_EQ(-1, r.rc);
    EXPECT_EQ("untouched", r.host);
    EXPECT_NE(std::string::npos, r.err.find("the host is longer than 4 bytes")) << r.err;
    EXPECT_EQ(-1, ParseHostPort("[::12]:1", 0, 4).rc);
}

// ---------------------------------------------------------------- yes/no

TEST(Bool, Forms) {
    for (const char *y : {"yes", "YES", "true", "True", "on", "ON", "1"}) {
        int v = -1;
        EXPECT_EQ(0, gr_parse_bool(y, &v, nullptr, 0)) << y;
        EXPECT_EQ(1, v) << y;
    }
    for (const char *n : {"no", "No", "false", "FALSE", "off", "Off", "0"}) {
        int v = -1;
        EXPECT_EQ(0, gr_parse_bool(n, &v, nullptr, 0)) << n;
        EXPECT_EQ(0, v) << n;
    }
    for (const char *bad : {"", "y", "n", "2", "yes ", "enable", "nope", "01"}) {
        int v = -1;
        char err[256];
        EXPECT_EQ(-1, gr_parse_bool(bad, &v, err, sizeof err)) << bad;
        EXPECT_EQ(-1, v);
        EXPECT_NE(std::string::npos, std::string(err).find("is not yes or no: write yes, true, on, 1"))
            << err;
    }
}

// ---------------------------------------------------------------- configuration files

// A scratch file, removed at the end of the test.
class TempFile {
  public:
    explicit TempFile(const std::string &text) {
        char tmpl[] = "/tmp/settings-test-XXXXXX";
        int fd = mkstemp(tmpl);
        EXPECT_GE(fd, 0);
        if (fd >= 0) close(fd);
        path_ = tmpl;
        std::ofstream(path_) << text;
    }
    ~TempFile() { unlink(path_.c_str()); }
    const std::string &path() const { return path_; }

  private:
    std::string path_;
};

// The client's settings with only GRIDRPC_CONFIG=PATH (nothing else from the environment).
class ClientConfig : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const char *v : {"GRIDRPC_SERVER", "GRIDRPC_CONFIG", "GRIDRPC_TIMEOUT",
                              "GRIDRPC_CONNECT_TIMEOUT", "GRIDRPC_TOKEN", "GRIDRPC_RETRIES"})
            unsetenv(v);
        setenv("HOME", "/nonexistent", 1);
        grc_config_reset();
    }
    void TearDown() override {
        unsetenv("GRIDRPC_CONFIG");
        grc_config_reset();
    }
    // Loads the settings from a file holding TEXT; returns grc_config_get's code.
    int Load(const std::string &text) {
        file_.reset(new TempFile(text));
        setenv("GRIDRPC_CONFIG", file_->path().c_str(), 1);
        grc_config_reset();
        gr_clearerr(&e_);
        return grc_config_get(&cfg_, &e_);
    }
    std::unique_ptr<TempFile> file_;
    grc_config cfg_;
    gr_err e_;
};

TEST_F(ClientConfig, TwoMinutesIsTwoMinutes) {
    ASSERT_EQ(GRID_OK, Load("# a comment\nserver [::1]:7001\ntimeout 2m\nconnect_timeout 250ms\ntoken abc\n"))
        << e_.msg;
    EXPECT_EQ(120.0, cfg_.call_timeout);
    EXPECT_EQ(0.25, cfg_.connect_timeout);
    EXPECT_STREQ("::1", cfg_.server_host);
    EXPECT_EQ(7001, cfg_.server_port);
    EXPECT_STREQ("abc", cfg_.token);
    EXPECT_EQ(file_->path() + " line 2", cfg_.source);
    ASSERT_EQ(GRID_OK, Load("timeout \"1.5 h\"\nconnect_timeout 30\n")) << e_.msg;
    EXPECT_EQ(5400.0, cfg_.call_timeout);
    EXPECT_EQ(30.0, cfg_.connect_timeout);
}

// A '#' inside quotes is part of the value; outside them it starts a comment.
TEST_F(ClientConfig, HashInsideQuotesIsKept) {
    ASSERT_EQ(GRID_OK, Load("token \"ab#cd\" # the shared token\ntimeout 5 # seconds\n")) << e_.msg;
    EXPECT_STREQ("ab#cd", cfg_.token);
    EXPECT_EQ(5.0, cfg_.call_timeout);
    ASSERT_EQ(GRID_OK, Load("token ab#cd\n")) << e_.msg;
    EXPECT_STREQ("ab", cfg_.token);
}

// A call whose server vanished runs again once by default; 'retries' and then
// GRIDRPC_RETRIES change that, and messages say where the count came from.
TEST_F(ClientConfig, RetriesDefaultFileAndEnvironment) {
    char buf[400];
    ASSERT_EQ(GRID_OK, Load("timeout 1\n")) << e_.msg;
    EXPECT_EQ(1, cfg_.retries);
    EXPECT_STREQ("1 (the default)", grc_retries_text(&cfg_, buf, sizeof buf));
    ASSERT_EQ(GRID_OK, Load("timeout 1\nretries 0\n")) << e_.msg;
    EXPECT_EQ(0, cfg_.retries);
    EXPECT_EQ("0 ('retries' in " + file_->path() + " line 2)",
              std::string(grc_retries_text(&cfg_, buf, sizeof buf)));
    setenv("GRIDRPC_RETRIES", "3", 1);
    ASSERT_EQ(GRID_OK, Load("retries 0\n")) << e_.msg;
    EXPECT_EQ(3, cfg_.retries);
    EXPECT_STREQ("3 (GRIDRPC_RETRIES)", grc_retries_text(&cfg_, buf, sizeof buf));
    setenv("GRIDRPC_RETRIES", "many", 1);
    ASSERT_EQ(GRID_ERR_CONFIG, Load("timeout 1\n"));
    EXPECT_NE(nullptr, strstr(e_.msg, "GRIDRPC_RETRIES: 'many' is not a number of retries (0..100"))
        << e_.msg;
    unsetenv("GRIDRPC_RETRIES");
}

TEST_F(ClientConfig, BadValueNamesFileLineAndForms) {
    ASSERT_EQ(GRID_ERR_CONFIG, Load("server 127.0.0.1:7000\n\ntimeout 5x\n"));
    EXPECT_EQ(file_->path() +
                  ":3: cannot use 'timeout 5x': '5x' is not a duration: write seconds (30, 0.5) or a "
                  "number and a unit: ms, s, m, h or d (250ms, 30s, 2m, 1h)",
              e_.msg);
    ASSERT_EQ(GRID_ERR_CONFIG, Load("connect_timeout -1\n"));
    EXPECT_NE(nullptr, strstr(e_.msg, ":1: cannot use 'connect_timeout -1': '-1' is not a duration"))
        << e_.msg;
    ASSERT_EQ(GRID_ERR_CONFIG, Load("server ::1:7000\n"));
    EXPECT_NE(nullptr,
              strstr(e_.msg, ":1: cannot use 'server ::1:7000': '::1:7000' is not HOST:PORT: an IPv6"))
        << e_.msg;
    ASSERT_EQ(GRID_ERR_CONFIG, Load("server h:65536\n"));
    EXPECT_NE(nullptr, strstr(e_.msg, "'65536' is not a TCP port: write a number from 1 to 65535")) << e_.msg;
    ASSERT_EQ(GRID_ERR_CONFIG, Load("timeout 2m\nretry 3\n"));
    EXPECT_NE(nullptr,
              strstr(e_.msg, ":2: cannot use 'retry 3': write 'server HOST:PORT', 'metaserver HOST:PORT', "
                             "'timeout DURATION'"))
        << e_.msg;
    EXPECT_NE(nullptr, strstr(e_.msg, "or 'retries N'")) << e_.msg;
    ASSERT_EQ(GRID_ERR_CONFIG, Load("retries -1\n"));
    EXPECT_NE(nullptr, strstr(e_.msg, ":1: cannot use 'retries -1': '-1' is not a number of retries (0..100"))
        << e_.msg;
    ASSERT_EQ(GRID_ERR_CONFIG, Load("retries 2x\n"));
    ASSERT_EQ(GRID_ERR_CONFIG, Load("timeout\n"));
    EXPECT_NE(nullptr, strstr(e_.msg, ":1: cannot use 'timeout': write")) << e_.msg;
    // A typo of a key leads with the key meant; a known key without its value is no typo.
    ASSERT_EQ(GRID_ERR_CONFIG, Load("server 127.0.0.1:7000\ntimout 5\n"));
    EXPECT_NE(nullptr,
              strstr(e_.msg, ":2: cannot use 'timout 5': did you mean 'timeout'? write 'server HOST:PORT'"))
        << e_.msg;
    ASSERT_EQ(GRID_ERR_CONFIG, Load("Key_File k\n"));
    EXPECT_NE(nullptr, strstr(e_.msg, "cannot use 'Key_File k': did you mean 'key_file'?")) << e_.msg;
    ASSERT_EQ(GRID_ERR_CONFIG, Load("timeout\n"));
    EXPECT_EQ(nullptr, strstr(e_.msg, "did you mean")) << e_.msg;
    ASSERT_EQ(GRID_ERR_CONFIG, Load("frobnicate 1\n"));
    EXPECT_EQ(nullptr, strstr(e_.msg, "did you mean")) << e_.msg;
    // The protocol's limit (GRP_MAX_TOKEN), at and one past it.
    ASSERT_EQ(GRID_OK, Load("token " + std::string(1024, 't') + "\n")) << e_.msg;
    EXPECT_EQ(1024u, strlen(cfg_.token));
    ASSERT_EQ(GRID_ERR_CONFIG, Load("token " + std::string(1025, 't') + "\n"));
    EXPECT_NE(nullptr, strstr(e_.msg, ":1: cannot use 'token ")) << e_.msg;
    EXPECT_NE(nullptr, strstr(e_.msg, "a token has at most 1024 bytes")) << e_.msg;
}

TEST_F(ClientConfig, EnvironmentUsesTheSameGrammar) {
    setenv("GRIDRPC_TIMEOUT", "2m", 1);
    setenv("GRIDRPC_CONNECT_TIMEOUT", "1500ms", 1);
    setenv("GRIDRPC_SERVER", "[::1]:7002", 1);
    ASSERT_EQ(GRID_OK, Load("timeout 5s\nserver 127.0.0.1:7000\n")) << e_.msg;
    EXPECT_EQ(120.0, cfg_.call_timeout); // the environment wins over the file
    EXPECT_EQ(1.5, cfg_.connect_timeout);
    EXPECT_STREQ("::1", cfg_.server_host);
    EXPECT_EQ(7002, cfg_.server_port);
    setenv("GRIDRPC_TIMEOUT", "5x", 1);
    ASSERT_EQ(GRID_ERR_CONFIG, Load(""));
    EXPECT_STREQ(
        "GRIDRPC_TIMEOUT: '5x' is not a duration: write seconds (30, 0.5) or a number and a unit: ms, s, "
        "m, h or d (250ms, 30s, 2m, 1h)",
        e_.msg);
    unsetenv("GRIDRPC_TIMEOUT");
    setenv("GRIDRPC_SERVER", "::1:7000", 1);
    ASSERT_EQ(GRID_ERR_CONFIG, Load(""));
    EXPECT_NE(nullptr, strstr(e_.msg, "GRIDRPC_SERVER: '::1:7000' is not HOST:PORT")) << e_.msg;
    unsetenv("GRIDRPC_SERVER");
    unsetenv("GRIDRPC_CONNECT_TIMEOUT");
}

TEST_F(ClientConfig, ForcedToken) {
    ASSERT_EQ(GRID_OK, Load("token from-file\n")) << e_.msg;
    EXPECT_STREQ("from-file", cfg_.token);
    grc_config_set_token("forced");
    ASSERT_EQ(GRID_OK, grc_config_get(&cfg_, &e_));
    EXPECT_STREQ("forced", cfg_.token);
    grc_config_set_token(NULL);
    ASSERT_EQ(GRID_OK, grc_config_get(&cfg_, &e_));
    EXPECT_STREQ("from-file", cfg_.token);
}

TEST(GridUrl, HostPortOfTheUrl) {
    grc_config cfg;
    memset(&cfg, 0, sizeof cfg);
    grc_target t;
    gr_err e;
    gr_clearerr(&e);
    ASSERT_EQ(GRID_OK, grc_resolve("gridrpc://[::1]:7003/m/f", &cfg, &t, &e)) << e.msg;
    EXPECT_STREQ("::1", t.host);
    EXPECT_EQ(7003, t.port);
    EXPECT_STREQ("m/f", t.name);
    EXPECT_EQ(GRID_ERR_ARGS, grc_resolve("gridrpc://::1:7003/m/f", &cfg, &t, &e));
    EXPECT_NE(nullptr, strstr(e.msg, "'::1:7003' is not HOST:PORT: an IPv6 address goes in brackets"))
        << e.msg;
}

// The Ninf-G reader (grpc_initialize's file).
class NinfgConfig : public ClientConfig {
  protected:
    void TearDown() override {
        gox_config_free(&gox_);
        ClientConfig::TearDown();
    }
    int Read(const std::string &text) {
        gox_config_free(&gox_);
        file_.reset(new TempFile(text));
        gox_.call_timeout = gox_.connect_timeout = -1;
        testing::internal::CaptureStderr();
        int rc = gox_config_read(file_->path().c_str(), &gox_, msg_, sizeof msg_);
        warnings_ = testing::internal::GetCapturedStderr();
        return rc;
    }
    gox_config gox_{};
    char msg_[1024] = "";
    std::string warnings_;
};

TEST_F(NinfgConfig, SessionTimeoutTwoMinutes) {
    ASSERT_EQ(GRPC_NO_ERROR, Read("<SERVER_DEFAULT>\n session_timeout 2m\n</SERVER_DEFAULT>\n")) << msg_;
    EXPECT_EQ(120.0, gox_.call_timeout);
    ASSERT_EQ(GRPC_NO_ERROR, Read("<SERVER>\n hostname h\n session_timeout 250ms\n</SERVER>\n")) << msg_;
    EXPECT_EQ(0.25, gox_.call_timeout);
    ASSERT_EQ(GRPC_NO_ERROR, Read("timeout 2m\nconnect_timeout 30s\n")) << msg_;
    EXPECT_EQ(120.0, gox_.call_timeout);
    EXPECT_EQ(30.0, gox_.connect_timeout);
    // Ninf-G's own spellings still read.
    ASSERT_EQ(GRPC_NO_ERROR, Read("<SERVER_DEFAULT>\n session_timeout \"10 minutes\"\n</SERVER_DEFAULT>\n"))
        << msg_;
    EXPECT_EQ(600.0, gox_.call_timeout);
}

TEST_F(NinfgConfig, BadValuesNameFileLineAndForms) {
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, Read("<SERVER_DEFAULT>\n\n session_timeout 5x\n</SERVER_DEFAULT>\n"));
    EXPECT_EQ(file_->path() +
                  ":3: session_timeout: '5x' is not a duration: write seconds (30, 0.5) or a number and "
                  "a unit: ms, s, m, h or d (250ms, 30s, 2m, 1h)",
              msg_);
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, Read("server ::1:7000\n"));
    EXPECT_NE(nullptr,
              strstr(msg_, ":1: server: '::1:7000' is not HOST:PORT: an IPv6 address goes in brackets"))
        << msg_;
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, Read("<SERVER>\n hostname h\n port 65536\n</SERVER>\n"));
    EXPECT_NE(nullptr, strstr(msg_, ":3: port: '65536' is not a TCP port: write a number from 1 to 65535"))
        << msg_;
}

// An attribute Ninf-G does not know is an error naming its place and the closest
// attribute of its section, as Ninf-G 5 refuses it; one it knows is only noted.
TEST_F(NinfgConfig, UnknownAttributeNamesTheClosest) {
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, Read("<SERVER>\n hostnme h\n port 7000\n</SERVER>\n"));
    EXPECT_EQ(file_->path() + ":2: unknown attribute 'hostnme' in <SERVER>; did you mean hostname?",
              std::string(msg_));
    // Close to no name of its section: noted, not refused (a name Ninf-G knows and our
    // list lacks must not break a working file).
    ASSERT_EQ(GRPC_NO_ERROR, Read("<CLIENT>\n loglevel 2\n frobnicate 1\n</CLIENT>\n")) << msg_;
    EXPECT_NE(std::string::npos,
              warnings_.find(
                  ":3: warning: <CLIENT> attribute 'frobnicate' is unknown and ignored (check its spelling)"))
        << warnings_;
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, Read("<SERVER>\n hostname h\n HostName h2\n</SERVER>\n"));
    EXPECT_NE(nullptr, strstr(msg_, ":3: unknown attribute 'HostName' in <SERVER>; did you mean hostname?"))
        << msg_;
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, Read("<SERVER>\n hostname h\n invoke_servr SSH\n</SERVER>\n"));
    EXPECT_NE(nullptr,
              strstr(msg_, "unknown attribute 'invoke_servr' in <SERVER>; did you mean invoke_server?"))
        << msg_;
    // Each section its own names: a tag belongs to a <SERVER>, not to the defaults.
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, Read("<SERVER_DEFAULT>\n tag t\n</SERVER_DEFAULT>\n"));
    EXPECT_NE(nullptr,
              strstr(msg_, ":2: unknown attribute 'tag' in <SERVER_DEFAULT>: it belongs in <SERVER>"))
        << msg_;
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, Read("<CLIENT>\n funcname m/f\n</CLIENT>\n"));
    EXPECT_NE(nullptr,
              strstr(msg_, ":2: unknown attribute 'funcname' in <CLIENT>: it belongs in <FUNCTION_INFO>"))
        << msg_;
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, Read("<FUNCTION_INFO>\n hostname h\n funcnme m/f\n</FUNCTION_INFO>\n"));
    EXPECT_NE(nullptr, strstr(msg_, "unknown attribute 'funcnme' in <FUNCTION_INFO>; did you mean funcname?"))
        << msg_;
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, Read("<INCLUDE>\n filenme x.conf\n</INCLUDE>\n"));
    EXPECT_NE(nullptr, strstr(msg_, "unknown attribute 'filenme' in <INCLUDE>; did you mean filename?"))
        << msg_;
    // Our own lines outside any section.
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, Read("timout 5\n"));
    EXPECT_NE(nullptr, strstr(msg_, ":1: 'timout' is neither a setting")) << msg_;
    EXPECT_NE(nullptr, strstr(msg_, "nor inside a Ninf-G <SECTION>; did you mean timeout?")) << msg_;
    // The sections read whole stay skipped, whatever they hold.
    ASSERT_EQ(GRPC_NO_ERROR, Read("<INVOKE_SERVER>\n tyep SSH\n</INVOKE_SERVER>\n")) << msg_;
}

TEST_F(NinfgConfig, NinfgAttributesWeDoNotUseOnlyWarn) {
    ASSERT_EQ(GRPC_NO_ERROR,
              Read("<CLIENT>\n hostname me\n save_sessionInfo 10\n loglevel 3\n log_filePath /tmp/ng\n"
                   " listen_port 0\n handling_signals SIGINT\n tcp_connect_retryRandom true\n"
                   " listen_port_GSI 0\n</CLIENT>\n"
                   "<SERVER_DEFAULT>\n heartbeat 60\n job_queue q\n compress zlib\n</SERVER_DEFAULT>\n"
                   "<SERVER>\n hostname h\n tag t\n port 7000\n invoke_server SSH\n mpi_runNCPUs 4\n"
                   " mpi_runNoOfCPUs 4\n jobmanager jobmanager-pbs\n heartbeat_timeoutCountOnTransfer 5\n"
                   " argument_transfer copy\n commLog_enable true\n environment A=1\n keep_connection true\n"
                   " transfer_timeout_callbackResult 10\n staging true\n debug_busyLoop false\n</SERVER>\n"
                   "<FUNCTION_INFO>\n hostname t\n funcname m/f\n backend MPI\n session_timeout 30\n"
                   " transfer_timeout_argument 5\n</FUNCTION_INFO>\n"
                   "<INCLUDE>\n</INCLUDE>\n"))
        << msg_;
    for (const char *a : {"<CLIENT> attribute 'save_sessionInfo'", "<CLIENT> attribute 'listen_port_GSI'",
                          "<SERVER_DEFAULT> attribute 'heartbeat'", "<SERVER> attribute 'mpi_runNCPUs'",
                          "<SERVER> attribute 'debug_busyLoop'", "<FUNCTION_INFO> attribute 'backend'"})
        EXPECT_NE(std::string::npos, warnings_.find(std::string(a) + " is ignored (GridRPC does not use it)"))
            << a << "\n"
            << warnings_;
}

TEST_F(NinfgConfig, HostPortAsTheClientReadsIt) {
    ASSERT_EQ(GRPC_NO_ERROR, Read("server [::1]:7004\n<SERVER>\n hostname h6\n port 65535\n</SERVER>\n"))
        << msg_;
    ASSERT_EQ(2, gox_.nservers);
    EXPECT_STREQ("::1", gox_.servers[0].host);
    EXPECT_EQ(7004, gox_.servers[0].port);
    EXPECT_EQ(65535, gox_.servers[1].port);
    char host[GOX_MAX_HOST];
    int port = 0;
    gox_config_server(&gox_, "[2001:db8::1]:7005", host, sizeof host, &port);
    EXPECT_STREQ("2001:db8::1", host);
    EXPECT_EQ(7005, port);
    gox_config_server(&gox_, "[2001:db8::1]", host, sizeof host, &port);
    EXPECT_STREQ("2001:db8::1", host);
    EXPECT_EQ(GOX_DEFAULT_PORT, port);
    gox_config_server(&gox_, "elsewhere", host, sizeof host, &port);
    EXPECT_STREQ("elsewhere", host);
    EXPECT_EQ(GOX_DEFAULT_PORT, port);
}

TEST_F(NinfgConfig, TokenReachesTheCore) {
    ASSERT_EQ(GRID_OK, Load("token from-core-file\n")) << e_.msg;
    ASSERT_EQ(GRPC_NO_ERROR, Read("server 127.0.0.1:7000\ntoken \"s3cret word\"\n")) << msg_;
    EXPECT_EQ(std::string::npos, warnings_.find("token")) << warnings_;
    ASSERT_EQ(GRID_OK, grc_config_get(&cfg_, &e_)) << e_.msg;
    EXPECT_STREQ("s3cret word", cfg_.token);
    gox_config_free(&gox_);
    ASSERT_EQ(GRID_OK, grc_config_get(&cfg_, &e_)) << e_.msg;
    EXPECT_STREQ("from-core-file", cfg_.token);
    // A file that fails to read does not leave its token behind.
    ASSERT_EQ(GRPC_CONFIGFILE_ERROR, Read("token half\ntimeout 5x\n"));
    gox_config_free(&gox_);
    ASSERT_EQ(GRID_OK, grc_config_get(&cfg_, &e_)) << e_.msg;
    EXPECT_STREQ("from-core-file", cfg_.token);
}

} // namespace
