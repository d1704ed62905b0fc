#include "profile/ompenv.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <unistd.h>

namespace partex {

namespace {

bool gFromUser = false;
bool gPreinitRan = false;
char gPolicy[32] = "ACTIVE";  // What libgomp read: glibc re-points environ at the original one after the
                        // pre-initialisers, so getenv() later no longer sees what setenv() added.
bool gDeferred = false;  // the second start was left for later (startWithWaitPolicy)
char** gArgv = nullptr;  // the program's argv, for that later start
/// libgomp's spin count under Partex's policy: about 1 ms of spinning (libgomp counts ~100,000 spins per
/// ms) before a team thread sleeps.
constexpr char kSpinCount[] = "100000";

/// Executes the program again, at once, with Partex's policy added to `envp`, marked as Partex's (so
/// that the next start knows the policy is not the user's); returns only when that fails (libgomp's
/// defaults then stay). `userSpin`: the user set GOMP_SPINCOUNT, which is kept.
void startAgain(char** argv, char** envp, bool userSpin) {
  constexpr char kSpin[] = "GOMP_SPINCOUNT=";
  size_t n = 0;
  for (char** e = envp; e && *e; ++e) ++n;
  static char policy[] = "OMP_WAIT_POLICY=ACTIVE";
  static char spin[sizeof kSpin + sizeof kSpinCount] = "";
  static char mark[] = "PARTEX_OMP_ENV=1";
  std::snprintf(spin, sizeof spin, "%s%s", kSpin, kSpinCount);
  std::vector<char*> env(envp, envp + n);
  env.push_back(policy);
  if (!userSpin) env.push_back(spin);
  env.push_back(mark);
  env.push_back(nullptr);
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len > 0 && argv && argv[0]) {
    self[len] = '\0';
    execve(self, argv, env.data());
  }
  std::snprintf(gPolicy, sizeof gPolicy, "%s", "default");  // no second start: libgomp's defaults
}

/// partex-cli's commands that run no kernel unless they measure this machine (a cold calibration cache),
/// and the bare program: their second start waits for startWithWaitPolicy(), so that a command that only
/// reads the cache starts once (the second start was 40% of `partex-cli platforms`' wall time).
bool runsNoKernel(char** argv) {
  if (!argv || !argv[0]) return false;
  const char* base = std::strrchr(argv[0], '/');
  base = base ? base + 1 : argv[0];
  if (std::strcmp(base, "partex-cli") != 0) return false;
  if (!argv[1]) return true;
  static const char* const kCommands[] = {"platforms", "schedule", "simulate", "compare", "inspect",
                                          "algos",     "generate", "render",   "merge",   "status",
                                          "--help",    "-h",       "--version"};
  for (const char* c : kCommands)
    if (std::strcmp(argv[1], c) == 0) return true;
  return false;
}

/// Runs before the shared libraries' constructors (libgomp's reads the environment there): an entry of
/// the executable's .preinit_array. Static libraries bring it into every program that references this
/// file's functions (the executor and the profiler do). A setenv() here is lost: libc's own start-up,
/// which runs after the pre-initialisers and before libgomp's, points environ back at the original
/// array (OMP_DISPLAY_ENV showed libgomp's defaults). So the program executes itself once more, at once,
/// with the variables added, and a marker that says they are Partex's, not the user's; for a command
/// that runs no kernel (runsNoKernel), only when it comes to measure (startWithWaitPolicy).
void setWaitPolicy(int, char** argv, char** envp) {
  gPreinitRan = true;
  gArgv = argv;
  // getenv() cannot be trusted this early (environ may not point at envp yet): read envp itself.
  constexpr char kKey[] = "OMP_WAIT_POLICY=";
  constexpr char kSpin[] = "GOMP_SPINCOUNT=";
  constexpr char kMark[] = "PARTEX_OMP_ENV=";
  bool userSpin = false, marked = false;
  for (char** e = envp; e && *e; ++e) {
    if (std::strncmp(*e, kKey, sizeof kKey - 1) == 0) {
      gFromUser = true;
      std::snprintf(gPolicy, sizeof gPolicy, "%s", *e + sizeof kKey - 1);
    }
    if (std::strncmp(*e, kSpin, sizeof kSpin - 1) == 0) userSpin = true;
    if (std::strncmp(*e, kMark, sizeof kMark - 1) == 0) marked = true;
  }
  if (marked && gFromUser) {  // the second start: the policy is Partex's
    gFromUser = false;
    return;
  }
  if (gFromUser) return;
  if (runsNoKernel(argv)) {
    gDeferred = true;
    std::snprintf(gPolicy, sizeof gPolicy, "%s", "default");
    return;
  }
  startAgain(argv, envp, userSpin);
}

}  // namespace

__attribute__((section(".preinit_array"),
               used)) static void (*const kPreinitWaitPolicy)(int, char**, char**) = &setWaitPolicy;

std::string ompWaitPolicy() {
  const char* v = gPreinitRan ? gPolicy : std::getenv("OMP_WAIT_POLICY");
  std::string s = v ? v : "";
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s.empty() ? std::string("default") : s;
}

bool ompWaitPolicyFromUser() {
  return gFromUser;
}

bool waitPolicyDeferred() {
  return gDeferred;
}

void startWithWaitPolicy() {
  if (!gDeferred) return;
  gDeferred = false;
  std::fflush(nullptr);  // what was printed so far is printed (the new start prints it again)
  startAgain(gArgv, environ, std::getenv("GOMP_SPINCOUNT") != nullptr);
}

}  // namespace partex
