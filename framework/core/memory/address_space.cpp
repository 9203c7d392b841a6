// address_space.cpp — the address-space limits and what is mapped against
// them (address_space.h). No allocation and no exception on the reading path:
// cpu/blas_room.cpp reads it at load, before the C++ runtime has started.
#include "framework/core/memory/address_space.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "framework/parse.h"

namespace amlp::detail {

namespace {

// "Name:   1234 kB" in a status file's text → bytes; 0 when absent.
size_t status_kb(const char* text, const char* name) {
  const size_t n = std::strlen(name);
  for (const char* line = text; *line;) {
    if (std::strncmp(line, name, n) == 0 && line[n] == ':') {
      size_t kb = 0;
      for (const char* p = line + n + 1; *p && *p != '\n'; ++p)
        if (*p >= '0' && *p <= '9') kb = kb * 10 + size_t(*p - '0');
      return kb * 1024;
    }
    const char* next = std::strchr(line, '\n');
    if (!next) break;
    line = next + 1;
  }
  return 0;
}

size_t soft_limit(int resource) {
  struct rlimit r {};
  if (getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return kUnlimited;
  return static_cast<size_t>(r.rlim_cur);
}

// Noted at load (note_mapped_at_start), before any thread but the main one
// exists; constant-initialised, so they hold their values before any
// initialiser runs.
size_t g_start_vm_size = 0, g_start_vm_data = 0;

size_t less(size_t limit, size_t used) { return limit == kUnlimited ? kUnlimited : (limit > used ? limit - used : 0); }

}  // namespace

size_t AddressSpace::left() const {
  const size_t as = less(as_limit, vm_size), data = less(data_limit, vm_data);
  return as < data ? as : data;
}

bool AddressSpace::data_binds() const { return less(data_limit, vm_data) < less(as_limit, vm_size); }

std::string AddressSpace::describe() const {
  if (!limited()) return "no address-space limit";
  if (data_binds())
    return "RLIMIT_DATA (ulimit -d) of " + format_mib(double(data_limit)) + ", " + format_mib(double(vm_data)) +
           " of it mapped";
  return "RLIMIT_AS (ulimit -v) of " + format_mib(double(as_limit)) + ", " + format_mib(double(vm_size)) +
         " of it mapped";
}

AddressSpace read_address_space(const char* proc, size_t as_limit, size_t data_limit) {
  AddressSpace a;
  a.as_limit = as_limit;
  a.data_limit = data_limit;
  char path[4096];
  std::snprintf(path, sizeof path, "%s/self/status", proc);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return a;
  char text[8192];  // /proc/self/status is about 1.5 KB
  size_t got = 0;
  for (ssize_t n; got + 1 < sizeof text && (n = ::read(fd, text + got, sizeof text - 1 - got)) != 0;) {
    if (n < 0) break;
    got += size_t(n);
  }
  ::close(fd);
  text[got] = '\0';
  a.vm_size = status_kb(text, "VmSize");
  a.vm_data = status_kb(text, "VmData");
  return a;
}

AddressSpace address_space_now() {
  const size_t as = soft_limit(RLIMIT_AS), data = soft_limit(RLIMIT_DATA);
  if (as == kUnlimited && data == kUnlimited) return AddressSpace{};
  AddressSpace a = read_address_space("/proc", as, data);
  if (a.vm_size < g_start_vm_size) a.vm_size = g_start_vm_size;
  if (a.vm_data < g_start_vm_data) a.vm_data = g_start_vm_data;
  return a;
}

bool address_space_limited() { return soft_limit(RLIMIT_AS) != kUnlimited || soft_limit(RLIMIT_DATA) != kUnlimited; }

void note_mapped_at_start(size_t vm_size, size_t vm_data, size_t soon) {
  g_start_vm_size = vm_size + soon;
  g_start_vm_data = vm_data + soon;
}

}  // namespace amlp::detail
