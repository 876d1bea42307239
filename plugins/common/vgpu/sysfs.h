// Sysfs: the few file operations vGPU management does on /sys, behind an interface so that a
// fake can react to writes as the kernel and NVIDIA's driver do (testing/fake_vgpu_sysfs.h).
//
// Paths are absolute sysfs paths ("/sys/class/mdev_bus/0000:3b:00.0"); an implementation maps
// them onto its root. Every call returns 0 or the errno the operation failed with, as a write(2)
// to a sysfs attribute reports the driver's refusal: the caller decides what it means.
//
// RootedSysfs is the real one: the paths under a root directory ("/" on a host, a copied tree in
// a container that mounts the host's /sys elsewhere). It holds no state and is safe to use from
// any thread; what sysfs itself guarantees under concurrent writes is the kernel's business.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera::vgpu {

class Sysfs {
 public:
  virtual ~Sysfs() = default;

  // The whole content of a file. ENOENT for none, EACCES for a write-only attribute.
  [[nodiscard]] virtual int Read(const std::string& path, std::string* content) const = 0;
  // Writes `data` to an attribute in one write(2), as `echo data > path` does (callers add no
  // newline; the kernel attributes used here accept either). The errno is the driver's answer.
  [[nodiscard]] virtual int Write(const std::string& path, std::string_view data) = 0;
  // The names in a directory (no "." or ".."), sorted.
  [[nodiscard]] virtual int List(const std::string& path,
                                 std::vector<std::string>* names) const = 0;
  // The target of a symbolic link, as readlink(2) gives it (often relative: "../0000:3b:00.4").
  [[nodiscard]] virtual int ReadLink(const std::string& path, std::string* target) const = 0;
  // Whether the path names anything (a link is followed; a dangling link does not exist).
  virtual bool Exists(const std::string& path) const = 0;
};

class RootedSysfs : public Sysfs {
 public:
  // `root` is prefixed to every path; "/" or "" reads the host's /sys.
  explicit RootedSysfs(std::string root = "/");

  int Read(const std::string& path, std::string* content) const override;
  int Write(const std::string& path, std::string_view data) override;
  int List(const std::string& path, std::vector<std::string>* names) const override;
  int ReadLink(const std::string& path, std::string* target) const override;
  bool Exists(const std::string& path) const override;

  // The host path of a sysfs path.
  std::string HostPath(const std::string& path) const;

 private:
  std::string root_;
};

// "EEXIST" for EEXIST, and so on for the errnos sysfs writes give; "errno <n>" for others.
std::string ErrnoName(int error);
// "File exists (EEXIST)": strerror's text and the name, for messages.
std::string ErrnoText(int error);

}  // namespace tessera::vgpu
