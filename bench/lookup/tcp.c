/*
 * nodenet-bench-tcp: the rule-lookup benchmark's native TCP client and server
 * (bench/lookup). Built by scripts/build.mjs into dist/ like the pause holder.
 *
 *   nodenet-bench-tcp serve PORT
 *       an epoll echo server on 0.0.0.0:PORT: accepts every connection, echoes
 *       what it reads, closes on EOF or error. Runs until killed.
 *   nodenet-bench-tcp connect IP PORT COUNT SECONDS WARMUP RTT TIMEOUT_MS
 *       WARMUP untimed connects, then at most COUNT connects for at most
 *       SECONDS: socket(), connect() timed alone with CLOCK_MONOTONIC, close()
 *       with SO_LINGER 0 (an RST, so no TIME_WAIT and no port exhaustion).
 *       Then one connection kept open for RTT one-byte echo round trips.
 *       Prints "c <ns>" per timed connect, "r <ns>" per round trip, and last
 *       "end <elapsed ns> <connects> <failures> <first errno or 0>".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int serve(int port) {
  int one = 1;
  int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (l < 0) { perror("socket"); return 1; }
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY) };
  if (bind(l, (struct sockaddr *)&a, sizeof a) < 0) { perror("bind"); return 1; }
  if (listen(l, 4096) < 0) { perror("listen"); return 1; }
  int ep = epoll_create1(0);
  struct epoll_event ev = { .events = EPOLLIN, .data.fd = l };
  epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
  struct epoll_event evs[256];
  char buf[4096];
  fprintf(stderr, "listening on %d\n", port);
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    if (n < 0) { if (errno == EINTR) continue; perror("epoll_wait"); return 1; }
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == l) {
        for (;;) {
          int c = accept4(l, NULL, NULL, SOCK_NONBLOCK);
          if (c < 0) break;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          struct epoll_event ce = { .events = EPOLLIN | EPOLLRDHUP, .data.fd = c };
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
        }
        continue;
      }
      ssize_t r = read(fd, buf, sizeof buf);
      if (r > 0) {
        if (write(fd, buf, (size_t)r) < 0) { close(fd); }
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(fd); /* closing removes it from the epoll set */
      }
    }
  }
}

static int client(const char *ip, int port, long count, double seconds, long warmup, long rtt, long timeout_ms) {
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
  if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) { fprintf(stderr, "bad address %s\n", ip); return 2; }
  struct linger lg = { .l_onoff = 1, .l_linger = 0 };
  struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
  int one = 1;
  long done = 0, failures = 0;
  int first_errno = 0;
  long long start = 0, deadline = 0;
  for (long i = 0; i < warmup + count; i++) {
    if (i == warmup) {
      failures = 0;
      first_errno = 0;
      start = now_ns();
      deadline = start + (long long)(seconds * 1e9);
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) { perror("socket"); return 1; }
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    long long t0 = now_ns();
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    long long t1 = now_ns();
    int e = errno;
    close(fd);
    if (i < warmup) continue;
    if (rc == 0) {
      printf("c %lld\n", t1 - t0);
      done++;
    } else {
      failures++;
      if (!first_errno) first_errno = e;
    }
    if (t1 > deadline) break;
  }
  long long elapsed = now_ns() - start;
  if (rtt > 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
      char x = 'x', y;
      for (long i = 0; i < rtt; i++) {
        long long t0 = now_ns();
        if (write(fd, &x, 1) != 1 || read(fd, &y, 1) != 1) { if (!first_errno) first_errno = errno; break; }
        printf("r %lld\n", now_ns() - t0);
      }
    } else if (!first_errno) {
      first_errno = errno;
    }
    close(fd);
  }
  printf("end %lld %ld %ld %d\n", elapsed, done, failures, first_errno);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "serve") == 0) return serve(atoi(argv[2]));
  if (argc == 9 && strcmp(argv[1], "connect") == 0)
    return client(argv[2], atoi(argv[3]), atol(argv[4]), atof(argv[5]), atol(argv[6]), atol(argv[7]), atol(argv[8]));
  fprintf(stderr, "usage: nodenet-bench-tcp serve PORT | connect IP PORT COUNT SECONDS WARMUP RTT TIMEOUT_MS\n");
  return 2;
}
