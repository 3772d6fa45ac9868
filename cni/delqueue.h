/*
 * delqueue: where the shim leaves a DEL it could not hand to the agent
 * (delqueue.c says why and how; the format is proto/cni/v1/contract.ts's
 * DeletionRecord, which agent/src/cniserver/replay-deletions.ts reads).
 */
#ifndef NODENET_CNI_DELQUEUE_H
#define NODENET_CNI_DELQUEUE_H

#include "common.h"
#include "grpc.h"

/* The queue directory for an agent socket: <dirname(socket)>/del-queue (WTF-8 in, WTF-8 out). */
void deletion_queue_dir(buf_t *out, const char *socket, size_t len);

/*
 * Writes the record for `req` into `dir` atomically (the directory created
 * 0700 with its parents when missing). On success returns true and the
 * record's path in `file`; on failure false and Node's message for the
 * failed call in `err` ("EROFS: read-only file system, mkdir '/run/x'").
 */
bool write_deletion_record(const char *dir, size_t dir_len, const cni_request *req, buf_t *file, buf_t *err);

#endif
