/*
 * grpc: one unary call of nodenet.cni.v1.CniService to the agent over its
 * unix socket (grpc.c says how, and how each failure is classified).
 */
#ifndef NODENET_CNI_GRPC_H
#define NODENET_CNI_GRPC_H

#include "common.h"
#include "skel.h"

/* One CNI invocation as forwarded (the CniRequest message). Strings are UTF-8. */
typedef struct {
  const char *container_id, *netns, *if_name, *args, *path;
  const uint8_t *config; /* stdin, byte for byte */
  size_t config_len;
} cni_request;

typedef enum {
  REPLY_OK,          /* the agent handled the call: `result` (the ADD result JSON; empty for the others) */
  REPLY_CNI_ERROR,   /* the agent answered with a CNI error, in band: code, msg, details */
  REPLY_UNREACHABLE, /* no agent at the socket, or the connection broke before an answer */
  REPLY_TIMEOUT,     /* the deadline passed; the agent may still be working on it */
  REPLY_FAILED,      /* anything else (protocol mismatch, server bug): 999 */
} reply_kind;

typedef struct {
  reply_kind kind;
  buf_t result;
  unsigned long code;
  buf_t msg, details;
  buf_t detail; /* UNREACHABLE, TIMEOUT, FAILED: what happened (WTF-8) */
} agent_reply;

/*
 * Sends one call and waits at most `timeout_ms` (counted from this call) for
 * the answer. `socket` is the configured path (WTF-8). Never fails: every
 * failure is a reply.
 */
void call_agent(const char *socket, size_t socket_len, cni_command command, const cni_request *req, double timeout_ms, agent_reply *out);

void agent_reply_free(agent_reply *r);

#endif
