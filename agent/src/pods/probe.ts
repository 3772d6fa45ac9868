/**
 * pods/probe: a probe's state machine (pkg/kubelet/prober worker.go), pure.
 *
 * Each probe of a container has a result, starting as the kubelet starts it:
 * readiness Failure (not ready until it passes), liveness Success, startup
 * Unknown (not started). An observation counts in a run of equal results;
 * the result flips only when the run reaches the threshold (successThreshold
 * for success, failureThreshold for failure). When the probe runs is also
 * decided here: not before initialDelaySeconds from the container's start,
 * then every periodSeconds; liveness and readiness wait for the startup
 * probe to succeed. The caller runs the probe (probe-exec.ts) and acts on a
 * flip (a liveness Failure kills the container).
 */
import type { ProbeSpec } from './pod-spec.js';

export type ProbeKind = 'readiness' | 'liveness' | 'startup';
export type ProbeResult = 'Success' | 'Failure' | 'Unknown';

export interface ProbeState {
  readonly result: ProbeResult;
  /** The length of the current run of equal observations, and what they are. */
  readonly run: number;
  readonly last: 'Success' | 'Failure' | null;
}

export function initialProbeState(kind: ProbeKind): ProbeState {
  return { result: kind === 'readiness' ? 'Failure' : kind === 'liveness' ? 'Success' : 'Unknown', run: 0, last: null };
}

/** The state after one observation. */
export function observe(spec: Pick<ProbeSpec, 'successThreshold' | 'failureThreshold'>, s: ProbeState, ok: boolean): ProbeState {
  const seen = ok ? 'Success' : 'Failure';
  const run = s.last === seen ? s.run + 1 : 1;
  const threshold = ok ? spec.successThreshold : spec.failureThreshold;
  return { result: run >= threshold ? seen : s.result, run, last: seen };
}

/** When the first observation is due: initialDelaySeconds after the container started. */
export function firstProbeAt(spec: Pick<ProbeSpec, 'initialDelaySeconds'>, containerStartedMs: number): number {
  return containerStartedMs + spec.initialDelaySeconds * 1000;
}

/** When the next observation is due after one at `lastMs`. */
export function nextProbeAt(spec: Pick<ProbeSpec, 'periodSeconds'>, lastMs: number): number {
  return lastMs + spec.periodSeconds * 1000;
}

/** Whether a probe of this kind runs now: liveness and readiness only once the container has started. */
export function probeActive(kind: ProbeKind, started: boolean): boolean {
  return kind === 'startup' ? !started : started;
}
