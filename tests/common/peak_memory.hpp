// The peak resident memory of a program run by a test (tools must stay small whatever their input).
#pragma once

#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace tuned::testing {

struct Peak {
  int exit_code = -1;
  double mb = 0;         // the program's peak resident set (VmHWM), 0 if never read
  bool at_exit = false;  // read when it stopped at its exit (else: sampled while it ran)
  double rusage_mb = 0;  // wait4's ru_maxrss, for comparison
};

// VmHWM of a process that runs `program` (its Name), in MB; 0 if not readable.
inline double peak_of(pid_t pid, const std::string& program) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  bool named = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Name:", 0) == 0) named = line.find(program) != std::string::npos;
    if (named && line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024;  // kB
  }
  return 0;
}

// Runs a program with stdout to `out` (stderr as it is) and returns its peak resident set. wait4's
// ru_maxrss alone does not tell it: a forked child starts with this process's resident pages (the
// CUDA libraries' relocated data make that 190 MB here), and ru_maxrss keeps that high-water mark
// across the exec. So the program is traced and its own VmHWM read from /proc when it stops at its
// exit (PTRACE_O_TRACEEXIT), before its memory is freed; while it runs it is also sampled every 2
// ms, so that a system that forbids tracing still gets a (lower) figure.
inline Peak measure_peak(const std::string& program, const std::vector<std::string>& args,
                         const std::string& out) {
  const std::string name = program.substr(program.find_last_of('/') + 1);
  std::vector<char*> argv{const_cast<char*>(name.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(9);
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);  // stops at the exec (SIGTRAP) if allowed
    execv(program.c_str(), argv.data());
    _exit(8);
  }
  Peak peak;
  if (child < 0) return peak;
  int status = 0;
  struct rusage usage {};
  bool traced = false;
  while (true) {
    const pid_t done = wait4(child, &status, WNOHANG, &usage);
    if (done == 0) {
      peak.mb = std::max(peak.mb, peak_of(child, name.substr(0, 15)));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    if (done != child || WIFEXITED(status) || WIFSIGNALED(status)) break;
    if (!WIFSTOPPED(status)) continue;
    int signal = WSTOPSIG(status);
    if (signal == SIGTRAP && (status >> 16) == PTRACE_EVENT_EXIT) {
      peak.mb = std::max(peak.mb, peak_of(child, name.substr(0, 15)));
      peak.at_exit = true;
      signal = 0;
    } else if (signal == SIGTRAP && !traced) {
      // The stop after the exec: from now on, stop once more at the exit.
      ptrace(PTRACE_SETOPTIONS, child, nullptr, PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL);
      traced = true;
      signal = 0;
    }
    ptrace(PTRACE_CONT, child, nullptr, signal);
  }
  peak.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  peak.rusage_mb = usage.ru_maxrss / 1024.0;  // kB
  return peak;
}

}  // namespace tuned::testing
