/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The process's re-backed pages (doc/srnicd.md, section 5, "Registrations
 * that share pages"): one sealed memfd per process in which the page at
 * address A lives at offset A, so that any registered range is one
 * contiguous piece of one file whichever registrations re-backed its
 * pages; and a sorted list of extents, each counting the MRs that cover
 * every page of it. A page is re-backed at its first registration and goes
 * back to private anonymous memory, with its contents, at its last dereg.
 * Control path only, under its own lock (never held across a call to the
 * daemon).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "verbs.h"
#include "verbs_attach.h"

/* [lo, hi): re-backed pages, every one of them covered by refs MRs */
struct sva_ext {
	uintptr_t lo, hi;
	uint32_t refs;
	int prot;
	void *fork_copy;            /* its pages as they were at fork(), for the child */
	struct sva_ext *next;
};

static struct {
	pthread_mutex_t lock;
	int fd;                     /* the memfd, -1 until the first registration */
	uintptr_t size;             /* its size: past the highest page re-backed */
	struct sva_ext *list;       /* sorted by lo, disjoint */
} mem = { PTHREAD_MUTEX_INITIALIZER, -1, 0, NULL };

/* Whole pages, word by word, unseen by AddressSanitizer: a registered
 * buffer's pages hold the allocator's redzones beside it (memalign of
 * 1064 bytes), which the program's copy must move as they are. volatile:
 * no loop the compiler turns back into an (intercepted) memcpy. */
__attribute__((no_sanitize_address)) static void
page_copy(void *dst, const void *src, size_t len)
{
	volatile uint64_t *d = dst;
	const volatile uint64_t *s = src;
	size_t i;

	for (i = 0; i < len / sizeof(uint64_t); i++)
		d[i] = s[i];
}

/* The mapping of [base, end) as /proc/self/maps has it: private memory of
 * one protection, or why not (errno). Private is anonymous memory (malloc,
 * stack, MAP_ANONYMOUS) or a private file mapping (a program's .data and
 * .bss, where rdma_client's buffers are): either is the process's own, so
 * a copy of it as the process sees it is the same memory. Shared mappings
 * are not (another process or the file would not see the copy), nor the
 * kernel's own ([vdso], [vvar], [vsyscall]). */
static int
range_private(uintptr_t base, uintptr_t end, int *prot)
{
	char line[512], perms[8], path[256];
	unsigned long lo, hi, off, inode;
	uintptr_t at = base;
	unsigned int maj, min;
	int p = -1, n, rc = EFAULT;
	FILE *f = fopen("/proc/self/maps", "re");

	if (f == NULL)
		return errno;
	while (at < end && fgets(line, sizeof(line), f) != NULL) {
		path[0] = '\0';
		n = sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %255s", &lo, &hi, perms, &off, &maj,
			   &min, &inode, path);
		if (n < 7 || hi <= at)
			continue;
		if (lo > at)
			break;              /* a hole: not mapped */
		if (perms[3] != 'p' || strncmp(path, "[v", 2) == 0) {
			sv_log("ibv_reg_mr: %#" PRIxPTR "-%#" PRIxPTR " is a shared mapping "
			       "(%s): srnicd's attached mode registers private memory only "
			       "(malloc, stack, MAP_PRIVATE mappings) for now",
			       base, end, path[0] != '\0' ? path : "anonymous");
			rc = EOPNOTSUPP;
			goto out;
		}
		n = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		    (perms[2] == 'x' ? PROT_EXEC : 0);
		if (p >= 0 && n != p) {
			sv_log("ibv_reg_mr: %#" PRIxPTR "-%#" PRIxPTR " spans pages of different "
			       "protections: not supported attached", base, end);
			rc = EOPNOTSUPP;
			goto out;
		}
		p = n;
		at = hi;
	}
	if (at >= end) {
		*prot = p;
		rc = 0;
	}
out:
	fclose(f);
	return rc;
}

/* The memfd, made at the first registration: sealed against shrinking
 * (the daemon's mappings of it must never SIGBUS), free to grow. */
