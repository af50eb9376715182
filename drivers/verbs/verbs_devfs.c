/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's files, as the kernel's ib_uverbs and ib_core would show them,
 * written into the private directory SRNIC_DEVFS that libsrnic_devfs.so
 * (devfs_preload.c, preloaded by `usertools/srnic run`) serves as
 * /dev/infiniband, /sys/class/infiniband and /sys/class/infiniband_verbs
 * (doc/verbs.md, "Device presence"). Written once when the device comes up,
 * before ibv_get_device_list() returns it: what programs read there
 * (UCX's device check, rdma-core's tests' netdev, tools' GID tables) is
 * fixed for the device's life. The directory is removed at exit by the
 * process that made it.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "verbs.h"

#define SV_DEVFS_UVERBS "uverbs0"       /* ibv_device.dev_name */
/* uverbs' ABI version (the class's abi_version) and the device's */
#define SV_DEVFS_CLASS_ABI 6
#define SV_DEVFS_DEV_ABI 1
/* root/owner: the pid of the process that made root (outside dev/ and sys/,
 * the preload never shows it) */
#define SV_DEVFS_OWNER "owner"

static char sv_devfs_made[PATH_MAX];    /* the root this process made, removed at exit */
static pid_t sv_devfs_pid;              /* that process: a fork()ed child's exit leaves it */

/* mkdir -p of root + rel */
static int
devfs_mkdirs(const char *root, const char *rel)
{
	char path[PATH_MAX];
	char *p;
	int n = snprintf(path, sizeof(path), "%s/%s", root, rel);

	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	for (p = path + strlen(root) + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = c;
		if (c == '\0')
			return 0;
	}
}

/* root/rel holds the formatted text and a newline, as sysfs shows a value;
 * written beside and renamed, so a reader never sees half of it */
static int __attribute__((format(printf, 3, 4)))
devfs_put(const char *root, const char *rel, const char *fmt, ...)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	va_list ap;
	FILE *f;
	int n;

	n = snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (f == NULL)
		return -errno;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		n = -errno;
		unlink(tmp);
		return n;
	}
	return 0;
}

static int
devfs_link(const char *root, const char *rel, const char *target)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/%s", root, rel);

	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	if (symlink(target, path) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* "fe80:0000:..." as sysfs prints a GID: eight groups of four hex digits */
static void
gid_str(const union ibv_gid *gid, char *out, size_t n)
{
	const uint8_t *r = gid->raw;

	snprintf(out, n, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
		 r[12], r[13], r[14], r[15]);
}

static const char *
port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN: return "1: DOWN";
	case IBV_PORT_INIT: return "2: INIT";
	case IBV_PORT_ARMED: return "3: ARMED";
	case IBV_PORT_ACTIVE: return "4: ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "5: ACTIVE_DEFER";
	default: return "0: NOP";
	}
}

/* The port's files: state, link layer, the GID table with each entry's type
 * and netdev (what ibv_query_gid_type() and rdma-core's tests read), the
 * P_Key table. */
