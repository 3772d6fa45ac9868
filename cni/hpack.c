/*
 * hpack: RFC 7541 decoding (hpack.h).
 *
 * The Huffman code of Appendix B is canonical (codes of one length are
 * consecutive and ordered by symbol, each length's first code follows the
 * last of the shorter ones), so the table below holds only each symbol's
 * code length; the codes are rebuilt from it the canonical way, and a code
 * is decoded one bit at a time against each length's first code and count.
 * The shim's tests check the decoding against RFC 7541's examples and
 * against what node:http2 sends.
 */
#include "hpack.h"

#include <stdlib.h>
#include <string.h>

/* RFC 7541 Appendix A. */
static const char *const STATIC_TABLE[61][2] = {
  {":authority", ""}, {":method", "GET"}, {":method", "POST"}, {":path", "/"}, {":path", "/index.html"},
  {":scheme", "http"}, {":scheme", "https"}, {":status", "200"}, {":status", "204"}, {":status", "206"},
  {":status", "304"}, {":status", "400"}, {":status", "404"}, {":status", "500"}, {"accept-charset", ""},
  {"accept-encoding", "gzip, deflate"}, {"accept-language", ""}, {"accept-ranges", ""}, {"accept", ""},
  {"access-control-allow-origin", ""}, {"age", ""}, {"allow", ""}, {"authorization", ""}, {"cache-control", ""},
  {"content-disposition", ""}, {"content-encoding", ""}, {"content-language", ""}, {"content-length", ""},
  {"content-location", ""}, {"content-range", ""}, {"content-type", ""}, {"cookie", ""}, {"date", ""},
  {"etag", ""}, {"expect", ""}, {"expires", ""}, {"from", ""}, {"host", ""}, {"if-match", ""},
  {"if-modified-since", ""}, {"if-none-match", ""}, {"if-range", ""}, {"if-unmodified-since", ""},
  {"last-modified", ""}, {"link", ""}, {"location", ""}, {"max-forwards", ""}, {"proxy-authenticate", ""},
  {"proxy-authorization", ""}, {"range", ""}, {"referer", ""}, {"refresh", ""}, {"retry-after", ""},
  {"server", ""}, {"set-cookie", ""}, {"strict-transport-security", ""}, {"transfer-encoding", ""},
  {"user-agent", ""}, {"vary", ""}, {"via", ""}, {"www-authenticate", ""},
};

/* RFC 7541 Appendix B: the code length of each symbol, 0..255, then EOS (256). */
static const uint8_t HUFFMAN_LENGTHS[257] = {
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, /* 0x00 */
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, /* 0x10 */
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,         /* ' ' .. '/' */
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,              /* '0' .. '?' */
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,                /* '@' .. 'O' */
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,             /* 'P' .. '_' */
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,                /* '`' .. 'o' */
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,            /* 'p' .. 0x7f */
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, /* 0x80 */
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, /* 0x90 */
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, /* 0xa0 */
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, /* 0xb0 */
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, /* 0xc0 */
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, /* 0xd0 */
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, /* 0xe0 */
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, /* 0xf0 */
  30,                                                             /* EOS */
};

#define HUFFMAN_MAX_LEN 30
#define EOS 256

/* Per code length: the first code, how many codes, where its symbols start in `sorted`. */
static struct {
  bool built;
  uint32_t first[HUFFMAN_MAX_LEN + 1];
  uint16_t count[HUFFMAN_MAX_LEN + 1], offset[HUFFMAN_MAX_LEN + 1];
  uint16_t sorted[257]; /* symbols by (length, symbol) */
} huff;

static void huffman_build(void) {
  memset(&huff, 0, sizeof huff);
  for (int s = 0; s <= EOS; s++) huff.count[HUFFMAN_LENGTHS[s]]++;
  uint32_t code = 0;
  uint16_t offset = 0;
  for (int len = 1; len <= HUFFMAN_MAX_LEN; len++) {
    huff.first[len] = code;
    huff.offset[len] = offset;
    offset = (uint16_t)(offset + huff.count[len]);
    code = (code + huff.count[len]) << 1;
  }
  uint16_t fill[HUFFMAN_MAX_LEN + 1];
  memcpy(fill, huff.offset, sizeof fill);
  for (int s = 0; s <= EOS; s++) huff.sorted[fill[HUFFMAN_LENGTHS[s]]++] = (uint16_t)s;
  huff.built = true;
}

bool huffman_decode(buf_t *out, const uint8_t *in, size_t n) {
  if (!huff.built) huffman_build();
  buf_reserve(out, n * 8 / 5);
  uint32_t code = 0;
  int len = 0;
  for (size_t i = 0; i < n; i++) {
    for (int bit = 7; bit >= 0; bit--) {
      code = (code << 1) | ((in[i] >> bit) & 1);
      len++;
      if (huff.count[len] && code - huff.first[len] < huff.count[len]) {
        uint16_t sym = huff.sorted[huff.offset[len] + (code - huff.first[len])];
        if (sym == EOS) return false; /* 5.2: an EOS in the string is an error */
        buf_addc(out, (char)sym);
        code = 0;
        len = 0;
      } else if (len == HUFFMAN_MAX_LEN) {
        return false;
      }
    }
  }
  /* 5.2: padding is at most 7 bits, the most significant bits of EOS (all ones). */
  if (len > 7 || code != (1u << len) - 1) return false;
  if (!out->p) buf_add(out, "", 0);
  return true;
}

void hpack_init(hpack_decoder *d) {
  memset(d, 0, sizeof *d);
  d->max_size = 4096;
}

