/**
 * pods/pod-status: a Pod's status from what the kubelet observes (pure), as
 * the kubelet's generateAPIPodStatus / getPhase / the status manager do:
 * phase, podIP(s), hostIP(s), startTime, one containerStatus per container,
 * and the conditions PodScheduled (as the scheduler set it), Initialized,
 * ContainersReady and Ready, each keeping its lastTransitionTime while its
 * status stays the same.
 */
import type { RestartPolicy } from './pod-spec.js';

export type ContainerState =
  | { readonly running: { readonly startedAt: number } }
  | { readonly waiting: { readonly reason: string; readonly message?: string } }
  | { readonly terminated: Terminated };

export interface Terminated {
  readonly exitCode: number;
  readonly signal?: number;
  readonly reason: string;
  readonly message?: string;
  readonly startedAt: number;
  readonly finishedAt: number;
}

export interface ContainerView {
  readonly name: string;
  readonly image: string;
  readonly containerID: string;
  readonly state: ContainerState;
  readonly lastState: Terminated | null;
  readonly restartCount: number;
  readonly ready: boolean;
  readonly started: boolean;
}

export interface PodView {
  readonly restartPolicy: RestartPolicy;
  readonly podIP: string | null;
  readonly hostIP: string;
  readonly startTime: number | null;
  readonly containers: readonly ContainerView[];
  /** The Pod cannot run here (an unsupported spec): phase Failed with this reason. */
  readonly failed?: { readonly reason: string; readonly message: string };
}

import { obj } from '../../../lib/json/loose.js';

type O = Record<string, unknown>;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** RFC 3339 with seconds, as metav1.Time marshals. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export type Phase = 'Pending' | 'Running' | 'Succeeded' | 'Failed';

/** getPhase for a Pod without init containers. */
export function podPhase(v: PodView): Phase {
  if (v.failed) return 'Failed';
  let running = 0, waiting = 0, stopped = 0, failed = 0, succeeded = 0;
  for (const c of v.containers) {
    if ('running' in c.state) running++;
    else if ('terminated' in c.state) {
      stopped++;
      if (c.state.terminated.exitCode === 0) succeeded++;
      else failed++;
    } else if (c.lastState) {
      stopped++;
      if (c.lastState.exitCode === 0) succeeded++;
      else failed++;
    } else waiting++;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped === 0) return 'Pending';
  if (v.restartPolicy === 'Always') return 'Running';
  // A container in back-off (waiting, with a last termination) comes back: the Pod runs on.
  const restarting = v.containers.some((c) => 'waiting' in c.state);
  if (v.restartPolicy === 'OnFailure') return stopped === succeeded ? 'Succeeded' : restarting || failed > 0 ? 'Running' : 'Succeeded';
  return failed > 0 ? 'Failed' : 'Succeeded';
}

function terminatedOut(t: Terminated): O {
  return {
    exitCode: t.exitCode,
    ...(t.signal ? { signal: t.signal } : {}),
    reason: t.reason,
    ...(t.message ? { message: t.message } : {}),
    startedAt: rfc3339(t.startedAt),
    finishedAt: rfc3339(t.finishedAt),
  };
}

function stateOut(s: ContainerState): O {
  if ('running' in s) return { running: { startedAt: rfc3339(s.running.startedAt) } };
  if ('waiting' in s) return { waiting: { reason: s.waiting.reason, ...(s.waiting.message ? { message: s.waiting.message } : {}) } };
  return { terminated: terminatedOut(s.terminated) };
}

/** The status to post: `previous` is the Pod's status on the API server (its conditions' transition times). */
export function podStatus(v: PodView, previous: unknown, nowMs: number): O {
  const prev = obj(previous) ?? {};
  const prevConds = arr(prev['conditions']).map(obj).filter((c): c is O => !!c);
  const phase = podPhase(v);
  const allReady = v.containers.length > 0 && v.containers.every((c) => c.ready);
  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const cond = (type: string, ok: boolean, reason?: string, message?: string): O => {
    const was = prevConds.find((c) => c['type'] === type);
    const status = ok ? 'True' : 'False';
    const out: O = { type, status, lastProbeTime: null, lastTransitionTime: was?.['status'] === status && typeof was['lastTransitionTime'] === 'string' ? was['lastTransitionTime'] : rfc3339(nowMs) };
    if (reason) out['reason'] = reason;
    if (message) out['message'] = message;
    return out;
  };
  const notReady = v.containers.filter((c) => !c.ready).map((c) => c.name);
  const why = terminal ? 'PodCompleted' : 'ContainersNotReady';
  const whyMsg = terminal ? undefined : `containers with unready status: [${notReady.join(' ')}]`;
  const scheduled = prevConds.find((c) => c['type'] === 'PodScheduled') ?? { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: rfc3339(nowMs) };
  const conditions = [
    cond('PodReadyToStartContainers', v.podIP !== null && !terminal),
    cond('Initialized', true),
    cond('Ready', allReady && !terminal, allReady && !terminal ? undefined : why, allReady && !terminal ? undefined : whyMsg),
    cond('ContainersReady', allReady && !terminal, allReady && !terminal ? undefined : why, allReady && !terminal ? undefined : whyMsg),
    scheduled,
  ];
  const status: O = {
    phase,
    conditions,
    hostIP: v.hostIP,
    hostIPs: [{ ip: v.hostIP }],
    podIP: v.podIP,
    podIPs: v.podIP ? [{ ip: v.podIP }] : null,
    startTime: v.startTime === null ? null : rfc3339(v.startTime),
    reason: v.failed ? v.failed.reason : null,
    message: v.failed ? v.failed.message : null,
    containerStatuses: v.containers.map((c) => ({
      name: c.name,
      state: stateOut(c.state),
      lastState: c.lastState ? { terminated: terminatedOut(c.lastState) } : {},
      ready: c.ready,
      restartCount: c.restartCount,
      image: c.image,
      imageID: '',
      ...(c.containerID ? { containerID: c.containerID } : {}),
      started: c.started,
    })),
  };
  if (prev['qosClass'] !== undefined) status['qosClass'] = prev['qosClass'];
  return status;
}

/**
 * Whether `want` differs from the status on the API server: nulls in `want` are deletions in the
 * merge patch, so an absent field there equals a null here.
 */
export function statusDiffers(want: O, have: unknown): boolean {
  const h = obj(have) ?? {};
  for (const [k, v] of Object.entries(want)) {
    const cur = h[k];
    if (v === null) {
      if (cur !== undefined && cur !== null) return true;
      continue;
    }
    if (JSON.stringify(normalize(v)) !== JSON.stringify(normalize(cur))) return true;
  }
  return false;
}

/** Keys sorted, nulls dropped: the server may order or omit them differently. */
function normalize(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalize);
  const o = obj(v);
  if (!o) return v;
  const out: O = {};
  for (const k of Object.keys(o).sort()) if (o[k] !== null && o[k] !== undefined) out[k] = normalize(o[k]);
  return out;
}
