// fake_meta_route.h: a scripted fake metaserver for the client's routing tests. It listens on
// 127.0.0.1 port 0 and speaks HELLO, SERVERS, SCHEDULE, REPORT and PING through the
// real protocol layer (grp_proto.h, grp_meta.h), one thread per connection. SCHEDULE
// names the first server of the script that has the function, is up and is not
// excluded (ERROR GRID_ERR_NOT_FOUND when none is left); every SCHEDULE and REPORT is
// recorded for the test to check. stop() closes everything: the metaserver is gone.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "grp_meta.h"
#include "grp_proto.h"

class FakeMeta {
  public:
    struct Server {
        uint64_t id;
        std::string host;
        int port;
        std::vector<std::string> functions;
        bool up = true;
        double bandwidth = 0; // what SERVERS_OK says about the link from the asking site
    };

    // PORT 0: any free port; another: that one (a metaserver restarted where it was).
    explicit FakeMeta(std::vector<Server> script, int port = 0) : script_(std::move(script)) {
        lfd_ = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(lfd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<uint16_t>(port));
        socklen_t al = sizeof a;
        if (lfd_ < 0 || bind(lfd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
            listen(lfd_, 16) != 0 || getsockname(lfd_, reinterpret_cast<sockaddr *>(&a), &al) != 0)
            throw std::runtime_error("fake metaserver: cannot listen");
        port_ = ntohs(a.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    ~FakeMeta() { stop(); }

    int port() const { return port_; }

    // Closes the listener and every connection, joins every thread.
    void stop() {
        if (stopped_.exchange(true)) return;
        shutdown(lfd_, SHUT_RDWR);
        close(lfd_);
        acceptor_.join();
        {
            std::lock_guard<std::mutex> g(mu_);
            for (int fd : fds_)
                shutdown(fd, SHUT_RDWR);
        }
        for (auto &t : conns_)
            t.join();
        for (int fd : fds_)
            close(fd);
    }

    // Every SCHEDULE is answered MS milliseconds late: a metaserver far away, whose round
    // trip a tiny call is worth saving.
    void set_schedule_delay_ms(int ms) { schedule_delay_ms_ = ms; }

    void set_up(uint64_t id, bool up) {
        std::lock_guard<std::mutex> g(mu_);
        for (auto &s : script_)
            if (s.id == id) s.up = up;
    }

    std::vector<grp_schedule> schedules() {
        std::lock_guard<std::mutex> g(mu_);
        return schedules_;
    }
    std::vector<grp_report> reports() {
        std::lock_guard<std::mutex> g(mu_);
        return reports_;
    }
    std::vector<grp_schedule_ok> answers() {
        std::lock_guard<std::mutex> g(mu_);
        return answers_;
    }
    int servers_requests() {
        std::lock_guard<std::mutex> g(mu_);
        return servers_requests_;
    }
    // REPORTs of calls (function not ""), waiting up to 2 s for at least N of them: a
    // REPORT is written after the call returns and has no reply.
    std::vector<grp_report> call_reports(size_t n) {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        for (;;) {
            std::vector<grp_report> v;
            for (auto &r : reports())
                if (r.function[0]) v.push_back(r);
            if (v.size() >= n || std::chrono::steady_clock::now() > until) return v;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }

  private:
    static bool same_function(const std::string &a, const std::string &b) {
        if (a == b) return true;
        auto sa = a.rfind('/'), sb = b.rfind('/');
        if ((sa == std::string::npos) == (sb == std::string::npos)) return false;
        return (sa == std::string::npos ? a : a.substr(sa + 1)) ==
               (sb == std::string::npos ? b : b.substr(sb + 1));
    }

    void accept_loop() {
        for (;;) {
            int fd = accept(lfd_, nullptr, nullptr);
            if (fd < 0) return;
            std::lock_guard<std::mutex> g(mu_);
            if (stopped_) {
                close(fd);
                return;
            }
            fds_.push_back(fd);
            conns_.emplace_back([this, fd] { serve(fd); });
        }
    }

    void serve(int fd) {
        auto *rd = new grw_reader;
        auto *wr = new grw_writer;
        grw_reader_init(rd, fd, GRP_DEFAULT_MAX_MESSAGE);
        grw_writer_init(wr, fd);
        gr_err e;
        for (;;) {
            grw_header h;
            if (grp_read_header(rd, &h, &e)) break;
            int rc = 0;
            if (h.type == GRP_HELLO) {
                grp_hello m;
                rc = grp_read_hello(rd, &m, &e);
                grp_hello_ok ok{};
                snprintf(ok.server, sizeof ok.server, "fake gridmetad");
                ok.version = GRW_VERSION;
                grp_limits_default(&ok.limits);
                ok.workers = ok.cores = 1;
                if (!rc) rc = grp_write_hello_ok(wr, h.request_id, &ok, &e);
            } else if (h.type == GRP_SERVERS) {
                char site[GRP_MAX_SITE + 1];
                rc = grp_read_servers(rd, site, &e);
                if (!rc) rc = answer_servers(wr, h.request_id, &e);
            } else if (h.type == GRP_SCHEDULE) {
                grp_schedule m;
                rc = grp_read_schedule(rd, &m, &e);
                if (!rc && schedule_delay_ms_ > 0)
                    std::this_thread::sleep_for(std::chrono::milliseconds(schedule_delay_ms_.load()));
                if (!rc) rc = answer_schedule(wr, h.request_id, m, &e);
            } else if (h.type == GRP_REPORT) {
                grp_report m;
                rc = grp_read_report(rd, &m, &e);
                if (!rc) {
                    std::lock_guard<std::mutex> g(mu_);
                    reports_.push_back(m);
                }
            } else if (h.type == GRP_PING) {
                rc = grp_read_empty(rd, &e);
                grp_pong p{};
                if (!rc) rc = grp_write_pong(wr, h.request_id, &p, &e);
            } else {
                rc = grw_skip(rd, &e);
                if (!rc)
                    rc = grp_write_error(wr, h.request_id, GRID_ERR_PROTOCOL, "not a metaserver message", &e);
            }
            if (rc) break;
        }
        shutdown(fd, SHUT_RDWR);
        delete rd;
        delete wr;
    }

    int answer_servers(grw_writer *wr, uint64_t id, gr_err *e) {
        std::vector<grp_server_info> v;
        std::vector<std::vector<char *>> names;
        {
            std::lock_guard<std::mutex> g(mu_);
            servers_requests_++;
            names.resize(script_.size());
            for (size_t i = 0; i < script_.size(); i++) {
                const Server &s = script_[i];
                grp_server_info x{};
                x.id = s.id;
                snprintf(x.name, sizeof x.name, "fake %llu", (unsigned long long)s.id);
                snprintf(x.host, sizeof x.host, "%s", s.host.c_str());
                x.port = static_cast<uint32_t>(s.port);
                x.state = s.up ? GRP_SERVER_UP : GRP_SERVER_DOWN;
                x.bandwidth = s.bandwidth;
                for (auto &f : s.functions)
                    names[i].push_back(const_cast<char *>(f.c_str()));
                x.nfunctions = static_cast<uint32_t>(s.functions.size());
                x.functions = names[i].data();
                v.push_back(x);
            }
            return grp_write_servers_ok(wr, id, v.data(), static_cast<uint32_t>(v.size()), e);
        }
    }

    int answer_schedule(grw_writer *wr, uint64_t id, const grp_schedule &m, gr_err *e) {
        std::lock_guard<std::mutex> g(mu_);
        schedules_.push_back(m);
        for (const Server &s : script_) {
            bool ex = std::find(m.exclude, m.exclude + m.nexclude, s.id) != m.exclude + m.nexclude;
            bool has = std::any_of(s.functions.begin(), s.functions.end(),
                                   [&](const std::string &f) { return same_function(f, m.function); });
            if (!s.up || ex || !has) continue;
            grp_schedule_ok ok{};
            ok.decision = next_decision_++;
            ok.server_id = s.id;
            snprintf(ok.host, sizeof ok.host, "%s", s.host.c_str());
            ok.port = static_cast<uint32_t>(s.port);
            answers_.push_back(ok);
            return grp_write_schedule_ok(wr, id, &ok, e);
        }
        return grp_write_error(wr, id, GRID_ERR_NOT_FOUND, "no server left for the function", e);
    }

    std::vector<Server> script_;
    int lfd_ = -1;
    int port_ = 0;
    std::atomic<bool> stopped_{false};
    std::atomic<int> schedule_delay_ms_{0};
    std::thread acceptor_;
    std::mutex mu_;
    std::vector<int> fds_;
    std::vector<std::thread> conns_;
    std::vector<grp_schedule> schedules_;
    std::vector<grp_report> reports_;
    std::vector<grp_schedule_ok> answers_;
    int servers_requests_ = 0;
    uint64_t next_decision_ = 100;
};
