/*
 * nodenet-cni: the CNI plugin executable the container runtime runs for every
 * pod network operation, a thin shim in front of the node agent.
 *
 *   skel.c     what every CNI plugin checks itself (env, stdin JSON via json.c,
 *              version negotiation) and the VERSION answer
 *   grpc.c     the call: unary gRPC over HTTP/2 on the agent's unix socket
 *              (hpack.c decodes the answer's headers)
 *   delqueue.c a DEL the agent could not take, queued on disk
 *   this file  reads stdin and the environment, forwards the call, maps the
 *              reply onto CNI output and the exit code
 *
 * Why C: the shim is one process per pod operation, and what it costs is
 * what a runtime waits for. It was TypeScript on Node (bundled with V8's
 * code cache, speaking HTTP/2 on libuv's pipe handle directly), and still a
 * bare Node start costs ~25 ms of wall time and the shim ~6 ms of CPU more:
 * at 16 concurrent ADDs on 2 cores the rate is CPU per ADD, so no Node-based
 * shim could come near a bare Node start while the agent also works. This
 * one starts like any small executable (about 1 ms), needs no node on the
 * machine, and behaves exactly as the TypeScript shim did: the same checks
 * in the same order, the same messages, codes and exit codes, the same
 * bytes on the wire and in the DEL queue (cni/shim.test.ts and
 * cni/shim.e2e.test.ts run it as a runtime does).
 *
 * Outcomes:
 * - VERSION: the supported versions on stdout, exit 0, stdin not read.
 * - the skel rejects the call: the spec's error JSON on stdout, exit 1 (and,
 *   without CNI_COMMAND, a line on stderr saying what this is).
 * - the config's agentSocket (default /run/nodenet/cni.sock, an absolute
 *   path) or agentTimeoutMs (a positive integer; default 30 s, STATUS 10 s,
 *   GC 60 s) is wrong: code 7.
 * - the agent answers: ADD's result printed as is, other commands silent,
 *   exit 0; a CNI error from the agent printed with the config's cniVersion
 *   (code 0 becomes 999), exit 1.
 * - the agent cannot be reached (no socket, refused, lost, deadline):
 *   ADD, CHECK, GC: code 11 "try again later", the runtime retries;
 *   STATUS: code 50 "plugin not available" (SPEC 1.1's code for STATUS);
 *   DEL: the request is queued on disk for the agent to replay and DEL
 *   succeeds, since DEL is idempotent and a failing DEL blocks pod teardown;
 *   if even the queue cannot be written, code 11.
 * - any other failure of the call: 999 "call to the nodenet agent failed".
 * Only the ADD result or the error JSON goes to stdout; notes go to stderr.
 *
 * Process hygiene, as Node arranged it for the TypeScript shim: fds 0-2 that
 * are closed get /dev/null, SIGPIPE is ignored (a vanished reader is an
 * EPIPE, and that output is dropped), and a non-blocking stdin or stdout
 * (EAGAIN) is waited for with poll().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "delqueue.h"
#include "grpc.h"
#include "skel.h"

#define DEFAULT_AGENT_SOCKET "/run/nodenet/cni.sock"

/* Per-command deadlines (ms) when the config sets no agentTimeoutMs, by cni_command. */
static const double DEFAULT_TIMEOUT_MS[5] = {30000, 30000, 30000, 10000, 60000};

/* Writes all of `data` to fd, waiting out EAGAIN; any other error drops the output (the reader is gone). */
static void out_write(int fd, const char *data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w >= 0) {
      data += w;
      n -= (size_t)w;
    } else if (errno == EAGAIN) {
      struct pollfd p = {fd, POLLOUT, 0};
      poll(&p, 1, -1);
    } else if (errno != EINTR) {
      return;
    }
  }
}

/* Reads fd 0 to its end into `in`; 0 or the errno that stopped it. */
static int read_stdin(buf_t *in) {
  for (;;) {
    buf_reserve(in, 16384);
    ssize_t r = read(0, in->p + in->len, in->cap - in->len - 1);
    if (r > 0) {
      in->len += (size_t)r;
      in->p[in->len] = '\0';
    } else if (r == 0) {
      return 0;
    } else if (errno == EAGAIN) {
      struct pollfd p = {0, POLLIN, 0};
      poll(&p, 1, -1);
    } else if (errno != EINTR) {
      return errno;
    }
  }
}

