// asyncmlp_module.cpp — `import asyncmlp`: the public interface
// (framework/asyncmlp.h) for Python, through pybind11. A thin layer: each
// function is one call into the library, so a Python call queues what the
// C++ call queues and returns when it returns; nothing of the engine is here.
//
// The GIL is released wherever a call may wait — every blocker (wait_to_read,
// waitall, asnumpy, item, printing a tensor) and every call that queues an op,
// which back-pressure may block, creation included (NoGil) — so another
// Python thread runs meanwhile. A blocker (Blocker, as_blocker), and a call
// whose op back-pressure holds, hears Ctrl-C and refuses to wait on a device
// its own paused() block holds (poll_blocker).
// A tensor a queued op uses is held by that op in the engine (docs/design.md):
// whatever Python does with its object, the op's memory lives until the op
// has run. The library's errors become Python exceptions with the same line
// (asyncmlp.Error and its subclasses ShapeError, DeviceError, OutOfMemory, ...,
// each also a subclass of the built-in that fits: ValueError, RuntimeError,
// MemoryError). A Python argument of the wrong type is a TypeError, a shape
// read by one converter (shape_of), an object kept by one check (block_of).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <sstream>
#include <tuple>
#include <string>
#include <vector>

#include "framework/asyncmlp.h"

namespace py = pybind11;
using namespace amlp;

namespace {

// The GIL released around a call into the library. Python ends a thread that
// takes the GIL back while the interpreter finalizes (a daemon thread at exit:
// PyThread_exit_thread, a forced unwind). Seen before it asks, the thread
// sleeps instead until the process is gone; met inside PyEval_RestoreThread,
// the unwind passes through this destructor (noexcept(false): a noexcept
// frame would abort the process, "terminate called without an active
// exception") and pybind11's dispatcher, which lets it through.
class NoGil {
 public:
  NoGil() : state_(PyEval_SaveThread()) {}
  ~NoGil() noexcept(false) {
    if (finalizing())
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    PyEval_RestoreThread(state_);
  }
  NoGil(const NoGil&) = delete;
  NoGil& operator=(const NoGil&) = delete;

 private:
  static bool finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
  }
  PyThreadState* state_;
};
// Every call that queues (back-pressure may block it).
using Release = py::call_guard<NoGil>;

// --- blockers --------------------------------------------------------------------
// A blocker waits with the GIL released, marked as a Python blocker of its
// thread (BlockerMark), so that the library's blocker poll (set_blocker_poll,
// installed at import) hears it: about every 10 ms the main thread's blocker
// runs Python's signal handlers, and one that raises (Ctrl-C:
// KeyboardInterrupt) ends the wait with that exception; a blocker on a device
// its own thread holds in `with paused(dev):` raises at once. The queued work
// stays queued and runs; what the blocker would have read arrives for a later one.
thread_local int in_blocker = 0;
unsigned long main_thread = 0;  // Python runs signal handlers in its main thread only

struct BlockerMark {
  BlockerMark() { ++in_blocker; }
  ~BlockerMark() { --in_blocker; }
};
using Blocker = py::call_guard<BlockerMark, NoGil>;
template <class F>
auto as_blocker(F&& wait) {
  BlockerMark mark;
  NoGil nogil;
  return wait();
}

// The devices held by `with paused(dev):` blocks, with the thread that entered each.
std::mutex paused_mu;
std::multiset<std::pair<std::thread::id, std::string>> paused_by;

// QueuePause, known to the blockers of the thread that holds it.
struct PythonPause {
  explicit PythonPause(Device d) : pause(d), key(std::this_thread::get_id(), d.str()) {
    std::lock_guard<std::mutex> lk(paused_mu);
    paused_by.insert(key);
  }
  ~PythonPause() {
    std::lock_guard<std::mutex> lk(paused_mu);
    paused_by.erase(paused_by.find(key));
  }
  QueuePause pause;
  std::pair<std::thread::id, std::string> key;
};

void poll_blocker(const std::string& queue, bool paused, PolledWait wait) {
  // A push that back-pressure holds (set_max_pending) is heard from any call: an op's.
  if (!in_blocker && wait != PolledWait::Push) return;  // a wait the module did not start as a blocker
  if (paused) {
    std::lock_guard<std::mutex> lk(paused_mu);
    if (paused_by.count({std::this_thread::get_id(), queue})) {
      if (wait == PolledWait::Push)
        throw WaitInterrupted("an op inside `with asyncmlp.paused(" + queue + "):` past set_max_pending's bound would " +
                              "wait for ever: " + queue + " starts the ops queued in the block when it ends");
      throw WaitInterrupted("a blocker inside `with asyncmlp.paused(" + queue + "):` would wait for ever: " + queue +
                            " starts the ops queued in the block when it ends (block after it)");
    }
  }
  if (PyThread_get_thread_ident() != main_thread) return;
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw WaitInterrupted("interrupted");  // the handler's exception stays set
}

