/*
 * delqueue: a DEL the shim could not hand to the agent, left on disk.
 *
 * The runtime retries a failed DEL for a long time, and the pod cannot finish
 * terminating meanwhile; a DEL the agent never saw is harmless to replay later
 * because DEL is idempotent (Cilium's DeletionFallbackClient does the same).
 * So with the agent down the shim writes the request to
 *   <dirname(agentSocket)>/del-queue/<containerID>-<ifName>.json
 * and reports success; the agent replays the directory when it starts and
 * watches it while it runs (agent/src/cniserver/replay-deletions.ts).
 *
 * The record, one line of JSON (proto/cni/v1/contract.ts DeletionRecord v1):
 *   {"version":1,"command":"DEL","containerId":..,"netns":..,"ifName":..,
 *    "args":..,"path":..,"config":<stdin as text>,"queuedAt":<ISO 8601 UTC>}
 * Writes are atomic (a dot-prefixed temp file, fsync, rename, fsync of the
 * directory), so the agent never sees half a record. A second DEL for the
 * same attachment replaces the first. Error messages are the ones Node's fs
 * calls gave when the shim was TypeScript, so the CNI error reads the same.
 */
#define _GNU_SOURCE
#include "delqueue.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void deletion_queue_dir(buf_t *out, const char *socket, size_t len) {
  size_t last = len;
  while (last > 0 && socket[last - 1] != '/') last--;
  /* `last` is one past the last '/': none, or the root's, or a directory of "/" itself means /del-queue */
  bool root = last <= 1 || (last == 2 && socket[0] == '/');
  if (!root) buf_add(out, socket, last - 1);
  buf_adds(out, "/del-queue");
}

/* path.join(dir, name) for an absolute dir: the segments with '.', '..' and empty ones resolved. */
static void path_join(buf_t *out, const char *dir, size_t dir_len, const char *name) {
  buf_t all = {0};
  buf_add(&all, dir, dir_len);
  buf_addc(&all, '/');
  buf_adds(&all, name);
  size_t *starts = xmalloc((all.len + 1) * sizeof *starts), *lens = xmalloc((all.len + 1) * sizeof *lens);
  size_t count = 0;
  for (size_t i = 0; i < all.len;) {
    size_t j = i;
    while (j < all.len && all.p[j] != '/') j++;
    size_t len = j - i;
    if (len == 0 || (len == 1 && all.p[i] == '.')) {
      /* skipped */
    } else if (len == 2 && all.p[i] == '.' && all.p[i + 1] == '.') {
      if (count) count--;
    } else {
      starts[count] = i;
      lens[count++] = len;
    }
    i = j + 1;
  }
  for (size_t k = 0; k < count; k++) {
    buf_addc(out, '/');
    buf_add(out, all.p + starts[k], lens[k]);
  }
  if (count == 0) buf_addc(out, '/');
  free(starts);
  free(lens);
  buf_free(&all);
}

/* mkdir -p with mode 0700, as Node's recursive mkdirSync: 0 or the errno that stopped it. */
static int mkdir_p(const char *path) {
  if (mkdir(path, 0700) == 0) return 0;
  int e = errno;
  struct stat st;
  if (e == EEXIST) return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : EEXIST;
  if (e != ENOENT) return e;
  const char *slash = strrchr(path, '/');
  if (!slash || slash == path) return ENOENT;
  char *parent = xstrndup(path, (size_t)(slash - path));
  int pe = mkdir_p(parent);
  free(parent);
  if (pe) return pe;
  if (mkdir(path, 0700) == 0) return 0;
  e = errno;
  if (e == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
  return e;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static void field(buf_t *b, const char *name, const char *value, size_t len) {
  buf_addf(b, ",\"%s\":", name);
  json_quote(b, value, len);
}

bool write_deletion_record(const char *dir, size_t dir_len, const cni_request *req, buf_t *file, buf_t *err) {
  /* The record. stdin is valid UTF-8 (the skel checked); as TextDecoder it loses a leading BOM. */
  const uint8_t *config = req->config;
  size_t config_len = req->config_len;
  if (config_len >= 3 && config[0] == 0xEF && config[1] == 0xBB && config[2] == 0xBF) {
    config += 3;
    config_len -= 3;
  }
  struct timespec now;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &now);
  gmtime_r(&now.tv_sec, &tm);
  buf_t rec = {0};
  buf_adds(&rec, "{\"version\":1,\"command\":\"DEL\"");
  field(&rec, "containerId", req->container_id, strlen(req->container_id));
  field(&rec, "netns", req->netns, strlen(req->netns));
  field(&rec, "ifName", req->if_name, strlen(req->if_name));
  field(&rec, "args", req->args, strlen(req->args));
  field(&rec, "path", req->path, strlen(req->path));
  field(&rec, "config", (const char *)config, config_len);
  buf_addf(&rec, ",\"queuedAt\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\"}\n", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
           tm.tm_min, tm.tm_sec, now.tv_nsec / 1000000);

  buf_t name = {0}, tmp_name = {0}, tmp = {0}, os_dir = {0}, os_tmp = {0}, os_file = {0};
  buf_addf(&name, "%s-%s.json", req->container_id, req->if_name);
  buf_addf(&tmp_name, ".%s.%ld.tmp", name.p, (long)getpid());
  path_join(file, dir, dir_len, name.p);
  path_join(&tmp, dir, dir_len, tmp_name.p);
  /* Paths as the kernel gets them: a lone surrogate of the configured socket path becomes U+FFFD. */
  wtf8_to_utf8(&os_dir, dir, dir_len);
  wtf8_to_utf8(&os_tmp, tmp.p, tmp.len);
  wtf8_to_utf8(&os_file, file->p, file->len);
  bool ok = false;
  int e, fd = -1;
  buf_t dir_text = {0};
  buf_add(&dir_text, dir, dir_len);

  if ((e = mkdir_p(os_dir.p))) {
    fs_error(err, e, "mkdir", dir_text.p, NULL);
    goto out;
  }
  fd = open(os_tmp.p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    fs_error(err, errno, "open", tmp.p, NULL);
    goto out;
  }
  const char *failed = (e = write_all(fd, rec.p, rec.len)) ? "write" : fsync(fd) < 0 ? (e = errno, "fsync") : NULL;
  close(fd);
  if (failed) {
    unlink(os_tmp.p);
    fs_error(err, e, failed, NULL, NULL);
    goto out;
  }
  if (rename(os_tmp.p, os_file.p) < 0) {
    fs_error(err, errno, "rename", tmp.p, file->p);
    goto out;
  }
  fd = open(os_dir.p, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fs_error(err, errno, "open", dir_text.p, NULL);
    goto out;
  }
  if (fsync(fd) < 0) {
    fs_error(err, errno, "fsync", NULL, NULL);
    close(fd);
    goto out;
  }
  close(fd);
  ok = true;
out:
  buf_free(&rec);
  buf_free(&name);
  buf_free(&tmp_name);
  buf_free(&tmp);
  buf_free(&os_dir);
  buf_free(&os_tmp);
  buf_free(&os_file);
  buf_free(&dir_text);
  return ok;
}
