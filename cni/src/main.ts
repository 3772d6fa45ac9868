/**
 * nodenet-cni: the CNI plugin executable the container runtime runs for every
 * pod network operation. A thin shim: skel.ts checks the call, run.ts forwards
 * it to the node agent over gRPC on a unix socket and prints the answer.
 *
 * This file only wires real I/O. It is bundled by scripts/build.mjs into one
 * CJS file (dist/nodenet-cni.cjs). Keep its imports to proto/ (the
 * messages-only output) and node builtins: no grpc-js, pino or client-node.
 * The gRPC client is imported lazily so that VERSION and rejected calls never
 * pay for loading it. Nothing here touches process.stdout, process.stderr or
 * process.stdin unless a non-blocking pipe forces it: each builds a stream,
 * which costs more than the rest of the shim (out.ts, stdin.ts).
 */
import { readSync, writeSync } from 'node:fs';
import { writeDeletionRecord } from './del-queue.js';
import { Output } from './out.js';
import { runShim } from './run.js';
import { readAllSync } from './stdin.js';

/** All of stdin: read(2) into one buffer; a non-blocking pipe (EAGAIN) has the rest read through the stream. */
function readStdin(): Promise<Uint8Array> {
  let first: { bytes: Buffer; complete: boolean };
  try {
    first = readAllSync((fd, buf, offset, length) => readSync(fd, buf, offset, length, null), 0);
  } catch (e) {
    return Promise.reject(e);
  }
  if (first.complete) return Promise.resolve(first.bytes);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [first.bytes];
    process.stdin.on('data', (c: Buffer) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks)));
    process.stdin.on('error', reject);
  });
}

const out = new Output(
  (fd, data) => writeSync(fd, data),
  (fd, data, done) => void (fd === 2 ? process.stderr : process.stdout).write(data, () => done()),
);

void runShim({
  env: process.env,
  readStdin,
  callAgent: async (...args) => (await import('./agent-client.js')).callAgent(...args),
  queueDeletion: writeDeletionRecord,
  now: () => new Date(),
  stdout: (data) => out.write(1, data),
  stderr: (text) => out.write(2, text),
}).then(async (code) => {
  // Exit once the output is out, whatever handles are left.
  await out.flushed();
  process.exit(code);
});
