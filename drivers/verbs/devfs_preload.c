/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libsrnic_devfs.so: the device's /dev and /sys presence without a kernel
 * device, preloaded by `usertools/srnic run` (doc/verbs.md, "Device
 * presence").
 *
 * Programs look for an RDMA device on the filesystem as well as through
 * verbs: UCX's uct_ib_device_is_accessible() stat()s and access()es
 * /dev/infiniband/<dev_name> (a character device, readable and writable),
 * rdma-core's tests list /sys/class/infiniband/<dev>/device/net/. srnic has
 * no kernel device and must work without root (no mknod, no mount), so this
 * library maps the three trees below onto a private directory, SRNIC_DEVFS,
 * which srnic's libibverbs.so.1 fills when the device comes up
 * (verbs_devfs.c); its /dev/infiniband/uverbs0 is a symbolic link to
 * /dev/null, a character device anyone may open. Every other path goes to
 * libc untouched.
 *
 * Tools reach a path through many entries (open/stat/access/opendir/readlink
 * and glibc's *64, *at, fortified __*_2 and pre-2.33 __xstat families; ls,
 * Python and UCX each use a different set), so each is wrapped. No libc
 * entry calls another through the PLT, hence opendir and scandir too.
 * Relative paths and *at calls with a directory fd are left alone: a
 * directory opened through here already lies in the private tree.
 */
/* the plain and the *64 entries are both defined here, under their own names */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEVFS_ENV "SRNIC_DEVFS"

/* the trees served from SRNIC_DEVFS (a prefix matches itself or itself/...) */
static const char *const devfs_trees[] = {
	"/dev/infiniband",
	"/sys/class/infiniband",
	"/sys/class/infiniband_verbs",
};

static int
devfs_in_tree(const char *path)
{
	size_t i, n;

	if (path == NULL || path[0] != '/')
		return 0;
	for (i = 0; i < sizeof(devfs_trees) / sizeof(devfs_trees[0]); i++) {
		n = strlen(devfs_trees[i]);
		if (strncmp(path, devfs_trees[i], n) == 0 &&
		    (path[n] == '\0' || path[n] == '/'))
			return 1;
	}
	return 0;
}

/* path, or its place in SRNIC_DEVFS (in buf); a path too long for buf is
 * left as it is (the real one, which has no such device) */
static const char *
devfs_map(const char *path, char *buf, size_t size)
{
	const char *root;
	int n;

	if (!devfs_in_tree(path))
		return path;
	root = getenv(DEVFS_ENV);
	if (root == NULL || root[0] != '/')
		return path;
	n = snprintf(buf, size, "%s%s", root, path);
	if (n < 0 || (size_t)n >= size)
		return path;
	return buf;
}

#define REAL(name) \
	static __typeof__(name) *real_##name; \
	if (real_##name == NULL) \
		real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

#define MAP(p) char buf_[PATH_MAX]; const char *mp_ = devfs_map((p), buf_, sizeof(buf_))

/* open(2)'s mode argument is there only when the flags ask for it */
#define OPEN_MODE(flags, mode) \
	do { \
		if (((flags) & O_CREAT) != 0 || ((flags) & __O_TMPFILE) == __O_TMPFILE) { \
			va_list ap_; \
			va_start(ap_, flags); \
			mode = va_arg(ap_, mode_t); \
			va_end(ap_); \
		} \
	} while (0)

int open(const char *path, int flags, ...);
int open64(const char *path, int flags, ...);
int openat(int dirfd, const char *path, int flags, ...);
int openat64(int dirfd, const char *path, int flags, ...);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);
int eaccess(const char *path, int mode);

int
open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	MAP(path);
	REAL(open);

	OPEN_MODE(flags, mode);
	return real_open(mp_, flags, mode);
}

int
open64(const char *path, int flags, ...)
{
	mode_t mode = 0;
	MAP(path);
	REAL(open64);

	OPEN_MODE(flags, mode);
	return real_open64(mp_, flags, mode);
}

int
openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	MAP(path);
	REAL(openat);

	OPEN_MODE(flags, mode);
	return real_openat(dirfd, mp_, flags, mode);
}

int
openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	MAP(path);
	REAL(openat64);

	OPEN_MODE(flags, mode);
	return real_openat64(dirfd, mp_, flags, mode);
}

int
__open_2(const char *path, int flags)
{
	MAP(path);
	REAL(__open_2);
	return real___open_2(mp_, flags);
}

