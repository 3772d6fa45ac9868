/*
 * skel: turns one invocation into a VERSION answer, a call to forward to the
 * agent, or the spec's error. Pure: main reads stdin and the environment and
 * writes the outcome.
 *
 * Semantics follow CNI SPEC 1.1 and containernetworking/cni pkg/skel:
 * - required variables: CNI_COMMAND always; CNI_CONTAINERID, CNI_IFNAME and
 *   CNI_PATH for ADD/CHECK/DEL; CNI_NETNS for ADD/CHECK only; CNI_PATH alone
 *   for STATUS and GC. Missing ones are listed in one code-4 error.
 * - the container ID must match [a-zA-Z0-9][a-zA-Z0-9_.-]*, the interface name
 *   must be 1..15 bytes, not "." or "..", without '/', ':' or whitespace (4).
 * - stdin must be UTF-8 (6) holding a JSON object (6) with a valid network
 *   `name` (7) and a supported `cniVersion` (1). CHECK needs >= 0.4.0, STATUS
 *   and GC >= 1.1.0 (1).
 * - an unknown command is code 4; VERSION ignores stdin.
 * Checks run in the order above, except that an unknown command is reported
 * before anything else (upstream would first complain about stdin). Errors
 * carry the config's cniVersion once it is known and supported, else 1.1.0.
 *
 * The shim answers these itself so that they come back the same whether or not
 * the agent is up; the plugin's own configuration fields are the agent's job,
 * except the two the shim itself needs (agentSocket, agentTimeoutMs), which
 * main checks. The messages are the ones the TypeScript shim printed.
 */
#include "skel.h"

#include <stdlib.h>
#include <string.h>

const char *const COMMAND_NAMES[5] = {"ADD", "DEL", "CHECK", "STATUS", "GC"};

static const char *const SUPPORTED[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};

/* The first spec version that defines each command (NULL: every version). */
static const char *const MIN_VERSION[5] = {NULL, NULL, "0.4.0", "1.1.0", "1.1.0"};

void skel_version_info(buf_t *out) {
  buf_adds(out, "{\"cniVersion\":\"" LATEST_VERSION "\",\"supportedVersions\":[");
  for (size_t i = 0; i < sizeof SUPPORTED / sizeof SUPPORTED[0]; i++) buf_addf(out, "%s\"%s\"", i ? "," : "", SUPPORTED[i]);
  buf_adds(out, "]}");
}

static bool is_supported(const buf_t *v) {
  for (size_t i = 0; i < sizeof SUPPORTED / sizeof SUPPORTED[0]; i++)
    if (v->len == strlen(SUPPORTED[i]) && memcmp(v->p, SUPPORTED[i], v->len) == 0) return true;
  return false;
}

/* [a-zA-Z0-9][a-zA-Z0-9_.-]* over the whole string. */
static bool valid_name(const char *s, size_t n) {
  if (n == 0) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-'))) return false;
  }
  return true;
}

/* JavaScript's \s: the ECMAScript WhiteSpace and LineTerminator code points. */
static bool js_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

static const char *interface_name_problem(const char *name) {
  size_t n = strlen(name);
  if (n == 0) return "interface name is empty";
  if (n > 15) return "interface name is longer than 15 bytes";
  if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return "interface name is . or ..";
  for (size_t i = 0; i < n;) {
    uint32_t c = wtf8_next(name, n, &i);
    if (c == '/' || c == ':' || js_space(c)) return "interface name contains / or : or whitespace";
  }
  return NULL;
}

/*
 * compareVersions of the TypeScript skel: both must be "x.y.z" with decimal
 * digits; the parts compare as JavaScript numbers (Number("007") is 7, and
 * digits past a double's precision compare as the double they round to).
 * Returns -1, 0 or 1; 0 also when either is malformed or a part is infinite
 * (the TypeScript gave undefined or NaN there, which no caller treats as less).
 */
