//===- Launch.cpp - Starting a command's ranks and watching them end -----===//
#include "tools/weft/Launch.h"

#include "tools/weft/Cli.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace weft::cli {

namespace {

volatile sig_atomic_t gChild = 0;
volatile sig_atomic_t gStop = 0;

/// Passes a signal meant for weft on to its child. A terminal's SIGINT
/// (si_code SI_KERNEL) reaches the child by itself: mpirun takes a second
/// one as "terminate now, whatever the ranks".
void forwardSignal(int sig, siginfo_t *info, void *) {
  gStop = 1;
  if (sig == SIGINT && info && info->si_code != SI_USER &&
      info->si_code != SI_QUEUE)
    return;
  if (gChild > 0)
    ::kill(static_cast<pid_t>(gChild), sig);
}

void writeAll(int fd, const char *data, ssize_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, static_cast<size_t>(size));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return; // stderr closed: the bytes are still counted
    data += n;
    size -= n;
  }
}

/// Copies what is readable on `fd` to stderr; false at its end.
bool relay(int fd, bool &wrote) {
  char buffer[4096];
  ssize_t n = ::read(fd, buffer, sizeof buffer);
  if (n > 0) {
    wrote = true;
    writeAll(STDERR_FILENO, buffer, n);
    return true;
  }
  return n < 0 && (errno == EINTR || errno == EAGAIN);
}

} // namespace

std::vector<char *> execArgv(std::vector<std::string> &args) {
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(&a[0]);
  argv.push_back(nullptr);
  return argv;
}

bool stopRequested() { return gStop != 0; }

int runRanks(int64_t ranks, const std::string &exe,
             const std::vector<std::string> &exeArgs,
             const std::string &whyMpi) {
  const bool mpi = ranks > 1;
  std::vector<std::string> args;
  if (mpi) {
    args = {"mpirun", "--oversubscribe", "-n", std::to_string(ranks)};
    // Open MPI refuses to start as root without these (containers).
    if (::geteuid() == 0) {
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
  }
  args.push_back(exe);
  args.insert(args.end(), exeArgs.begin(), exeArgs.end());
  std::vector<char *> cargs = execArgv(args);

  // stderr of a multi-rank job comes through `err`; `execStatus` carries
  // the child's errno when exec fails (it closes on a successful exec).
  int err[2] = {-1, -1}, execStatus[2] = {-1, -1};
  if ((mpi && ::pipe2(err, O_CLOEXEC) != 0) ||
      ::pipe2(execStatus, O_CLOEXEC) != 0)
    return error(kExitFailure,
                 std::string("cannot create a pipe: ") + std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0)
    return error(kExitFailure,
                 std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    // The ranks' launcher stops with weft, even on kill -9 of weft.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent)
      ::_exit(kExitFailure);
    if (mpi && ::dup2(err[1], STDERR_FILENO) < 0)
      ::_exit(kExitFailure);
    if (mpi)
      ::execvp(cargs[0], cargs.data());
    else
      ::execv(cargs[0], cargs.data());
    int code = errno;
    ssize_t unused = ::write(execStatus[1], &code, sizeof code);
    (void)unused;
    ::_exit(kExitFailure);
  }
  gChild = pid;
  gStop = 0;
  ::close(execStatus[1]);
  if (mpi)
    ::close(err[1]);

  struct sigaction forward = {}, old[3] = {};
  forward.sa_sigaction = forwardSignal;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  const int passed[3] = {SIGINT, SIGTERM, SIGHUP};
  for (int i = 0; i < 3; ++i)
    ::sigaction(passed[i], &forward, &old[i]);
  struct sigaction ignore = {}, oldPipe = {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &oldPipe);

  int execErrno = 0;
  while (::read(execStatus[0], &execErrno, sizeof execErrno) < 0 &&
         errno == EINTR) {
  }
  ::close(execStatus[0]);

  // Relays stderr until the child ends, then what is left of it (a rank's
  // last words may still be in the pipe; anything that still holds the
  // pipe open after the child is gone is not waited for).
  bool wrote = false, open = mpi;
  int status = 0;
  for (;;) {
    if (open) {
      pollfd p = {err[0], POLLIN, 0};
      int ready = ::poll(&p, 1, 200);
      if (ready > 0) {
        open = relay(err[0], wrote);
        continue;
      }
    }
    pid_t done = ::waitpid(pid, &status, open ? WNOHANG : 0);
    if (done == pid)
      break;
    if (done < 0 && errno != EINTR) {
      status = -1;
      break;
    }
  }
  if (open) {
    ::fcntl(err[0], F_SETFL, O_NONBLOCK);
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(err[0], buffer, sizeof buffer)) > 0 ||
           (n < 0 && errno == EINTR))
      if (n > 0) {
        wrote = true;
        writeAll(STDERR_FILENO, buffer, n);
      }
  }
  if (mpi)
    ::close(err[0]);
  gChild = 0;
  for (int i = 0; i < 3; ++i)
    ::sigaction(passed[i], &old[i], nullptr);
  ::sigaction(SIGPIPE, &oldPipe, nullptr);

  if (execErrno != 0)
    return mpi ? error(kExitFailure, std::string("cannot run mpirun: ") +
                                         std::strerror(execErrno) + " (" +
                                         whyMpi + ")")
               : error(kExitFailure, "cannot execute '" + exe +
                                         "': " + std::strerror(execErrno));
  const std::string who =
      mpi ? "the job of " + std::to_string(ranks) + " ranks (mpirun)"
          : "'" + exe + "'";
  if (status == -1)
    return error(kExitFailure,
                 "lost track of " + who + ": " + std::strerror(errno));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return error(kExitFailure, who + " was ended by signal " +
                                   std::to_string(sig) + " (" + strsignal(sig) +
                                   ")");
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : kExitFailure;
  if (code != 0 && mpi && !wrote)
    return error(code, who + " exited with code " + std::to_string(code) +
                           " and no rank, nor MPI, said why on stderr");
  return code;
}

} // namespace weft::cli
