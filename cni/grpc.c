/*
 * grpc: one unary gRPC call to the agent's nodenet.cni.v1.CniService over its
 * unix socket: HTTP/2 (RFC 9113) with prior knowledge, HPACK (hpack.c), and
 * the two protobuf messages encoded and decoded by hand.
 *
 * A unary call is a small, fixed part of gRPC over HTTP/2: one POST to
 * /nodenet.cni.v1.CniService/<Method> with `content-type: application/grpc`,
 * a body of one length-prefixed message (1 byte compressed flag, 4 bytes
 * big-endian length), and a response message followed by
 * `grpc-status`/`grpc-message` trailers (or a trailers-only response on
 * error). The agent serves it on node:http2 (agent/src/cniserver/server.ts).
 *
 * What goes out, in one write: the connection preface, a SETTINGS frame
 * (header table size 0, so the server's encoder need not index what it
 * sends; no push; a 16 MiB stream window), a WINDOW_UPDATE that lets the
 * server send up to 16 MiB on the connection, one HEADERS frame of literal
 * fields without indexing or Huffman coding, and the message in DATA frames
 * no larger than the peer's maximum frame size and its flow-control windows
 * (more follow as WINDOW_UPDATEs and SETTINGS arrive). What comes in:
 * SETTINGS (acknowledged), PING (answered), WINDOW_UPDATE, HEADERS and
 * CONTINUATION (decoded, whatever the stream, to keep HPACK's table), DATA,
 * RST_STREAM and GOAWAY; the call ends at the first END_STREAM of stream 1.
 * The answer is read from the first header block's :status, the last block's
 * grpc-status and grpc-message (percent-decoded), and the DATA.
 *
 * Classification (what main branches on), as the TypeScript shim did:
 * - socket missing or refusing, connection reset or closed before the answer,
 *   a refused or cancelled stream, a GOAWAY before our stream, or
 *   grpc-status UNAVAILABLE: unreachable;
 * - our deadline passed, or grpc-status DEADLINE_EXCEEDED: timeout;
 * - any other gRPC or HTTP/2 failure or a malformed answer: failed;
 * - a decoded CniResponse: ok or a CNI error.
 * The deadline counts from the start of the call and is also sent as
 * `grpc-timeout` (milliseconds, at most 8 digits).
 */
#define _GNU_SOURCE
#include "grpc.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hpack.h"

static const char *const METHODS[5] = {"Add", "Del", "Check", "Status", "Gc"};

static const char *const GRPC_STATUS_NAMES[17] = {
  "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
  "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
  "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
};
enum { GRPC_DEADLINE_EXCEEDED = 4, GRPC_UNAVAILABLE = 14 };

enum { FRAME_DATA = 0, FRAME_HEADERS = 1, FRAME_RST_STREAM = 3, FRAME_SETTINGS = 4, FRAME_PING = 6, FRAME_GOAWAY = 7, FRAME_WINDOW_UPDATE = 8, FRAME_CONTINUATION = 9 };
enum { FLAG_END_STREAM = 0x1, FLAG_ACK = 0x1, FLAG_END_HEADERS = 0x4, FLAG_PADDED = 0x8, FLAG_PRIORITY = 0x20 };
enum { SETTINGS_HEADER_TABLE_SIZE = 1, SETTINGS_ENABLE_PUSH = 2, SETTINGS_INITIAL_WINDOW_SIZE = 4, SETTINGS_MAX_FRAME_SIZE = 5 };
enum { RST_REFUSED_STREAM = 7, RST_CANCEL = 8 };
#define DEFAULT_WINDOW 65535
#define RECEIVE_WINDOW (16 * 1024 * 1024)
static const char PREFACE[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1e6;
}

static void put_be32(buf_t *b, uint32_t v) {
  uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  buf_add(b, x, 4);
}

static uint32_t get_be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

