//===- TestUtil.h - Helpers of the runtime unit tests ---------------------===//
#ifndef WEFT_TEST_UNIT_RUNTIME_TESTUTIL_H
#define WEFT_TEST_UNIT_RUNTIME_TESTUTIL_H

#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <ftw.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace weft {
namespace test {

/// A fresh directory under $TMPDIR (or /tmp), removed with its contents at
/// destruction.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/weft-rt-test.XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()))
      path_ = buf.data();
  }
  ~TempDir() {
    if (!path_.empty())
      ::nftw(path_.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }
  /// Names of the entries in the directory (without "." and "..").
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    if (DIR *d = ::opendir(path_.c_str())) {
      while (struct dirent *e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..")
          names.push_back(n);
      }
      ::closedir(d);
    }
    return names;
  }

private:
  static int removeEntry(const char *path, const struct stat *, int,
                         struct FTW *) {
    return ::remove(path);
  }
  std::string path_;
};

inline bool writeBytes(const std::string &path, const std::string &bytes) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

inline std::string readBytes(const std::string &path) {
  std::string out;
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    out.append(buf, n);
  std::fclose(f);
  return out;
}

} // namespace test
} // namespace weft

#endif // WEFT_TEST_UNIT_RUNTIME_TESTUTIL_H
