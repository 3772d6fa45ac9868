/**
 * pods/backoff: the kubelet's crash-loop back-off for restarting containers
 * (pkg/kubelet/kuberuntime doBackOff over client-go's flowcontrol.Backoff),
 * pure: times are given, nothing is scheduled here.
 *
 * - The first restart of a container is immediate; it arms a delay of 10 s.
 * - A container that exits again waits until `delay` has passed since it
 *   finished (waiting reason CrashLoopBackOff), then restarts, and the delay
 *   doubles, capped at 300 s.
 * - A container that had been running for 10 minutes (twice the cap, as
 *   flowcontrol's hasExpired) when it exited starts over: immediate restart,
 *   delay 10 s again.
 */

export const INITIAL_BACKOFF_MS = 10_000;
export const MAX_BACKOFF_MS = 300_000;

export interface BackoffEntry {
  /** The delay the next restart waits for, from the container's finish. */
  readonly delayMs: number;
  /** When the last restart happened. */
  readonly lastRestartMs: number;
}

export interface BackoffOptions {
  readonly initialMs?: number;
  readonly maxMs?: number;
}

/**
 * When a container that finished at `finishedMs`, after starting at `startedMs`, may restart.
 * @returns the time to restart at (≤ now: restart now), given the entry (null: never restarted yet)
 */
export function restartAt(entry: BackoffEntry | null, startedMs: number, finishedMs: number, o: BackoffOptions = {}): number {
  const max = o.maxMs ?? MAX_BACKOFF_MS;
  if (!entry || finishedMs - startedMs >= 2 * max) return finishedMs;
  return finishedMs + entry.delayMs;
}

/** The entry after a restart at `nowMs` (the entry before it, and how long the container had run). */
export function afterRestart(entry: BackoffEntry | null, ranMs: number, nowMs: number, o: BackoffOptions = {}): BackoffEntry {
  const initial = o.initialMs ?? INITIAL_BACKOFF_MS;
  const max = o.maxMs ?? MAX_BACKOFF_MS;
  if (!entry || ranMs >= 2 * max) return { delayMs: initial, lastRestartMs: nowMs };
  return { delayMs: Math.min(entry.delayMs * 2, max), lastRestartMs: nowMs };
}

export type RestartPolicyName = 'Always' | 'OnFailure' | 'Never';

/** Whether a container that exited with `exitCode` is started again under the Pod's restart policy. */
export function shouldRestart(policy: RestartPolicyName, exitCode: number): boolean {
  if (policy === 'Always') return true;
  if (policy === 'OnFailure') return exitCode !== 0;
  return false;
}
