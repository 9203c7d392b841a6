// settings.h — process-wide settings every new queue starts with (blocking
// mode, back-pressure), and the one wording of "device absent". A queue
// tells its backend its own (Queue::set_blocking); neither reads the
// process-wide values afterwards. (TF32 is a setting of the CUDA GEMMs,
// which read tf32() as each is launched.)
#pragma once
#include <string>

namespace amlp {
class Queue;
namespace detail {

void apply_settings(Queue& q);    // a new queue takes the current settings
// "device 'cuda:3' is not there: 1 CUDA GPU visible: cuda:0 .. cuda:0": the one
// message for a device that is not there, whatever named it.
std::string device_absent(const std::string& name);

}  // namespace detail
}  // namespace amlp