static void evict_to(hpack_decoder *d, size_t limit) {
  size_t drop = 0;
  while (d->size > limit && drop < d->count) {
    d->size -= d->entries[drop].nlen + d->entries[drop].vlen + 32;
    free(d->entries[drop].name);
    free(d->entries[drop].value);
    drop++;
  }
  memmove(d->entries, d->entries + drop, (d->count - drop) * sizeof *d->entries);
  d->count -= drop;
}

void hpack_free(hpack_decoder *d) {
  evict_to(d, 0);
  free(d->entries);
  memset(d, 0, sizeof *d);
}

/* 4.4: a new entry evicts old ones until it fits; one larger than the table empties it and is not added. */
static void table_add(hpack_decoder *d, const char *name, size_t nlen, const char *value, size_t vlen) {
  size_t size = nlen + vlen + 32;
  if (size > d->max_size) {
    evict_to(d, 0);
    return;
  }
  evict_to(d, d->max_size - size);
  if (d->count == d->cap) {
    d->cap = d->cap ? d->cap * 2 : 8;
    d->entries = xrealloc(d->entries, d->cap * sizeof *d->entries);
  }
  d->entries[d->count++] = (hpack_entry){xstrndup(name, nlen), xstrndup(value, vlen), nlen, vlen};
  d->size += size;
}

typedef struct {
  const uint8_t *p;
  size_t n, i;
  buf_t *err;
} reader;

/* 5.1: an integer with an N-bit prefix; the first byte's other bits are the caller's. */
static bool read_int(reader *r, int prefix_bits, size_t *value) {
  size_t max = (1u << prefix_bits) - 1;
  size_t v = r->p[r->i++] & max;
  if (v < max) {
    *value = v;
    return true;
  }
  for (int m = 0;; m += 7) {
    if (r->i >= r->n) {
      buf_adds(r->err, "HPACK: truncated integer");
      return false;
    }
    if (m > 21) {
      buf_adds(r->err, "HPACK: integer too large");
      return false;
    }
    uint8_t b = r->p[r->i++];
    v += (size_t)(b & 0x7f) << m;
    if (!(b & 0x80)) break;
  }
  *value = v;
  return true;
}

/* 5.2: a string literal, Huffman-decoded when its H bit says so. */
static bool read_string(reader *r, buf_t *out) {
  if (r->i >= r->n) {
    buf_adds(r->err, "HPACK: truncated string");
    return false;
  }
  bool huffman = r->p[r->i] & 0x80;
  size_t len;
  if (!read_int(r, 7, &len)) return false;
  if (len > r->n - r->i) {
    buf_adds(r->err, "HPACK: string runs past the block");
    return false;
  }
  buf_clear(out);
  if (huffman) {
    if (!huffman_decode(out, r->p + r->i, len)) {
      buf_adds(r->err, "HPACK: invalid Huffman code");
      return false;
    }
  } else {
    buf_add(out, r->p + r->i, len);
  }
  r->i += len;
  return true;
}

/* The entry at an index (1-based: the static table, then the dynamic one, newest first). */
static bool lookup(hpack_decoder *d, reader *r, size_t idx, const char **name, size_t *nlen, const char **value, size_t *vlen) {
  if (idx == 0) {
    buf_adds(r->err, "HPACK: index 0");
    return false;
  }
  if (idx <= 61) {
    *name = STATIC_TABLE[idx - 1][0];
    *value = STATIC_TABLE[idx - 1][1];
    *nlen = strlen(*name);
    *vlen = strlen(*value);
    return true;
  }
  if (idx - 62 >= d->count) {
    buf_addf(r->err, "HPACK: index %zu is past the dynamic table (%zu entries)", idx, d->count);
    return false;
  }
  hpack_entry *e = &d->entries[d->count - 1 - (idx - 62)];
  *name = e->name;
  *nlen = e->nlen;
  *value = e->value;
  *vlen = e->vlen;
  return true;
}

bool hpack_decode(hpack_decoder *d, const uint8_t *block, size_t n, hpack_field_fn field, void *ctx, buf_t *err) {
  reader r = {block, n, 0, err};
  buf_t name = {0}, value = {0};
  bool ok = false;
  while (r.i < n) {
    uint8_t b = block[r.i];
    size_t idx;
    const char *sn, *sv;
    size_t snl, svl;
    if (b & 0x80) { /* 6.1: indexed field */
      if (!read_int(&r, 7, &idx) || !lookup(d, &r, idx, &sn, &snl, &sv, &svl)) goto out;
      field(ctx, sn, snl, sv, svl); /* table strings are NUL-terminated too */
      continue;
    }
    if ((b & 0xe0) == 0x20) { /* 6.3: dynamic table size update */
      if (!read_int(&r, 5, &idx)) goto out;
      if (idx > 4096) { /* we never allow more than the protocol's default */
        buf_addf(err, "HPACK: table size update to %zu, past 4096", idx);
        goto out;
      }
      d->max_size = idx;
      evict_to(d, idx);
      continue;
    }
    /* 6.2: a literal, with incremental indexing (01), or without / never indexed (0000, 0001). */
    bool indexing = (b & 0xc0) == 0x40;
    if (!read_int(&r, indexing ? 6 : 4, &idx)) goto out;
    buf_clear(&name);
    if (idx == 0) {
      if (!read_string(&r, &name)) goto out;
    } else {
      if (!lookup(d, &r, idx, &sn, &snl, &sv, &svl)) goto out;
      buf_add(&name, sn, snl);
    }
    if (!read_string(&r, &value)) goto out;
    if (!name.p) buf_add(&name, "", 0);
    if (!value.p) buf_add(&value, "", 0);
    if (indexing) table_add(d, name.p, name.len, value.p, value.len);
    field(ctx, name.p, name.len, value.p, value.len);
  }
  ok = true;
out:
  buf_free(&name);
  buf_free(&value);
  return ok;
}
