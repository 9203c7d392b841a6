// queue_registry.cpp — every live queue (queue_registry.h).
#include "framework/core/queue/queue_registry.h"

#include <algorithm>
#include <mutex>

namespace amlp::queue_registry {

namespace {

struct Entry {
  Queue* queue;
  bool serves_device;
};
struct Registry {
  std::mutex mu;
  std::vector<Entry> all;
};
Registry& registry() {
  static Registry* r = new Registry;  // leaked: queues may outlive static destruction order
  return *r;
}

}  // namespace

void add(Queue* q) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  r.all.push_back({q, false});
}

void remove(Queue* q) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  r.all.erase(std::remove_if(r.all.begin(), r.all.end(), [q](const Entry& e) { return e.queue == q; }), r.all.end());
}

void serve_device(Queue* q) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  for (Entry& e : r.all)
    if (e.queue == q) e.serves_device = true;
}

void for_each(const std::function<void(Queue&)>& f) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  for (const Entry& e : r.all) f(*e.queue);
}

std::vector<Queue*> device_queues() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  std::vector<Queue*> qs;
  for (const Entry& e : r.all)
    if (e.serves_device) qs.push_back(e.queue);
  return qs;
}

}  // namespace amlp::queue_registry
