// SPDX-License-Identifier: GPL-2.0
/* Attaching to the TAP device the delay line reads from and writes to. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/if.h>
#include <linux/if_tun.h>

#include "delay.h"

int dl_tap_open(const char *dev)
{
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI};
	int fd, err;

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		dl_err("cannot open /dev/net/tun: %s (needs CONFIG_TUN and root)", strerror(errno));
		return err;
	}
	strncpy(ifr.ifr_name, dev, IFNAMSIZ - 1);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		err = -errno;
		/* EINVAL: the device exists but is a TUN (or has other flags);
		 * EBUSY: another process holds its only queue. */
		dl_err("cannot attach to TAP device %s: %s%s", dev, strerror(errno),
		       errno == EINVAL	? " (is it a TUN device, or not a tuntap one? "
					  "create it with 'ip tuntap add dev NAME mode tap')"
		       : errno == EBUSY ? " (another process is attached to it)"
					: "");
		close(fd);
		return err;
	}
	return fd;
}
