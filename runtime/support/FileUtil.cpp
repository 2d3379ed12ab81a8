//===- FileUtil.cpp - Small POSIX file helpers of the runtime -------------===//

#include "weft/runtime/FileUtil.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace weft {

static std::string sysError(const std::string &what, const std::string &path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

static bool writeAll(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    size_t chunk = size < (size_t(1) << 30) ? size : (size_t(1) << 30);
    ssize_t n = ::write(fd, p, chunk);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    if (n == 0) {
      errno = EIO;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool writeFileAtomic(const std::string &path,
                     const std::vector<FileChunk> &chunks, std::string &error) {
  std::string dir = parentPath(path);
  std::string tmp =
      joinPath(dir, "." + fileName(path) + ".tmp." + std::to_string(getpid()));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    error = sysError("cannot create", tmp);
    return false;
  }
  for (const FileChunk &chunk : chunks) {
    if (chunk.size && !writeAll(fd, chunk.data, chunk.size)) {
      error = sysError("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
  }
  if (::fsync(fd) != 0) {
    error = sysError("cannot fsync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::close(fd) != 0) {
    error = sysError("cannot close", tmp);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    error = sysError("cannot rename '" + tmp + "' to", path);
    ::unlink(tmp.c_str());
    return false;
  }
  // Make the rename durable; failure here is not worth failing the write.
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    (void)::fsync(dirFd);
    ::close(dirFd);
  }
  return true;
}

bool readFully(int fd, void *dst, size_t size, uint64_t offset,
               std::string &error) {
  char *p = static_cast<char *>(dst);
  while (size > 0) {
    size_t chunk = size < (size_t(1) << 30) ? size : (size_t(1) << 30);
    ssize_t n = ::pread(fd, p, chunk, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      error = std::strerror(errno);
      return false;
    }
    if (n == 0) {
      error = "unexpected end of file";
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

bool readFile(const std::string &path, std::string &out, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = sysError("cannot open", path);
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    error = sysError("cannot stat", path);
    ::close(fd);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    error = "cannot read '" + path + "': it is a directory";
    ::close(fd);
    return false;
  }
  out.clear();
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      error = sysError("cannot read", path);
      ::close(fd);
      return false;
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool fileExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool listDirectory(const std::string &path, std::vector<std::string> &names,
                   std::string &error) {
  names.clear();
  DIR *dir = ::opendir(path.c_str());
  if (!dir) {
    error = sysError("cannot list directory", path);
    return false;
  }
  while (true) {
    errno = 0;
    struct dirent *entry = ::readdir(dir);
    if (!entry)
      break;
    std::string name = entry->d_name;
    if (name != "." && name != "..")
      names.push_back(std::move(name));
  }
  int readErrno = errno;
  ::closedir(dir);
  if (readErrno != 0) {
    errno = readErrno;
    error = sysError("cannot list directory", path);
    return false;
  }
  std::sort(names.begin(), names.end());
  return true;
}

bool removeTree(const std::string &path, std::string &error) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return true;
    error = sysError("cannot stat", path);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    std::vector<std::string> names;
    if (!listDirectory(path, names, error))
      return false;
    for (const std::string &name : names)
      if (!removeTree(joinPath(path, name), error))
        return false;
    if (::rmdir(path.c_str()) != 0 && errno != ENOENT) {
      error = sysError("cannot remove directory", path);
      return false;
    }
    return true;
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    error = sysError("cannot remove", path);
    return false;
  }
  return true;
}

bool fsyncDirectory(const std::string &path, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    error = sysError("cannot open directory", path);
    return false;
  }
  bool ok = ::fsync(fd) == 0;
  if (!ok)
    error = sysError("cannot fsync directory", path);
  ::close(fd);
  return ok;
}

bool makeDirectories(const std::string &path, std::string &error) {
  if (path.empty()) {
    error = "empty directory name";
    return false;
  }
  if (isDirectory(path))
    return true;
  std::string parent = parentPath(path);
  if (parent != path && !isDirectory(parent) && !makeDirectories(parent, error))
    return false;
  if (::mkdir(path.c_str(), 0777) != 0 &&
      !(errno == EEXIST && isDirectory(path))) {
    if (errno == EEXIST)
      error =
          "cannot create directory '" + path + "': a file of that name exists";
    else
      error = sysError("cannot create directory", path);
    return false;
  }
  return true;
}

std::string parentPath(const std::string &path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  size_t slash = p.rfind('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  p.resize(slash);
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  return p;
}

std::string fileName(const std::string &path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string joinPath(const std::string &a, const std::string &b) {
  if (a.empty() || (!b.empty() && b[0] == '/'))
    return b;
  if (b.empty())
    return a;
  if (a.back() == '/')
    return a + b;
  return a + "/" + b;
}

std::string executableDirectory() {
  char buf[PATH_MAX + 1];
  ssize_t n = ::readlink("/proc/self/exe", buf, PATH_MAX);
  if (n <= 0)
    return "";
  buf[n] = '\0';
  return parentPath(buf);
}

} // namespace weft
