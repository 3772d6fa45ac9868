/**
 * bench/scheduler/server.child: the control plane under test, in a process of its own (run.ts forks it, never
 * imported). As bench/apiserver's, but the node lifecycle controller's grace period is an hour: the bench's Nodes
 * post no heartbeats, and scheduler_perf runs no node lifecycle controller either.
 *
 *   server.child.ts DATA_DIR LOG_LEVEL
 *
 * Listens on 127.0.0.1, an ephemeral port; sends {type:'ready', url, kubeconfig} or {type:'failed', error}; stops
 * on the message 'stop', SIGTERM/SIGINT, or when the parent goes.
 */
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../../controlplane/control-plane.js';
import { createLogger, type LevelWithSilent } from '../../lib/log/log.js';

const [dataDir, level] = process.argv.slice(2);
const send = process.send?.bind(process);
if (!dataDir || !level || !send) {
  console.error('server.child: run by bench/scheduler/run.ts (fork with IPC): server.child.ts DATA_DIR LOG_LEVEL');
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
    dataDir, host: '127.0.0.1', port: 0, version: 'bench', nodeMonitorGracePeriodMs: 3_600_000,
    log: createLogger({ level: level as LevelWithSilent, destination: join(dataDir, 'control-plane.log') }),
  });
  send({ type: 'ready', url: cp.url, kubeconfig: cp.kubeconfig });
} catch (e) {
  send({ type: 'failed', error: e instanceof Error ? e.stack ?? e.message : String(e) });
  await stop(1);
}
