/*
 * json: JSON.parse's grammar and messages over UTF-16 code units (json.h).
 *
 * The text is first widened to UTF-16, as V8 holds a string, so that
 * positions and the "Unexpected token 'x'" character are the ones V8
 * reports. The parser is iterative (an explicit stack of open containers),
 * as V8's is: nesting depth costs memory, never C stack.
 *
 * Which message V8 gives where (checked against Node 20's JSON.parse):
 * - a value expected: EOF "Unexpected end of JSON input"; a '"' or a number
 *   start out of place "Unexpected string/number in JSON at position N";
 *   any other character "Unexpected token 'c', "<source or 10 units of
 *   context on each side>" is not valid JSON" (the whole source when it is
 *   under 21 units; "NaN", "Infinity", "undefined" and "[object Object]" get
 *   '"<source>" is not valid JSON');
 * - after '{': "Expected property name or '}'"; after a ',' in an object:
 *   "Expected double-quoted property name"; after the first key: "Expected
 *   ':' after property name", after later keys the generic message above;
 *   after a member: "Expected ',' or '}' after property value"; after an
 *   array element: "Expected ',' or ']' after array element";
 * - strings: "Unterminated string", "Bad control character in string
 *   literal", "Bad escaped character", "Bad Unicode escape" (at the first
 *   unit that is not a hex digit), a '\' at the end "Unexpected end";
 * - numbers: "No number after minus sign", "Unexpected number" (a digit after
 *   a leading 0), "Unterminated fractional number", "Exponent part is missing
 *   a number";
 * - after the document: "Unexpected non-whitespace character after JSON".
 * Whitespace is space, tab, CR and LF only.
 */
#include "json.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  const uint16_t *s;
  size_t n, pos;
  buf_t *err;
} parser;

typedef struct {
  uint16_t *u;
  size_t len, cap;
} units;

static void units_add(units *a, uint16_t c) {
  if (a->len == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 32;
    a->u = xrealloc(a->u, a->cap * sizeof *a->u);
  }
  a->u[a->len++] = c;
}

/* Appends UTF-16 units as WTF-8: pairs joined, a lone surrogate kept as itself. */
static void units_to_wtf8(buf_t *out, const uint16_t *u, size_t n) {
  buf_reserve(out, n);
  for (size_t i = 0; i < n; i++) {
    uint32_t c = u[i];
    if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n && u[i + 1] >= 0xDC00 && u[i + 1] <= 0xDFFF) {
      c = 0x10000 + ((c - 0xD800) << 10) + (u[i + 1] - 0xDC00);
      i++;
    }
    wtf8_put(out, c);
  }
}

