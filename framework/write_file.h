// write_file.h — the one way a whole output file (the trace, the run
// summary) is written: a reader never sees half a file, and every failure is
// one amlp::Error naming the file and the reason.
//
//   write_file("out/summary.json", text);  // throws amlp::Error("cannot write 'out/summary.json': ...")
//
// What `path` is decides how it is written:
// - absent, or a regular file: the text goes to a temporary of its own in the
//   same directory (`path.tmp.<pid>.<n>`), which is flushed to disk (fsync),
//   closed (its result checked) and renamed over `path` (keeping an existing
//   file's permissions). On any failure the temporary is removed and the old
//   `path`, if any, is left as it was.
// - a symbolic link to a regular file: the same, at the file it names; the
//   link stays a link.
// - the process's own stdout or stderr (/dev/stdout, or a file that is the
//   same file as one of them): written through that descriptor, after what
//   the program already printed.
// - anything else that exists (a FIFO, a character device such as a terminal
//   or /dev/null): written in place, never created, renamed or replaced;
//   every write is checked, so a full device is an error, not a short file.
#pragma once
#include <string>

namespace amlp {

void write_file(const std::string& path, const std::string& content);

}  // namespace amlp
