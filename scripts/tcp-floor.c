// tcp-floor: what a tcp-lat probe of an agent costs the kernel alone,
// with no runtime around it. A client sends bursts of ITERS ping-pongs
// of SIZE bytes, RATE bursts a second for SECONDS, on one TCP connection
// (TCP_NODELAY, loopback), reading the clock before and after each
// ping-pong as an agent's kept session does; the server echoes. Each end
// sleeps in the kernel between messages (a blocking read) and between
// bursts (clock_nanosleep to the burst's time). At its end each prints
// one line, "bursts N user_us U sys_us S ns M": the bursts it sent (the
// server: 0), its CPU in user and system time (getrusage) and the
// ping-pongs' mean round trip (the server: 0). scripts/tcp-floor.sh runs it.
//
//   tcp-floor serve PORT
//   tcp-floor probe PORT RATE SECONDS ITERS SIZE
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "tcp-floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

// io moves exactly n bytes of b (read when rd, else write); 0 at the
// peer's end of the connection.
static int io(int fd, char *b, size_t n, int rd)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = rd ? read(fd, b + got, n - got) : write(fd, b + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die(rd ? "read" : "write");
		if (r == 0)
			return 0;
		got += (size_t)r;
	}
	return 1;
}

static void report(long long bursts, double mean_ns)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		die("getrusage");
	printf("bursts %lld user_us %lld sys_us %lld ns %.0f\n", bursts,
	       (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
	       (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec, mean_ns);
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "serve") != 0 && (strcmp(argv[1], "probe") != 0 || argc != 7))) {
		fprintf(stderr, "usage: tcp-floor serve PORT | tcp-floor probe PORT RATE SECONDS ITERS SIZE\n");
		return 2;
	}
	int one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2])),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		die("socket");
	if (strcmp(argv[1], "serve") == 0) {
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 1) != 0)
			die("listen");
		int c = accept(s, NULL, NULL);
		if (c < 0)
			die("accept");
		close(s);
		if (setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
			die("TCP_NODELAY");
		// The size is the client's: the first message's length is not
		// known here, so echo what each read returns.
		char buf[65536];
		for (;;) {
			ssize_t r = read(c, buf, sizeof buf);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				die("read");
			if (r == 0)
				break;
			if (!io(c, buf, (size_t)r, 0))
				break;
		}
		report(0, 0);
		return 0;
	}
	double rate = atof(argv[3]), secs = atof(argv[4]);
	int iters = atoi(argv[5]);
	size_t size = (size_t)atol(argv[6]);
	if (rate <= 0 || secs <= 0 || iters <= 0 || size == 0 || size > 65536) {
		fprintf(stderr, "tcp-floor: want RATE, SECONDS and ITERS above 0, SIZE from 1 to 65536\n");
		return 2;
	}
	char *buf = calloc(1, size);
	if (buf == NULL)
		die("calloc");
	// The server may not listen yet: retry for up to 5 s.
	for (int try = 0; connect(s, (struct sockaddr *)&a, sizeof a) != 0; try++) {
		if (errno != ECONNREFUSED || try == 50)
			die("connect");
		usleep(100000);
	}
	if (setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
		die("TCP_NODELAY");
	long long period = (long long)(1e9 / rate), bursts = (long long)(rate * secs);
	double sum_ns = 0;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long long start = (long long)now.tv_sec * 1000000000 + now.tv_nsec;
	unsigned seed = (unsigned)start ^ (unsigned)getpid();
	for (long long b = 0; b < bursts; b++) {
		// At a random time within the burst's period, as an agent's
		// slots fall: a burst at the same phase of the kernel's tick
		// each time would skew its split of CPU into user and system
		// time, which the tick samples.
		long long at = start + b * period + (long long)((double)rand_r(&seed) / ((double)RAND_MAX + 1) * (double)period);
		struct timespec t = {.tv_sec = at / 1000000000, .tv_nsec = at % 1000000000};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
			;
		for (int i = 0; i < iters; i++) {
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			if (!io(s, buf, size, 0) || !io(s, buf, size, 1)) {
				fprintf(stderr, "tcp-floor: the server closed the connection\n");
				return 1;
			}
			clock_gettime(CLOCK_MONOTONIC, &t1);
			sum_ns += (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
		}
	}
	report(bursts, sum_ns / ((double)bursts * iters));
	return 0;
}