static int compare_versions(const char *a, size_t alen, const char *b) {
  double pa[3], pb[3];
  const char *s[2] = {a, b};
  size_t len[2] = {alen, strlen(b)};
  double *parts[2] = {pa, pb};
  for (int k = 0; k < 2; k++) {
    size_t i = 0;
    for (int part = 0; part < 3; part++) {
      size_t start = i;
      while (i < len[k] && s[k][i] >= '0' && s[k][i] <= '9') i++;
      if (i == start) return 0;
      char *digits = xstrndup(s[k] + start, i - start);
      parts[k][part] = strtod(digits, NULL);
      free(digits);
      if (part < 2) {
        if (i >= len[k] || s[k][i] != '.') return 0;
        i++;
      }
    }
    if (i != len[k]) return 0;
  }
  for (int part = 0; part < 3; part++) {
    double d = pa[part] - pb[part];
    if (d != d) return 0; /* Infinity - Infinity */
    if (d != 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

void cni_error_set(cni_error *e, const char *cni_version, unsigned long code, const char *msg, const char *details) {
  cni_error_free(e);
  buf_adds(&e->cni_version, cni_version);
  e->code = code;
  buf_adds(&e->msg, msg);
  buf_adds(&e->details, details ? details : "");
}

void cni_error_format(buf_t *out, const cni_error *e) {
  buf_adds(out, "{\"cniVersion\":");
  json_quote(out, buf_str(&e->cni_version), e->cni_version.len);
  buf_addf(out, ",\"code\":%lu,\"msg\":", e->code);
  json_quote(out, buf_str(&e->msg), e->msg.len);
  if (e->details.len > 0) {
    buf_adds(out, ",\"details\":");
    json_quote(out, e->details.p, e->details.len);
  }
  buf_addc(out, '}');
}

void cni_error_free(cni_error *e) {
  buf_free(&e->cni_version);
  buf_free(&e->msg);
  buf_free(&e->details);
  e->code = 0;
}

void skel_outcome_free(skel_outcome *o) {
  cni_error_free(&o->error);
  buf_free(&o->cni_version);
  jv_free(&o->agent_socket);
  jv_free(&o->agent_timeout);
}

static void fail(skel_outcome *out, unsigned long code, const char *msg, const char *details, const char *cni_version) {
  out->kind = SKEL_ERROR;
  cni_error_set(&out->error, cni_version ? cni_version : LATEST_VERSION, code, msg, details);
}

void skel_dispatch(const cni_env *env, const uint8_t *in, size_t n, skel_outcome *out) {
  memset(out, 0, sizeof *out);
  const char *cmd = env->command;
  if (cmd[0] == '\0') { fail(out, CNI_INVALID_ENVIRONMENT, "required env variables [CNI_COMMAND] missing", NULL, NULL); return; }
  if (strcmp(cmd, "VERSION") == 0) {
    out->kind = SKEL_VERSION;
    return;
  }
  int command = -1;
  for (int i = 0; i < 5; i++)
    if (strcmp(cmd, COMMAND_NAMES[i]) == 0) command = i;
  if (command < 0) {
    buf_t m = {0};
    buf_addf(&m, "unknown CNI_COMMAND: %s", cmd);
    fail(out, CNI_INVALID_ENVIRONMENT, m.p, NULL, NULL);
    buf_free(&m);
    return;
  }
  bool container = command == CMD_ADD || command == CMD_CHECK || command == CMD_DEL;

  /* Required variables, in the order they are reported. */
  const struct { const char *name, *value; bool needed; } req[] = {
    {"CNI_CONTAINERID", env->container_id, container},
    {"CNI_NETNS", env->netns, command == CMD_ADD || command == CMD_CHECK},
    {"CNI_IFNAME", env->if_name, container},
    {"CNI_PATH", env->path, true},
  };
  buf_t missing = {0};
  for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
    if (req[i].needed && req[i].value[0] == '\0') buf_addf(&missing, "%s%s", missing.len ? "," : "", req[i].name);
  if (missing.len > 0) {
    buf_t m = {0};
    buf_addf(&m, "required env variables [%s] missing", missing.p);
    fail(out, CNI_INVALID_ENVIRONMENT, m.p, NULL, NULL);
    buf_free(&m);
    buf_free(&missing);
    return;
  }
  if (container) {
    if (!valid_name(env->container_id, strlen(env->container_id))) {
      fail(out, CNI_INVALID_ENVIRONMENT, "invalid characters in containerID", env->container_id, NULL);
      return;
    }
    const char *problem = interface_name_problem(env->if_name);
    if (problem) { fail(out, CNI_INVALID_ENVIRONMENT, problem, env->if_name, NULL); return; }
  }

  if (!utf8_valid(in, n)) { fail(out, CNI_DECODING_FAILURE, "error decoding network config: stdin is not valid UTF-8", NULL, NULL); return; }
  /* TextDecoder drops a leading BOM before JSON.parse saw the text. */
  if (n >= 3 && in[0] == 0xEF && in[1] == 0xBB && in[2] == 0xBF) {
    in += 3;
    n -= 3;
  }
  enum { K_VERSION, K_NAME, K_SOCKET, K_TIMEOUT, K_COUNT };
  static const char *const keys[K_COUNT] = {"cniVersion", "name", "agentSocket", "agentTimeoutMs"};
  jv_t v[K_COUNT];
  jv_kind root;
  buf_t perr = {0};
  if (!json_read(in, n, keys, K_COUNT, &root, v, &perr)) {
    buf_t m = {0};
    buf_addf(&m, "error decoding network config: %s", perr.p);
    fail(out, CNI_DECODING_FAILURE, m.p, NULL, NULL);
    buf_free(&m);
    buf_free(&perr);
    return;
  }
  if (root != JV_OBJECT) { fail(out, CNI_DECODING_FAILURE, "error decoding network config: not a JSON object", NULL, NULL); return; }

  /* The version decides the cniVersion of every later error, so read it first,
   * but report name problems before version problems, as upstream does. */
  const jv_t *version = &v[K_VERSION], *name = &v[K_NAME];
  if (version->kind != JV_ABSENT && version->kind != JV_STRING) {
    fail(out, CNI_DECODING_FAILURE, "error decoding network config: cniVersion is not a string", NULL, NULL);
    goto done;
  }
  const char *err_version = version->kind == JV_STRING && is_supported(&version->str) ? version->str.p : LATEST_VERSION;

  if (name->kind != JV_ABSENT && name->kind != JV_STRING) {
    fail(out, CNI_DECODING_FAILURE, "error decoding network config: name is not a string", NULL, err_version);
    goto done;
  }
  if (name->kind == JV_ABSENT || name->str.len == 0) {
    fail(out, CNI_INVALID_NETWORK_CONFIG, "missing network name", NULL, err_version);
    goto done;
  }
  if (!valid_name(name->str.p, name->str.len)) {
    fail(out, CNI_INVALID_NETWORK_CONFIG, "invalid characters found in network name", NULL, err_version);
    buf_add(&out->error.details, name->str.p, name->str.len); /* may hold a NUL: copied by length */
    goto done;
  }

  if (version->kind == JV_ABSENT || version->str.len == 0) {
    fail(out, CNI_INCOMPATIBLE_VERSION, "incompatible CNI versions", "config has no cniVersion, plugin supports [" SUPPORTED_VERSIONS_TEXT "]", NULL);
    goto done;
  }
  const char *floor = MIN_VERSION[command];
  if (floor && compare_versions(version->str.p, version->str.len, floor) < 0) {
    buf_t m = {0}, d = {0};
    buf_addf(&m, "config version does not allow %s", COMMAND_NAMES[command]);
    buf_adds(&d, "config is \"");
    buf_add(&d, version->str.p, version->str.len);
    buf_addf(&d, "\", %s needs >= %s", COMMAND_NAMES[command], floor);
    fail(out, CNI_INCOMPATIBLE_VERSION, m.p, NULL, err_version);
    buf_add(&out->error.details, d.p, d.len);
    buf_free(&m);
    buf_free(&d);
    goto done;
  }
  if (!is_supported(&version->str)) {
    fail(out, CNI_INCOMPATIBLE_VERSION, "incompatible CNI versions", NULL, NULL);
    buf_adds(&out->error.details, "config is \"");
    buf_add(&out->error.details, version->str.p, version->str.len);
    buf_adds(&out->error.details, "\", plugin supports [" SUPPORTED_VERSIONS_TEXT "]");
    goto done;
  }

  out->kind = SKEL_CALL;
  out->command = (cni_command)command;
  buf_add(&out->cni_version, version->str.p, version->str.len);
  out->agent_socket = v[K_SOCKET];
  out->agent_timeout = v[K_TIMEOUT];
  memset(&v[K_SOCKET], 0, sizeof v[K_SOCKET]);
  memset(&v[K_TIMEOUT], 0, sizeof v[K_TIMEOUT]);
done:
  for (int i = 0; i < K_COUNT; i++) jv_free(&v[i]);
}
