/*
 * common: buffers, errno names, JavaScript numbers, UTF-8 and JSON string
 * quoting for the nodenet-cni shim (common.h says why each exists).
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Noreturn void die_oom(void) {
  static const char msg[] = "{\"cniVersion\":\"1.1.0\",\"code\":999,\"msg\":\"out of memory\"}";
  ssize_t r = write(1, msg, sizeof msg - 1);
  (void)r;
  _exit(1);
}

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die_oom();
  return p;
}

void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) die_oom();
  return q;
}

char *xstrndup(const char *s, size_t n) {
  char *p = xmalloc(n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

void buf_reserve(buf_t *b, size_t extra) {
  if (extra > SIZE_MAX / 2 - b->len) die_oom();
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap *= 2;
  b->p = xrealloc(b->p, cap);
  b->p[b->len] = '\0';
  b->cap = cap;
}

void buf_add(buf_t *b, const void *data, size_t n) {
  buf_reserve(b, n);
  if (n) memcpy(b->p + b->len, data, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void buf_adds(buf_t *b, const char *s) { buf_add(b, s, strlen(s)); }

void buf_addc(buf_t *b, char c) { buf_add(b, &c, 1); }

void buf_addf(buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  buf_reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void buf_free(buf_t *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

void buf_clear(buf_t *b) {
  b->len = 0;
  if (b->p) b->p[0] = '\0';
}

const char *buf_str(const buf_t *b) { return b->p ? b->p : ""; }

/* Node's names and libuv's descriptions (uv_err_name, uv_strerror) for the errors the shim can meet. */
static const struct {
  int e;
  const char *code, *desc;
} ERRNOS[] = {
  {EPERM, "EPERM", "operation not permitted"},
  {ENOENT, "ENOENT", "no such file or directory"},
  {EINTR, "EINTR", "interrupted system call"},
  {EIO, "EIO", "i/o error"},
  {ENXIO, "ENXIO", "no such device or address"},
  {EBADF, "EBADF", "bad file descriptor"},
  {EAGAIN, "EAGAIN", "resource temporarily unavailable"},
  {ENOMEM, "ENOMEM", "not enough memory"},
  {EACCES, "EACCES", "permission denied"},
  {EFAULT, "EFAULT", "bad address in system call argument"},
  {EBUSY, "EBUSY", "resource busy or locked"},
  {EEXIST, "EEXIST", "file already exists"},
  {EXDEV, "EXDEV", "cross-device link not permitted"},
  {ENOTDIR, "ENOTDIR", "not a directory"},
  {EISDIR, "EISDIR", "illegal operation on a directory"},
  {EINVAL, "EINVAL", "invalid argument"},
  {ENFILE, "ENFILE", "file table overflow"},
  {EMFILE, "EMFILE", "too many open files"},
  {ETXTBSY, "ETXTBSY", "text file is busy"},
  {EFBIG, "EFBIG", "file too large"},
  {ENOSPC, "ENOSPC", "no space left on device"},
  {EROFS, "EROFS", "read-only file system"},
  {EMLINK, "EMLINK", "too many links"},
  {EPIPE, "EPIPE", "broken pipe"},
  {ENAMETOOLONG, "ENAMETOOLONG", "name too long"},
  {ENOSYS, "ENOSYS", "function not implemented"},
  {ELOOP, "ELOOP", "too many symbolic links encountered"},
  {EPROTO, "EPROTO", "protocol error"},
  {ENOTSOCK, "ENOTSOCK", "socket operation on non-socket"},
  {EPROTOTYPE, "EPROTOTYPE", "protocol wrong type for socket"},
  {ENOTSUP, "ENOTSUP", "operation not supported on socket"},
  {EAFNOSUPPORT, "EAFNOSUPPORT", "address family not supported"},
  {EADDRINUSE, "EADDRINUSE", "address already in use"},
  {ENETDOWN, "ENETDOWN", "network is down"},
  {ECONNABORTED, "ECONNABORTED", "software caused connection abort"},
  {ECONNRESET, "ECONNRESET", "connection reset by peer"},
  {ENOBUFS, "ENOBUFS", "no buffer space available"},
  {ENOTCONN, "ENOTCONN", "socket is not connected"},
  {ETIMEDOUT, "ETIMEDOUT", "connection timed out"},
  {ECONNREFUSED, "ECONNREFUSED", "connection refused"},
};

