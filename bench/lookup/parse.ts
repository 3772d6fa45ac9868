/**
 * bench/lookup/parse: reading what the benchmark's tools print. Pure.
 *   - nodenet-bench-tcp's output (bench/lookup/tcp.c) into latency summaries;
 *   - the order in which the kernel's iptables rules match Services: the
 *     ClusterIPs of the KUBE-SERVICES jumps in `iptables-save -t nat`, first to last.
 */
import { summarize, type LatencySummary } from './stats.js';

export interface ClientRun {
  readonly connect: LatencySummary;
  readonly connectsPerSecond: number;
  readonly failures: number;
  /** errno of the first failure (0: none), e.g. 115 EINPROGRESS for a connect that timed out. */
  readonly firstErrno: number;
  readonly elapsedMs: number;
  readonly rtt: LatencySummary | null;
}

/** nodenet-bench-tcp connect's output. @throws when its last line is missing or malformed */
export function parseClientOutput(out: string): ClientRun {
  const c: number[] = [];
  const r: number[] = [];
  let end: string[] | null = null;
  for (const line of out.split('\n')) {
    if (line.startsWith('c ')) c.push(Number(line.slice(2)) / 1000);
    else if (line.startsWith('r ')) r.push(Number(line.slice(2)) / 1000);
    else if (line.startsWith('end ')) end = line.split(' ');
  }
  if (!end || end.length !== 5) throw new Error(`the client printed no end line: ${out.slice(-300)}`);
  const [, elapsedNs, done, failures, firstErrno] = end.map(Number) as [number, number, number, number, number];
  if (done !== c.length) throw new Error(`the client reports ${done} connects but printed ${c.length}`);
  if ([...c, ...r].some((x) => !Number.isFinite(x) || x < 0)) throw new Error('the client printed a sample that is not a duration');
  const elapsedMs = elapsedNs / 1e6;
  return {
    connect: summarize(c),
    connectsPerSecond: elapsedMs > 0 ? (done / elapsedMs) * 1000 : 0,
    failures,
    firstErrno,
    elapsedMs,
    rtt: r.length ? summarize(r) : null,
  };
}

/**
 * The destination addresses of KUBE-SERVICES' jumps to per-Service chains,
 * in rule order (the order a new connection's first packet walks them).
 */
export function kubeServicesOrder(natSave: string, prefix = 'KUBE'): string[] {
  const out: string[] = [];
  const head = `-A ${prefix}-SERVICES `;
  for (const line of natSave.split('\n')) {
    if (!line.startsWith(head) || !line.includes(` -j ${prefix}-SVC-`)) continue;
    const m = / -d (\d+\.\d+\.\d+\.\d+)(?:\/32)? /.exec(line);
    if (m) out.push(m[1]!);
  }
  return out;
}
