/* examples/epoll_server.c - an epoll(7) echo loop marked with the marker library, and its own load.
 *
 * The server is the loop of epoll(7)'s example, with markers where a hand-written snapshot would
 * read the counters:
 *   epoll   PS_MARK_BEGIN before epoll_wait, PS_MARK_END after it        (post_epoll)
 *   iter    PS_MARK_BEGIN at each event, PS_MARK_END when it is handled  (loop_iter_start,
 *           field 0 = nfds, field 1 = 1 for the listening socket          loop_iter_finish)
 *   accept  around accept(2)                                             (post_accept)
 *   data    around the echo of one message (or the close at its end)
 * A client thread of the same program loads it on loopback only (127.0.0.1, a port the kernel
 * picks): CONNS connections one after the other, each MSGS messages of 64 bytes sent one at a
 * time, each echoed back before the next, then closed. Both sockets are level-triggered, and the
 * server accepts one connection per event, so the counts are exact:
 *   accept = CONNS, data = CONNS * (MSGS + 1) (the close is an event too), iter = accept + data;
 *   epoll = WAITS (a wait may return several events, so WAITS <= EVENTS).
 * The server stops once CONNS connections are closed.
 *
 *   perfsh stat -r marker:iter -r marker:accept -r marker:data ./examples/epoll_server 20 10
 *   perfsh kinds -r marker:iter --field 1 --kind 0=data --kind 1=listen -r marker:accept \
 *       ./examples/epoll_server 20 10          (the cost per event kind, accept apart, slow ones logged)
 *   PERFSH_OUT=srv.psnap ./examples/epoll_server 20 10 && perfsh report srv.psnap
 *
 *   usage: epoll_server [CONNS] [MSGS]   defaults 10, 10
 *   prints: connections CONNS messages MSGS events EVENTS waits WAITS
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <perfsh/marker.h>

#define MAX_EVENTS 16
#define MSG 64

static long conns = 10, msgs = 10;
static struct sockaddr_in server_addr;

/* write all of @n bytes, or read all of them; 0 or -1 */
static int full_io(int fd, char *buf, size_t n, int writing)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = writing ? write(fd, buf + done, n - done) : read(fd, buf + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* The load: @conns connections in turn, @msgs echoed messages each. A failure ends the program
   (the server would wait for the connection forever). */
static void *client(void *arg)
{
	char out[MSG], in[MSG];

	(void)arg;
	for (long c = 0; c < conns; c++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&server_addr, sizeof server_addr) < 0) {
			perror("epoll_server: client: connect to 127.0.0.1");
			exit(1);
		}
		for (long m = 0; m < msgs; m++) {
			memset(out, 'a' + (int)(m % 26), sizeof out);
			if (full_io(fd, out, sizeof out, 1) || full_io(fd, in, sizeof in, 0) || memcmp(in, out, MSG)) {
				fprintf(stderr, "epoll_server: client: echo %ld of connection %ld failed\n", m, c);
				exit(1);
			}
		}
		close(fd);
	}
	return NULL;
}

static int listen_loopback(void)
{
	socklen_t len = sizeof server_addr;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	server_addr.sin_family = AF_INET;
	server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	server_addr.sin_port = 0;
	if (bind(fd, (struct sockaddr *)&server_addr, sizeof server_addr) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&server_addr, &len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One message on @fd echoed back, or the connection closed: 1 when it closed. */
static int use_fd(int epollfd, int fd)
{
	char buf[MSG];
	ssize_t n = read(fd, buf, sizeof buf);

	if (n > 0 && full_io(fd, buf, (size_t)n, 1) == 0)
		return 0;
	epoll_ctl(epollfd, EPOLL_CTL_DEL, fd, NULL);
	close(fd);
	return 1;
}

static int serve(int listen_sock, long *events, long *waits)
{
	struct epoll_event ev, evs[MAX_EVENTS];
	long closed = 0;
	int epollfd = epoll_create1(0);

	if (epollfd < 0) {
		perror("epoll_server: epoll_create1");
		return -1;
	}
	ev.events = EPOLLIN;
	ev.data.fd = listen_sock;
	if (epoll_ctl(epollfd, EPOLL_CTL_ADD, listen_sock, &ev) < 0) {
		perror("epoll_server: epoll_ctl: listen_sock");
		close(epollfd);
		return -1;
	}
	while (closed < conns) {
		PS_MARK_BEGIN(epoll);
		int nfds = epoll_wait(epollfd, evs, MAX_EVENTS, -1);
		PS_MARK_END(epoll); /* post_epoll */

		++*waits;
		if (nfds < 0 && errno == EINTR)
			continue;
		if (nfds < 0) {
			perror("epoll_server: epoll_wait");
			close(epollfd);
			return -1;
		}
		for (int n = 0; n < nfds; n++) {
			int listen_event = evs[n].data.fd == listen_sock;

			++*events;
			PS_MARK_BEGIN(iter); /* loop_iter_start */
			PS_MARK_FIELD(0, (uint64_t)nfds);
			PS_MARK_FIELD(1, (uint64_t)listen_event);
			if (listen_event) {
				PS_MARK_BEGIN(accept);
				int conn_sock = accept(listen_sock, NULL, NULL);
				PS_MARK_END(accept); /* post_accept */

				if (conn_sock >= 0) {
					ev.events = EPOLLIN;
					ev.data.fd = conn_sock;
					if (epoll_ctl(epollfd, EPOLL_CTL_ADD, conn_sock, &ev) < 0) {
						perror("epoll_server: epoll_ctl: conn_sock");
						close(conn_sock);
						closed++;
					}
				} else {
					perror("epoll_server: accept");
				}
			} else {
				PS_MARK_BEGIN(data);
				closed += use_fd(epollfd, evs[n].data.fd);
				PS_MARK_END(data);
			}
			PS_MARK_END(iter); /* loop_iter_finish */
		}
	}
	close(epollfd);
	return 0;
}

int main(int argc, char **argv)
{
	long events = 0, waits = 0;
	pthread_t tid;
	int listen_sock, rc;

	conns = argc > 1 ? atol(argv[1]) : conns;
	msgs = argc > 2 ? atol(argv[2]) : msgs;
	if (conns < 1 || msgs < 0) {
		fprintf(stderr, "usage: epoll_server [CONNS (>= 1)] [MSGS (>= 0)]\n");
		return 2;
	}
	listen_sock = listen_loopback();
	if (listen_sock < 0) {
		perror("epoll_server: listen on 127.0.0.1");
		return 1;
	}
	if (pthread_create(&tid, NULL, client, NULL)) {
		fprintf(stderr, "epoll_server: pthread_create failed\n");
		close(listen_sock);
		return 1;
	}
	rc = serve(listen_sock, &events, &waits);
	if (rc < 0)
		exit(1); /* the client may wait on the server forever */
	pthread_join(tid, NULL);
	close(listen_sock);
	printf("connections %ld messages %ld events %ld waits %ld\n", conns, msgs, events, waits);
	return 0;
}
