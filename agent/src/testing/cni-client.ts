/**
 * The shim's side of the agent's CNI service, for the agent's own tests
 * (the shim itself is C, cni/nodenet-cni.c, tested in cni/):
 * - callAgent: one call through grpc-js's generated client, with the
 *   outcome in the shape the shim branches on: the result, the in-band CNI
 *   error, or unreachable (UNAVAILABLE), timeout (DEADLINE_EXCEEDED) and
 *   failed (any other status);
 * - writeDeletionRecord: a DEL queued as the shim queues it
 *   (proto/cni/v1/contract.ts's DeletionRecord, written atomically: a
 *   dot-prefixed temp file, fsync, rename, fsync of the directory).
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { credentials, Metadata, status } from '@grpc/grpc-js';
import { CniServiceClient } from '../../../proto/cni/v1/cni.js';
import { deletionRecordName, type CniCallRequest, type CniCommand, type DeletionRecord } from '../../../proto/cni/v1/contract.js';

export type CniReply =
  | { readonly kind: 'ok'; readonly result: Uint8Array }
  | { readonly kind: 'cni-error'; readonly code: number; readonly msg: string; readonly details: string }
  | { readonly kind: 'unreachable' | 'timeout' | 'failed'; readonly detail: string };

const METHOD = { ADD: 'add', DEL: 'del', CHECK: 'check', STATUS: 'status', GC: 'gc' } as const;

export function callAgent(socket: string, command: CniCommand, request: CniCallRequest, timeoutMs: number): Promise<CniReply> {
  const client = new CniServiceClient(`unix:${socket}`, credentials.createInsecure());
  const req = { ...request, config: Buffer.from(request.config) };
  return new Promise((resolve) => {
    client[METHOD[command]](req, new Metadata(), { deadline: Date.now() + timeoutMs }, (err, resp) => {
      client.close();
      if (err) {
        const kind = err.code === status.UNAVAILABLE ? 'unreachable' : err.code === status.DEADLINE_EXCEEDED ? 'timeout' : 'failed';
        resolve({ kind, detail: err.message });
        return;
      }
      const outcome = resp?.outcome;
      if (outcome?.$case === 'error') resolve({ kind: 'cni-error', code: outcome.error.code, msg: outcome.error.msg, details: outcome.error.details });
      else resolve({ kind: 'ok', result: outcome?.$case === 'result' ? outcome.result : new Uint8Array() });
    });
  });
}

/** Writes the record into `dir` (created 0700 if missing) as the shim does; returns the record's path. */
export function writeDeletionRecord(dir: string, record: DeletionRecord): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const name = deletionRecordName(record.containerId, record.ifName);
  const tmp = join(dir, `.${name}.${process.pid}.tmp`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(record)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  const final = join(dir, name);
  renameSync(tmp, final);
  const dfd = openSync(dir, 'r');
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
  return final;
}