// A member function bound with its object taken by reference: pybind11 passes
// a member function pointer's `self` as a pointer, which None makes null (a
// segfault); a reference makes None a TypeError. Every method bound from a
// member function goes through it.
template <class C, class R, class... A>
auto by_ref(R (C::*f)(A...) const) {
  return [f](const C& c, A... a) -> R { return (c.*f)(std::forward<A>(a)...); };
}
template <class C, class R, class... A>
auto by_ref(R (C::*f)(A...)) {
  return [f](C& c, A... a) -> R { return (c.*f)(std::forward<A>(a)...); };
}

std::string type_name(py::handle h) { return py::str(py::type::handle_of(h).attr("__name__")); }

// One dimension of a shape: an int (or anything with __index__, such as a
// NumPy integer) that fits in 64 bits. A float, a bool or another type is a
// TypeError; a dimension past int64 a ShapeError, as a negative one is (the
// library's numel()).
int64_t dim_of(const char* op, py::handle d) {
  if (PyBool_Check(d.ptr()) || !PyIndex_Check(d.ptr()))
    throw py::type_error(detail::concat(op, ": a shape's dimensions are ints, got ", type_name(d), " ",
                                        std::string(py::repr(d))));
  const auto i = py::reinterpret_steal<py::object>(PyNumber_Index(d.ptr()));
  if (!i) throw py::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow)
    throw ShapeError(detail::concat(op, ": dimension ", std::string(py::repr(i)), " exceeds ",
                                    std::numeric_limits<int64_t>::max()));
  return v;
}

// The one conversion of a Python shape: an int, or a sequence of ints (a
// tuple, a list; not a string). Every binding that takes a shape calls it.
Shape shape_of(const char* op, py::handle shape) {
  if (PyIndex_Check(shape.ptr()) && !PyBool_Check(shape.ptr())) return {dim_of(op, shape)};
  if (PyUnicode_Check(shape.ptr()) || PyBytes_Check(shape.ptr()) || !PySequence_Check(shape.ptr()))
    throw py::type_error(detail::concat(op, ": the shape must be an int or a sequence of ints, got ",
                                        type_name(shape), " ", std::string(py::repr(shape))));
  Shape s;
  for (const py::handle d : py::reinterpret_borrow<py::sequence>(shape)) s.push_back(dim_of(op, d));
  return s;
}

// The one check of an object a binding keeps (a block, a net): None or
// another type is a TypeError naming the argument, never a null held.
std::shared_ptr<Block> block_of(const char* op, const char* what, py::handle b) {
  if (b.is_none() || !py::isinstance<Block>(b))
    throw py::type_error(detail::concat(op, ": ", what, " must be a Block (Dense, ReLU, Sequential, ...), got ",
                                        type_name(b)));
  return b.cast<std::shared_ptr<Block>>();
}

Device device_of(py::handle d) {
  if (d.is_none()) return Device::cpu();
  if (py::isinstance<Device>(d)) return d.cast<Device>();
  if (!py::isinstance<py::str>(d))
    throw py::type_error("device must be a Device (asyncmlp.cpu(i), asyncmlp.gpu(i)), a string such as 'cpu:1', "
                         "or None, got " +
                         type_name(d));
  return parse_device(d.cast<std::string>());  // "cpu", "cuda:1": DeviceError when absent
}

// A NumPy array (or what np.asarray takes: a list, a scalar) as a float32
// tensor, copied at once as from_host does. Values of a numeric dtype (bool,
// integers, floats) are converted; other dtypes (object, structured, strings,
// complex) are a TypeError. The element count is checked, and the bytes
// against the device's limit, before any converted copy is made.
Tensor array_from_numpy(const py::handle values, const py::handle device) {
  if (values.is_none()) throw py::type_error("array(): values must be a NumPy array or a sequence of numbers, got None");
  const py::array a = py::module_::import("numpy").attr("asarray")(values);
  const char kind = a.dtype().kind();
  if (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f')
    throw py::type_error(detail::concat("array(): cannot read values of dtype ", std::string(py::str(a.dtype())),
                                        " as float32 (a numeric dtype is needed)"));
  const Shape s(a.shape(), a.shape() + a.ndim());
  const Device d = device_of(device);
  const int64_t n = numel(s);  // ShapeError past what a tensor can hold
  // Values past the device's limit on their own: the pool's error (its cache
  // released first, as the pool does) before NumPy makes a converted copy.
  if (const size_t limit = memory_stats(d).limit_bytes; limit && static_cast<uint64_t>(n) > limit / sizeof(float)) {
    {
      NoGil nogil;
      empty_cache(d);
    }
    const MemoryStats pool = memory_stats(d);
    throw OutOfMemory(d.str(), static_cast<size_t>(n) * sizeof(float), pool.bytes_in_use, pool.reserved_bytes, limit);
  }
  const auto f = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!f) throw py::error_already_set();  // NumPy's own error (a MemoryError for its copy)
  NoGil nogil;
  return from_host(s, f.data(), d);
}

