#include "tls_transport.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "tls_module_abi.h"

namespace tessera::cli {

namespace {

constexpr char kModuleName[] = "libtessctl-tls.so";

// The directory of the running executable, or empty.
std::filesystem::path ExecutableDir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : self.parent_path();
}

// Where the module may be, in the order tls_transport.h gives.
std::vector<std::string> Candidates() {
  std::vector<std::string> paths;
  if (const char* path = std::getenv("TESSCTL_TLS_MODULE"); path != nullptr && *path != '\0') {
    paths.emplace_back(path);
    return paths;
  }
  const std::filesystem::path dir = ExecutableDir();
  if (!dir.empty()) {
    paths.push_back(dir / kModuleName);
    paths.push_back(dir.parent_path() / "lib" / "tessera" / kModuleName);
#ifdef TESSCTL_LIB_SUBDIR
    paths.push_back(dir.parent_path() / TESSCTL_LIB_SUBDIR / "tessera" / kModuleName);
#endif
  }
  paths.emplace_back(kModuleName);  // the dynamic loader's search path.
  return paths;
}

// Collects what the module writes through a tessctl_tls_output.
struct Collected {
  std::string error;
  std::string body;
  std::string content_type;

  tessctl_tls_output Output() { return {this, &Collected::Set}; }
  static void Set(void* context, tessctl_tls_field field, const char* data, size_t size) {
    auto* self = static_cast<Collected*>(context);
    switch (field) {
      case TESSCTL_TLS_ERROR:
        self->error.assign(data, size);
        break;
      case TESSCTL_TLS_BODY:
        self->body.append(data, size);
        break;
      case TESSCTL_TLS_CONTENT_TYPE:
        self->content_type.assign(data, size);
        break;
    }
  }
};

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* fn, std::string* error) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr) *error = std::string("the TLS module lacks ") + name;
  return *fn != nullptr;
}

}  // namespace

struct TlsTransport::Module {
  void* handle = nullptr;
  tessctl_tls_open_fn open = nullptr;
  tessctl_tls_close_fn close = nullptr;
  tessctl_tls_perform_fn perform = nullptr;
  ~Module() {
    if (handle != nullptr) dlclose(handle);
  }
};

std::shared_ptr<TlsTransport> TlsTransport::Load(const TlsOptions& options, std::string* error) {
  auto module = std::make_unique<Module>();
  std::string tried;
  for (const std::string& path : Candidates()) {
    module->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (module->handle != nullptr) break;
    tried += std::string("\n  ") + dlerror();
  }
  if (module->handle == nullptr) {
    *error = std::string("https:// needs tessctl's TLS module, ") + kModuleName +
             ", which could not be loaded (install it with tessctl, or set TESSCTL_TLS_MODULE "
             "to its path):" +
             tried;
    return nullptr;
  }
  tessctl_tls_abi_fn abi = nullptr;
  if (!Resolve(module->handle, "tessctl_tls_abi", &abi, error) ||
      !Resolve(module->handle, "tessctl_tls_open", &module->open, error) ||
      !Resolve(module->handle, "tessctl_tls_close", &module->close, error) ||
      !Resolve(module->handle, "tessctl_tls_perform", &module->perform, error)) {
    return nullptr;
  }
  if (abi() != TESSCTL_TLS_ABI) {
    *error = "the TLS module speaks version " + std::to_string(abi()) + ", this tessctl " +
             std::to_string(TESSCTL_TLS_ABI) + ": install the module built with it";
    return nullptr;
  }
  Collected collected;
  const tessctl_tls_output out = collected.Output();
  void* context = module->open(options.ca_file.c_str(), options.insecure ? 1 : 0, &out);
  if (context == nullptr) {
    *error = collected.error;
    return nullptr;
  }
  return std::shared_ptr<TlsTransport>(new TlsTransport(std::move(module), context));
}

TlsTransport::TlsTransport(std::unique_ptr<Module> module, void* context)
    : module_(std::move(module)), context_(context) {}

TlsTransport::~TlsTransport() { module_->close(context_); }

HttpResponse TlsTransport::Perform(const std::string& host, const std::string& port,
                                   const std::string& request, std::chrono::milliseconds timeout,
                                   const BodySink* sink) const {
  const tessctl_tls_request call{
      .host = host.c_str(),
      .port = port.c_str(),
      .bytes = request.data(),
      .size = request.size(),
      .timeout_ms = static_cast<int64_t>(timeout.count()),
  };
  tessctl_tls_sink c_sink{};
  if (sink != nullptr) {
    c_sink.context = const_cast<BodySink*>(sink);
    c_sink.write = [](void* context, const char* data, size_t size) {
      return static_cast<BodySink*>(context)->write(data, size) ? 1 : 0;
    };
    if (sink->progress) {
      c_sink.progress = [](void* context, uint64_t received, int64_t total) {
        static_cast<BodySink*>(context)->progress(
            received, total < 0 ? std::nullopt : std::optional<uint64_t>(total));
      };
    }
  }
  Collected collected;
  const tessctl_tls_output out = collected.Output();
  HttpResponse response;
  response.status = module_->perform(context_, &call, sink != nullptr ? &c_sink : nullptr, &out);
  response.body = std::move(collected.body);
  response.content_type = std::move(collected.content_type);
  if (response.status == 0) response.transport_error = std::move(collected.error);
  return response;
}

}  // namespace tessera::cli