static int
arena(void)
{
	if (mem.fd >= 0)
		return 0;
	mem.fd = memfd_create("srnic-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mem.fd < 0)
		return errno;
	if (fcntl(mem.fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
		int e = errno;

		close(mem.fd);
		mem.fd = -1;
		return e;
	}
	mem.size = 0;
	return 0;
}

/* The memfd grown to hi: its offsets are addresses, so a high one needs
 * a file that large. Past the file size limit (ulimit -f) ftruncate()
 * would raise SIGXFSZ, which kills a program that never asked for a file:
 * the limit is looked at first and the registration refused with EFBIG. */
static int
arena_grow(uintptr_t lo, uintptr_t hi)
{
	struct rlimit rl;

	if (hi <= mem.size)
		return 0;
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (rlim_t)hi > rl.rlim_cur) {
		sv_log("ibv_reg_mr: %#" PRIxPTR "-%#" PRIxPTR ": srnicd's attached mode keeps "
		       "registered pages in a memfd at their own addresses as offsets, a file of "
		       "%#" PRIxPTR " bytes, past this process's file size limit (%llu bytes): "
		       "raise it (ulimit -f unlimited)", lo, hi, hi,
		       (unsigned long long)rl.rlim_cur);
		return EFBIG;
	}
	if (ftruncate(mem.fd, (off_t)hi) != 0)
		return errno;
	mem.size = hi;
	return 0;
}

/* [lo, hi) as the process sees it, into dst: read by the kernel
 * (process_vm_readv() on ourselves), so a page that cannot be read, a
 * private file mapping's page past its file's end (whose load raises
 * SIGBUS), is an error the caller returns, never a signal. */
static int
range_read(void *dst, uintptr_t lo, uintptr_t hi)
{
	size_t len = hi - lo, done = 0;
	struct iovec l, r;
	ssize_t n;

	while (done < len) {
		l.iov_base = (char *)dst + done;
		l.iov_len = len - done;
		r.iov_base = (void *)(lo + done);
		r.iov_len = len - done;
		n = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && done == 0 && (errno == ENOSYS || errno == EPERM)) {
				/* a seccomp profile without it: loads, as before */
				page_copy(dst, (void *)lo, len);
				return 0;
			}
			sv_log("ibv_reg_mr: %#" PRIxPTR "-%#" PRIxPTR ": the page at %#" PRIxPTR
			       " cannot be read (%s; a file mapping past its file's end?): "
			       "register memory the process can read", lo, hi, lo + done,
			       n < 0 ? strerror(errno) : "nothing read");
			return EFAULT;
		}
		done += (size_t)n;
	}
	return 0;
}

/* [lo, hi) copied into the memfd at offset lo and mapped over itself,
 * shared: 0 or errno. */
static int
reback(uintptr_t lo, uintptr_t hi, int prot)
{
	size_t len = hi - lo;
	void *tmp;
	int rc;

	rc = arena_grow(lo, hi);
	if (rc != 0)
		return rc;
	tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mem.fd, (off_t)lo);
	if (tmp == MAP_FAILED)
		return errno;
	if ((prot & PROT_READ) == 0 && mprotect((void *)lo, len, prot | PROT_READ) != 0) {
		munmap(tmp, len);
		return errno;
	}
	rc = range_read(tmp, lo, hi);
	if (rc != 0) {
		/* the pages written so far freed again */
		munmap(tmp, len);
		fallocate(mem.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)lo, (off_t)len);
		if ((prot & PROT_READ) == 0)
			mprotect((void *)lo, len, prot);
		return rc;
	}
	munmap(tmp, len);
	if (mmap((void *)lo, len, prot, MAP_SHARED | MAP_FIXED, mem.fd, (off_t)lo) == MAP_FAILED) {
		int e = errno;

		if ((prot & PROT_READ) == 0)
			mprotect((void *)lo, len, prot);
		return e;
	}
	return 0;
}

/* Back to private anonymous memory with the same contents, the memfd's
 * pages freed. */
static void
unback(const struct sva_ext *e)
{
	size_t len = e->hi - e->lo;
	void *tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (tmp == MAP_FAILED) {
		sv_log("ibv_dereg_mr: no memory to copy %zu bytes at %#" PRIxPTR " back to private "
		       "memory: they stay shared with srnicd's memfd", len, e->lo);
		return;
	}
	if ((e->prot & PROT_READ) == 0)
		mprotect((void *)e->lo, len, e->prot | PROT_READ);
	page_copy(tmp, (void *)e->lo, len);
	mprotect(tmp, len, e->prot);
	if (mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)e->lo) == MAP_FAILED) {
		munmap(tmp, len);
		if ((e->prot & PROT_READ) == 0)
			mprotect((void *)e->lo, len, e->prot);
		return;
	}
	fallocate(mem.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)e->lo, (off_t)len);
}

/* e cut at x (e->lo < x < e->hi): e keeps [lo, x), the new one after it
 * [x, hi), or NULL (no memory). */
static struct sva_ext *
split(struct sva_ext *e, uintptr_t x)
{
	struct sva_ext *n = malloc(sizeof(*n));

	if (n == NULL)
		return NULL;
	*n = *e;
	n->lo = x;
	e->hi = x;
	e->next = n;
	return n;
}

/* Neighbours that touch and agree become one again. */
static void
merge(void)
{
	struct sva_ext *e = mem.list, *n;

	while (e != NULL && (n = e->next) != NULL) {
		if (e->hi == n->lo && e->refs == n->refs && e->prot == n->prot) {
			e->hi = n->hi;
			e->next = n->next;
			free(n);
		} else {
			e = n;
		}
	}
}

/* One MR fewer over [base, end) (page-aligned); pages no MR covers any
 * more back to private memory. */
