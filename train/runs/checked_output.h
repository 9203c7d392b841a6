// checked_output.h — train_mlp's stdout with every write checked. The book's
// lines, the tables and the summary go to stdout; a write there that fails
// (a closed pipe: EPIPE, SIGPIPE being ignored; a full disk; a file past
// `ulimit -f`; stdout closed at start) fails the run: the loop stops
// queueing as for a signal, the queued batches finish, the summary and trace
// are written marked failed, one line goes to stderr, exit 1
// (docs/cli.md, Exit statuses).
//
// std::cout is given a buffer that writes fd 1 with write(2) and keeps the
// first error's errno; after it nothing more is written (no half line after
// a gap). A failed write sets the stream's badbit, so `out << ... <<
// std::endl` followed by output_problem(out) is the check.
//
//   install_checked_stdout();                 // main, first thing
//   out << line << std::endl;
//   if (std::string why = output_problem(out); !why.empty()) ...   // "cannot write to stdout: Broken pipe"
#pragma once
#include <iosfwd>
#include <streambuf>
#include <string>

namespace amlp::train {

// A stream buffer over a file descriptor that checks every write: partial
// writes are completed, EINTR retried, EAGAIN (a non-blocking descriptor)
// waited out with poll(2); any other error is kept and ends the writing.
class CheckedFdBuf : public std::streambuf {
 public:
  CheckedFdBuf(int fd, const char* name);  // name: "stdout", for the message
  CheckedFdBuf(const CheckedFdBuf&) = delete;
  CheckedFdBuf& operator=(const CheckedFdBuf&) = delete;

  int error() const { return error_; }  // the first failed write's errno; 0: none
  // "cannot write to stdout: Broken pipe"; "" while every write succeeded.
  std::string problem() const;
  // Fails every write from now on with `err` (a descriptor closed at start).
  void fail(int err);

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  bool write_out(const char* s, size_t n);
  bool drain();  // writes the buffered bytes

  int fd_;
  const char* name_;
  int error_ = 0;
  char buf_[4096];
};

// Ignores SIGPIPE and SIGXFSZ (a closed pipe is then EPIPE from write(2), a
// file past `ulimit -f` EFBIG: a failed run's one line, not a death), opens /dev/null on whichever of fds 0, 1, 2 is closed (so no file the run
// opens takes their number: a memory log on fd 1 would get the book's lines),
// and makes std::cout write through a CheckedFdBuf on fd 1 (left in place
// until exit), failed from the start when fd 1 was closed.
void install_checked_stdout();

// "" when `out` took every write; else the one line that says why not. A
// stream without a buffer (another rank's silent stream) never fails.
std::string output_problem(const std::ostream& out);

}  // namespace amlp::train
