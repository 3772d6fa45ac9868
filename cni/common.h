/*
 * common: what every part of the nodenet-cni shim shares: growable byte
 * buffers, errno names as Node prints them, JavaScript's number-to-text,
 * and the UTF-8 rules of the runtime the shim replaced (WHATWG decoding with
 * U+FFFD for invalid bytes, JSON.stringify's escaping).
 *
 * Strings inside the shim are byte strings in WTF-8: UTF-8 that may also
 * hold a lone UTF-16 surrogate (ED A0..BF xx), because a JSON "\ud800" escape
 * is a valid JSON string and the shim must print it back as JSON.stringify
 * would ("\ud800"). Where a string leaves the process as bytes (a path for a
 * syscall, text on stderr) lone surrogates become U+FFFD, as Node's UTF-8
 * conversion does.
 */
#ifndef NODENET_CNI_COMMON_H
#define NODENET_CNI_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer, NUL-terminated whenever it holds memory. */
typedef struct {
  char *p;
  size_t len, cap;
} buf_t;

void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
char *xstrndup(const char *s, size_t n);
/* Out of memory: prints the CNI error (999) and exits 1. */
_Noreturn void die_oom(void);

void buf_reserve(buf_t *b, size_t extra);
void buf_add(buf_t *b, const void *data, size_t n);
void buf_adds(buf_t *b, const char *s);
void buf_addc(buf_t *b, char c);
void buf_addf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(buf_t *b);
/* Empties the buffer, keeping its memory. */
void buf_clear(buf_t *b);
/* The buffer's text ("" when nothing was added). */
const char *buf_str(const buf_t *b);

/* errno as Node names it ("ENOENT") and describes it (libuv's "no such file or directory"). */
const char *errno_code(int e);
const char *errno_desc(int e);
/* Node's message for a failed fs call: "ENOENT: no such file or directory, open '/x'". path2: rename's target, or NULL. */
void fs_error(buf_t *out, int e, const char *syscall, const char *path, const char *path2);

/* Appends Number.prototype.toString(x) (ECMAScript Number::toString, radix 10). */
void js_number(buf_t *b, double x);

/* UTF-8 as the WHATWG Encoding Standard decodes it (what TextDecoder and V8 do). */
bool utf8_valid(const uint8_t *s, size_t n);
/* Appends `s` decoded with each invalid sequence replaced by U+FFFD, re-encoded (a lenient decode). */
void utf8_sanitize(buf_t *out, const uint8_t *s, size_t n);
/* Appends a WTF-8 string with its lone surrogates replaced by U+FFFD (what leaves the process as bytes). */
void wtf8_to_utf8(buf_t *out, const char *s, size_t n);
/* Appends the code point as WTF-8 (a lone surrogate as its 3-byte form). */
void wtf8_put(buf_t *out, uint32_t cp);
/* Decodes one code point of a WTF-8 string at s[*i] (an invalid byte reads as U+FFFD), advancing *i. */
uint32_t wtf8_next(const char *s, size_t n, size_t *i);
/* Appends JSON.stringify(s) for a WTF-8 string: quotes, \" \\ \b \f \n \r \t, other controls and lone surrogates as \u00xx / \udxxx. */
void json_quote(buf_t *out, const char *s, size_t n);

#endif
