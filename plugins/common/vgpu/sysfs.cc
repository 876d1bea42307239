#include "vgpu/sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tessera::vgpu {

RootedSysfs::RootedSysfs(std::string root) : root_(std::move(root)) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string RootedSysfs::HostPath(const std::string& path) const {
  if (path.empty() || path.front() != '/') return root_ + "/" + path;
  return root_ + path;
}

int RootedSysfs::Read(const std::string& path, std::string* content) const {
  const int fd = ::open(HostPath(path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  content->clear();
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      return error;
    }
    if (n == 0) break;
    content->append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return 0;
}

int RootedSysfs::Write(const std::string& path, std::string_view data) {
  // No O_CREAT and no O_TRUNC: sysfs attributes exist or the write is wrong.
  const int fd = ::open(HostPath(path).c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  // One write(2): a sysfs store sees exactly one buffer, and a short write is its answer.
  ssize_t n;
  do {
    n = ::write(fd, data.data(), data.size());
  } while (n < 0 && errno == EINTR);
  const int error = n < 0 ? errno : 0;
  // close() reports nothing of a sysfs store; its error is ignored.
  ::close(fd);
  if (error != 0) return error;
  return static_cast<size_t>(n) == data.size() ? 0 : EIO;
}

int RootedSysfs::List(const std::string& path, std::vector<std::string>* names) const {
  DIR* dir = ::opendir(HostPath(path).c_str());
  if (dir == nullptr) return errno;
  names->clear();
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names->push_back(name);
  }
  ::closedir(dir);
  std::sort(names->begin(), names->end());
  return 0;
}

int RootedSysfs::ReadLink(const std::string& path, std::string* target) const {
  char buffer[4096];
  const ssize_t n = ::readlink(HostPath(path).c_str(), buffer, sizeof buffer);
  if (n < 0) return errno;
  target->assign(buffer, static_cast<size_t>(n));
  return 0;
}

bool RootedSysfs::Exists(const std::string& path) const {
  struct stat st;
  return ::stat(HostPath(path).c_str(), &st) == 0;
}

std::string ErrnoName(int error) {
  switch (error) {
    case EPERM:
      return "EPERM";
    case ENOENT:
      return "ENOENT";
    case EIO:
      return "EIO";
    case ENODEV:
      return "ENODEV";
    case ENXIO:
      return "ENXIO";
    case EAGAIN:
      return "EAGAIN";
    case ENOMEM:
      return "ENOMEM";
    case EACCES:
      return "EACCES";
    case EBUSY:
      return "EBUSY";
    case EEXIST:
      return "EEXIST";
    case EINVAL:
      return "EINVAL";
    case ENOSPC:
      return "ENOSPC";
    case EROFS:
      return "EROFS";
    case ERANGE:
      return "ERANGE";
    case EUSERS:
      return "EUSERS";
    case EDQUOT:
      return "EDQUOT";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    default:
      return "errno " + std::to_string(error);
  }
}

std::string ErrnoText(int error) {
  return std::string(std::strerror(error)) + " (" + ErrnoName(error) + ")";
}

}  // namespace tessera::vgpu
