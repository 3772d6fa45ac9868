/*
 * skel: the part of the CNI protocol every plugin does itself, as a function
 * of the environment and stdin with no I/O (skel.c says which checks, in
 * which order).
 */
#ifndef NODENET_CNI_SKEL_H
#define NODENET_CNI_SKEL_H

#include "common.h"
#include "json.h"

/* The commands forwarded to the agent (VERSION is answered here). */
typedef enum { CMD_ADD, CMD_DEL, CMD_CHECK, CMD_STATUS, CMD_GC } cni_command;
extern const char *const COMMAND_NAMES[5]; /* "ADD", "DEL", "CHECK", "STATUS", "GC" */

/* CNI spec versions nodenet speaks, oldest first (proto/cni/v1/contract.ts). */
#define SUPPORTED_VERSIONS_TEXT "0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0"
#define LATEST_VERSION "1.1.0"

/* CNI spec error codes (proto/cni/v1/contract.ts CniCode). */
enum {
  CNI_INCOMPATIBLE_VERSION = 1,
  CNI_INVALID_ENVIRONMENT = 4,
  CNI_IO_FAILURE = 5,
  CNI_DECODING_FAILURE = 6,
  CNI_INVALID_NETWORK_CONFIG = 7,
  CNI_TRY_AGAIN_LATER = 11,
  CNI_PLUGIN_NOT_AVAILABLE = 50,
  CNI_INTERNAL = 999,
};

/* The CNI_* variables, each "" when unset; invalid UTF-8 already replaced by U+FFFD, as Node's process.env reads them. */
typedef struct {
  const char *command, *container_id, *netns, *if_name, *args, *path;
} cni_env;

/* The spec's error structure. */
typedef struct {
  buf_t cni_version, msg, details;
  unsigned long code;
} cni_error;

typedef enum { SKEL_VERSION, SKEL_CALL, SKEL_ERROR } skel_kind;

typedef struct {
  skel_kind kind;
  cni_error error;   /* SKEL_ERROR */
  cni_command command; /* SKEL_CALL: */
  buf_t cni_version;   /* the config's cniVersion, a supported one */
  jv_t agent_socket;   /* the config's top-level agentSocket (JV_ABSENT if none) */
  jv_t agent_timeout;  /* ... and agentTimeoutMs */
} skel_outcome;

/* The VERSION answer. */
void skel_version_info(buf_t *out);

/* Decides what one invocation is. `in` is all of stdin (not read for VERSION or without CNI_COMMAND). */
void skel_dispatch(const cni_env *env, const uint8_t *in, size_t n, skel_outcome *out);

void skel_outcome_free(skel_outcome *o);

/* Fills an error; msg and details are copied. */
void cni_error_set(cni_error *e, const char *cni_version, unsigned long code, const char *msg, const char *details);
/* The error JSON as printed on stdout: {"cniVersion","code","msg"[,"details"]}, details left out when empty. */
void cni_error_format(buf_t *out, const cni_error *e);
void cni_error_free(cni_error *e);

#endif