int
__open64_2(const char *path, int flags)
{
	MAP(path);
	REAL(__open64_2);
	return real___open64_2(mp_, flags);
}

int
__openat_2(int dirfd, const char *path, int flags)
{
	MAP(path);
	REAL(__openat_2);
	return real___openat_2(dirfd, mp_, flags);
}

int
__openat64_2(int dirfd, const char *path, int flags)
{
	MAP(path);
	REAL(__openat64_2);
	return real___openat64_2(dirfd, mp_, flags);
}

FILE *
fopen(const char *path, const char *mode)
{
	MAP(path);
	REAL(fopen);
	return real_fopen(mp_, mode);
}

FILE *
fopen64(const char *path, const char *mode)
{
	MAP(path);
	REAL(fopen64);
	return real_fopen64(mp_, mode);
}

int
stat(const char *path, struct stat *st)
{
	MAP(path);
	REAL(stat);
	return real_stat(mp_, st);
}

int
stat64(const char *path, struct stat64 *st)
{
	MAP(path);
	REAL(stat64);
	return real_stat64(mp_, st);
}

int
lstat(const char *path, struct stat *st)
{
	MAP(path);
	REAL(lstat);
	return real_lstat(mp_, st);
}

int
lstat64(const char *path, struct stat64 *st)
{
	MAP(path);
	REAL(lstat64);
	return real_lstat64(mp_, st);
}

int
fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	MAP(path);
	REAL(fstatat);
	return real_fstatat(dirfd, mp_, st, flags);
}

int
fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	MAP(path);
	REAL(fstatat64);
	return real_fstatat64(dirfd, mp_, st, flags);
}

int
statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *stx)
{
	MAP(path);
	REAL(statx);
	return real_statx(dirfd, mp_, flags, mask, stx);
}

/* binaries built against glibc before 2.33 call these */
int
__xstat(int ver, const char *path, struct stat *st)
{
	MAP(path);
	REAL(__xstat);
	return real___xstat(ver, mp_, st);
}

int
__xstat64(int ver, const char *path, struct stat64 *st)
{
	MAP(path);
	REAL(__xstat64);
	return real___xstat64(ver, mp_, st);
}

int
__lxstat(int ver, const char *path, struct stat *st)
{
	MAP(path);
	REAL(__lxstat);
	return real___lxstat(ver, mp_, st);
}

int
__lxstat64(int ver, const char *path, struct stat64 *st)
{
	MAP(path);
	REAL(__lxstat64);
	return real___lxstat64(ver, mp_, st);
}

int
__fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	MAP(path);
	REAL(__fxstatat);
	return real___fxstatat(ver, dirfd, mp_, st, flags);
}

int
__fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
	MAP(path);
	REAL(__fxstatat64);
	return real___fxstatat64(ver, dirfd, mp_, st, flags);
}

int
access(const char *path, int mode)
{
	MAP(path);
	REAL(access);
	return real_access(mp_, mode);
}

int
faccessat(int dirfd, const char *path, int mode, int flags)
{
	MAP(path);
	REAL(faccessat);
	return real_faccessat(dirfd, mp_, mode, flags);
}

int
euidaccess(const char *path, int mode)
{
	MAP(path);
	REAL(euidaccess);
	return real_euidaccess(mp_, mode);
}

int
eaccess(const char *path, int mode)
{
	MAP(path);
	REAL(eaccess);
	return real_eaccess(mp_, mode);
}

DIR *
opendir(const char *path)
{
	MAP(path);
	REAL(opendir);
	return real_opendir(mp_);
}

int
scandir(const char *path, struct dirent ***list, int (*filter)(const struct dirent *),
	int (*compar)(const struct dirent **, const struct dirent **))
{
	MAP(path);
	REAL(scandir);
	return real_scandir(mp_, list, filter, compar);
}

int
scandir64(const char *path, struct dirent64 ***list, int (*filter)(const struct dirent64 *),
	  int (*compar)(const struct dirent64 **, const struct dirent64 **))
{
	MAP(path);
	REAL(scandir64);
	return real_scandir64(mp_, list, filter, compar);
}

ssize_t
readlink(const char *path, char *out, size_t size)
{
	MAP(path);
	REAL(readlink);
	return real_readlink(mp_, out, size);
}

ssize_t
readlinkat(int dirfd, const char *path, char *out, size_t size)
{
	MAP(path);
	REAL(readlinkat);
	return real_readlinkat(dirfd, mp_, out, size);
}