static bool is_ws(uint16_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
static bool is_digit(uint16_t c) { return c >= '0' && c <= '9'; }

static void skip_ws(parser *p) {
  while (p->pos < p->n && is_ws(p->s[p->pos])) p->pos++;
}

static bool at_position(parser *p, const char *what) {
  buf_addf(p->err, "%s in JSON at position %zu", what, p->pos);
  return false;
}

static bool source_is(parser *p, const char *ascii) {
  size_t len = strlen(ascii);
  if (p->n != len) return false;
  for (size_t i = 0; i < len; i++)
    if (p->s[i] != (uint8_t)ascii[i]) return false;
  return true;
}

/* V8's message for an unexpected token at p->pos (or the end). */
static bool unexpected(parser *p) {
  enum { MIN_LENGTH_FOR_CONTEXT = 21, CONTEXT = 10 };
  size_t pos = p->pos;
  if (pos >= p->n) {
    buf_adds(p->err, "Unexpected end of JSON input");
    return false;
  }
  uint16_t c = p->s[pos];
  if (c == '"') return at_position(p, "Unexpected string");
  if (c == '-' || is_digit(c)) return at_position(p, "Unexpected number");
  if (source_is(p, "[object Object]") || source_is(p, "undefined") || source_is(p, "Infinity") || source_is(p, "NaN")) {
    buf_addc(p->err, '"');
    units_to_wtf8(p->err, p->s, p->n);
    buf_adds(p->err, "\" is not valid JSON");
    return false;
  }
  buf_adds(p->err, "Unexpected token '");
  units_to_wtf8(p->err, &c, 1);
  buf_adds(p->err, "', ");
  size_t from = 0, to = p->n;
  const char *before = "\"", *after = "\"";
  if (p->n >= MIN_LENGTH_FOR_CONTEXT) {
    if (pos < CONTEXT) {
      to = pos + CONTEXT;
      after = "\"...";
    } else if (pos < p->n - CONTEXT) {
      from = pos - CONTEXT;
      to = pos + CONTEXT;
      before = "...\"";
      after = "\"...";
    } else {
      from = pos - CONTEXT;
      before = "...\"";
    }
  }
  buf_adds(p->err, before);
  units_to_wtf8(p->err, p->s + from, to - from);
  buf_adds(p->err, after);
  buf_adds(p->err, " is not valid JSON");
  return false;
}

static int hex(uint16_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A string at p->pos (a '"'); its decoded units go to `out` when it is not NULL. */
static bool scan_string(parser *p, units *out) {
  p->pos++;
  for (;;) {
    if (p->pos >= p->n) return at_position(p, "Unterminated string");
    uint16_t c = p->s[p->pos];
    if (c == '"') {
      p->pos++;
      return true;
    }
    if (c < 0x20) return at_position(p, "Bad control character in string literal");
    if (c != '\\') {
      if (out) units_add(out, c);
      p->pos++;
      continue;
    }
    p->pos++;
    if (p->pos >= p->n) return unexpected(p);
    uint16_t e = p->s[p->pos], v;
    switch (e) {
      case '"': case '\\': case '/': v = e; break;
      case 'b': v = '\b'; break;
      case 'f': v = '\f'; break;
      case 'n': v = '\n'; break;
      case 'r': v = '\r'; break;
      case 't': v = '\t'; break;
      case 'u':
        v = 0;
        for (int k = 0; k < 4; k++) {
          p->pos++;
          int h = p->pos < p->n ? hex(p->s[p->pos]) : -1;
          if (h < 0) return at_position(p, "Bad Unicode escape");
          v = (uint16_t)(v * 16 + h);
        }
        break;
      default:
        return at_position(p, "Bad escaped character");
    }
    if (out) units_add(out, v);
    p->pos++;
  }
}

/* A number at p->pos ('-' or a digit); its value in *value. */
static bool scan_number(parser *p, double *value) {
  size_t start = p->pos;
  if (p->s[p->pos] == '-') {
    p->pos++;
    if (p->pos >= p->n || !is_digit(p->s[p->pos])) return at_position(p, "No number after minus sign");
  }
  if (p->s[p->pos] == '0') {
    p->pos++;
    if (p->pos < p->n && is_digit(p->s[p->pos])) return unexpected(p);
  } else {
    while (p->pos < p->n && is_digit(p->s[p->pos])) p->pos++;
  }
  if (p->pos < p->n && p->s[p->pos] == '.') {
    p->pos++;
    if (p->pos >= p->n || !is_digit(p->s[p->pos])) return at_position(p, "Unterminated fractional number");
    while (p->pos < p->n && is_digit(p->s[p->pos])) p->pos++;
  }
  if (p->pos < p->n && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    p->pos++;
    if (p->pos < p->n && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
    if (p->pos >= p->n || !is_digit(p->s[p->pos])) return at_position(p, "Exponent part is missing a number");
    while (p->pos < p->n && is_digit(p->s[p->pos])) p->pos++;
  }
  char tmp[64], *text = tmp;
  size_t len = p->pos - start;
  if (len >= sizeof tmp) text = xmalloc(len + 1);
  for (size_t i = 0; i < len; i++) text[i] = (char)p->s[start + i];
  text[len] = '\0';
  *value = strtod(text, NULL); /* correctly rounded, as JSON.parse; too large is Infinity */
  if (text != tmp) free(text);
  return true;
}

/* "true", "false" or "null" at p->pos; a mismatch is reported at the first unit that differs. */
static bool scan_literal(parser *p, const char *word) {
  for (size_t i = 0; word[i]; i++, p->pos++)
    if (p->pos >= p->n || p->s[p->pos] != (uint8_t)word[i]) return unexpected(p);
  return true;
}

/* The index of the wanted key these units spell, or -1. */
static int key_index(const units *k, const char *const *keys, size_t nkeys) {
  for (size_t i = 0; i < nkeys; i++) {
    size_t len = strlen(keys[i]);
    if (len != k->len) continue;
    size_t j = 0;
    while (j < len && k->u[j] == (uint8_t)keys[i][j]) j++;
    if (j == len) return (int)i;
  }
  return -1;
}

bool json_read(const uint8_t *text, size_t n, const char *const *keys, size_t nkeys, jv_kind *root, jv_t *vals, buf_t *err) {
  /* Widen to UTF-16 (the input is valid UTF-8). */
  units src = {0};
  for (size_t i = 0; i < n;) {
    uint32_t cp = wtf8_next((const char *)text, n, &i);
    if (cp >= 0x10000) {
      units_add(&src, (uint16_t)(0xD800 + ((cp - 0x10000) >> 10)));
      units_add(&src, (uint16_t)(0xDC00 + ((cp - 0x10000) & 0x3FF)));
    } else {
      units_add(&src, (uint16_t)cp);
    }
  }
  memset(vals, 0, nkeys * sizeof *vals);
  *root = JV_ABSENT;

  parser p = {src.u, src.len, 0, err};
  char *stack = NULL; /* 'o' or 'a' per open container */
  size_t depth = 0, cap = 0;
  int capture = -1;   /* the wanted key whose value starts next (a member of the root object) */
  units key = {0}, str = {0};
  bool ok = false;

#define PUSH(c)                                        \
  do {                                                 \
    if (depth == cap) {                                \
      cap = cap ? cap * 2 : 16;                        \
      stack = xrealloc(stack, cap);                    \
    }                                                  \
    stack[depth++] = (c);                              \
  } while (0)
/* The value just identified, of kind k: the root's kind, or a wanted member's. */
#define RECORD(k)                                      \
  do {                                                 \
    if (depth == 0) *root = (k);                       \
    if (capture >= 0) {                                \
      jv_free(&vals[capture]);                         \
      vals[capture].kind = (k);                        \
    }                                                  \
  } while (0)

value:
  skip_ws(&p);
  if (p.pos >= p.n) goto fail_unexpected;
  switch (p.s[p.pos]) {
    case '"':
      str.len = 0;
      if (!scan_string(&p, capture >= 0 ? &str : NULL)) goto fail;
      RECORD(JV_STRING);
      if (capture >= 0) units_to_wtf8(&vals[capture].str, str.u, str.len);
      goto after;
    case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9': {
      double d = 0;
      if (!scan_number(&p, &d)) goto fail;
      RECORD(JV_NUMBER);
      if (capture >= 0) vals[capture].number = d;
      goto after;
    }
    case 't':
      if (!scan_literal(&p, "true")) goto fail;
      RECORD(JV_BOOL);
      goto after;
    case 'f':
      if (!scan_literal(&p, "false")) goto fail;
      RECORD(JV_BOOL);
      goto after;
    case 'n':
      if (!scan_literal(&p, "null")) goto fail;
      RECORD(JV_NULL);
      goto after;
    case '[':
      RECORD(JV_ARRAY);
      capture = -1;
      p.pos++;
      skip_ws(&p);
      if (p.pos < p.n && p.s[p.pos] == ']') {
        p.pos++;
        goto after;
      }
      PUSH('a');
      goto value;
    case '{':
      RECORD(JV_OBJECT);
      capture = -1;
      p.pos++;
      skip_ws(&p);
      if (p.pos < p.n && p.s[p.pos] == '}') {
        p.pos++;
        goto after;
      }
      if (p.pos >= p.n || p.s[p.pos] != '"') {
        at_position(&p, "Expected property name or '}'");
        goto fail;
      }
      PUSH('o');
      key.len = 0;
      if (!scan_string(&p, depth == 1 ? &key : NULL)) goto fail;
      skip_ws(&p);
      if (p.pos >= p.n || p.s[p.pos] != ':') {
        at_position(&p, "Expected ':' after property name");
        goto fail;
      }
      p.pos++;
      capture = depth == 1 ? key_index(&key, keys, nkeys) : -1;
      goto value;
    default:
      goto fail_unexpected;
  }

after:
  capture = -1;
  skip_ws(&p);
  if (depth == 0) {
    if (p.pos < p.n) {
      buf_addf(p.err, "Unexpected non-whitespace character after JSON at position %zu", p.pos);
      goto fail;
    }
    ok = true;
    goto done;
  }
  if (stack[depth - 1] == 'o') {
    if (p.pos < p.n && p.s[p.pos] == ',') {
      p.pos++;
      skip_ws(&p);
      if (p.pos >= p.n || p.s[p.pos] != '"') {
        at_position(&p, "Expected double-quoted property name");
        goto fail;
      }
      key.len = 0;
      if (!scan_string(&p, depth == 1 ? &key : NULL)) goto fail;
      skip_ws(&p);
      if (p.pos >= p.n || p.s[p.pos] != ':') goto fail_unexpected;
      p.pos++;
      capture = depth == 1 ? key_index(&key, keys, nkeys) : -1;
      goto value;
    }
    if (p.pos < p.n && p.s[p.pos] == '}') {
      p.pos++;
      depth--;
      goto after;
    }
    at_position(&p, "Expected ',' or '}' after property value");
    goto fail;
  }
  if (p.pos < p.n && p.s[p.pos] == ',') {
    p.pos++;
    goto value;
  }
  if (p.pos < p.n && p.s[p.pos] == ']') {
    p.pos++;
    depth--;
    goto after;
  }
  at_position(&p, "Expected ',' or ']' after array element");
  goto fail;

fail_unexpected:
  unexpected(&p);
fail:
  for (size_t i = 0; i < nkeys; i++) jv_free(&vals[i]);
  *root = JV_ABSENT;
done:
  if (ok && *root != JV_OBJECT)
    for (size_t i = 0; i < nkeys; i++) jv_free(&vals[i]);
  free(stack);
  free(key.u);
  free(str.u);
  free(src.u);
  return ok;
#undef PUSH
#undef RECORD
}

void jv_free(jv_t *v) {
  buf_free(&v->str);
  v->kind = JV_ABSENT;
  v->number = 0;
}