/* An environment variable as Node's process.env gives it: "" when unset, invalid UTF-8 replaced. */
static const char *env_var(const char *name, buf_t *store) {
  const char *v = getenv(name);
  if (!v) return "";
  utf8_sanitize(store, (const uint8_t *)v, strlen(v));
  return store->p;
}

/* Number.isInteger: finite without a fraction (every double from 2^52 up is whole). */
static bool is_integer(double x) {
  if (!isfinite(x)) return false;
  if (x >= 4503599627370496.0 || x <= -4503599627370496.0) return true;
  return (double)(int64_t)x == x;
}

/* Prints the error JSON on stdout; returns the exit code (1). */
static int print_error(cni_error *e) {
  buf_t out = {0};
  cni_error_format(&out, e);
  out_write(1, out.p, out.len);
  buf_free(&out);
  return 1;
}

/* The error for a call the skel accepted: with the config's cniVersion. */
static int call_error(const buf_t *cni_version, unsigned long code, const char *msg, size_t msg_len, const char *details, size_t details_len) {
  cni_error e = {0};
  buf_add(&e.cni_version, cni_version->p, cni_version->len);
  e.code = code;
  buf_add(&e.msg, msg, msg_len);
  buf_add(&e.details, details, details_len);
  int rc = print_error(&e);
  cni_error_free(&e);
  return rc;
}

static int call_errors(const buf_t *cni_version, unsigned long code, const char *msg, const buf_t *details) {
  return call_error(cni_version, code, msg, strlen(msg), details ? buf_str(details) : "", details ? details->len : 0);
}

/* Forwards an accepted call and maps the reply. */
static int run_call(const skel_outcome *o, const cni_request *req) {
  const buf_t *v = &o->cni_version;
  const char *socket = DEFAULT_AGENT_SOCKET;
  size_t socket_len = strlen(DEFAULT_AGENT_SOCKET);
  const jv_t *s = &o->agent_socket, *t = &o->agent_timeout;
  if (s->kind != JV_ABSENT && s->kind != JV_NULL) { /* JavaScript's `??`: null also means the default */
    if (s->kind != JV_STRING || s->str.len == 0 || s->str.p[0] != '/') return call_errors(v, CNI_INVALID_NETWORK_CONFIG, "agentSocket: must be an absolute path", NULL);
    socket = s->str.p;
    socket_len = s->str.len;
  }
  double timeout = DEFAULT_TIMEOUT_MS[o->command];
  if (t->kind != JV_ABSENT && t->kind != JV_NULL) {
    if (t->kind != JV_NUMBER || !is_integer(t->number) || t->number <= 0)
      return call_errors(v, CNI_INVALID_NETWORK_CONFIG, "agentTimeoutMs: must be a positive integer", NULL);
    timeout = t->number;
  }

  agent_reply reply;
  call_agent(socket, socket_len, o->command, req, timeout, &reply);
  int rc = 0;
  buf_t what = {0}, msg = {0}, details = {0};
  switch (reply.kind) {
    case REPLY_OK:
      if (o->command == CMD_ADD) {
        if (reply.result.len == 0) rc = call_errors(v, CNI_INTERNAL, "the agent returned an empty ADD result", NULL);
        else out_write(1, reply.result.p, reply.result.len);
      }
      break;
    case REPLY_CNI_ERROR:
      rc = call_error(v, reply.code == 0 ? CNI_INTERNAL : reply.code, buf_str(&reply.msg), reply.msg.len, buf_str(&reply.details), reply.details.len);
      break;
    case REPLY_FAILED:
      rc = call_errors(v, CNI_INTERNAL, "call to the nodenet agent failed", &reply.detail);
      break;
    case REPLY_UNREACHABLE:
    case REPLY_TIMEOUT:
      if (reply.kind == REPLY_TIMEOUT) {
        buf_adds(&what, "did not answer within ");
        js_number(&what, timeout);
        buf_adds(&what, " ms");
      } else {
        buf_adds(&what, "is not reachable at ");
        buf_add(&what, socket, socket_len);
      }
      if (o->command != CMD_DEL) {
        buf_adds(&msg, "the nodenet agent ");
        buf_add(&msg, what.p, what.len);
        if (o->command == CMD_STATUS) {
          rc = call_error(v, CNI_PLUGIN_NOT_AVAILABLE, msg.p, msg.len, buf_str(&reply.detail), reply.detail.len);
        } else {
          buf_adds(&msg, "; try again later");
          rc = call_error(v, CNI_TRY_AGAIN_LATER, msg.p, msg.len, buf_str(&reply.detail), reply.detail.len);
        }
        break;
      }
      buf_t dir = {0}, file = {0}, err = {0};
      deletion_queue_dir(&dir, socket, socket_len);
      if (write_deletion_record(dir.p, dir.len, req, &file, &err)) {
        buf_t note = {0}, text = {0};
        buf_adds(&note, "nodenet-cni: the agent ");
        buf_add(&note, what.p, what.len);
        buf_adds(&note, " (");
        buf_add(&note, reply.detail.p, reply.detail.len);
        buf_adds(&note, "); DEL queued in ");
        buf_add(&note, file.p, file.len);
        buf_adds(&note, " for the agent to replay\n");
        wtf8_to_utf8(&text, note.p, note.len); /* stderr gets bytes: lone surrogates as U+FFFD, as Node wrote them */
        out_write(2, text.p, text.len);
        buf_free(&note);
        buf_free(&text);
      } else {
        buf_adds(&msg, "the nodenet agent ");
        buf_add(&msg, what.p, what.len);
        buf_adds(&msg, " and the DEL could not be queued; try again later");
        buf_add(&details, reply.detail.p, reply.detail.len);
        buf_adds(&details, "; queue ");
        buf_add(&details, dir.p, dir.len);
        buf_adds(&details, ": ");
        buf_add(&details, err.p, err.len);
        rc = call_error(v, CNI_TRY_AGAIN_LATER, msg.p, msg.len, details.p, details.len);
      }
      buf_free(&dir);
      buf_free(&file);
      buf_free(&err);
      break;
  }
  buf_free(&what);
  buf_free(&msg);
  buf_free(&details);
  agent_reply_free(&reply);
  return rc;
}

