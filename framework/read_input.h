// read_input.h — reading an input file once, whatever the path names: a
// regular file, or a FIFO or pipe (`--config <(...)`, `/dev/stdin`) read as
// its writer writes. A reader never waits forever (a FIFO that no process
// writes to is an error after `wait_s` seconds of silence), reads no more
// than its caller asks for (so `/dev/zero` is a bounded read, then an error
// of the caller's), and refuses a directory at once. Each byte is read once:
// a pipe cannot be read twice, so a caller that checks a file up front keeps
// what it read for the run.
//
//   InputReader in(path, 5);               // throws InputError("it is a directory")
//   std::string bytes;
//   in.read(8, &bytes);                    // appends up to 8 bytes; fewer only at the input's end
//   if (!read_input(path, max, 5, &text, &why)) refuse(why);   // the whole input, up to max bytes
//
// InputError's text is the reason alone ("it is a directory", "nothing came
// in 5 s (a FIFO that no process writes to?)", the system's reason); the
// caller names the option and the file.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>

namespace amlp {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class InputReader {
 public:
  // Opens `path` read-only without waiting for a FIFO's writer. Throws InputError.
  InputReader(const std::string& path, int wait_s);
  ~InputReader();
  InputReader(const InputReader&) = delete;
  InputReader& operator=(const InputReader&) = delete;

  // Appends up to `n` bytes to *out: all n unless the input ends first.
  // Returns how many it appended. Throws InputError (a read error, or
  // wait_s seconds without a byte or the writer's end).
  size_t read(size_t n, std::string* out);
  // The file's size when it is a regular file, else -1 (a pipe, a FIFO, a device).
  long long regular_size() const { return regular_size_; }

 private:
  int fd_ = -1;
  int wait_s_;
  long long regular_size_ = -1;
};

// The whole input at `path` into *text (replacing it); false, with *why the
// reason, when it cannot be read, is silent for wait_s seconds, or holds
// more than max_bytes ("it is over <max> MiB: not <what_it_is_not>").
bool read_input(const std::string& path, size_t max_bytes, int wait_s, const std::string& what_it_is_not,
                std::string* text, std::string* why);

}  // namespace amlp