static void frame_header(buf_t *b, size_t len, int type, int flags, uint32_t stream) {
  uint8_t h[5] = {(uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len, (uint8_t)type, (uint8_t)flags};
  buf_add(b, h, 5);
  put_be32(b, stream & 0x7fffffff);
}

/* ---- protobuf: CniRequest out ---- */

static void pb_varint(buf_t *b, uint64_t v) {
  while (v >= 0x80) {
    buf_addc(b, (char)(v | 0x80));
    v >>= 7;
  }
  buf_addc(b, (char)v);
}

/* A length-delimited field; proto3 leaves empty ones out. */
static void pb_bytes(buf_t *b, int field, const void *p, size_t n) {
  if (n == 0) return;
  pb_varint(b, (uint64_t)field << 3 | 2);
  pb_varint(b, n);
  buf_add(b, p, n);
}

/* ---- protobuf: CniResponse in, read as the generated TypeScript (ts-proto over @bufbuild/protobuf) read it ---- */

typedef struct {
  const uint8_t *buf;
  uint64_t len, pos;
  buf_t *err; /* set on the first error */
} pb_reader;

/* A byte past the end reads as 0 and still moves on, as `buf[pos++]` gave undefined there. */
static uint8_t pb_byte(pb_reader *r) {
  uint8_t b = r->pos < r->len ? r->buf[r->pos] : 0;
  r->pos++;
  return b;
}

static bool pb_bounds(pb_reader *r) {
  if (r->pos <= r->len) return true;
  buf_adds(r->err, "premature EOF");
  return false;
}

static bool pb_uint32(pb_reader *r, uint32_t *v) {
  uint32_t result = 0;
  for (int i = 0; i < 4; i++) {
    uint8_t b = pb_byte(r);
    result |= (uint32_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = result;
      return pb_bounds(r);
    }
  }
  uint8_t b = pb_byte(r);
  result |= (uint32_t)(b & 0x0f) << 28;
  for (int read = 5; (b & 0x80) && read < 10; read++) b = pb_byte(r);
  if (b & 0x80) {
    buf_adds(r->err, "invalid varint");
    return false;
  }
  *v = result;
  return pb_bounds(r);
}

/* A length-delimited value: its bytes in [*start, *start + *n). */
static bool pb_delimited(pb_reader *r, uint64_t *start, uint32_t *n) {
  if (!pb_uint32(r, n)) return false;
  *start = r->pos;
  r->pos += *n;
  return pb_bounds(r);
}

static bool pb_skip(pb_reader *r, uint32_t wire_type, int field_no, int limit);

/* A group's tag, checked as BinaryReader.tag() checks it. */
static bool pb_tag(pb_reader *r, uint32_t *field_no, uint32_t *wire_type) {
  uint64_t start = r->pos;
  uint32_t tag;
  if (!pb_uint32(r, &tag)) return false;
  uint64_t read = r->pos - start;
  if (read > 5 || (read == 5 && r->pos - 1 < r->len && r->buf[r->pos - 1] > 0x0f)) {
    buf_adds(r->err, "illegal tag: varint overflows uint32");
    return false;
  }
  *field_no = tag >> 3;
  *wire_type = tag & 7;
  if (*field_no == 0 || *wire_type > 5) {
    buf_addf(r->err, "illegal tag: field no %u wire type %u", *field_no, *wire_type);
    return false;
  }
  return true;
}

/* Skips one value of an unknown field. field_no < 0: no end-group check (as ts-proto calls skip). */
static bool pb_skip(pb_reader *r, uint32_t wire_type, int field_no, int limit) {
  uint32_t n;
  uint64_t start;
  switch (wire_type) {
    case 0:
      while (pb_byte(r) & 0x80) {
      }
      break;
    case 1:
      r->pos += 8;
      break;
    case 5:
      r->pos += 4;
      break;
    case 2:
      if (!pb_delimited(r, &start, &n)) return false;
      break;
    case 3:
      if (limit <= 0) {
        buf_adds(r->err, "maximum recursion depth reached");
        return false;
      }
      for (;;) {
        uint32_t fn, wt;
        if (!pb_tag(r, &fn, &wt)) return false;
        if (wt == 4) {
          if (field_no >= 0 && fn != (uint32_t)field_no) {
            buf_adds(r->err, "invalid end group tag");
            return false;
          }
          break;
        }
        if (!pb_skip(r, wt, (int)fn, limit - 1)) return false;
      }
      break;
    default:
      buf_addf(r->err, "cant skip wire type %u", wire_type);
      return false;
  }
  return pb_bounds(r);
}

/* CniError { uint32 code = 1; string msg = 2; string details = 3; }, `length` bytes from here. */
static bool pb_cni_error(pb_reader *r, uint64_t length, agent_reply *out) {
  uint64_t end = r->pos + length, start;
  uint32_t n;
  out->code = 0;
  buf_clear(&out->msg);
  buf_clear(&out->details);
  while (r->pos < end) {
    uint32_t tag;
    if (!pb_uint32(r, &tag)) return false;
    if (tag == 8) {
      uint32_t code;
      if (!pb_uint32(r, &code)) return false;
      out->code = code;
      continue;
    }
    if (tag == 18 || tag == 26) {
      if (!pb_delimited(r, &start, &n)) return false;
      buf_t *s = tag == 18 ? &out->msg : &out->details;
      buf_clear(s);
      utf8_sanitize(s, r->buf + start, n); /* TextDecoder, not fatal; a BOM is kept */
      continue;
    }
    if ((tag & 7) == 4 || tag == 0) break;
    if (!pb_skip(r, tag & 7, -1, 100)) return false;
  }
  return true;
}

/* CniResponse { oneof outcome { bytes result = 1; CniError error = 2; } }: the last outcome wins. */
static bool pb_cni_response(pb_reader *r, agent_reply *out) {
  bool is_error = false;
  buf_clear(&out->result);
  while (r->pos < r->len) {
    uint32_t tag, n;
    uint64_t start;
    if (!pb_uint32(r, &tag)) return false;
    if (tag == 10) {
      if (!pb_delimited(r, &start, &n)) return false;
      buf_clear(&out->result);
      buf_add(&out->result, r->buf + start, n);
      is_error = false;
      continue;
    }
    if (tag == 18) {
      if (!pb_uint32(r, &n) || !pb_cni_error(r, n, out)) return false;
      is_error = true;
      continue;
    }
    if ((tag & 7) == 4 || tag == 0) break;
    if (!pb_skip(r, tag & 7, -1, 100)) return false;
  }
  out->kind = is_error ? REPLY_CNI_ERROR : REPLY_OK;
  if (!out->result.p) buf_add(&out->result, "", 0);
  return true;
}

/* ---- what a header value means to JavaScript ---- */

/* Number(s) for a header value read as latin1 (a subset of JavaScript's StringToNumber: decimal, 0x/0o/0b, Infinity). */
static double js_to_number(const char *s, size_t n) {
  size_t a = 0, b = n;
  while (a < b && (s[a] == ' ' || (s[a] >= '\t' && s[a] <= '\r') || (uint8_t)s[a] == 0xA0)) a++;
  while (b > a && (s[b - 1] == ' ' || (s[b - 1] >= '\t' && s[b - 1] <= '\r') || (uint8_t)s[b - 1] == 0xA0)) b--;
  if (a == b) return 0;
  char *t = xstrndup(s + a, b - a);
  double v = NAN;
  size_t len = b - a;
  if (len > 2 && t[0] == '0' && strchr("xXoObB", t[1])) {
    int base = (t[1] == 'x' || t[1] == 'X') ? 16 : (t[1] == 'o' || t[1] == 'O') ? 8 : 2;
    v = 0;
    for (size_t i = 2; i < len && v == v; i++) {
      int d = t[i] >= '0' && t[i] <= '9' ? t[i] - '0' : t[i] >= 'a' && t[i] <= 'f' ? t[i] - 'a' + 10 : t[i] >= 'A' && t[i] <= 'F' ? t[i] - 'A' + 10 : 99;
      v = d < base ? v * base + d : NAN;
    }
  } else {
    const char *p = t + (t[0] == '+' || t[0] == '-');
    if (strcmp(p, "Infinity") == 0) {
      v = t[0] == '-' ? -INFINITY : INFINITY;
    } else {
      /* [+-] digits [. digits] [e [+-] digits], or [+-] . digits [...]: strtod's grammar without hex, inf and nan */
      bool digits = false, ok = true;
      const char *q = p;
      while (*q >= '0' && *q <= '9') q++, digits = true;
      if (*q == '.') {
        q++;
        while (*q >= '0' && *q <= '9') q++, digits = true;
      }
      if (digits && (*q == 'e' || *q == 'E')) {
        q++;
        if (*q == '+' || *q == '-') q++;
        if (!(*q >= '0' && *q <= '9')) ok = false;
        while (*q >= '0' && *q <= '9') q++;
      }
      if (digits && ok && *q == '\0') v = strtod(t, NULL);
    }
  }
  free(t);
  return v;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The byte of the %XX escape at s[i] ('%'), or -1. */
static int escaped_byte(const char *s, size_t n, size_t i) {
  if (i + 2 >= n || s[i] != '%') return -1;
  int hi = hex_digit(s[i + 1]), lo = hex_digit(s[i + 2]);
  return hi < 0 || lo < 0 ? -1 : hi << 4 | lo;
}

/*
 * decodeURIComponent (ECMAScript's Decode with an empty reserved set) of a
 * latin1 string, into UTF-8: each %XX run must spell one valid UTF-8
 * sequence; false where JavaScript throws a URIError.
 */
static bool decode_uri_component(buf_t *out, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (s[i] != '%') {
      wtf8_put(out, (uint8_t)s[i]); /* a latin1 character */
      continue;
    }
    int b = escaped_byte(s, n, i);
    if (b < 0) return false;
    i += 2;
    int want = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    if (want == 0) return false;
    uint8_t bytes[4] = {(uint8_t)b};
    for (int k = 1; k < want; k++) {
      int c = escaped_byte(s, n, i + 1);
      if (c < 0 || (c & 0xC0) != 0x80) return false;
      bytes[k] = (uint8_t)c;
      i += 3;
    }
    if (!utf8_valid(bytes, (size_t)want)) return false; /* overlong, a surrogate, past U+10FFFF */
    buf_add(out, bytes, (size_t)want);
  }
  if (!out->p) buf_add(out, "", 0);
  return true;
}

/* ---- HTTP/2 ---- */

typedef struct {
  /* sending */
  const uint8_t *body;
  size_t body_len, body_sent;
  bool body_done;
  int64_t conn_window, stream_window, initial_window;
  uint32_t max_frame;
  buf_t out; /* bytes waiting to be written */
  /* receiving */
  buf_t in;
  buf_t block; /* a header block being collected */
  bool in_block, block_end_stream;
  uint32_t block_stream;
  hpack_decoder hpack;
  int blocks; /* header blocks of stream 1 so far */
  bool have_status, have_grpc_status, have_grpc_message;
  buf_t status, grpc_status, grpc_message, data;
} h2_conn;

/* DATA frames as far as the windows and the frame size allow, END_STREAM on the last. */
static void flush_body(h2_conn *h) {
  while (!h->body_done) {
    size_t left = h->body_len - h->body_sent;
    int64_t room = h->conn_window;
    if (h->stream_window < room) room = h->stream_window;
    if ((int64_t)h->max_frame < room) room = h->max_frame;
    if (left > 0 && room <= 0) return;
    size_t n = (int64_t)left < room ? left : (size_t)room;
    bool last = h->body_sent + n == h->body_len;
    frame_header(&h->out, n, FRAME_DATA, last ? FLAG_END_STREAM : 0, 1);
    buf_add(&h->out, h->body + h->body_sent, n);
    h->body_sent += n;
    h->conn_window -= (int64_t)n;
    h->stream_window -= (int64_t)n;
    if (last) h->body_done = true;
  }
}

static void add_literal(buf_t *b, const char *name, const char *value) {
  size_t nl = strlen(name), vl = strlen(value);
  buf_addc(b, 0x00); /* literal without indexing, new name, no Huffman */
  for (int k = 0; k < 2; k++) {
    size_t len = k ? vl : nl;
    if (len < 127) {
      buf_addc(b, (char)len);
    } else {
      buf_addc(b, 127);
      for (len -= 127; len >= 128; len >>= 7) buf_addc(b, (char)(0x80 | (len & 0x7f)));
      buf_addc(b, (char)len);
    }
    buf_adds(b, k ? value : name);
  }
}

/* What the client writes first: preface, SETTINGS, WINDOW_UPDATE, HEADERS, and the body as far as it may. */
static void request_start(h2_conn *h, cni_command command, double timeout_ms) {
  buf_add(&h->out, PREFACE, sizeof PREFACE - 1);
  frame_header(&h->out, 18, FRAME_SETTINGS, 0, 0);
  const uint32_t settings[3][2] = {{SETTINGS_HEADER_TABLE_SIZE, 0}, {SETTINGS_ENABLE_PUSH, 0}, {SETTINGS_INITIAL_WINDOW_SIZE, RECEIVE_WINDOW}};
  for (int i = 0; i < 3; i++) {
    buf_addc(&h->out, (char)(settings[i][0] >> 8));
    buf_addc(&h->out, (char)settings[i][0]);
    put_be32(&h->out, settings[i][1]);
  }
  frame_header(&h->out, 4, FRAME_WINDOW_UPDATE, 0, 0);
  put_be32(&h->out, RECEIVE_WINDOW - DEFAULT_WINDOW);

  buf_t path = {0}, deadline = {0}, block = {0};
  buf_addf(&path, "/nodenet.cni.v1.CniService/%s", METHODS[command]);
  js_number(&deadline, timeout_ms < 99999999 ? timeout_ms : 99999999);
  buf_addc(&deadline, 'm');
  add_literal(&block, ":method", "POST");
  add_literal(&block, ":scheme", "http");
  add_literal(&block, ":path", path.p);
  add_literal(&block, ":authority", "localhost");
  add_literal(&block, "content-type", "application/grpc");
  add_literal(&block, "te", "trailers");
  add_literal(&block, "grpc-timeout", deadline.p);
  frame_header(&h->out, block.len, FRAME_HEADERS, FLAG_END_HEADERS, 1);
  buf_add(&h->out, block.p, block.len);
  buf_free(&path);
  buf_free(&deadline);
  buf_free(&block);
  flush_body(h);
}

static void on_field(void *ctx, const char *name, size_t nlen, const char *value, size_t vlen) {
  h2_conn *h = ctx;
  (void)nlen;
  if (h->blocks == 1 && !h->have_status && strcmp(name, ":status") == 0) {
    h->have_status = true;
    buf_add(&h->status, value, vlen);
  } else if (!h->have_grpc_status && strcmp(name, "grpc-status") == 0) {
    h->have_grpc_status = true;
    buf_add(&h->grpc_status, value, vlen);
  } else if (!h->have_grpc_message && strcmp(name, "grpc-message") == 0) {
    h->have_grpc_message = true;
    buf_add(&h->grpc_message, value, vlen);
  }
}

static void set_reply(agent_reply *out, reply_kind kind, const char *detail) {
  out->kind = kind;
  buf_clear(&out->detail);
  buf_adds(&out->detail, detail);
}

/* The reply for a finished exchange, as toReply in the TypeScript client. */
static void finish_exchange(h2_conn *h, agent_reply *out) {
  buf_t d = {0};
  double grpc_status = 0; /* -1: unreadable */
  if (h->have_grpc_status) {
    bool digits = h->grpc_status.len > 0;
    for (size_t i = 0; i < h->grpc_status.len; i++)
      if (h->grpc_status.p[i] < '0' || h->grpc_status.p[i] > '9') digits = false;
    grpc_status = digits ? strtod(h->grpc_status.p, NULL) : -1;
  }
  if (h->have_grpc_status && grpc_status != 0) {
    buf_t message = {0};
    if (h->have_grpc_message && !decode_uri_component(&message, buf_str(&h->grpc_message), h->grpc_message.len)) {
      buf_clear(&message);
      for (size_t i = 0; i < h->grpc_message.len; i++) wtf8_put(&message, (uint8_t)h->grpc_message.p[i]);
    }
    buf_adds(&d, "grpc ");
    if (grpc_status < 0) buf_adds(&d, "status unreadable");
    else if (grpc_status < 17) buf_adds(&d, GRPC_STATUS_NAMES[(int)grpc_status]);
    else js_number(&d, grpc_status);
    buf_adds(&d, ": ");
    buf_add(&d, message.p, message.len);
    set_reply(out, grpc_status == GRPC_UNAVAILABLE ? REPLY_UNREACHABLE : grpc_status == GRPC_DEADLINE_EXCEEDED ? REPLY_TIMEOUT : REPLY_FAILED, buf_str(&d));
    buf_free(&message);
    buf_free(&d);
    return;
  }
  double status = h->have_status ? js_to_number(buf_str(&h->status), h->status.len) : 0;
  if (status != 200) {
    buf_adds(&d, "HTTP/2 status ");
    js_number(&d, status);
    set_reply(out, REPLY_FAILED, d.p);
  } else if (!h->have_grpc_status) {
    set_reply(out, REPLY_FAILED, "response without grpc-status");
  } else if (h->data.len < 5) {
    set_reply(out, REPLY_FAILED, "response without a message");
  } else if (h->data.p[0] != 0) {
    set_reply(out, REPLY_FAILED, "compressed response message");
  } else if (h->data.len != 5 + (uint64_t)get_be32((uint8_t *)h->data.p + 1)) {
    buf_addf(&d, "response message of %zu bytes, framed as %u", h->data.len - 5, get_be32((uint8_t *)h->data.p + 1));
    set_reply(out, REPLY_FAILED, d.p);
  } else {
    buf_t err = {0};
    pb_reader r = {(uint8_t *)h->data.p + 5, h->data.len - 5, 0, &err};
    if (!pb_cni_response(&r, out)) {
      buf_addf(&d, "undecodable response: %s", err.p);
      set_reply(out, REPLY_FAILED, d.p);
    }
    buf_free(&err);
  }
  buf_free(&d);
}

static void ignore_field(void *ctx, const char *name, size_t nlen, const char *value, size_t vlen) {
  (void)ctx, (void)name, (void)nlen, (void)value, (void)vlen;
}

/* Consumes the complete frames in h->in. Returns true once the reply is decided. */
static bool h2_feed(h2_conn *h, agent_reply *out) {
  size_t off = 0;
  bool done = false;
  buf_t err = {0};
  while (!done && h->in.len - off >= 9) {
    const uint8_t *f = (uint8_t *)h->in.p + off;
    size_t len = (size_t)f[0] << 16 | (size_t)f[1] << 8 | f[2];
    if (h->in.len - off < 9 + len) break;
    int type = f[3], flags = f[4];
    uint32_t stream = get_be32(f + 5) & 0x7fffffff;
    const uint8_t *p = f + 9;
    size_t plen = len;
    off += 9 + len;
    if (h->in_block && type != FRAME_CONTINUATION) {
      set_reply(out, REPLY_FAILED, "HTTP/2: a header block interrupted");
      done = true;
      break;
    }
    switch (type) {
      case FRAME_SETTINGS:
        if (flags & FLAG_ACK) break;
        for (size_t o = 0; o + 6 <= plen; o += 6) {
          uint16_t id = (uint16_t)(p[o] << 8 | p[o + 1]);
          uint32_t v = get_be32(p + o + 2);
          if (id == SETTINGS_INITIAL_WINDOW_SIZE) {
            h->stream_window += (int64_t)v - h->initial_window;
            h->initial_window = v;
          } else if (id == SETTINGS_MAX_FRAME_SIZE) {
            h->max_frame = v;
          }
        }
        frame_header(&h->out, 0, FRAME_SETTINGS, FLAG_ACK, 0);
        break;
      case FRAME_PING:
        if (flags & FLAG_ACK) break;
        frame_header(&h->out, plen, FRAME_PING, FLAG_ACK, 0);
        buf_add(&h->out, p, plen);
        break;
      case FRAME_WINDOW_UPDATE:
        if (plen < 4) {
          set_reply(out, REPLY_FAILED, "HTTP/2: a WINDOW_UPDATE frame shorter than 4 bytes");
          done = true;
          break;
        }
        if (stream == 0) h->conn_window += get_be32(p) & 0x7fffffff;
        else if (stream == 1) h->stream_window += get_be32(p) & 0x7fffffff;
        break;
      case FRAME_GOAWAY:
        if (plen < 8) {
          set_reply(out, REPLY_FAILED, "HTTP/2: a GOAWAY frame shorter than 8 bytes");
          done = true;
        } else if ((get_be32(p) & 0x7fffffff) < 1) {
          buf_addf(&err, "the agent is going away (GOAWAY %u)", get_be32(p + 4));
          set_reply(out, REPLY_UNREACHABLE, err.p);
          done = true;
        }
        break;
      case FRAME_RST_STREAM:
        if (stream != 1) break;
        if (plen < 4) {
          set_reply(out, REPLY_FAILED, "HTTP/2: a RST_STREAM frame shorter than 4 bytes");
        } else {
          uint32_t code = get_be32(p);
          buf_addf(&err, "stream reset %u", code);
          set_reply(out, code == RST_REFUSED_STREAM || code == RST_CANCEL ? REPLY_UNREACHABLE : REPLY_FAILED, err.p);
        }
        done = true;
        break;
      case FRAME_DATA:
        if (stream != 1) break;
        if (flags & FLAG_PADDED) {
          size_t pad = plen ? p[0] : 0;
          p++;
          plen = plen > 1 + pad ? plen - 1 - pad : 0;
        }
        buf_add(&h->data, p, plen);
        if (flags & FLAG_END_STREAM) {
          finish_exchange(h, out);
          done = true;
        }
        break;
      case FRAME_HEADERS:
      case FRAME_CONTINUATION:
        if (type == FRAME_HEADERS) {
          if (flags & FLAG_PADDED) {
            size_t pad = plen ? p[0] : 0;
            p++;
            plen = plen > 1 + pad ? plen - 1 - pad : 0;
          }
          if (flags & FLAG_PRIORITY) {
            p += plen < 5 ? plen : 5;
            plen = plen < 5 ? 0 : plen - 5;
          }
          buf_clear(&h->block);
          h->in_block = true;
          h->block_end_stream = flags & FLAG_END_STREAM;
          h->block_stream = stream;
        } else if (!h->in_block) {
          set_reply(out, REPLY_FAILED, "HTTP/2: CONTINUATION without HEADERS");
          done = true;
          break;
        }
        buf_add(&h->block, p, plen);
        if (flags & FLAG_END_HEADERS) {
          h->in_block = false;
          bool ours = h->block_stream == 1;
          if (ours) {
            h->blocks++;
            h->have_grpc_status = h->have_grpc_message = false; /* the last block's trailers count */
            buf_clear(&h->grpc_status);
            buf_clear(&h->grpc_message);
          }
          if (!hpack_decode(&h->hpack, (uint8_t *)h->block.p, h->block.len, ours ? on_field : ignore_field, h, &err)) {
            set_reply(out, REPLY_FAILED, err.p);
            done = true;
          } else if (ours && h->block_end_stream) {
            finish_exchange(h, out);
            done = true;
          }
        }
        break;
      default:
        break; /* PRIORITY, PUSH_PROMISE (disabled), unknown types: ignored, as the spec requires */
    }
  }
  memmove(h->in.p, h->in.p + off, h->in.len - off);
  h->in.len -= off;
  if (!done) flush_body(h);
  buf_free(&err);
  return done;
}

/* A failed connect, read or write, by errno: the socket's absence or a dead peer is "unreachable". */
static void io_failed(agent_reply *out, const char *socket, size_t socket_len, int e) {
  buf_clear(&out->detail);
  buf_adds(&out->detail, "connect ");
  buf_add(&out->detail, socket, socket_len);
  buf_addf(&out->detail, ": %s", errno_code(e));
  out->kind = e == ENOENT || e == ECONNREFUSED || e == ECONNRESET || e == EPIPE ? REPLY_UNREACHABLE : REPLY_FAILED;
}

void call_agent(const char *sock, size_t sock_len, cni_command command, const cni_request *req, double timeout_ms, agent_reply *out) {
  double deadline = now_ms() + timeout_ms;
  memset(out, 0, sizeof *out);

  /* The framed CniRequest. */
  buf_t msg = {0}, body = {0};
  pb_bytes(&msg, 1, req->container_id, strlen(req->container_id));
  pb_bytes(&msg, 2, req->netns, strlen(req->netns));
  pb_bytes(&msg, 3, req->if_name, strlen(req->if_name));
  pb_bytes(&msg, 4, req->args, strlen(req->args));
  pb_bytes(&msg, 5, req->path, strlen(req->path));
  pb_bytes(&msg, 6, req->config, req->config_len);
  buf_addc(&body, 0);
  put_be32(&body, (uint32_t)msg.len);
  buf_add(&body, msg.p, msg.len);
  buf_free(&msg);

  h2_conn h = {0};
  h.body = (uint8_t *)body.p;
  h.body_len = body.len;
  h.conn_window = h.stream_window = h.initial_window = DEFAULT_WINDOW;
  h.max_frame = 16384;
  hpack_init(&h.hpack);
  request_start(&h, command, timeout_ms);

  /* The path as Node hands it to libuv: UTF-8, cut to what sun_path holds (libuv truncates, it does not refuse). */
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  buf_t path = {0};
  wtf8_to_utf8(&path, sock, sock_len);
  size_t plen = strnlen(path.p, path.len);
  if (plen > sizeof addr.sun_path - 1) plen = sizeof addr.sun_path - 1;
  memcpy(addr.sun_path, path.p, plen);
  buf_free(&path);

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    io_failed(out, sock, sock_len, errno);
    goto done;
  }
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
    io_failed(out, sock, sock_len, errno);
    goto done;
  }
  size_t written = 0;
  bool peer_closed = false; /* a write met EPIPE: what the peer sent before closing, then its EOF, decide */
  char chunk[65536];
  for (;;) {
    while (!peer_closed && written < h.out.len) {
      ssize_t n = send(fd, h.out.p + written, h.out.len - written, MSG_NOSIGNAL);
      if (n >= 0) {
        written += (size_t)n;
      } else if (errno == EINTR) {
        continue;
      } else if (errno == EAGAIN || errno == ENOTCONN) {
        break; /* not writable yet (or the connect still completing) */
      } else if (errno == EPIPE) {
        peer_closed = true;
      } else {
        io_failed(out, sock, sock_len, errno);
        goto done;
      }
    }
    if (written == h.out.len || peer_closed) written = h.out.len = 0;
    double left = deadline - now_ms();
    if (left <= 0) {
      buf_t d = {0};
      buf_adds(&d, "no answer within ");
      js_number(&d, timeout_ms);
      buf_adds(&d, " ms");
      set_reply(out, REPLY_TIMEOUT, d.p);
      buf_free(&d);
      goto done;
    }
    struct pollfd pfd = {fd, (short)(POLLIN | (h.out.len ? POLLOUT : 0)), 0};
    int r = poll(&pfd, 1, left > 2147483647.0 ? 2147483647 : (int)left + 1);
    if (r <= 0) continue; /* the deadline, or EINTR: checked above */
    if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n == 0) {
      set_reply(out, REPLY_UNREACHABLE, "connection lost before an answer");
      goto done;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      io_failed(out, sock, sock_len, errno);
      goto done;
    }
    buf_add(&h.in, chunk, (size_t)n);
    if (h2_feed(&h, out)) {
      /* What the last frames asked for (a SETTINGS or PING acknowledgement) still goes out, once, if it can. */
      if (!peer_closed && h.out.len > written) {
        ssize_t w = send(fd, h.out.p + written, h.out.len - written, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;
      }
      goto done;
    }
  }
done:
  if (fd >= 0) close(fd);
  hpack_free(&h.hpack);
  buf_free(&h.out);
  buf_free(&h.in);
  buf_free(&h.block);
  buf_free(&h.status);
  buf_free(&h.grpc_status);
  buf_free(&h.grpc_message);
  buf_free(&h.data);
  buf_free(&body);
}

void agent_reply_free(agent_reply *r) {
  buf_free(&r->result);
  buf_free(&r->msg);
  buf_free(&r->details);
  buf_free(&r->detail);
}
