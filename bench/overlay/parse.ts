/**
 * bench/overlay/parse: what the bench reads from the tools it runs, into
 * figures. Pure.
 *
 * - iperf3 -J (3.x): one TCP run. Throughput is the receiver's figure
 *   (end.sum_received: what arrived, after the --omit seconds), with the
 *   sender's beside it; retransmits, both ends' CPU use and the congestion
 *   control come along, for reading a low figure. A run that failed says
 *   so in `error` (iperf3 still prints JSON, and may exit 0).
 * - ping (iputils): one RTT per `time=` reply line, in µs, and the loss
 *   from its summary line.
 * - rr.child.ts's client: one JSON line of round-trip samples in µs.
 */
import { isObject, type JsonObject } from '../../lib/json/read.js';

export interface IperfRun {
  /** Received bits per second over the measured interval (after --omit). */
  readonly receivedBps: number;
  readonly sentBps: number;
  readonly seconds: number;
  readonly streams: number;
  /** null: iperf3 did not report them (not Linux, or not the sender here). */
  readonly retransmits: number | null;
  /** iperf3's cpu_utilization_percent: this end (the client, sending) and the remote (the server), % of one CPU. */
  readonly cpuSenderPct: number | null;
  readonly cpuReceiverPct: number | null;
  readonly congestion: string | null;
  /** The smallest path MTU the sender's streams saw (iperf3 ≥ 3.7, per interval), null when absent. */
  readonly pmtu: number | null;
}

export class ParseError extends Error {
  override name = 'ParseError';
}

const num = (o: JsonObject | undefined, k: string): number | null => {
  const v = o?.[k];
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
};
const obj = (o: JsonObject | undefined, k: string): JsonObject | undefined => {
  const v = o?.[k];
  return isObject(v) ? v : undefined;
};

/**
 * One `iperf3 -c … -J` output.
 * @throws ParseError when it is not iperf3's JSON, or the run failed (its own message)
 */
export function parseIperf3Json(text: string): IperfRun {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new ParseError(`iperf3 output is not JSON: ${JSON.stringify(text.slice(0, 120))}`, { cause: e });
  }
  if (!isObject(doc)) throw new ParseError('iperf3 output is not a JSON object');
  if (typeof doc['error'] === 'string') throw new ParseError(`iperf3: ${doc['error']}`);
  const end = obj(doc, 'end');
  const received = obj(end, 'sum_received');
  const sent = obj(end, 'sum_sent');
  const receivedBps = num(received, 'bits_per_second');
  const sentBps = num(sent, 'bits_per_second');
  if (receivedBps === null || sentBps === null) throw new ParseError('iperf3 output has no end.sum_received / end.sum_sent bits_per_second (a UDP or unfinished run?)');
  const cpu = obj(end, 'cpu_utilization_percent');
  const testStart = obj(obj(doc, 'start'), 'test_start');
  const streams = Array.isArray(end?.['streams']) ? end['streams'].length : (num(testStart, 'num_streams') ?? 0);
  let pmtu: number | null = null;
  for (const iv of Array.isArray(doc['intervals']) ? doc['intervals'] : []) {
    for (const s of isObject(iv) && Array.isArray(iv['streams']) ? iv['streams'] : []) {
      const m = isObject(s) ? num(s, 'pmtu') : null;
      if (m !== null) pmtu = pmtu === null ? m : Math.min(pmtu, m);
    }
  }
  const cc = end?.['sender_tcp_congestion'];
  return {
    receivedBps,
    sentBps,
    seconds: num(received, 'seconds') ?? num(sent, 'seconds') ?? NaN,
    streams,
    retransmits: num(sent, 'retransmits'),
    cpuSenderPct: num(cpu, 'host_total'),
    cpuReceiverPct: num(cpu, 'remote_total'),
    congestion: typeof cc === 'string' ? cc : null,
    pmtu,
  };
}

export interface PingRun {
  /** One per reply, in µs, in arrival order. */
  readonly rttUs: readonly number[];
  readonly transmitted: number;
  readonly received: number;
}

/**
 * iputils ping's output (`-n`): the reply lines' `time=0.045 ms`, and the
 * summary's "N packets transmitted, M received". Duplicates (DUP!) are left out.
 * @throws ParseError when there is no summary line
 */
export function parsePing(text: string): PingRun {
  const rttUs: number[] = [];
  for (const line of text.split('\n')) {
    if (line.includes('DUP!')) continue;
    const m = /\btime[=<]([\d.]+) ms\b/.exec(line);
    if (m) rttUs.push(Math.round(Number(m[1]) * 1000 * 10) / 10);
  }
  const s = /(\d+) packets transmitted, (\d+) (?:packets )?received/.exec(text);
  if (!s) throw new ParseError(`ping printed no summary: ${JSON.stringify(text.trim().slice(-200))}`);
  return { rttUs, transmitted: Number(s[1]), received: Number(s[2]) };
}

/**
 * The last line of rr.child.ts's client: {"rttUs":[...]} (numbers).
 * @throws ParseError otherwise
 */
export function parseRrOutput(text: string): number[] {
  const last = text.trim().split('\n').pop() ?? '';
  let doc: unknown;
  try {
    doc = JSON.parse(last);
  } catch (e) {
    throw new ParseError(`rr client printed no JSON line: ${JSON.stringify(text.slice(-200))}`, { cause: e });
  }
  const xs = isObject(doc) ? doc['rttUs'] : undefined;
  if (!Array.isArray(xs) || !xs.every((x): x is number => typeof x === 'number' && Number.isFinite(x) && x >= 0)) {
    throw new ParseError('rr client output: rttUs must be an array of non-negative numbers');
  }
  return xs;
}

/** `ip -j link show` (one or more links): name → MTU. */
export function parseLinkMtus(text: string): Map<string, number> {
  const out = new Map<string, number>();
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new ParseError('ip -j link printed no JSON', { cause: e });
  }
  for (const l of Array.isArray(doc) ? doc : []) {
    if (isObject(l) && typeof l['ifname'] === 'string' && typeof l['mtu'] === 'number') out.set(l['ifname'], l['mtu']);
  }
  return out;
}
