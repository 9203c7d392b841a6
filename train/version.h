// version.h — the project's version and build description.
#pragma once
#include <string>

namespace amlp::train {
std::string version_string();  // "asyncmlp 0.1.0 (CUDA backend: yes|no)"
}
