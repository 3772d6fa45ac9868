/**
 * bench/apiserver/server.child: the API server under test, in a process of
 * its own so the load generator's CPU never shares its event loop. Run by
 * run.ts through fork() (an IPC channel), never imported.
 *
 *   server.child.ts DATA_DIR LOG_LEVEL [STORAGE] [NODE_MONITOR_GRACE_MS] [DISABLE]
 *
 * Starts the control plane on 127.0.0.1, an ephemeral port, with its data
 * in DATA_DIR (and its store where STORAGE says, `--storage`'s syntax:
 * `etcd:http://H:P,...`; default SQLite in DATA_DIR; DISABLE: addons not to
 * install, `--disable`'s comma list, as bench:dns's `coredns`), logging as
 * `nodenet control-plane --log-file` does (one line
 * per request at info) to DATA_DIR/control-plane.log. Sends
 * {type:'ready', url, kubeconfig} (or {type:'failed', error}); stops
 * cleanly on the message 'stop', on SIGTERM/SIGINT, or when the parent goes.
 */
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../../controlplane/control-plane.js';
import { parseStorageSpec } from '../../controlplane/store/spec.js';
import { createLogger, type LevelWithSilent } from '../../lib/log/log.js';

const [dataDir, level, storageText, graceText, disableText] = process.argv.slice(2);
const send = process.send?.bind(process);
if (!dataDir || !level || !send) {
  console.error('server.child: run by bench/apiserver/run.ts (fork with IPC): server.child.ts DATA_DIR LOG_LEVEL [STORAGE] [NODE_MONITOR_GRACE_MS] [DISABLE]');
  process.exit(2);
}

let cp: ControlPlane | null = null;
let stopping = false;
async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  try {
    await cp?.stop();
  } finally {
    process.exit(code);
  }
}
process.on('message', (m) => {
  if (m === 'stop') void stop(0);
});
process.on('disconnect', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
process.on('SIGINT', () => void stop(0));

try {
  cp = await startControlPlane({
    dataDir,
    ...(storageText ? { storage: parseStorageSpec(storageText) } : {}),
    // bench/scheduler's Nodes post no heartbeats: it passes an hour (scheduler_perf runs no node lifecycle controller).
    ...(graceText ? { nodeMonitorGracePeriodMs: Number(graceText) } : {}),
    ...(disableText ? { disable: disableText.split(',') } : {}),
    host: '127.0.0.1',
    port: 0,
    version: 'bench',
    log: createLogger({ level: level as LevelWithSilent, destination: join(dataDir, 'control-plane.log') }),
  });
  send({ type: 'ready', url: cp.url, kubeconfig: cp.kubeconfig });
} catch (e) {
  send({ type: 'failed', error: e instanceof Error ? e.stack ?? e.message : String(e) });
  await stop(1);
}
