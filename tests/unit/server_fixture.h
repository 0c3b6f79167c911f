// server_fixture.h: starts a real gridrpcd on 127.0.0.1 port 0 for a test, learns its
// port from the "listening on HOST:PORT" line, and stops it with SIGTERM (or SIGKILL to
// simulate a crash). Paths come from the environment make check sets: GRIDRPCD (the
// server program) and GRIDRPC_TEST_MODULES (the directory of the built modules).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char **environ;

class TestServer {
  public:
    // Starts gridrpcd with the test, linalg modules and EXTRA arguments.
    explicit TestServer(std::vector<std::string> extra = {}, bool modules = true) {
        const char *prog = getenv("GRIDRPCD");
        const char *mods = getenv("GRIDRPC_TEST_MODULES");
        if (!prog || !mods)
            throw std::runtime_error("GRIDRPCD and GRIDRPC_TEST_MODULES must be set (make check)");
        std::vector<std::string> args = {prog, "--host", "127.0.0.1", "--port", "0", "--log-level", "warn"};
        if (modules) {
            for (const char *m : {"test", "linalg", "nas", "lsq"}) {
                args.push_back("--module");
                args.push_back(std::string(mods) + "/" + m + ".so");
            }
        }
        for (auto &a : extra)
            args.push_back(a);
        std::vector<char *> argv;
        for (auto &a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        int fds[2];
        if (pipe(fds) != 0) throw std::runtime_error("pipe");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
        if (posix_spawn(&pid_, prog, &fa, nullptr, argv.data(), environ) != 0)
            throw std::runtime_error(std::string("cannot start ") + prog);
        posix_spawn_file_actions_destroy(&fa);
        close(fds[1]);
        out_ = fds[0];
        // Wait (bounded) for the listening line.
        std::string line;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (line.find('\n') == std::string::npos) {
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("gridrpcd did not start");
            struct pollfd p = {out_, POLLIN, 0};
            if (poll(&p, 1, 100) <= 0) continue;
            char c[256];
            ssize_t n = read(out_, c, sizeof c);
            if (n <= 0) throw std::runtime_error("gridrpcd exited before listening");
            line.append(c, static_cast<size_t>(n));
        }
        size_t colon = line.rfind(':', line.find('\n'));
        if (line.rfind("listening on ", 0) != 0 || colon == std::string::npos)
            throw std::runtime_error("unexpected first line from gridrpcd: " + line);
        port_ = atoi(line.c_str() + colon + 1);
    }
    ~TestServer() { stop(SIGTERM); }

    int port() const { return port_; }
    pid_t pid() const { return pid_; }
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    std::string url(const std::string &fn) const { return "gridrpc://" + address() + "/" + fn; }

    // Sends SIG and waits (bounded) for the server to exit; returns its exit status.
    int stop(int sig) {
        if (pid_ <= 0) return status_;
        kill(pid_, sig);
        for (int i = 0; i < 300; i++) {
            int st;
            if (waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = -1;
                close(out_);
                status_ = st;
                return st;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        kill(pid_, SIGKILL);
        int st;
        waitpid(pid_, &st, 0);
        pid_ = -1;
        close(out_);
        status_ = st;
        return st;
    }

  private:
    pid_t pid_ = -1;
    int out_ = -1;
    int port_ = 0;
    int status_ = 0;
};