static int
devfs_port(const char *root, const struct sv_devfs_dev *d)
{
	const struct ibv_port_attr *pa = &d->port;
	char ib[96], rel[160], gid[64];
	int i, rc;

	snprintf(ib, sizeof(ib), "sys/class/infiniband/%s/ports/1", d->name);
	snprintf(rel, sizeof(rel), "%s/gids", ib);
	rc = devfs_mkdirs(root, rel);
	snprintf(rel, sizeof(rel), "%s/gid_attrs/types", ib);
	rc = rc != 0 ? rc : devfs_mkdirs(root, rel);
	snprintf(rel, sizeof(rel), "%s/gid_attrs/ndevs", ib);
	rc = rc != 0 ? rc : devfs_mkdirs(root, rel);
	snprintf(rel, sizeof(rel), "%s/pkeys", ib);
	rc = rc != 0 ? rc : devfs_mkdirs(root, rel);
	if (rc != 0)
		return rc;
	snprintf(rel, sizeof(rel), "%s/state", ib);
	rc |= devfs_put(root, rel, "%s", port_state_str(pa->state));
	snprintf(rel, sizeof(rel), "%s/phys_state", ib);
	rc |= devfs_put(root, rel, "%s", pa->phys_state == SRNIC_PORT_PHYS_LINK_UP ? "5: LinkUp" :
			   pa->phys_state == SRNIC_PORT_PHYS_POLLING ? "2: Polling" : "3: Disabled");
	snprintf(rel, sizeof(rel), "%s/link_layer", ib);
	rc |= devfs_put(root, rel, "Ethernet");
	snprintf(rel, sizeof(rel), "%s/lid", ib);
	rc |= devfs_put(root, rel, "0x%x", pa->lid);
	snprintf(rel, sizeof(rel), "%s/sm_lid", ib);
	rc |= devfs_put(root, rel, "0x%x", pa->sm_lid);
	snprintf(rel, sizeof(rel), "%s/lid_mask_count", ib);
	rc |= devfs_put(root, rel, "%u", pa->lmc);
	snprintf(rel, sizeof(rel), "%s/cap_mask", ib);
	rc |= devfs_put(root, rel, "0x%08x", pa->port_cap_flags);
	for (i = 0; i < d->nb_gid; i++) {
		gid_str(&d->gid[i], gid, sizeof(gid));
		snprintf(rel, sizeof(rel), "%s/gids/%d", ib, i);
		rc |= devfs_put(root, rel, "%s", gid);
		/* an empty entry (GID 2 but on a device of both families) has
		 * no type or netdev: the kernel's read of them fails */
		if (d->gid[i].global.subnet_prefix == 0 && d->gid[i].global.interface_id == 0)
			continue;
		/* every entry is RoCE v2 (ibv_query_gid_type()) */
		snprintf(rel, sizeof(rel), "%s/gid_attrs/types/%d", ib, i);
		rc |= devfs_put(root, rel, "RoCE v2");
		if (d->netdev[0] != '\0') {
			snprintf(rel, sizeof(rel), "%s/gid_attrs/ndevs/%d", ib, i);
			rc |= devfs_put(root, rel, "%s", d->netdev);
		}
	}
	snprintf(rel, sizeof(rel), "%s/pkeys/0", ib);
	rc |= devfs_put(root, rel, "0xffff");
	return rc;
}

static int devfs_rm(const char *path);

/* This process makes root and so removes it at exit: a new directory, or
 * one its recorded maker left behind when killed (a SIGKILL runs no exit
 * handler, and `srnic run` names the root by pid, which the system reuses:
 * a stale tree adopted is emptied first, so no old device's file shows).
 * A recorded maker with this process's own pid is such a dead one (the
 * pid reused, the case `srnic run`'s naming makes likeliest) unless this
 * process made root already (a second device): then it is ours. */