// A tensor's values as a NumPy float32 array of its shape: waits for its writer.
// The array owns the copied-out values (no second copy).
py::array_t<float> to_numpy(const Tensor& t) {
  auto values = std::make_unique<std::vector<float>>(as_blocker([&] { return t.to_host(); }));
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  float* data = values->data();
  py::capsule owner(values.release(), [](void* v) { delete static_cast<std::vector<float>*>(v); });
  return py::array_t<float>(shape, data, owner);
}

// A Python-made block inside a Sequential: the Sequential holds a share of it.
struct SharedBlock : Block {
  explicit SharedBlock(std::shared_ptr<Block> b) : block(std::move(b)) {}
  Tensor forward(const Tensor& x) override { return block->forward(x); }
  std::vector<Parameter*> parameters() override { return block->parameters(); }
  std::string describe() const override { return block->describe(); }
  std::shared_ptr<Block> block;
};

// A library guard as a Python context manager: `with asyncmlp.NAME(args):`
// holds a Guard(args) for the block (def_scope() binds __enter__/__exit__).
template <class Guard, class... Args>
struct Scope {
  explicit Scope(Args... a) : args(a...) {}
  void enter() {
    guard = std::apply([](const Args&... a) { return std::make_unique<Guard>(a...); }, args);
  }
  void exit() { guard.reset(); }
  std::tuple<Args...> args;
  std::unique_ptr<Guard> guard;
};
// `with asyncmlp.no_grad():` — ops inside record nothing for autograd.
using NoGrad = Scope<NoGradGuard>;
// `with asyncmlp.data_queue(dev):` — ops queued inside go to the device's data
// queue, which runs beside its main queue (data drawn ahead, as MXNet's engine
// runs independent ops).
using DataQueue = Scope<DataQueueGuard, Device>;
// `with asyncmlp.paused(dev):` — the device's worker held still: ops queue,
// none starts, to see the frontend alone (a blocker on that device inside it
// raises asyncmlp.Error instead of waiting for ever: poll_blocker).
using PausedQueue = Scope<PythonPause, Device>;

template <class S>
py::class_<S> def_scope(py::module_& m, const char* name, const char* doc) {
  return py::class_<S>(m, name, doc)
      .def(
          "__enter__",
          [](S& s) -> S& {
            s.enter();
            return s;
          },
          "start the block")
      .def(
          "__exit__", [](S& s, const py::args&) { s.exit(); }, "end the block (whatever it raised)");
}

AllocPolicy policy_named(const std::string& name) {
  AllocPolicy p;
  if (alloc_policy_named(name, &p)) return p;
  throw ShapeError("set_alloc: the policy must be 'enqueue', 'run' or 'stream' (got '" + name + "')");
}

// Tensor.reshape(2, 3) or Tensor.reshape((2, 3)).
Shape reshape_args(const py::args& args) {
  return shape_of("reshape", args.size() == 1 ? py::handle(args[0]) : py::handle(args));
}

// A creation op: its shape and device read with the GIL held, then queued
// without it (back-pressure may block the push).
template <class Make>
Tensor create(const char* op, py::handle shape, py::handle device, Make make) {
  const Shape s = shape_of(op, shape);
  const Device d = device_of(device);
  NoGil nogil;
  return make(s, d);
}

// A library op that Python calls by another name (normal is randn with a
// mean and a deviation): its refusal names the Python call, with the same class.
template <class F>
Tensor called_as(const char* lib, const char* py_name, F&& f) {
  try {
    return f();
  } catch (const ShapeError& e) {
    const std::string what = e.what(), prefix = std::string(lib) + ": ";
    if (what.rfind(prefix, 0) != 0) throw;
    throw ShapeError(py_name + (": " + what.substr(prefix.size())));
  }
}

// Whether `block` is `target` or holds it (a Sequential's Python-made blocks
// are SharedBlocks): a Sequential added into itself would recurse for ever.
bool holds(Block& block, const Block* target) {
  if (&block == target) return true;
  if (auto* shared = dynamic_cast<SharedBlock*>(&block)) return holds(*shared->block, target);
  if (auto* seq = dynamic_cast<Sequential*>(&block))
    for (size_t i = 0; i < seq->size(); ++i)
      if (holds((*seq)[i], target)) return true;
  return false;
}

// SGD over a net's parameters, taken at the first step: a Dense layer without
// in_units has none until its first forward (deferred initialisation).
struct PySGD {
  PySGD(std::shared_ptr<Block> net, float lr, float momentum, float wd)
      : net(std::move(net)), lr(lr), momentum(momentum), wd(wd) {}
  void step(int64_t batch_size) {
    if (!sgd) sgd = std::make_unique<SGD>(net->parameters(), lr, momentum, wd);
    sgd->step(batch_size);
  }
  void zero_grad() {
    if (sgd) sgd->zero_grad();
  }
  std::shared_ptr<Block> net;  // the parameters SGD points at live in it
  float lr, momentum, wd;
  std::unique_ptr<SGD> sgd;
};

