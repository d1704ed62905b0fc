#include "profile/ompenv.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace partex {

namespace {

bool gFromUser = false;
bool gPreinitRan = false;
char gPolicy[32] = "";  // What libgomp read: glibc re-points environ at the original one after the
                        // pre-initialisers, so getenv() later no longer sees what setenv() added.

/// Runs before the shared libraries' constructors (libgomp's reads the environment there): an entry of
/// the executable's .preinit_array. Static libraries bring it into every program that references this
/// file's functions (the executor and the profiler do).
void setPassiveWaitPolicy(int, char**, char** envp) {
  gPreinitRan = true;
  // getenv() cannot be trusted this early (environ may not point at envp yet): read envp itself.
  constexpr char kKey[] = "OMP_WAIT_POLICY=";
  for (char** e = envp; e && *e; ++e)
    if (std::strncmp(*e, kKey, sizeof kKey - 1) == 0) {
      gFromUser = true;
      std::snprintf(gPolicy, sizeof gPolicy, "%s", *e + sizeof kKey - 1);
      return;
    }
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  std::snprintf(gPolicy, sizeof gPolicy, "%s", "PASSIVE");
}

}  // namespace

__attribute__((section(".preinit_array"),
               used)) static void (*const kPreinitWaitPolicy)(int, char**, char**) = &setPassiveWaitPolicy;

std::string ompWaitPolicy() {
  const char* v = gPreinitRan ? gPolicy : std::getenv("OMP_WAIT_POLICY");
  std::string s = v ? v : "";
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s.empty() ? std::string("default") : s;
}

bool ompWaitPolicyFromUser() {
  return gFromUser;
}

}  // namespace partex
