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
 * which costs more than the rest of the shim (out.ts, and readStdin below).
 */
import { readFileSync, writeSync } from 'node:fs';
import { writeDeletionRecord } from './del-queue.js';
import { Output } from './out.js';
import { runShim } from './run.js';

/**
 * All of stdin. A synchronous read of fd 0 is the cheap way (process.stdin
 * builds a stream, ~3 ms of a cold start); a non-blocking pipe (EAGAIN)
 * falls back to the stream.
 */
function readStdin(): Promise<Uint8Array> {
  try {
    return Promise.resolve(readFileSync(0));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') return Promise.reject(e);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
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