// The library's errors as Python classes: asyncmlp.Error (a RuntimeError, as
// MXNet's MXNetError is) and one subclass per library error, which also
// subclasses the built-in that fits it, so `except ValueError` catches a
// ShapeError. A KernelError carries its op, device and sequence number as
// attributes. One translator raises each.
struct ErrorClasses {
  PyObject *error, *shape, *device, *env, *oom, *dropped, *fault, *kernel;
};
ErrorClasses errors;

PyObject* def_error(py::module_& m, const char* name, PyObject* base, PyObject* builtin, const char* doc) {
  const py::tuple bases = builtin ? py::make_tuple(py::handle(base), py::handle(builtin)) : py::make_tuple(py::handle(base));
  PyObject* cls = PyErr_NewExceptionWithDoc(("asyncmlp." + std::string(name)).c_str(), doc, bases.ptr(), nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));  // the module holds a reference; `errors` keeps ours for the process
  return cls;
}

void def_errors(py::module_& m) {
  errors.error = def_error(m, "Error", PyExc_RuntimeError, nullptr, "an error of the library (a RuntimeError); its subclasses say which");
  errors.shape = def_error(m, "ShapeError", errors.error, PyExc_ValueError,
                           "arguments that do not fit: shapes, sizes, settings (also a ValueError)");
  errors.device = def_error(m, "DeviceError", errors.error, PyExc_RuntimeError,
                            "a device that does not parse or is not there, or tensors on two devices (also a RuntimeError)");
  errors.env = def_error(m, "EnvError", errors.error, PyExc_RuntimeError,
                         "a variable of the environment holds a value the library does not take (also a RuntimeError)");
  errors.oom = def_error(m, "OutOfMemory", errors.error, PyExc_MemoryError,
                         "a device's pool could not give the memory asked for (also a MemoryError)");
  errors.dropped = def_error(m, "Dropped", errors.error, PyExc_RuntimeError,
                             "the output of an op its queue dropped before it ran (also a RuntimeError)");
  errors.fault = def_error(m, "DeviceFault", errors.error, PyExc_RuntimeError,
                           "a device found failed after work was launched on it (also a RuntimeError)");
  errors.kernel = def_error(m, "KernelError", errors.error, PyExc_RuntimeError,
                            "an op failed on its device's worker, raised by the next blocker (also a RuntimeError); "
                            "attributes: op (its name), device ('cpu:0'), sequence (its number on the queue)");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      std::rethrow_exception(p);
    } catch (const KernelError& e) {
      py::object exc = py::reinterpret_borrow<py::object>(errors.kernel)(e.what());
      exc.attr("op") = e.op;
      exc.attr("device") = e.device;
      exc.attr("sequence") = e.seq;
      PyErr_SetObject(errors.kernel, exc.ptr());
    } catch (const ShapeError& e) {
      PyErr_SetString(errors.shape, e.what());
    } catch (const DeviceError& e) {
      PyErr_SetString(errors.device, e.what());
    } catch (const EnvError& e) {
      PyErr_SetString(errors.env, e.what());
    } catch (const OutOfMemory& e) {
      PyErr_SetString(errors.oom, e.what());
    } catch (const Dropped& e) {
      PyErr_SetString(errors.dropped, e.what());
    } catch (const DeviceFault& e) {
      PyErr_SetString(errors.fault, e.what());
    } catch (const WaitInterrupted& e) {  // a blocker poll's: a signal handler's exception, or its line
      if (!PyErr_Occurred()) PyErr_SetString(errors.error, e.what());
    } catch (const Error& e) {
      PyErr_SetString(errors.error, e.what());
    }
  });
}

// memory_stats() and queue_stats() as a dict: every field of the record, by
// the name framework/stats.h declares it under (for_each_field), in its order.
template <typename Stats>
py::dict stats_dict(const Stats& s) {
  py::dict out;
  for_each_field(s, [&out](const std::string& name, auto value, const char*) { out[py::str(name)] = value; });
  return out;
}

}  // namespace

