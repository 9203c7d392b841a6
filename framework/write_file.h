// write_file.h — the ways a program's output files are written: a whole file
// (the trace, the run summary) that a reader never sees half of, a file of
// records (the memory log's rows) that never ends in half a record, and the
// check before a run that each can be written and that no two are one file.
// Every failure is one amlp::Error, one line, naming the file (framework/parse.h
// shown_path) and the reason; nothing ever waits for a FIFO's reader.
//
//   write_file("out/summary.json", text);  // throws amlp::Error("cannot write 'out/summary.json': ...")
//   RecordFile log("out/mem.csv", "memory log");  // created or truncated now
//   log.append("1,0.25,...\n");                   // whole, or the file cut back to its last whole record
//   if (std::string why = output_problem(path, OutputWay::Whole); !why.empty()) refuse(why);
//
// What `path` is decides how write_file writes it:
// - absent, or a regular file: the text goes to a temporary of its own in the
//   same directory (`path.tmp.<pid>.<n>`, its name cut to fit a directory
//   entry), which is flushed to disk (fsync), closed (its result checked) and
//   renamed over `path` (keeping an existing file's permissions). On any
//   failure the temporary is removed and the old `path`, if any, is left as
//   it was.
// - a symbolic link to a regular file: the same, at the file it names; the
//   link stays a link. A link to nothing, or a loop of links, is an error.
// - the process's own stdout or stderr (/dev/stdout, or a file that is the
//   same file as one of them): written through that descriptor, after what
//   the program already printed.
// - anything else that exists (a FIFO, a character device such as a terminal
//   or /dev/null): written in place, never created, renamed or replaced;
//   opened without waiting, so a FIFO that no process has open for reading is
//   an error at once instead of a hang; every write is checked, so a full
//   device is an error, not a short file.
#pragma once
#include <sys/types.h>

#include <string>

namespace amlp {

void write_file(const std::string& path, const std::string& content);

// Removes the temporaries that write_file calls in progress have made (their
// targets untouched): for a signal handler about to _exit, which would leave
// them behind. Async-signal-safe (atomics and unlink(2) only).
void remove_temporaries_in_progress();

// A file written record by record as a program goes (a log: one CSV row per
// batch), each record flushed to the kernel as it is appended, so a crash keeps
// every record so far.
class RecordFile {
 public:
  RecordFile() = default;  // writes nothing
  // Opens `path` for writing: a regular file created or truncated, once this
  // writer holds its advisory lock (flock, exclusive, until it is closed: a
  // file another writer holds is an error naming it, left as it is); the
  // process's stdout or stderr written through; a FIFO or device opened as it
  // is, without waiting (a FIFO with no reader is an error at once). `what`
  // names the file in errors: "cannot write <what> '<path>': <reason>".
  // Throws amlp::Error.
  RecordFile(const std::string& path, const std::string& what);
  ~RecordFile();
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;
  RecordFile(RecordFile&& o) noexcept;
  RecordFile& operator=(RecordFile&& o) noexcept;

  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  // Writes `record` (with its newline) in one write(2) where the kernel takes
  // it whole (a pipe takes up to PIPE_BUF bytes at once). When a write fails
  // or stops short (a full disk, a file-size limit), a regular file is cut
  // back to its last whole record and amlp::Error names the file and why; the
  // records before stay.
  void append(const std::string& record);

 private:
  void close_file();

  std::string path_, what_;
  int fd_ = -1;
  bool regular_ = false;  // a file of its own: one that can be cut back
  off_t whole_ = 0;       // the bytes of whole records written so far
};

// How an output is written: whole at the end (write_file) or record by
// record as the program goes (RecordFile).
enum class OutputWay { Whole, Records };

// "" when `path` can be written that way, else why not, one line without the
// path ("it is a directory", "directory 'out' does not exist", "it is a
// symbolic link to 'x', which does not exist", "cannot create a file in
// '/proc': No such file or directory"): the check a program makes before it
// starts its work. The path is opened as it will be opened: a new file is
// created and removed again; a regular file that exists is opened without
// truncating it (Records) or a temporary is created and removed beside it
// (Whole); a file another RecordFile holds (its lock) is refused, naming the
// holder's pid where /proc/locks shows it. A FIFO or a device is not opened
// (that would wake, then end, a reader waiting on a FIFO): only its
// permission is checked; it is opened without waiting when it is written.
std::string output_problem(const std::string& path, OutputWay way);

// The file `path` names, to tell whether two paths are one file: the device
// and inode of the file it leads to where one exists, else the path made
// absolute with ".", ".." and the links of its existing directories resolved.
// "" for a file that writing never replaces or truncates (a FIFO, a device,
// this process's stdout or stderr): several outputs may share one.
std::string file_identity(const std::string& path);

}  // namespace amlp