const char *errno_code(int e) {
  for (size_t i = 0; i < sizeof ERRNOS / sizeof ERRNOS[0]; i++)
    if (ERRNOS[i].e == e) return ERRNOS[i].code;
  const char *n = strerrorname_np(e);
  return n ? n : "EUNKNOWN";
}

const char *errno_desc(int e) {
  for (size_t i = 0; i < sizeof ERRNOS / sizeof ERRNOS[0]; i++)
    if (ERRNOS[i].e == e) return ERRNOS[i].desc;
  return strerror(e);
}

void fs_error(buf_t *out, int e, const char *syscall, const char *path, const char *path2) {
  buf_addf(out, "%s: %s, %s", errno_code(e), errno_desc(e), syscall);
  if (path) buf_addf(out, " '%s'", path);
  if (path2) buf_addf(out, " -> '%s'", path2);
}

/*
 * ECMAScript's Number::toString: the shortest digits that read back as x
 * (printf's %.*e is correctly rounded, so the first precision that round
 * trips is the answer), laid out as the spec says: plain up to 21 digits
 * before the point, 0.000ddd down to 1e-7, exponent form otherwise.
 */
void js_number(buf_t *b, double x) {
  if (isnan(x)) {
    buf_adds(b, "NaN");
    return;
  }
  if (x == 0) {
    buf_addc(b, '0');
    return;
  }
  if (x < 0) {
    buf_addc(b, '-');
    x = -x;
  }
  if (isinf(x)) {
    buf_adds(b, "Infinity");
    return;
  }
  char tmp[48];
  for (int p = 1; p <= 17; p++) {
    snprintf(tmp, sizeof tmp, "%.*e", p - 1, x);
    if (strtod(tmp, NULL) == x) break;
  }
  char digits[24];
  int k = 0;
  const char *q = tmp;
  for (; *q && *q != 'e'; q++)
    if (*q >= '0' && *q <= '9') digits[k++] = *q;
  int n = atoi(q + 1) + 1; /* x = 0.d1d2...dk × 10^n */
  while (k > 1 && digits[k - 1] == '0') k--;
  if (k <= n && n <= 21) {
    buf_add(b, digits, (size_t)k);
    for (int i = k; i < n; i++) buf_addc(b, '0');
  } else if (0 < n && n <= 21) {
    buf_add(b, digits, (size_t)n);
    buf_addc(b, '.');
    buf_add(b, digits + n, (size_t)(k - n));
  } else if (-6 < n && n <= 0) {
    buf_adds(b, "0.");
    for (int i = 0; i < -n; i++) buf_addc(b, '0');
    buf_add(b, digits, (size_t)k);
  } else {
    buf_addc(b, digits[0]);
    if (k > 1) {
      buf_addc(b, '.');
      buf_add(b, digits + 1, (size_t)(k - 1));
    }
    buf_addf(b, "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
  }
}

/*
 * The Encoding Standard's UTF-8 decoder: a lead byte sets how many
 * continuation bytes follow and their allowed range (which rules out
 * overlong forms, surrogates and code points past U+10FFFF); a byte outside
 * that range ends the sequence as one error (U+FFFD) and is read again.
 * Calls emit(cp) for each code point, 0xFFFD for each error; returns the
 * number of errors.
 */
static size_t utf8_decode(const uint8_t *s, size_t n, void (*emit)(void *, uint32_t), void *ctx) {
  size_t errors = 0;
  uint32_t cp = 0;
  int needed = 0, seen = 0;
  uint8_t lower = 0x80, upper = 0xBF;
  for (size_t i = 0; i < n; i++) {
    uint8_t c = s[i];
    if (needed == 0) {
      if (c < 0x80) {
        if (emit) emit(ctx, c);
      } else if (c >= 0xC2 && c <= 0xDF) {
        needed = 1;
        cp = c & 0x1F;
      } else if (c >= 0xE0 && c <= 0xEF) {
        if (c == 0xE0) lower = 0xA0;
        if (c == 0xED) upper = 0x9F;
        needed = 2;
        cp = c & 0xF;
      } else if (c >= 0xF0 && c <= 0xF4) {
        if (c == 0xF0) lower = 0x90;
        if (c == 0xF4) upper = 0x8F;
        needed = 3;
        cp = c & 0x7;
      } else {
        errors++;
        if (emit) emit(ctx, 0xFFFD);
      }
      continue;
    }
    if (c < lower || c > upper) {
      cp = 0;
      needed = seen = 0;
      lower = 0x80;
      upper = 0xBF;
      errors++;
      if (emit) emit(ctx, 0xFFFD);
      i--; /* read this byte again as the start of what follows */
      continue;
    }
    lower = 0x80;
    upper = 0xBF;
    cp = (cp << 6) | (c & 0x3F);
    if (++seen == needed) {
      if (emit) emit(ctx, cp);
      cp = 0;
      needed = seen = 0;
    }
  }
  if (needed) {
    errors++;
    if (emit) emit(ctx, 0xFFFD);
  }
  return errors;
}

bool utf8_valid(const uint8_t *s, size_t n) { return utf8_decode(s, n, NULL, NULL) == 0; }

void wtf8_put(buf_t *out, uint32_t cp) {
  char e[4];
  if (cp < 0x80) {
    e[0] = (char)cp;
    buf_add(out, e, 1);
  } else if (cp < 0x800) {
    e[0] = (char)(0xC0 | (cp >> 6));
    e[1] = (char)(0x80 | (cp & 0x3F));
    buf_add(out, e, 2);
  } else if (cp < 0x10000) {
    e[0] = (char)(0xE0 | (cp >> 12));
    e[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    e[2] = (char)(0x80 | (cp & 0x3F));
    buf_add(out, e, 3);
  } else {
    e[0] = (char)(0xF0 | (cp >> 18));
    e[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    e[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    e[3] = (char)(0x80 | (cp & 0x3F));
    buf_add(out, e, 4);
  }
}

static void emit_to_buf(void *ctx, uint32_t cp) { wtf8_put(ctx, cp); }

void utf8_sanitize(buf_t *out, const uint8_t *s, size_t n) {
  buf_reserve(out, n);
  utf8_decode(s, n, emit_to_buf, out);
}

uint32_t wtf8_next(const char *s, size_t n, size_t *i) {
  const uint8_t *u = (const uint8_t *)s;
  uint8_t c = u[*i];
  int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  if (len == 0 || *i + (size_t)len > n) {
    (*i)++;
    return 0xFFFD;
  }
  uint32_t cp = len == 1 ? c : c & (0x7F >> len);
  for (int k = 1; k < len; k++) {
    if ((u[*i + k] & 0xC0) != 0x80) {
      (*i)++;
      return 0xFFFD;
    }
    cp = (cp << 6) | (u[*i + k] & 0x3F);
  }
  *i += (size_t)len;
  return cp;
}

void wtf8_to_utf8(buf_t *out, const char *s, size_t n) {
  buf_reserve(out, n);
  for (size_t i = 0; i < n;) {
    uint32_t cp = wtf8_next(s, n, &i);
    wtf8_put(out, cp >= 0xD800 && cp <= 0xDFFF ? 0xFFFD : cp);
  }
}

void json_quote(buf_t *out, const char *s, size_t n) {
  buf_reserve(out, n + 2);
  buf_addc(out, '"');
  for (size_t i = 0; i < n;) {
    size_t start = i;
    uint32_t cp = wtf8_next(s, n, &i);
    switch (cp) {
      case '"': buf_adds(out, "\\\""); break;
      case '\\': buf_adds(out, "\\\\"); break;
      case '\b': buf_adds(out, "\\b"); break;
      case '\f': buf_adds(out, "\\f"); break;
      case '\n': buf_adds(out, "\\n"); break;
      case '\r': buf_adds(out, "\\r"); break;
      case '\t': buf_adds(out, "\\t"); break;
      default:
        if (cp < 0x20 || (cp >= 0xD800 && cp <= 0xDFFF)) buf_addf(out, "\\u%04x", (unsigned)cp);
        else if (cp == 0xFFFD) wtf8_put(out, cp); /* also what an invalid byte reads as */
        else buf_add(out, s + start, i - start);
    }
  }
  buf_addc(out, '"');
}