PYBIND11_MODULE(_asyncmlp, m) {
  m.doc() = "asyncmlp: every op queued to its device's worker; Python returns at once (framework/asyncmlp.h)";
  m.attr("__version__") = ASYNCMLP_VERSION;  // CMakeLists.txt's project(VERSION), the wheel's too
  // The module keeps a reader's machine: a loop that drops what it made holds
  // one iteration's memory, as in PyTorch ('enqueue', by name, shows the backlog's).
  set_alloc_policy(AllocPolicy::Stream);
  main_thread = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  set_blocker_poll(&poll_blocker);

  // --- errors: one Python class per library error, its message the library's
  // line; each also subclasses the built-in a Python user catches.
  def_errors(m);

  // --- devices
  py::class_<Device>(m, "Device", "a device: cpu(i) or gpu(i), each with a queue and a worker of its own")
      .def_property_readonly("is_cuda", by_ref(&Device::is_cuda), "whether this is a CUDA device")
      .def_property_readonly(
          "index", [](const Device& d) { return d.index; }, "its number among the devices of its kind")
      .def("__str__", by_ref(&Device::str), "its name: 'cpu:0', 'cuda:1'")
      .def(
          "__repr__", [](const Device& d) { return "Device('" + d.str() + "')"; }, "its repr, as Device('cpu:0')")
      .def(
          "__eq__", [](const Device& a, const Device& b) { return a == b; }, py::arg("other"),
          "the same kind and index")
      .def(
          "__hash__", [](const Device& d) { return std::hash<std::string>()(d.str()); },
          "the hash of its name (devices key dicts)");
  m.def("cpu", &Device::cpu, py::arg("i") = 0, "CPU device i (a queue and a worker of its own)");
  m.def("gpu", &Device::cuda, py::arg("i") = 0, "CUDA device i (MXNet's name)");
  m.def("cuda", &Device::cuda, py::arg("i") = 0, "CUDA device i");
  m.def("num_gpus", &cuda_device_count, "GPUs this process sees (0 in a build without CUDA)");
  m.def(
      "device", [](const std::string& s) { return parse_device(s); }, py::arg("name"),
      "the device of a name: 'cpu', 'cpu:1', 'cuda:0', or 'auto' (cuda:0 where a GPU is seen, else cpu:0); "
      "DeviceError for a name that does not parse or a device that is not there");

  // --- tensors and their blockers
  py::class_<Tensor>(m, "Tensor",
                     "float32 values of a shape on one device, written by queued ops; made by ones, zeros, full, "
                     "normal, uniform, randn, array and the ops (never by Tensor() itself)")
      .def_property_readonly(
          "shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); }, "the shape, a tuple of ints")
      .def_property_readonly("ndim", by_ref(&Tensor::ndim), "the number of dimensions, len(shape)")
      .def_property_readonly("size", by_ref(&Tensor::numel), "the number of elements, the product of shape")
      .def_property_readonly("device", by_ref(&Tensor::device), "the Device it lives on")
      .def_property_readonly(
          "dtype", [](const Tensor&) { return py::dtype::of<float>(); }, "numpy.float32: every tensor's")
      .def("wait_to_read", by_ref(&Tensor::wait_to_read), Blocker(),
           "block until the op that last wrote this tensor has run (raises what it raised)")
      .def("asnumpy", &to_numpy, "block, then copy out: a NumPy float32 array of this shape")
      .def("numpy", &to_numpy, "block, then copy out: a NumPy float32 array of this shape (asnumpy)")
      .def(
          "__array__",
          [](const Tensor& t, const py::object& dtype) -> py::object {
            py::array values = to_numpy(t);
            return dtype.is_none() ? py::object(values) : values.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none(),
          "numpy.asarray(t): block, then copy out (a float32 array of this shape, or of `dtype`)")
      .def("item", by_ref(&Tensor::item), Blocker(), "block, then the one value of a one-element tensor (any shape)")
      .def("__float__", by_ref(&Tensor::item), Blocker(), "float(t): block, then the one value of a one-element tensor")
      .def("__repr__",
           [](const Tensor& t) {  // blocks, as printing an NDArray does
             return as_blocker([&] {
               std::ostringstream os;
               os << t;
               return os.str();
             });
           },
           "block, then 'Tensor(2, 3) on cpu:0 [...]' (its shape, device and leading values)")
      .def_property(
          "requires_grad", by_ref(&Tensor::requires_grad), [](Tensor& t, bool on) { t.requires_grad_(on); },
          "whether ops that use this tensor record for autograd (a leaf: its grad is kept)")
      .def("requires_grad_", by_ref(&Tensor::requires_grad_), py::arg("on").none(false) = true,
           py::return_value_policy::reference_internal, "set requires_grad; returns this tensor")
      .def_property_readonly(
          "grad",
          [](const Tensor& t) -> py::object {
            const Tensor g = t.grad();
            return g.defined() ? py::cast(g) : py::none();
          },
          "the gradient of the last backward(), this tensor's shape (None before one)")
      .def("backward", by_ref(&Tensor::backward), Release(),
           "queue the gradients of every leaf this tensor depends on (a head gradient of ones of its shape)")
      .def(
          "__add__", [](const Tensor& a, const Tensor& b) { return add(a, b); }, Release(), py::arg("other"), "t + u: elementwise, both of one shape and device (queued)")
      .def(
          "__add__", [](const Tensor& a, float s) { return add_scalar(a, s); }, Release(), py::arg("other"), "t + s: s added to every element (queued)")
      .def(
          "__radd__", [](const Tensor& a, float s) { return add_scalar(a, s); }, Release(), py::arg("other"), "s + t: s added to every element (queued)")
      .def(
          "__sub__", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, Release(), py::arg("other"), "t - u: elementwise, both of one shape and device (queued)")
      .def(
          "__sub__", [](const Tensor& a, float s) { return add_scalar(a, -s); }, Release(), py::arg("other"), "t - s: s taken from every element (queued)")
      .def(
          "__rsub__", [](const Tensor& a, float s) { return add_scalar(scale(a, -1.f), s); }, Release(), py::arg("other"), "s - t: every element taken from s (queued)")
      .def(
          "__mul__", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, Release(), py::arg("other"), "t * u: elementwise, both of one shape and device (queued)")
      .def(
          "__mul__", [](const Tensor& a, float s) { return scale(a, s); }, Release(), py::arg("other"), "t * s: every element times s (queued)")
      .def(
          "__truediv__", [](const Tensor& a, float s) { return scale(a, 1.f / s); }, Release(), py::arg("other"), "t / s: every element divided by the scalar s (queued)")
      .def(
          "__rmul__", [](const Tensor& a, float s) { return scale(a, s); }, Release(), py::arg("other"), "s * t: every element times s (queued)")
      .def(
          "__neg__", [](const Tensor& a) { return scale(a, -1.f); }, Release(), "-t: every element negated, the same shape (queued)")
      .def(
          "__matmul__", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, Release(), py::arg("other"), "t @ u: the matrix product, (n, k) @ (k, m) -> (n, m) (queued)")
      .def(
          "sum", [](const Tensor& a) { return sum(a); }, Release(), "the sum of every element: a 0-d tensor, shape () (queued)")
      .def(
          "mean", [](const Tensor& a) { return mean(a); }, Release(), "the mean of every element: a 0-d tensor, shape () (queued)")
      .def(
          "copyto", [](const Tensor& a, const Device& d) { return copy_to(a, d); }, Release(), py::arg("device"), "a copy on `device`, the same shape (queued after this tensor's writer)")
      .def(
          "reshape", [](const Tensor& a, const py::args& shape) { return reshape(a, reshape_args(shape)); },
          "t.reshape(2, 3) or t.reshape((2, 3)): the same buffer with another shape of as many elements (one -1 "
          "inferred); differentiable; no op is queued");

  m.def(
      "array", [](const py::object& v, const py::object& d) { return array_from_numpy(v, d); }, py::arg("values"),
      py::arg("device") = py::none(),
        "a tensor of a NumPy array's shape holding its values as float32 (any numeric dtype and layout, or what "
        "numpy.asarray takes; copied at once, then queued to the device)");
  m.def(
      "ones",
      [](const py::object& s, const py::object& d) {
        return create("ones", s, d, [](const Shape& s, Device d) { return ones(s, d); });
      },
      py::arg("shape"), py::arg("device") = py::none(),
      "a tensor of `shape` (an int or a tuple of ints) filled with ones, on `device` (a Device, its name, or None: "
      "cpu(0)); queued");
  m.def(
      "zeros",
      [](const py::object& s, const py::object& d) {
        return create("zeros", s, d, [](const Shape& s, Device d) { return zeros(s, d); });
      },
      py::arg("shape"), py::arg("device") = py::none(),
      "a tensor of `shape` (an int or a tuple of ints) filled with zeros, on `device` (a Device, its name, or None: "
      "cpu(0)); queued");
  m.def(
      "full",
      [](const py::object& s, float v, const py::object& d) {
        return create("full", s, d, [v](const Shape& s, Device d) { return full(s, v, d); });
      },
      py::arg("shape"), py::arg("value"), py::arg("device") = py::none(),
      "a tensor of `shape` (an int or a tuple of ints) filled with `value` (as float32), on `device`; queued");
  m.def(
      "normal",
      [](float loc, float scale, const py::object& s, const py::object& d) {
        return create("normal", s, d, [=](const Shape& s, Device d) {
          return called_as("randn", "normal", [&] { return randn(s, d, loc, scale); });
        });
      },
      py::arg("loc") = 0.f, py::arg("scale") = 1.f, py::arg("shape") = py::make_tuple(1),
      py::arg("device") = py::none(), "a tensor of `shape` drawn from N(loc, scale²) (finite, scale >= 0) on the device's queue "
      "(manual_seed's stream)");
  m.def(
      "uniform",
      [](float low, float high, const py::object& s, const py::object& d) {
        return create("uniform", s, d, [=](const Shape& s, Device d) {
          return called_as("rand_uniform", "uniform", [&] { return rand_uniform(s, d, low, high); });
        });
      },
      py::arg("low") = 0.f, py::arg("high") = 1.f, py::arg("shape") = py::make_tuple(1),
      py::arg("device") = py::none(), "a tensor of `shape` drawn from U[low, high) (finite, low <= high) on the device's queue "
      "(manual_seed's stream)");
  m.def(
      "reshape", [](const Tensor& a, const py::object& s) { return reshape(a, shape_of("reshape", s)); }, py::arg("a"),
      py::arg("shape"),
      "a's buffer with another shape of as many elements (an int or a tuple; one -1 inferred); differentiable; no "
      "op is queued");
  m.def(
      "randn",
      [](const py::object& s, const py::object& d) {
        return create("randn", s, d, [](const Shape& s, Device d) { return randn(s, d); });
      },
      py::arg("shape"), py::arg("device") = py::none(),
      "a tensor of `shape` drawn from N(0, 1) on the device's queue (manual_seed's stream)");
  m.def("manual_seed", py::overload_cast<uint64_t>(&manual_seed), py::arg("seed"),
        "restart the random stream (Philox) at `seed` (0 .. 2**64-1): the draws after it repeat on every backend");
  m.def(
      "dot", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, py::arg("a"), py::arg("b"), Release(),
      "the matrix product: a (n, k) and b (k, m), one device -> (n, m); queued");
  m.def(
      "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, py::arg("a"), py::arg("b"), Release(),
      "the matrix product (dot, a @ b): a (n, k) and b (k, m), one device -> (n, m); queued");
  m.def(
      "multiply", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, py::arg("a"), py::arg("b"), Release(),
      "the elementwise product (a * b): a and b of one shape and device -> that shape; queued");
  m.def("relu", &relu, py::arg("a"), Release(), "max(a, 0) elementwise: a tensor of a's shape; queued");
  m.def(
      "sum", [](const Tensor& a) { return sum(a); }, py::arg("a"), Release(),
      "the sum of every element of a (any shape): a 0-d tensor, shape (); queued");
  m.def(
      "mean", [](const Tensor& a) { return mean(a); }, py::arg("a"), Release(),
      "the mean of every element of a (any shape): a 0-d tensor, shape (); queued");
  m.def("waitall", &waitall, Blocker(),
        "block until every queued op on every device has run; raises the first error one of them kept");
  m.def("check_finite", &check_finite, py::arg("a"), py::arg("what") = "check_finite", Release(),
        "queue a check that every value of `a` (any shape) is finite: the next blocker on its device raises "
        "KernelError (its op, device and sequence as attributes; `what` in its line) if one is NaN or infinite");

  // --- settings and statistics (runtime.h)
  m.def("set_blocking", &set_blocking, py::arg("on").none(false), "synchronous mode: every push waits for its op");
  m.def("blocking", &blocking, "whether synchronous mode is on (set_blocking)");
  m.def(
      "set_alloc", [](const std::string& name) { set_alloc_policy(policy_named(name)); }, py::arg("policy"),
      "when an op's outputs get memory: 'stream' (the module's default; PyTorch's caching allocator: a "
      "dropped tensor's block serves the next op on its queue at once), 'enqueue' (when queued: every "
      "pending op holds its outputs) or 'run' (MXNet: when the op starts)");
  m.def(
      "alloc", [] { return std::string(to_string(alloc_policy())); }, "the allocation policy: 'stream', 'enqueue' or 'run'");
  m.def("set_grad_enabled", &set_grad_enabled, py::arg("on").none(false),
        "record ops for autograd on this thread (on by default)");
  m.def("grad_enabled", &grad_enabled, "whether ops on this thread record for autograd");
  m.def("set_max_pending", &set_max_pending, py::arg("ops"), py::arg("bytes") = 0,
        "back-pressure: a push past either bound blocks (0: unbounded)");
  m.def(
      "set_memory_limit",
      [](const Device& d, size_t bytes) { set_memory_limit(d, bytes, "asyncmlp.set_memory_limit()"); },
      py::arg("device"), py::arg("bytes"),
      "the most bytes the device's pool may reserve (0: no limit); a request past it is an OutOfMemory");
  m.def(
      "memory_stats", [](const Device& d) { return stats_dict(memory_stats(d)); }, py::arg("device"),
      "the device pool's bytes in use, peak, reserved, allocations, fresh memory backed");
  m.def(
      "queue_stats", [](const Device& d) { return stats_dict(queue_stats(d)); }, py::arg("device"),
      "the device queue's ops pushed, launched, completed, its backlog, its worker's busy seconds");
  // A point on a device's own timeline (a queued op; on CUDA an event): two
  // give the device's seconds between them, which on a GPU the host's clock cannot.
  py::class_<DeviceTimer>(m, "DeviceTimer", "a point on a device's own timeline (DeviceTimer.mark(device))")
      .def_static("mark", &DeviceTimer::mark, Release(), py::arg("device"), "queue a point on the device's timeline")
      .def("reached", by_ref(&DeviceTimer::reached), "has the device got here? (never blocks)")
      .def("seconds_since", by_ref(&DeviceTimer::seconds_since), Blocker(), py::arg("earlier"),
           "wait for both points, then the device's seconds from `earlier` to this one");
  m.def("reset_peaks", &reset_peaks, py::arg("device"), "restart the pool's and the queue's peaks from now");
  m.def("empty_cache", &empty_cache, Release(), py::arg("device"), "hand the pool's cached blocks back");
  m.def("process_rss_bytes", &process_rss_bytes, "this process's resident set size (/proc/self/statm)");

  def_scope<PausedQueue>(m, "paused",
                         "with paused(device): the device's worker starts no op until the block ends (ops queue); "
                         "a blocker on that device inside the block raises asyncmlp.Error")
      .def(py::init<Device>(), py::arg("device"), "a pause of `device`, taken as the block starts");
  def_scope<DataQueue>(m, "data_queue",
                       "with data_queue(device): ops queued inside go to the CPU device's data queue, which runs "
                       "beside its main queue (data drawn ahead)")
      .def(py::init<Device>(), py::arg("device"), "the data queue of `device` (a CPU device)");
  def_scope<NoGrad>(m, "no_grad", "with no_grad(): ops inside record nothing for autograd (this thread)")
      .def(py::init<>(), "a scope without autograd recording");

  // --- layers: Dense, ReLU, Sequential, L2Loss, SGD
  py::class_<Block, std::shared_ptr<Block>>(m, "Block", "a layer: Dense, ReLU, Sequential (not made itself)")
      .def(
          "__call__", [](Block& b, const Tensor& x) { return b(x); }, py::arg("x"), Release(),
          "the forward pass on x (batch, features) -> (batch, the block's outputs); queued")
      .def("describe", by_ref(&Block::describe), "its layers in one line: 'Dense(3, relu) -> ReLU'")
      .def(
          "parameters",
          [](Block& b) {
            std::vector<Tensor> out;
            for (Parameter* p : b.parameters()) out.push_back(p->value);
            return out;
          },
          "its parameters' tensors (a Dense's weight (units, in_units) and bias (units,)), none before a deferred "
          "Dense's first forward");
  py::class_<Dense, Block, std::shared_ptr<Dense>>(m, "Dense",
                                                 "a fully connected layer: x (batch, in_units) -> "
                                                 "activation(x @ weight.T + bias), (batch, units)")
      .def(py::init([](int64_t units, const py::object& activation, int64_t in_units) {
             std::string name;
             if (!activation.is_none()) {
               if (!py::isinstance<py::str>(activation))
                 throw py::type_error("Dense: activation must be None or 'relu', got " + type_name(activation));
               name = activation.cast<std::string>();
             }
             if (name != "" && name != "relu")
               throw ShapeError("Dense: activation must be None or 'relu' (got '" + name + "')");
             return std::make_shared<Dense>(units, name == "relu" ? Activation::ReLU : Activation::None, in_units);
           }),
           py::arg("units"), py::arg("activation") = py::none(), py::arg("in_units") = 0,
           "`units` outputs; activation None or 'relu'; in_units 0: taken from the first input (its weights drawn "
           "then)");
  py::class_<ReLU, Block, std::shared_ptr<ReLU>>(m, "ReLU", "max(x, 0) elementwise, x's shape")
      .def(py::init<>(), "a ReLU layer");
  py::class_<Sequential, Block, std::shared_ptr<Sequential>>(m, "Sequential",
                                                             "blocks applied in turn: each one's output the next "
                                                             "one's input")
      .def(py::init<>(), "an empty Sequential")
      .def("add",
           [](Sequential& s, const py::args& blocks) {
             std::vector<std::shared_ptr<Block>> checked;  // all or none added
             for (const py::handle& b : blocks) {
               checked.push_back(block_of("Sequential.add", "a block", b));
               if (holds(*checked.back(), &s)) throw ShapeError("Sequential.add: a Sequential cannot hold itself");
             }
             for (auto& block : checked) s.add(std::make_unique<SharedBlock>(std::move(block)));
           },
           "append blocks (all or none: TypeError for a non-block, ShapeError for one that holds this Sequential)")
      .def("__len__", by_ref(&Sequential::size), "the number of blocks added");
  py::class_<L2Loss>(m, "L2Loss", "the squared-error loss, per example")
      .def(py::init<>(), "an L2 loss")
      .def(
          "__call__", [](const L2Loss& l, const Tensor& p, const Tensor& y) { return l(p, y); }, py::arg("pred"),
          py::arg("label"), Release(),
          "0.5 * mean over columns of (pred - label)**2: pred (batch, c), label (batch, c) or (batch,) when c == 1 "
          "-> (batch,); queued");
  py::class_<PySGD>(m, "SGD", "stochastic gradient descent over a net's parameters")
      .def(py::init([](const py::object& net, float lr, float momentum, float wd) {
             return PySGD(block_of("SGD", "net", net), lr, momentum, wd);
           }),
           py::arg("net"), py::arg("lr"), py::arg("momentum") = 0.f, py::arg("wd") = 0.f,
           "SGD over `net` (a Block) with learning rate lr, momentum and weight decay wd; the parameters are "
           "taken at the first step (after a deferred Dense's first forward)")
      .def("step", by_ref(&PySGD::step), py::arg("batch_size"), Release(),
           "queue one update per parameter, the gradients scaled by 1/batch_size; never blocks")
      .def("zero_grad", by_ref(&PySGD::zero_grad), "drop the gradients (their memory returns once the queued updates ran)");
}
