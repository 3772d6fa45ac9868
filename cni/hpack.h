/*
 * hpack: a header-block decoder (RFC 7541) for the responses the shim reads:
 * every representation (indexed, literal with, without or never indexing,
 * dynamic table size updates), the static and the dynamic table, and Huffman
 * coded strings (Appendix B). node:http2's nghttp2 Huffman-codes every name
 * and value that comes out shorter so, which is most of them.
 */
#ifndef NODENET_CNI_HPACK_H
#define NODENET_CNI_HPACK_H

#include "common.h"

typedef struct {
  char *name, *value;
  size_t nlen, vlen;
} hpack_entry;

typedef struct {
  hpack_entry *entries; /* oldest first: index 62 is the last one */
  size_t count, cap;
  size_t size;     /* RFC 7541 4.1: the sum of name + value + 32 per entry */
  size_t max_size; /* the current limit, changed by size updates */
} hpack_decoder;

/* The decoder at the protocol's initial table size (4096). */
void hpack_init(hpack_decoder *d);
void hpack_free(hpack_decoder *d);

/* One decoded field: name and value, NUL-terminated, valid until the callback returns. */
typedef void (*hpack_field_fn)(void *ctx, const char *name, size_t nlen, const char *value, size_t vlen);

/* Decodes one complete header block, calling `field` for each field in order. On a malformed block returns false and appends why to `err`. */
bool hpack_decode(hpack_decoder *d, const uint8_t *block, size_t n, hpack_field_fn field, void *ctx, buf_t *err);

/* Appends the Huffman decoding of `in` to `out`; false on an invalid code (an EOS symbol, or bad padding). */
bool huffman_decode(buf_t *out, const uint8_t *in, size_t n);

#endif
