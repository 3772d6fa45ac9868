/**
 * bench/lib/server-child: stopping the control plane a benchmark forked (bench/apiserver/server.child.ts): asked to
 * stop over IPC (or SIGTERM when the channel is gone), SIGKILLed after 10 s, resolved once it exited.
 */
import type { ChildProcess } from 'node:child_process';

export async function stopServerChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((r) => child.once('exit', () => r()));
  if (child.connected) child.send('stop');
  else child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await gone;
  clearTimeout(timer);
}
