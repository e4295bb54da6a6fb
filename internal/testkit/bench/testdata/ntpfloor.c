// ntpfloor: the least an NTP server can do per request on this kernel, the
// floor that bench.sh ntpserve measures beside timed and chronyd. One
// thread blocks in recvmmsg(2) (up to 32 datagrams, the kernel's receive
// stamps on, as both servers have them) and answers every mode-3 request of
// the batch with one sendmmsg(2): a 48-byte mode-4 reply, stratum 8, the
// request's transmit time as origin, its kernel stamp as receive time and a
// clock_gettime as transmit time. No rate limit, no MAC, no state, no event
// loop: two system calls a wake-up, which no real server goes below. It
// binds ADDR:123 and runs until killed. Test only: never run it outside a
// lab namespace.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 32
#define NTP_UNIX_OFFSET 2208988800ULL

static uint64_t ntp_time(const struct timespec *ts) {
	uint64_t frac = ((uint64_t)ts->tv_nsec << 32) / 1000000000ULL;
	return ((uint64_t)(ts->tv_sec + NTP_UNIX_OFFSET) << 32) | frac;
}

static void put64(uint8_t *b, uint64_t v) {
	for (int i = 7; i >= 0; i--) { b[i] = v & 0xff; v >>= 8; }
}

int main(int argc, char **argv) {
	if (argc != 2) { fprintf(stderr, "usage: ntpfloor IPV4\n"); return 2; }
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) { perror("socket"); return 1; }
	int one = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) < 0) { perror("SO_TIMESTAMPNS"); return 1; }
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(123) };
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) { fprintf(stderr, "bad address %s\n", argv[1]); return 2; }
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("bind"); return 1; }
	static uint8_t in[BATCH][2048], out[BATCH][48], ctl[BATCH][64];
	static struct sockaddr_in from[BATCH];
	static struct iovec riov[BATCH], wiov[BATCH];
	static struct mmsghdr rm[BATCH], wm[BATCH];
	for (;;) {
		for (int i = 0; i < BATCH; i++) {
			riov[i] = (struct iovec){ in[i], sizeof in[i] };
			rm[i].msg_hdr = (struct msghdr){ .msg_name = &from[i], .msg_namelen = sizeof from[i],
				.msg_iov = &riov[i], .msg_iovlen = 1, .msg_control = ctl[i], .msg_controllen = sizeof ctl[i] };
		}
		int n = recvmmsg(fd, rm, BATCH, MSG_WAITFORONE, NULL);
		if (n < 0) { if (errno == EINTR) continue; perror("recvmmsg"); return 1; }
		int k = 0;
		for (int i = 0; i < n; i++) {
			if (rm[i].msg_len < 48 || (in[i][0] & 7) != 3) continue;
			struct timespec rx = {0};
			for (struct cmsghdr *c = CMSG_FIRSTHDR(&rm[i].msg_hdr); c; c = CMSG_NXTHDR(&rm[i].msg_hdr, c))
				if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) memcpy(&rx, CMSG_DATA(c), sizeof rx);
			uint8_t *o = out[k];
			memset(o, 0, 48);
			o[0] = (in[i][0] & 0x38) | 4; o[1] = 8; o[2] = in[i][2]; o[3] = 0xec;
			memcpy(o + 24, in[i] + 40, 8); // origin = the request's transmit
			put64(o + 32, ntp_time(&rx));
			struct timespec tx; clock_gettime(CLOCK_REALTIME, &tx);
			put64(o + 40, ntp_time(&tx));
			memcpy(o + 16, o + 32, 8); // reference
			wiov[k] = (struct iovec){ o, 48 };
			wm[k].msg_hdr = (struct msghdr){ .msg_name = &from[i], .msg_namelen = sizeof from[i], .msg_iov = &wiov[k], .msg_iovlen = 1 };
			k++;
		}
		if (k > 0 && sendmmsg(fd, wm, k, 0) < 0 && errno != EINTR) perror("sendmmsg");
	}
}