int main(void) {
  for (int fd = 0; fd <= 2; fd++)
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
      if (n >= 0 && n != fd) {
        dup2(n, fd);
        close(n);
      }
    }
  signal(SIGPIPE, SIG_IGN);

  buf_t store[6] = {{0}};
  cni_env env = {
    env_var("CNI_COMMAND", &store[0]), env_var("CNI_CONTAINERID", &store[1]), env_var("CNI_NETNS", &store[2]),
    env_var("CNI_IFNAME", &store[3]),  env_var("CNI_ARGS", &store[4]),        env_var("CNI_PATH", &store[5]),
  };
  int rc;
  buf_t in = {0};
  skel_outcome o;
  memset(&o, 0, sizeof o);
  if (env.command[0] != '\0' && strcmp(env.command, "VERSION") != 0) {
    int e = read_stdin(&in);
    if (e) {
      buf_t m = {0};
      buf_adds(&m, "error reading from stdin: ");
      fs_error(&m, e, "read", NULL, NULL);
      cni_error err = {0};
      cni_error_set(&err, LATEST_VERSION, CNI_IO_FAILURE, m.p, NULL);
      rc = print_error(&err);
      cni_error_free(&err);
      buf_free(&m);
      goto out;
    }
  }
  skel_dispatch(&env, (const uint8_t *)in.p, in.len, &o);
  if (o.kind == SKEL_VERSION) {
    buf_t v = {0};
    skel_version_info(&v);
    out_write(1, v.p, v.len);
    buf_free(&v);
    rc = 0;
  } else if (o.kind == SKEL_ERROR) {
    if (env.command[0] == '\0') {
      static const char about[] = "nodenet-cni: CNI plugin of the nodenet agent; CNI protocol versions supported: " SUPPORTED_VERSIONS_TEXT "\n";
      out_write(2, about, sizeof about - 1);
    }
    rc = print_error(&o.error);
  } else {
    cni_request req = {env.container_id, env.netns, env.if_name, env.args, env.path, (const uint8_t *)in.p, in.len};
    rc = run_call(&o, &req);
  }
out:
  skel_outcome_free(&o);
  buf_free(&in);
  for (int i = 0; i < 6; i++) buf_free(&store[i]);
  return rc;
}
