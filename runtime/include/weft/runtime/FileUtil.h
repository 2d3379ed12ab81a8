//===- FileUtil.h - Small POSIX file helpers of the runtime ---------------===//
//
// Every function returns false and sets `error` (naming the path and the
// system's reason) on failure; none throws.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_FILEUTIL_H
#define WEFT_RUNTIME_FILEUTIL_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft {

/// One piece of a file written by writeFileAtomic.
struct FileChunk {
  const void *data;
  size_t size;
};

/// Writes the concatenation of `chunks` to `path` atomically: the bytes go to
/// DIR/.NAME.tmp.PID, which is fsync'ed and renamed over `path` (then DIR is
/// fsync'ed). On failure the temporary file is removed and `path` untouched.
bool writeFileAtomic(const std::string &path,
                     const std::vector<FileChunk> &chunks, std::string &error);

/// Reads the whole file.
bool readFile(const std::string &path, std::string &out, std::string &error);

/// Reads exactly `size` bytes at `offset` of an open descriptor (pread, with
/// EINTR and short reads handled). Sets `error` to a reason without the path.
bool readFully(int fd, void *dst, size_t size, uint64_t offset,
               std::string &error);

/// Creates `path` and its missing parents (mode 0777 & ~umask). Succeeds when
/// it already is a directory.
bool makeDirectories(const std::string &path, std::string &error);

bool isDirectory(const std::string &path);
bool fileExists(const std::string &path);

/// The names in directory `path` (without "." and ".."), sorted.
bool listDirectory(const std::string &path, std::vector<std::string> &names,
                   std::string &error);

/// Removes `path` and, for a directory, everything under it (symbolic links
/// are removed, never followed). Succeeds when `path` does not exist.
bool removeTree(const std::string &path, std::string &error);

/// fsyncs a directory, making the creation, rename or removal of its entries
/// durable.
bool fsyncDirectory(const std::string &path, std::string &error);

/// "a/b/c" -> "a/b"; "c" -> "."; "/c" -> "/".
std::string parentPath(const std::string &path);
/// "a/b/c" -> "c".
std::string fileName(const std::string &path);
/// Joins with one '/' ("a" + "b" -> "a/b"; an absolute `b` wins).
std::string joinPath(const std::string &a, const std::string &b);

/// The directory of the running executable (/proc/self/exe), or "" if
/// unknown.
std::string executableDirectory();

} // namespace weft

#endif // WEFT_RUNTIME_FILEUTIL_H
