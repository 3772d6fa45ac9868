/*
 * json: reads a CNI network configuration as JSON.parse does, for the skel.
 *
 * The whole document is validated (RFC 8259, exactly the grammar V8's
 * JSON.parse accepts), and the top-level members the shim reads are
 * extracted: for each key asked for, the value of its last occurrence (as a
 * JavaScript object keeps it) when the document is an object. A document
 * that does not parse gets V8's own message (Node 20, V8 11.3: "Unexpected
 * token ... is not valid JSON", "Expected ',' or '}' after property value in
 * JSON at position 7", ...), positions counted in UTF-16 code units as V8
 * counts them, so the shim's error JSON reads as it did when the shim ran on
 * Node. The shim's tests compare these messages with JSON.parse's own.
 */
#ifndef NODENET_CNI_JSON_H
#define NODENET_CNI_JSON_H

#include "common.h"

typedef enum { JV_ABSENT, JV_NULL, JV_BOOL, JV_NUMBER, JV_STRING, JV_OBJECT, JV_ARRAY } jv_kind;

typedef struct {
  jv_kind kind;
  double number; /* JV_NUMBER */
  buf_t str;     /* JV_STRING: the decoded string, WTF-8 */
} jv_t;

/*
 * Parses `text` (valid UTF-8, a leading BOM already removed, as TextDecoder
 * leaves it). On success returns true, the document's kind in *root, and in
 * vals[i] the last top-level member named keys[i] (JV_ABSENT when there is
 * none or the document is not an object). On failure returns false with
 * V8's message appended to `err`.
 */
bool json_read(const uint8_t *text, size_t n, const char *const *keys, size_t nkeys, jv_kind *root, jv_t *vals, buf_t *err);

void jv_free(jv_t *v);

#endif