static bool
devfs_claim(const char *root)
{
	char path[PATH_MAX], buf[24];
	long owner = 0;
	struct stat st;
	FILE *f;

	if (mkdir(root, 0755) != 0) {
		if (errno != EEXIST)
			return false;
		/* adopted only if it is a directory of this user that nobody
		 * else may write into (a predictable /tmp name another user made
		 * could otherwise get this process to remove what its links
		 * point to) */
		if (lstat(root, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
		    (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
			return false;
		snprintf(path, sizeof(path), "%s/%s", root, SV_DEVFS_OWNER);
		f = fopen(path, "r");
		if (f == NULL)
			return false;       /* not one of ours: leave it as found */
		if (fgets(buf, sizeof(buf), f) != NULL)
			owner = strtol(buf, NULL, 10);
		fclose(f);
		if (owner <= 0)
			return false;
		if (owner == getpid()) {
			if (strcmp(sv_devfs_made, root) == 0)
				return false;       /* made here: recorded already */
		} else if (kill((pid_t)owner, 0) == 0 || errno != ESRCH) {
			return false;       /* its maker lives: it removes it */
		}
		if (devfs_rm(root) != 0 || mkdir(root, 0755) != 0)
			return false;
	}
	return devfs_put(root, SV_DEVFS_OWNER, "%ld", (long)getpid()) == 0;
}

int
sv_devfs_write(const struct sv_devfs_dev *d)
{
	const char *root = getenv(SV_DEVFS_ENV);
	char ib[96], uv[96], rel[192], guid[32];
	const uint8_t *g = &d->gid[SRNIC_GID_INDEX_LL].raw[8];
	const uint8_t *m = d->mac;
	bool made;
	int rc;

	if (root == NULL || root[0] == '\0')
		return 0;
	if (root[0] != '/') {
		sv_log("%s=%s: give an absolute directory (/dev and /sys are not served)",
		       SV_DEVFS_ENV, root);
		return -EINVAL;
	}
	snprintf(ib, sizeof(ib), "sys/class/infiniband/%s", d->name);
	snprintf(uv, sizeof(uv), "sys/class/infiniband_verbs/%s", d->uverbs);
	made = devfs_claim(root);
	rc = devfs_mkdirs(root, "dev/infiniband");
	rc = rc != 0 ? rc : devfs_mkdirs(root, uv);
	rc = rc != 0 ? rc : devfs_mkdirs(root, ib);
	if (rc != 0)
		goto fail;
	if (made) {
		snprintf(sv_devfs_made, sizeof(sv_devfs_made), "%s", root);
		sv_devfs_pid = getpid();
	}
	/* a character device anyone may open for reading and writing, as UCX's
	 * uct_ib_device_is_accessible() wants; nothing is ever written to it */
	snprintf(rel, sizeof(rel), "dev/infiniband/%s", d->uverbs);
	rc |= devfs_link(root, rel, "/dev/null");
	rc |= devfs_link(root, "dev/infiniband/rdma_cm", "/dev/null");
	rc |= devfs_put(root, "sys/class/infiniband_verbs/abi_version", "%d", SV_DEVFS_CLASS_ABI);
	snprintf(rel, sizeof(rel), "%s/ibdev", uv);
	rc |= devfs_put(root, rel, "%s", d->name);
	snprintf(rel, sizeof(rel), "%s/abi_version", uv);
	rc |= devfs_put(root, rel, "%d", SV_DEVFS_DEV_ABI);
	snprintf(guid, sizeof(guid), "%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]);
	snprintf(rel, sizeof(rel), "%s/node_guid", ib);
	rc |= devfs_put(root, rel, "%s", guid);
	snprintf(rel, sizeof(rel), "%s/sys_image_guid", ib);
	rc |= devfs_put(root, rel, "%s", guid);
	snprintf(rel, sizeof(rel), "%s/node_type", ib);
	rc |= devfs_put(root, rel, "1: CA");
	snprintf(rel, sizeof(rel), "%s/node_desc", ib);
	rc |= devfs_put(root, rel, "srnic %s", d->name);
	snprintf(rel, sizeof(rel), "%s/hca_type", ib);
	rc |= devfs_put(root, rel, "srnic");
	rc |= devfs_port(root, d);
	/* device/net/<netdev>: the kernel network interface the port sends on,
	 * where there is one (af_packet's iface=); a memif or PCI port has
	 * none, and listing a name `ip addr show` does not know would make
	 * tools fail rather than skip */
	if (d->netdev[0] != '\0') {
		snprintf(rel, sizeof(rel), "%s/device/net/%s", ib, d->netdev);
		rc |= devfs_mkdirs(root, rel);
		snprintf(rel, sizeof(rel), "%s/device/net/%s/address", ib, d->netdev);
		rc |= devfs_put(root, rel, "%02x:%02x:%02x:%02x:%02x:%02x",
				m[0], m[1], m[2], m[3], m[4], m[5]);
	} else {
		snprintf(rel, sizeof(rel), "%s/device", ib);
		rc |= devfs_mkdirs(root, rel);
	}
	if (rc == 0)
		return 0;
fail:
	sv_log("%s=%s: cannot write the device's files (%s): programs that look for "
	       "/dev/infiniband/%s will not find it; give a writable directory",
	       SV_DEVFS_ENV, root, rc < 0 ? strerror(-rc) : "a write failed", d->uverbs);
	return rc < 0 ? rc : -EIO;
}

/* The embedded device's: its port, GIDs and MAC as the process has them. */
int
sv_devfs_publish(struct sv_device *dev, const char *netdev)
{
	struct sv_devfs_dev d = { .name = SV_DEV_NAME, .uverbs = SV_DEVFS_UVERBS,
				  .netdev = netdev, .nb_gid = SRNIC_GID_TBL_LEN };
	struct rte_ether_addr mac;
	int rc;

	if (getenv(SV_DEVFS_ENV) == NULL)
		return 0;
	rc = sv_port_attr(dev, &d.port);
	if (rc < 0)
		return rc;
	memcpy(d.gid, dev->gid, sizeof(d.gid));
	if (rte_eth_macaddr_get(dev->port_id, &mac) == 0)
		memcpy(d.mac, mac.addr_bytes, sizeof(d.mac));
	return sv_devfs_write(&d);
}

static int
devfs_rm(const char *path)
{
	char sub[PATH_MAX];
	struct dirent *e;
	struct stat st;
	DIR *d;

	if (lstat(path, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) == 0 ? 0 : -errno;
	d = opendir(path);
	if (d == NULL)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) < (int)sizeof(sub))
			devfs_rm(sub);
	}
	closedir(d);
	return rmdir(path) == 0 ? 0 : -errno;
}

void
sv_devfs_remove(void)
{
	if (sv_devfs_made[0] != '\0' && sv_devfs_pid == getpid())
		devfs_rm(sv_devfs_made);
	sv_devfs_made[0] = '\0';
}