static void
release_locked(uintptr_t base, uintptr_t end)
{
	struct sva_ext **pp = &mem.list, *e;

	while ((e = *pp) != NULL && e->lo < end) {
		if (e->hi <= base) {
			pp = &e->next;
			continue;
		}
		/* an extent this dereg covers part of is cut first; a cut that
		 * finds no memory leaves it whole and counted once too many:
		 * its pages stay shared, never freed early */
		if (e->lo < base || (e->hi > end && split(e, end) == NULL)) {
			if (e->lo < base)
				split(e, base);
			pp = &e->next;
			continue;
		}
		if (e->refs > 0)
			e->refs--;
		if (e->refs == 0) {
			unback(e);
			*pp = e->next;
			free(e);
			continue;
		}
		pp = &e->next;
	}
	merge();
}

int
sva_mem_acquire(uintptr_t base, uintptr_t end, int *fd)
{
	struct sva_ext **pp, *e, *n;
	uintptr_t at = base, gap_end;
	int rc, prot;

	pthread_mutex_lock(&mem.lock);
	rc = arena();
	pp = &mem.list;
	while (rc == 0 && at < end) {
		while ((e = *pp) != NULL && e->hi <= at)
			pp = &e->next;
		if (e != NULL && e->lo <= at) {
			/* re-backed already: counted once more */
			if (e->lo < at) {
				if ((n = split(e, at)) == NULL) {
					rc = ENOMEM;
					break;
				}
				pp = &e->next;
				e = n;
			}
			if (e->hi > end && split(e, end) == NULL) {
				rc = ENOMEM;
				break;
			}
			e->refs++;
			at = e->hi;
			pp = &e->next;
			continue;
		}
		/* pages no MR holds: private memory, re-backed now */
		gap_end = e != NULL && e->lo < end ? e->lo : end;
		rc = range_private(at, gap_end, &prot);
		if (rc != 0)
			break;
		n = calloc(1, sizeof(*n));
		if (n == NULL) {
			rc = ENOMEM;
			break;
		}
		rc = reback(at, gap_end, prot);
		if (rc != 0) {
			free(n);
			break;
		}
		n->lo = at;
		n->hi = gap_end;
		n->refs = 1;
		n->prot = prot;
		n->next = e;
		*pp = n;
		pp = &n->next;
		at = gap_end;
	}
	if (rc != 0)
		release_locked(base, at);     /* what this call counted, undone */
	else
		merge();
	*fd = mem.fd;
	pthread_mutex_unlock(&mem.lock);
	return rc;
}

void
sva_mem_release(uintptr_t base, uintptr_t end)
{
	pthread_mutex_lock(&mem.lock);
	release_locked(base, end);
	pthread_mutex_unlock(&mem.lock);
}

/* fork(), the parent's other threads out of the table: each extent's
 * pages copied as they are now, which the child maps over its shared view
 * of them (copy-on-fork's result: the pages as they were at fork). */
void
sva_mem_fork_prepare(void)
{
	struct sva_ext *e;
	size_t len;
	void *tmp;

	pthread_mutex_lock(&mem.lock);
	for (e = mem.list; e != NULL; e = e->next) {
		len = e->hi - e->lo;
		e->fork_copy = NULL;
		tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (tmp == MAP_FAILED) {
			sv_log("fork(): no memory for the child's copy of %zu registered bytes at "
			       "%#" PRIxPTR ": the child shares them with its parent", len, e->lo);
			continue;
		}
		if ((e->prot & PROT_READ) == 0)
			mprotect((void *)e->lo, len, e->prot | PROT_READ);
		page_copy(tmp, (void *)e->lo, len);
		if ((e->prot & PROT_READ) == 0)
			mprotect((void *)e->lo, len, e->prot);
		e->fork_copy = tmp;
	}
}

void
sva_mem_fork_parent(void)
{
	struct sva_ext *e;

	for (e = mem.list; e != NULL; e = e->next) {
		if (e->fork_copy != NULL)
			munmap(e->fork_copy, e->hi - e->lo);
		e->fork_copy = NULL;
	}
	pthread_mutex_unlock(&mem.lock);
}

/* The child (its only thread): every re-backed page its private copy
 * made at fork, over the same addresses; the memfd it shares with the
 * parent dropped, the table empty (its MRs are the dead contexts'). */
void
sva_mem_fork_child(void)
{
	struct sva_ext *e, *n;
	size_t len;

	for (e = mem.list; e != NULL; e = n) {
		n = e->next;
		len = e->hi - e->lo;
		if (e->fork_copy != NULL) {
			if (mremap(e->fork_copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
				   (void *)e->lo) == MAP_FAILED)
				munmap(e->fork_copy, len);
			else
				mprotect((void *)e->lo, len, e->prot);
		}
		free(e);
	}
	mem.list = NULL;
	if (mem.fd >= 0)
		close(mem.fd);
	mem.fd = -1;
	mem.size = 0;
	pthread_mutex_unlock(&mem.lock);
}
