/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnic's librdmacm.so.1: rsockets (rdma-core's rsocket.c) are not
 * served; each call fails with ENOSYS, so a program that tries them
 * learns it at once.
 */
#include <errno.h>
#include <sys/types.h>

#include <rdma/rsocket.h>

/* rsockets: not implemented; each call fails with ENOSYS */
#define RS_ENOSYS(ret, name, args) \
	ret name args { errno = ENOSYS; return (ret)-1; }

RS_ENOSYS(int, rsocket, (int domain, int type, int protocol))
RS_ENOSYS(int, rbind, (int socket, const struct sockaddr *addr, socklen_t addrlen))
RS_ENOSYS(int, rlisten, (int socket, int backlog))
RS_ENOSYS(int, raccept, (int socket, struct sockaddr *addr, socklen_t *addrlen))
RS_ENOSYS(int, rconnect, (int socket, const struct sockaddr *addr, socklen_t addrlen))
RS_ENOSYS(int, rshutdown, (int socket, int how))
RS_ENOSYS(int, rclose, (int socket))
RS_ENOSYS(ssize_t, rrecv, (int socket, void *buf, size_t len, int flags))
RS_ENOSYS(ssize_t, rrecvfrom, (int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
			      socklen_t *addrlen))
RS_ENOSYS(ssize_t, rrecvmsg, (int socket, struct msghdr *msg, int flags))
RS_ENOSYS(ssize_t, rsend, (int socket, const void *buf, size_t len, int flags))
RS_ENOSYS(ssize_t, rsendto, (int socket, const void *buf, size_t len, int flags,
			    const struct sockaddr *dest_addr, socklen_t addrlen))
RS_ENOSYS(ssize_t, rsendmsg, (int socket, const struct msghdr *msg, int flags))
RS_ENOSYS(ssize_t, rread, (int socket, void *buf, size_t count))
RS_ENOSYS(ssize_t, rreadv, (int socket, const struct iovec *iov, int iovcnt))
RS_ENOSYS(ssize_t, rwrite, (int socket, const void *buf, size_t count))
RS_ENOSYS(ssize_t, rwritev, (int socket, const struct iovec *iov, int iovcnt))
RS_ENOSYS(int, rpoll, (struct pollfd *fds, nfds_t nfds, int timeout))
RS_ENOSYS(int, rselect, (int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
			struct timeval *timeout))
RS_ENOSYS(int, rgetpeername, (int socket, struct sockaddr *addr, socklen_t *addrlen))
RS_ENOSYS(int, rgetsockname, (int socket, struct sockaddr *addr, socklen_t *addrlen))
RS_ENOSYS(int, rsetsockopt, (int socket, int level, int optname, const void *optval,
			    socklen_t optlen))
RS_ENOSYS(int, rgetsockopt, (int socket, int level, int optname, void *optval, socklen_t *optlen))
RS_ENOSYS(int, rfcntl, (int socket, int cmd, ...))
RS_ENOSYS(off_t, riomap, (int socket, void *buf, size_t len, int prot, int flags, off_t offset))
RS_ENOSYS(int, riounmap, (int socket, void *buf, size_t len))
RS_ENOSYS(size_t, riowrite, (int socket, const void *buf, size_t count, off_t offset, int flags))
